// ipamctl-ipam's agent-first entry (src/plugins/ipam/agent-main.ts, docs/startup.md#the-agent-first-entry): what it
// finishes itself is byte for byte what the full plugin (main.ts) prints and logs for the same agent answer; what it
// hands over it has left without a trace (no output, no log line), and the agent is not asked a second time.
// In process, against a stand-in agent on a unix socket and a temp embedded datastore.
import assert from 'node:assert/strict'
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import {after, before, describe, it} from 'node:test'
import {makeCtx} from '../../../src/lib/ipam/context.ts'
import {createPools} from '../../../src/lib/ipam/pool-admin.ts'
import {SqliteStore} from '../../../src/lib/store/sqlite.ts'
import type {PluginIo} from '../../../src/lib/cni/skel.ts'
import {createRequire} from 'node:module'
import {AGENT_FIRST, main as agentFirst} from '../../../src/plugins/ipam/agent-main.ts'
import {main as full} from '../../../src/plugins/ipam/main.ts'
import type {Handover} from '../../../src/plugins/ipam/process.ts'
import {runProcess} from '../../support/process.ts'
import {ensureBuilt, ROOT} from '../../commands/helpers.ts'

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-agent-first-'))
const db = path.join(tmp, 'ipam.db')

/** A stand-in agent: `reply` answers each request (undefined: the connection is dropped without a reply). */
type Reply = {status: number; body: unknown} | undefined
let reply: (url: string) => Reply = () => undefined
let requests: string[] = []
const socket = path.join(tmp, 'agent.sock')
const server = http.createServer((req, res) => {
  req.resume()
  req.on('end', () => {
    requests.push(req.url ?? '')
    const r = reply(req.url ?? '')
    if (!r) return void res.socket?.destroy()
    // With its length, as the agent sends every reply (bin/start.cjs `forward` reads them by it).
    const text = JSON.stringify(r.body)
    res.writeHead(r.status, {'content-type': 'application/json', 'content-length': Buffer.byteLength(text)}).end(text)
  })
})

before(async () => {
  const store = SqliteStore.open(db)
  await createPools(makeCtx(store), [{name: 'p', cidr: '10.9.0.0/16', blockSize: 26}])
  await store.close()
  await new Promise<void>((resolve) => server.listen(socket, resolve))
})
after(async () => {
  await new Promise((resolve) => server.close(resolve))
  fs.rmSync(tmp, {recursive: true, force: true})
})

let n = 0
/** One invocation's netconf (its own log file) and environment. */
function invocation(command: 'ADD' | 'DEL', agentSocket = socket) {
  const log = path.join(tmp, `cni-${++n}.log`)
  const conf = JSON.stringify({
    cniVersion: '1.0.0',
    name: 'net',
    type: 'ipamctl-ipam',
    nodename: 'n1',
    datastore_path: db,
    ipam_lock_file: path.join(tmp, 'ipam.lock'),
    ipamctl_agent_socket: agentSocket,
    log_file_path: log,
    ipam: {type: 'ipamctl-ipam', ipv4_pools: ['10.9.0.0/16']},
  })
  const env: Record<string, string> = {
    CNI_COMMAND: command,
    CNI_CONTAINERID: `c${n}`,
    CNI_NETNS: '/var/run/netns/x',
    CNI_IFNAME: 'eth0',
    CNI_PATH: '/opt/cni/bin',
    CNI_ARGS: 'K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0',
  }
  return {conf, env, log}
}

/** An in-memory io for `inv`; `out` collects what it writes. */
function memIo(inv: {conf: string; env: Record<string, string>}) {
  const out = {stdout: '', stderr: ''}
  const io: PluginIo = {
    getenv: (name) => inv.env[name],
    readStdin: async () => Buffer.from(inv.conf),
    stdout: {write: (s: string) => (out.stdout += s)},
    stderr: {write: (s: string) => (out.stderr += s)},
  }
  return {io, out}
}

const readLog = (file: string) => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '')
/** Log text without the leading time of each line, which differs between two runs. */
const untimed = (text: string) => text.replace(/^\S+ /gm, '')

