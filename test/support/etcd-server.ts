// A real etcd (Debian's etcd-server) for tests: 127.0.0.1 on free ports, its own temporary data dir,
// optionally TLS with client-certificate auth. Always stopped (and its dir removed) by stop(), and by an
// exit hook if a test run dies first.
import {type ChildProcess, execFileSync, spawn, spawnSync} from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import {after, before} from 'node:test'
import {Etcd3} from 'etcd3'

export const ETCD_BIN = process.env.ETCD_BIN ?? '/usr/bin/etcd'
export const ETCDCTL_BIN = process.env.ETCDCTL_BIN ?? '/usr/bin/etcdctl'
export const haveEtcd = fs.existsSync(ETCD_BIN)

export interface TlsFiles {
  ca: string
  serverCert: string
  serverKey: string
  clientCert: string
  clientKey: string
}

export interface EtcdServer {
  endpoint: string
  dir: string
  tls?: TlsFiles
  /** etcdctl with the right endpoint (and TLS files); returns stdout. */
  ctl(...args: string[]): string
  stop(): Promise<void>
  /** Stop and start again on the same port and data dir (the data survives). */
  restart(): Promise<void>
  kill(): Promise<void>
  start(): Promise<void>
  /** Send a signal to the running etcd (SIGSTOP/SIGCONT: a hung server that still holds its connections). */
  signal(sig: NodeJS.Signals): void
}

const live = new Set<ChildProcess>()
process.on('exit', () => {
  for (const p of live) p.kill('SIGKILL')
})

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer()
    srv.unref()
    srv.on('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port
      srv.close(() => resolve(port))
    })
  })
}

/** A CA, a server certificate for 127.0.0.1 and a client certificate, made with openssl. */
export function makeTls(dir: string): TlsFiles {
  const f = (n: string) => path.join(dir, n)
  const ssl = (...args: string[]) => execFileSync('openssl', args, {stdio: 'pipe'})
  ssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '2',
    '-subj',
    '/CN=ipamctl-test-ca',
    '-keyout',
    f('ca.key'),
    '-out',
    f('ca.crt'),
  )
  fs.writeFileSync(
    f('server.ext'),
    'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n',
  )
  fs.writeFileSync(f('client.ext'), 'extendedKeyUsage=clientAuth\n')
  for (const who of ['server', 'client']) {
    ssl(
      'req',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-subj',
      `/CN=ipamctl-test-${who}`,
      '-keyout',
      f(`${who}.key`),
      '-out',
      f(`${who}.csr`),
    )
    ssl(
      'x509',
      '-req',
      '-in',
      f(`${who}.csr`),
      '-CA',
      f('ca.crt'),
      '-CAkey',
      f('ca.key'),
      '-CAcreateserial',
      '-days',
      '2',
      '-extfile',
      f(`${who}.ext`),
      '-out',
      f(`${who}.crt`),
    )
  }
  return {
    ca: f('ca.crt'),
    serverCert: f('server.crt'),
    serverKey: f('server.key'),
    clientCert: f('client.crt'),
    clientKey: f('client.key'),
  }
}

async function waitHealthy(ctl: () => void, child: ChildProcess, log: () => string): Promise<void> {
  const until = Date.now() + 20_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`etcd exited with ${child.exitCode}:\n${log()}`)
    try {
      ctl()
      return
    } catch {
      if (Date.now() > until) throw new Error(`etcd did not become healthy within 20 s:\n${log()}`)
      await new Promise((r) => setTimeout(r, 100))
    }
  }
}

/**
 * Start a one-member etcd on free loopback ports. A port found free can be taken by another process (another test
 * file, another etcd) before etcd binds it; that start is retried on new ports, up to three times.
 */
export async function startEtcd(opts: {tls?: boolean} = {}): Promise<EtcdServer> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startEtcdOnce(opts)
    } catch (err) {
      if (attempt >= 3 || !/address already in use/.test((err as Error).message)) throw err
    }
  }
}

