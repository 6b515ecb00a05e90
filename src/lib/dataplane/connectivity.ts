// Reachability between wired pods and the host (`ipamctl cni connectivity`): a TCP exchange from inside each
// network namespace to every other party's address of each family. Traffic only goes to pod addresses and to
// addresses of this host, so none leaves the host.
//
// Node creates a socket's file descriptor lazily, on the event loop, so a socket cannot be made inside a pod
// namespace by switching the main thread for a moment (as rtnl.ts does with netlink sockets). Each pod gets a
// probe child process instead: it joins the pod's namespace with setns(2) before it opens anything, listens on the
// pod's addresses, and makes the connections it is asked for. The host side is this process.
import {type ChildProcess, spawn} from 'node:child_process'
import {closeSync, openSync} from 'node:fs'
import {createRequire} from 'node:module'
import net from 'node:net'
import {type Family, tryParseIp} from '../net/cidr.js'
import {DataplaneError, NetnsNotFoundError} from './errors.js'
import {isHostLinkMarker} from './names.js'
import {AF_INET, AF_INET6, bytesToIp, hostSocket, nl} from './rtnl.js'
import {netnsPath} from './netns.js'

export interface Party {
  /** What the matrix calls it: `host`, or the pod's name. */
  name: string
  /** The pod's namespace (name or path); undefined for the host. */
  netns?: string
  /** Addresses without prefix length. */
  addresses: string[]
}

export interface Probe {
  from: string
  to: string
  family: Family
  address: string
  ok: boolean
  /** Why it failed (timeout, refused, unreachable). */
  error?: string
  ms: number
}

export const DEFAULT_PROBE_TIMEOUT_MS = 2000

/** What a probe child runs: join the namespace on fd 3, listen on the given addresses, then serve connect requests. */
const PROBE_CHILD = `
const {setns, CLONE_NEWNET} = require(process.env.IPAMCTL_NETNS_MODULE)
setns(3, CLONE_NEWNET)
const net = require('node:net')
const rl = require('node:readline')
const send = (o) => process.stdout.write(JSON.stringify(o) + '\\n')
const addrs = JSON.parse(process.env.IPAMCTL_PROBE_ADDRESSES)
const ports = {}
let pending = addrs.length
const ready = () => { if (--pending === 0) send({ready: ports}) }
if (addrs.length === 0) send({ready: ports})
for (const a of addrs) {
  const s = net.createServer((c) => c.end('pong'))
  s.on('error', (e) => { ports[a] = 'error: ' + e.message; ready() })
  s.listen({host: a, port: 0, ipv6Only: a.includes(':')}, () => { ports[a] = s.address().port; ready() })
}
rl.createInterface({input: process.stdin}).on('line', (line) => {
  const q = JSON.parse(line)
  const t0 = Date.now()
  const sock = net.connect({host: q.host, port: q.port, timeout: q.timeout})
  let data = ''
  const done = (ok, error) => { sock.destroy(); send({id: q.id, ok, error, ms: Date.now() - t0}) }
  sock.on('data', (d) => (data += d))
  sock.on('end', () => done(data === 'pong', data === 'pong' ? undefined : 'unexpected answer'))
  sock.on('timeout', () => done(false, 'timeout'))
  sock.on('error', (e) => done(false, e.code || e.message))
})
process.stdin.on('end', () => process.exit(0))
`

interface Prober {
  ports: Record<string, number>
  connect(host: string, port: number, timeoutMs: number): Promise<{ok: boolean; error?: string; ms: number}>
  close(): void
}

/** A pod's probe child, started and listening. */
async function podProber(party: Party): Promise<Prober> {
  let fd: number
  try {
    fd = openSync(netnsPath(party.netns!), 'r')
  } catch (err) {
    throw new NetnsNotFoundError(netnsPath(party.netns!), (err as Error).message)
  }
  let child: ChildProcess
  try {
    child = spawn(process.execPath, ['-e', PROBE_CHILD], {
      stdio: ['pipe', 'pipe', 'pipe', fd],
      env: {
        PATH: process.env.PATH,
        // From this file, as its bundle resolves packages: an npm-installed package has netns in dist/node_modules.
        IPAMCTL_NETNS_MODULE: createRequire(import.meta.url).resolve('netns'),
        IPAMCTL_PROBE_ADDRESSES: JSON.stringify(party.addresses),
      },
    })
  } finally {
    closeSync(fd)
  }
  const waiting = new Map<number, (r: {ok: boolean; error?: string; ms: number}) => void>()
  let stderr = ''
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()))
  let buf = ''
  let onReady: ((ports: Record<string, number | string>) => void) | undefined
  child.stdout!.on('data', (d: Buffer) => {
    buf += d.toString()
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      const msg = JSON.parse(buf.slice(0, nl)) as {ready?: Record<string, number | string>; id?: number; ok?: boolean}
      buf = buf.slice(nl + 1)
      if (msg.ready) onReady?.(msg.ready)
      else if (msg.id !== undefined) {
        waiting.get(msg.id)?.(msg as {ok: boolean; error?: string; ms: number})
        waiting.delete(msg.id)
      }
    }
  })
  const ports = await new Promise<Record<string, number | string>>((resolve, reject) => {
    onReady = resolve
    child.on('exit', (code) =>
      reject(new DataplaneError(`probe in ${party.netns} exited (${code}): ${stderr.trim().split('\n')[0] ?? ''}`)),
    )
    child.on('error', reject)
  }).catch((err: unknown) => {
    child.kill('SIGKILL')
    throw err
  })
  child.on('exit', () => {
    for (const [, r] of waiting) r({ok: false, error: 'probe exited', ms: 0})
    waiting.clear()
  })
  let next = 0
  const prober: Prober = {
    ports: Object.fromEntries(Object.entries(ports).filter((e): e is [string, number] => typeof e[1] === 'number')),
    connect(host, port, timeoutMs) {
      const id = next++
      return new Promise((resolve) => {
        waiting.set(id, resolve)
        child.stdin!.write(`${JSON.stringify({id, host, port, timeout: timeoutMs})}\n`)
      })
    },
    close() {
      child.stdin!.end()
      setTimeout(() => child.kill('SIGKILL'), 1000).unref()
    },
  }
  return prober
}