/** The same invocation through the agent-first entry and through the full plugin alone: what each printed and logged. */
async function both(command: 'ADD' | 'DEL') {
  const runs = []
  for (const run of [agentFirst, full]) {
    const inv = invocation(command)
    // The same container for both, so that the lines compare.
    inv.env.CNI_CONTAINERID = `same-${command}`
    const {io, out} = memIo(inv)
    const code = await run(io)
    runs.push({code, stdout: out.stdout, stderr: untimed(out.stderr), log: untimed(readLog(inv.log))})
  }
  return runs
}

describe('the agent-first entry', () => {
  it('an ADD the agent answers: exit code, stdout, stderr and log file exactly as the full plugin', async () => {
    requests = []
    reply = () => ({
      status: 200,
      body: {
        result: {ips: [{address: '10.9.0.5/26'}], routes: [{dst: '10.9.0.0/26'}], dns: {}},
        log: ['claimed block 10.9.0.0/26 for node n1'],
      },
    })
    const [first, whole] = await both('ADD')
    assert.equal(first!.code, 0)
    assert.match(first!.stdout, /"address": "10\.9\.0\.5\/26"/)
    assert.match(first!.log, /claimed block 10\.9\.0\.0\/26 for node n1\n.*assigned addresses ips=10\.9\.0\.5\/26/)
    assert.deepEqual(first, whole)
    assert.deepEqual(requests, ['/v1/assign', '/v1/assign'])
  })

  it("an IPAM error the agent answers is the plugin's error, exactly as the full plugin reports it", async () => {
    reply = () => ({status: 500, body: {error: {type: 'ExhaustedError', message: 'no more free addresses'}}})
    const [first, whole] = await both('ADD')
    assert.equal(first!.code, 1)
    assert.match(first!.stdout, /"code": 999,\n\s+"msg": "no more free addresses"/)
    assert.match(first!.log, /ERROR.*no more free addresses/)
    assert.deepEqual(first, whole)
  })

  it('a DEL the agent answers: the same lines as the full plugin', async () => {
    reply = () => ({status: 200, body: {released: ['10.9.0.5'], missing: [], log: []}})
    const [first, whole] = await both('DEL')
    assert.equal(first!.code, 0)
    assert.match(first!.log, /released addresses ips=10\.9\.0\.5/)
    assert.deepEqual(first, whole)
  })

  it('no agent socket: hands over having written nothing, and the full plugin does the ADD on the datastore', async () => {
    requests = []
    const inv = invocation('ADD', path.join(tmp, 'no-agent.sock'))
    const {io, out} = memIo(inv)
    const r = await agentFirst(io)
    assert.equal(typeof r, 'object')
    const handover = r as Handover
    assert.equal(handover.stdin.toString(), inv.conf)
    assert.equal(handover.agent, undefined)
    assert.deepEqual(out, {stdout: '', stderr: ''})
    assert.equal(readLog(inv.log), '')
    assert.equal(await full(io, handover), 0)
    assert.match(out.stdout, /"address": "10\.9\.\d+\.\d+\/26"/)
    assert.match(readLog(inv.log), /assigned addresses .*via=datastore/)
    assert.deepEqual(requests, [])
  })

  it('an agent that goes silent: handed over with its answer, and the full plugin does not ask it again', async () => {
    requests = []
    reply = () => undefined
    const inv = invocation('ADD')
    const {io, out} = memIo(inv)
    const r = await agentFirst(io)
    const handover = r as Handover
    assert.equal(handover.agent?.socket, socket)
    assert.equal(handover.agent?.outcome.kind, 'unknown')
    assert.deepEqual(out, {stdout: '', stderr: ''})
    assert.equal(readLog(inv.log), '')
    assert.equal(await full(io, handover), 0)
    assert.match(out.stdout, /"address": "10\.9\.\d+\.\d+\/26"/)
    const log = readLog(inv.log)
    // One warning and one assignment, as a single run of the full plugin logs them.
    assert.equal(log.match(/using the datastore directly/g)?.length, 1, log)
    assert.equal(log.match(/assigned addresses .*via=datastore/g)?.length, 1, log)
    assert.deepEqual(requests, ['/v1/assign'])
  })

  it('an agent that does not serve this node: handed over, and the full plugin uses the datastore', async () => {
    requests = []
    reply = () => ({
      status: 409,
      body: {error: {type: 'ValidationError', message: 'this agent serves n2', direct: true}},
    })
    const inv = invocation('DEL')
    const {io, out} = memIo(inv)
    const handover = (await agentFirst(io)) as Handover
    assert.equal(handover.agent?.outcome.kind, 'answered')
    assert.deepEqual(out, {stdout: '', stderr: ''})
    assert.equal(await full(io, handover), 0)
    const log = readLog(inv.log)
    assert.equal(log.match(/does not serve this request \(this agent serves n2\)/g)?.length, 1, log)
    assert.match(log, /no addresses to release .*via=datastore/)
    assert.deepEqual(requests, ['/v1/release'])
  })
})