async function startEtcdOnce(opts: {tls?: boolean}): Promise<EtcdServer> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-etcd-'))
  const [clientPort, peerPort] = [await freePort(), await freePort()]
  const tls = opts.tls ? makeTls(dir) : undefined
  const scheme = tls ? 'https' : 'http'
  const endpoint = `${scheme}://127.0.0.1:${clientPort}`
  const args = [
    '--name',
    'test',
    '--data-dir',
    path.join(dir, 'data'),
    '--listen-client-urls',
    endpoint,
    '--advertise-client-urls',
    endpoint,
    '--listen-peer-urls',
    `http://127.0.0.1:${peerPort}`,
    '--initial-advertise-peer-urls',
    `http://127.0.0.1:${peerPort}`,
    '--initial-cluster',
    `test=http://127.0.0.1:${peerPort}`,
    '--logger',
    'zap',
    '--log-level',
    'error',
    ...(tls
      ? ['--cert-file', tls.serverCert, '--key-file', tls.serverKey, '--trusted-ca-file', tls.ca, '--client-cert-auth']
      : []),
  ]
  const ctlArgs = [
    '--endpoints',
    endpoint,
    '--dial-timeout',
    '2s',
    ...(tls ? ['--cacert', tls.ca, '--cert', tls.clientCert, '--key', tls.clientKey] : []),
  ]
  const ctl = (...a: string[]) =>
    execFileSync(ETCDCTL_BIN, [...ctlArgs, ...a], {
      env: {...process.env, ETCDCTL_API: '3'},
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    })
  let child: ChildProcess
  let log = ''
  const server: EtcdServer = {
    endpoint,
    dir,
    tls,
    ctl,
    async start() {
      log = ''
      child = spawn(ETCD_BIN, args, {stdio: ['ignore', 'ignore', 'pipe']})
      child.stderr!.on('data', (d) => (log += d))
      live.add(child)
      await waitHealthy(
        () => ctl('endpoint', 'health'),
        child,
        () => log,
      )
    },
    async kill() {
      if (!child || child.exitCode !== null) return
      const exited = new Promise((r) => child.once('exit', r))
      child.kill('SIGKILL')
      await exited
      live.delete(child)
    },
    signal(sig) {
      if (child && child.exitCode === null) child.kill(sig)
    },
    async restart() {
      await server.kill()
      await server.start()
    },
    async stop() {
      await server.kill()
      fs.rmSync(dir, {recursive: true, force: true})
    },
  }
  try {
    await server.start()
  } catch (err) {
    await server.stop()
    throw err
  }
  return server
}

export const etcdSkipReason = haveEtcd ? false : `etcd not installed at ${ETCD_BIN} (apt-get install -y etcd-server)`

/** For the README/CI command: is etcdctl new enough to talk v3? */
export const etcdVersion = (): string =>
  haveEtcd ? spawnSync(ETCD_BIN, ['--version'], {encoding: 'utf8'}).stdout.split('\n')[0]! : 'none'

export interface SharedEtcd {
  /** The running server (throws if it did not start). */
  readonly server: EtcdServer
  /** Delete every key: a clean slate for the next test (revisions keep counting; that is fine). */
  wipe(): Promise<void>
}

/** One etcd for the enclosing describe(): started in its before hook, stopped in its after hook. */
export function sharedEtcd(): SharedEtcd {
  let server: EtcdServer | undefined
  let admin: Etcd3 | undefined
  before(async () => {
    server = await startEtcd()
    admin = new Etcd3({hosts: server.endpoint})
  })
  after(async () => {
    admin?.close()
    await server?.stop()
  })
  return {
    get server() {
      if (!server) throw new Error('etcd did not start')
      return server
    },
    wipe: async () => {
      if (!admin) throw new Error('etcd did not start')
      await admin.delete().all()
    },
  }
}