/** The host's side: listeners on its addresses in this process, connections from it. */
async function hostProber(party: Party): Promise<Prober> {
  const servers: net.Server[] = []
  const ports: Record<string, number> = {}
  for (const a of party.addresses) {
    const s = net.createServer((c) => c.end('pong'))
    await new Promise<void>((resolve) => {
      s.once('error', () => resolve())
      s.listen({host: a, port: 0, ipv6Only: a.includes(':')}, () => {
        ports[a] = (s.address() as net.AddressInfo).port
        resolve()
      })
    })
    servers.push(s)
  }
  return {
    ports,
    connect: (host, port, timeoutMs) =>
      new Promise((resolve) => {
        const t0 = Date.now()
        const sock = net.connect({host, port, timeout: timeoutMs})
        let data = ''
        const done = (ok: boolean, error?: string) => {
          sock.destroy()
          resolve({ok, error, ms: Date.now() - t0})
        }
        sock.on('data', (d) => (data += d.toString()))
        sock.on('end', () => done(data === 'pong', data === 'pong' ? undefined : 'unexpected answer'))
        sock.on('timeout', () => done(false, 'timeout'))
        sock.on('error', (e: NodeJS.ErrnoException) => done(false, e.code ?? e.message))
      }),
    close() {
      for (const s of servers) s.close()
    },
  }
}

const familyOf = (a: string): Family | undefined => tryParseIp(a)?.family

/**
 * Every ordered pair of parties: one TCP exchange from the first (inside its namespace) to each address of the
 * second whose family the first has an address of (a pod with eth0 and eth1 is reached on both). Probes run concurrently; each is bounded by `timeoutMs`.
 */
export async function probeConnectivity(parties: readonly Party[], opts: {timeoutMs?: number} = {}): Promise<Probe[]> {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS
  const probers: Prober[] = []
  try {
    for (const p of parties) probers.push(p.netns === undefined ? await hostProber(p) : await podProber(p))
    const jobs: Promise<Probe>[] = []
    for (const [i, from] of parties.entries())
      for (const [j, to] of parties.entries()) {
        if (i === j) continue
        for (const address of to.addresses) {
          const family = familyOf(address)
          if (family === undefined || !from.addresses.some((a) => familyOf(a) === family)) continue
          const port = probers[j]!.ports[address]
          if (port === undefined) {
            jobs.push(
              Promise.resolve({from: from.name, to: to.name, family, address, ok: false, error: 'no listener', ms: 0}),
            )
            continue
          }
          jobs.push(
            probers[i]!.connect(address, port, timeoutMs).then((r) => ({
              from: from.name,
              to: to.name,
              family,
              address,
              ...r,
            })),
          )
        }
      }
    return await Promise.all(jobs)
  } finally {
    for (const p of probers) p.close()
  }
}

/**
 * The host's own addresses to probe pods against: per family, the first global address on an interface that is up
 * and is neither loopback nor a pod's host end (ipamctl marks those). None of a family: that family has no host
 * column.
 */
export async function hostAddresses(): Promise<string[]> {
  const sock = hostSocket()
  try {
    const links = await nl('failed to list host interfaces', sock.links())
    const usable = new Set(
      links.filter((l) => l.up && l.ifname !== 'lo' && !isHostLinkMarker(l.alias)).map((l) => l.index),
    )
    const out: string[] = []
    for (const af of [AF_INET, AF_INET6]) {
      const addrs = await nl('failed to list host addresses', sock.addresses(af))
      const a = addrs.find((x) => x.scope === 0 && usable.has(x.index) && (x.local ?? x.address))
      if (a) out.push(bytesToIp((a.local ?? a.address)!))
    }
    return out
  } finally {
    sock.close()
  }
}