// What a plugin process did: its exit, output, and the bundles it ran (start.cjs names each one with
// IPAMCTL_DEBUG_BUNDLE=1).
const exec = async (inv: {conf: string; env: Record<string, string>}) => {
  const p = await runProcess(process.execPath, [path.join(ROOT, 'bin', 'ipamctl-ipam.cjs')], {
    env: {PATH: process.env.PATH, ...inv.env, IPAMCTL_DEBUG_BUNDLE: '1'},
    stdin: inv.conf,
  })
  const bundles = [...p.stderr.matchAll(/\/dist\/cni\/(\S+)\.cjs: code cache used\n/g)].map((m) => m[1])
  return {...p, bundles, stderr: p.stderr.replace(/^.*\/dist\/cni\/\S+\.cjs: code cache \w+\n/gm, '')}
}
const bundlesRun = async (inv: {conf: string; env: Record<string, string>}) => {
  const p = await exec(inv)
  assert.equal(p.code, 0, p.stdout + p.stderr)
  return p.bundles
}
/** An agent older than /v1/invoke: it answers that route as an unknown operation, and `other` otherwise. */
const withoutInvoke =
  (other: (url: string) => Reply) =>
  (url: string): Reply =>
    url === '/v1/invoke'
      ? {status: 404, body: {error: {type: 'ValidationError', message: 'unknown operation', direct: true}}}
      : other(url)

describe('bin/start.cjs and the agent-first entry', () => {
  it("starts it for AGENT_FIRST's commands and netconf key, and the default socket", () => {
    const {FIRST} = createRequire(import.meta.url)(path.join(ROOT, 'bin', 'start.cjs')) as {
      FIRST: Record<string, unknown>
    }
    assert.deepEqual(FIRST['ipamctl-ipam'], {entry: 'ipamctl-ipam-agent', ...AGENT_FIRST})
  })

  it('the agent-first bundle is made without the host lock and better-sqlite3, which the full plugin has', () => {
    ensureBuilt()
    const bundle = (name: string) => fs.readFileSync(path.join(ROOT, 'dist', 'cni', `${name}.cjs`), 'utf8')
    for (const s of ['acquireHostLock', 'better-sqlite3']) {
      assert.ok(bundle('ipamctl-ipam').includes(s), `the full plugin bundle has ${s}`)
      assert.ok(!bundle('ipamctl-ipam-agent').includes(s), `the agent-first bundle has ${s}`)
    }
  })

  it('a netconf that names an agent socket runs the agent-first bundle alone; one without, the full plugin alone', async (t) => {
    if (fs.existsSync(AGENT_FIRST.defaultSocket)) return t.skip(`${AGENT_FIRST.defaultSocket} exists on this machine`)
    ensureBuilt()
    requests = []
    reply = withoutInvoke(() => ({status: 200, body: {result: {ips: [{address: '10.9.0.7/26'}], dns: {}}, log: []}}))
    assert.deepEqual(await bundlesRun(invocation('ADD')), ['ipamctl-ipam-agent'])
    // The invocation was offered to the agent whole first, then asked for as the agent-first entry asks.
    assert.deepEqual(requests, ['/v1/invoke', '/v1/assign'])
    const direct = invocation('ADD')
    const conf = JSON.parse(direct.conf) as Record<string, unknown>
    delete conf[AGENT_FIRST.netconfKey]
    assert.deepEqual(await bundlesRun({...direct, conf: JSON.stringify(conf)}), ['ipamctl-ipam'])
    // Named but absent: nothing to forward to, and the agent-first entry hands over.
    assert.deepEqual(await bundlesRun(invocation('DEL', path.join(tmp, 'none.sock'))), [
      'ipamctl-ipam-agent',
      'ipamctl-ipam',
    ])
  })
})

// bin/start.cjs `forward` (docs/startup.md#the-agent-runs-the-invocation): the invocation offered whole to the
// agent, against the stand-in; test/lib/agent/invoke.test.ts has the real agent's side.
describe('bin/start.cjs forwarding an invocation to the agent', () => {
  it('an invocation the agent ran: its output and exit code exactly, no bundle loaded, the agent asked once', async () => {
    ensureBuilt()
    requests = []
    const sent: unknown[] = []
    reply = (url) =>
      url === '/v1/invoke'
        ? {
            status: 200,
            body: {
              exit: 3,
              output: [
                [1, 'out 1\n'],
                [2, 'err ü\n'],
                [1, 'out 2\n'],
              ],
            },
          }
        : undefined
    const inv = invocation('ADD')
    server.once('request', (req: http.IncomingMessage) => {
      const parts: Buffer[] = []
      req.on('data', (b: Buffer) => parts.push(b))
      req.on('end', () => sent.push(JSON.parse(Buffer.concat(parts).toString('utf8'))))
    })
    const p = await exec(inv)
    assert.deepEqual([p.code, p.stdout, p.stderr, p.bundles], [3, 'out 1\nout 2\n', 'err ü\n', []])
    assert.deepEqual(requests, ['/v1/invoke'])
    // What it sent: its whole environment, stdin as Latin-1 text, its pid, and nothing it says about itself beyond.
    const body = sent[0] as {env: Record<string, string>; stdin: string; pid: number}
    assert.deepEqual(Object.keys(body).sort(), ['env', 'pid', 'stdin'])
    assert.equal(Buffer.from(body.stdin, 'latin1').toString('utf8'), inv.conf)
    assert.equal(body.env.CNI_CONTAINERID, inv.env.CNI_CONTAINERID)
    assert.equal(body.env.CNI_ARGS, inv.env.CNI_ARGS)
    assert.ok(Number.isInteger(body.pid) && body.pid > 0 && body.pid !== process.pid)
  })

  it('no complete reply: the full plugin finishes it on the datastore, and the agent is not asked again', async () => {
    ensureBuilt()
    requests = []
    reply = () => undefined
    const inv = invocation('ADD')
    const p = await exec(inv)
    assert.equal(p.code, 0, p.stdout + p.stderr)
    assert.deepEqual(p.bundles, ['ipamctl-ipam'])
    assert.match(p.stdout, /"address": "10\.9\.\d+\.\d+\/26"/)
    const log = readLog(inv.log)
    assert.equal(
      log.match(/ipamctl agent at .*: the connection closed before a complete reply; using the datastore directly/g)
        ?.length,
      1,
      log,
    )
    assert.match(log, /assigned addresses .*via=datastore/)
    assert.deepEqual(requests, ['/v1/invoke'])
  })

  it('handed over by the agent: the full plugin gets its answer and does not ask again', async () => {
    ensureBuilt()
    requests = []
    const outcome = {
      kind: 'answered',
      status: 421,
      body: {error: {type: 'Misdirected', message: 'this agent serves n2', direct: true}},
    }
    reply = (url) => (url === '/v1/invoke' ? {status: 200, body: {handover: {socket, outcome}}} : undefined)
    const inv = invocation('DEL')
    const p = await exec(inv)
    assert.equal(p.code, 0, p.stdout + p.stderr)
    assert.deepEqual(p.bundles, ['ipamctl-ipam'])
    const log = readLog(inv.log)
    assert.equal(log.match(/does not serve this request \(this agent serves n2\)/g)?.length, 1, log)
    assert.match(log, /no addresses to release .*via=datastore/)
    assert.deepEqual(requests, ['/v1/invoke'])
  })

  it('an error of the agent about the invocation itself: only the full plugin, as for an unknown fate', async () => {
    ensureBuilt()
    requests = []
    reply = (url) => (url === '/v1/invoke' ? {status: 500, body: {error: {type: 'Error', message: 'boom'}}} : undefined)
    const inv = invocation('DEL')
    const p = await exec(inv)
    assert.equal(p.code, 0, p.stdout + p.stderr)
    assert.deepEqual(p.bundles, ['ipamctl-ipam'])
    assert.match(readLog(inv.log), /ipamctl agent at .*: \/v1\/invoke: boom; using the datastore directly/)
    assert.deepEqual(requests, ['/v1/invoke'])
  })
})
