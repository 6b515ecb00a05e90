// The agent running a plugin process's ADD or DEL whole (`/v1/invoke`, docs/startup.md#the-agent-runs-the-invocation):
// what it runs is byte for byte what the agent-first entry prints and logs for the same agent; the log lines are the
// plugin process's (its pid, its environment's secrets); it runs nothing for a process the kernel says sees other
// files or is another user; what it would send to the datastore is handed back. An in-process agent on a memory
// store, asked over its real socket, from this process and from child processes (the kernel's view of the peer).
import assert from 'node:assert/strict'
import {spawnSync} from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {after, before, describe, it} from 'node:test'
import type {RunningAgent} from '../../../src/lib/agent/agent.ts'
import type {PluginIo} from '../../../src/lib/cni/skel.ts'
import {makeCtx} from '../../../src/lib/ipam/context.ts'
import {createPools} from '../../../src/lib/ipam/pool-admin.ts'
import {type HeldOutput, runAgentFirst} from '../../../src/lib/node-ipam/agent-first.ts'
import {MemoryStore} from '../../../src/lib/store/memory.ts'
import type {DatastoreSettings} from '../../../src/lib/store/settings.ts'
import {agentHttp, startAgentOn} from '../../support/agent.ts'
import {runProcess} from '../../support/process.ts'
import {ensureBuilt, ROOT} from '../../commands/helpers.ts'

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-invoke-'))
const socket = path.join(tmp, 'agent.sock')
const settings: DatastoreSettings = {
  type: 'embedded',
  path: path.join(tmp, 'ipam.db'),
  etcdEndpoints: [],
  timeoutMs: 5000,
  sources: {},
}
let agent: RunningAgent

before(async () => {
  const store = new MemoryStore()
  await createPools(makeCtx(store), [{name: 'p4', cidr: '10.66.0.0/16', blockSize: 26}])
  agent = await startAgentOn(store, settings, socket)
})
after(async () => {
  await agent?.stop()
  fs.rmSync(tmp, {recursive: true, force: true})
})

let n = 0
/** An invocation: its netconf (its own log file) and environment. */
function invocation(command: 'ADD' | 'DEL', cid: string, extra: Record<string, unknown> = {}, env: object = {}) {
  const log = path.join(tmp, `cni-${++n}.log`)
  const conf = JSON.stringify({
    cniVersion: '1.0.0',
    name: 'net',
    type: 'ipamctl-ipam',
    nodename: 'node-1',
    datastore_path: settings.path,
    ipamctl_agent_socket: socket,
    log_file_path: log,
    ipam: {type: 'ipamctl-ipam', ipv4_pools: ['10.66.0.0/16']},
    ...extra,
  })
  const e: Record<string, string> = {
    PATH: '/usr/bin:/bin',
    CNI_COMMAND: command,
    CNI_CONTAINERID: cid,
    CNI_NETNS: '/var/run/netns/x',
    CNI_IFNAME: 'eth0',
    CNI_PATH: '/opt/cni/bin',
    CNI_ARGS: 'K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0',
    ...env,
  }
  return {conf, env: e, log}
}

const readLog = (file: string) => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '')
/** Log text without the leading time of each line, which differs between two runs. */
const untimed = (text: string) => text.replace(/^\S+ /gm, '')

const untimedOutput = (output: HeldOutput) => output.map(([fd, text]) => [fd, untimed(text)])

/** POST `body` to `route` on the agent's socket from this process. */
const post = (route: string, body: unknown) => agentHttp(socket, 'POST', route, body)

/** The invocation run by the agent: exit code, output and log, as `/v1/invoke` answers them. */
async function invoked(inv: {conf: string; env: Record<string, string>; log: string}, pid = process.pid) {
  const r = await post('/v1/invoke', {env: inv.env, stdin: Buffer.from(inv.conf).toString('latin1'), pid})
  assert.equal(r.status, 200, JSON.stringify(r.body))
  return {code: r.body.exit, output: untimedOutput(r.body.output as HeldOutput), log: untimed(readLog(inv.log))}
}

/** The same invocation run by the agent-first entry in this process, asking the agent over its socket. */
async function agentFirst(inv: {conf: string; env: Record<string, string>; log: string}) {
  const output: HeldOutput = []
  const io: PluginIo = {
    getenv: (name) => inv.env[name],
    env: inv.env,
    readStdin: async () => Buffer.from(inv.conf),
    stdout: {write: (s: string) => output.push([1, s])},
    stderr: {write: (s: string) => output.push([2, s])},
  }
  const code = await runAgentFirst(io)
  return {code, output: untimedOutput(output), log: untimed(readLog(inv.log))}
}

const counters = async () => {
  const r = await agentHttp(socket, 'GET', '/v1/status')
  return (r.body.counters as {invocations: {run: number; handedOver: number; refused: number}}).invocations
}

describe('/v1/invoke: the agent runs the invocation', () => {
  it('an ADD, a DEL and a failing ADD: exactly what the agent-first entry prints and logs', async () => {
    // The same container and address each time, so that the two runs' lines compare: ADD, then DEL, by one path,
    // then by the other.
    const runs = []
    for (const run of [invoked, agentFirst]) {
      const add = await run(invocation('ADD', 'same', {}, {CNI_ARGS: 'K8S_POD_NAMESPACE=default;IP=10.66.0.9'}))
      const del = await run(invocation('DEL', 'same'))
      const bad = await run(invocation('ADD', 'other', {ipam: {type: 'ipamctl-ipam', ipv4_pools: ['10.99.0.0/16']}}))
      runs.push({add, del, bad})
    }
    const [agentRan, here] = runs
    assert.equal(agentRan!.add.code, 0)
    assert.match(JSON.stringify(agentRan!.add.output), /"address\\": \\"10\.66\.0\.9\/32\\"/)
    assert.match(agentRan!.add.log, /assigned addresses ips=10\.66\.0\.9\/32 handle=net\.same/)
    assert.match(agentRan!.del.log, /released addresses ips=10\.66\.0\.9/)
    assert.equal(agentRan!.bad.code, 1)
    assert.match(agentRan!.bad.log, /ERROR/)
    assert.deepEqual(agentRan, here)
  })

  it("the log lines are the plugin process's: its pid, and its environment's secrets redacted", async () => {
    const secret = 'hunter2-not-in-the-agents-env'
    const inv = invocation(
      'DEL',
      'secretive',
      {log_level: 'debug'},
      {IPAMCTL_API_TOKEN: secret, CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0;X=${secret}`},
    )
    assert.equal(process.env.IPAMCTL_API_TOKEN, undefined)
    const r = await invoked(inv, 4242)
    assert.equal(r.code, 0)
    const log = readLog(inv.log)
    assert.match(log, /\[DEBUG\]\[4242\] ipamctl-ipam DEL .*CNI environment .*X=\[REDACTED\]/)
    assert.match(log, /\[INFO\]\[4242\] ipamctl-ipam DEL .*no addresses to release/)
    assert.ok(!log.includes(secret), log)
    assert.ok(!JSON.stringify(r.output).includes(secret))
    assert.match(JSON.stringify(r.output), /\[DEBUG\]\[4242\]/)
  })

  it('an invocation for another node is handed back with the answer, and nothing is written', async () => {
    const inv = invocation('ADD', 'elsewhere', {nodename: 'node-2'})
    const r = await post('/v1/invoke', {env: inv.env, stdin: inv.conf, pid: process.pid})
    assert.equal(r.status, 200)
    const h = r.body.handover as {
      socket: string
      outcome: {kind: string; status: number; body: {error: {direct: boolean}}}
    }
    assert.equal(h.socket, socket)
    assert.equal(h.outcome.kind, 'answered')
    assert.equal(h.outcome.status, 421)
    assert.equal(h.outcome.body.error.direct, true)
    assert.equal(readLog(inv.log), '')
  })

  it('a body that is not an invocation is refused in one line, and runs nothing', async () => {
    const before = await counters()
    for (const body of [
      {env: {}, stdin: 1, pid: 1},
      {env: 'x', stdin: '', pid: 1},
      {env: {}, stdin: '', pid: 0},
    ]) {
      const r = await post('/v1/invoke', body)
      assert.equal(r.status, 400)
      assert.match((r.body.error as {message: string}).message, /^agent request: "(env|stdin|pid)" must be /)
    }
    assert.deepEqual(await counters(), before)
  })
})

describe('/v1/invoke: only for a process that sees what the agent sees', () => {
  // A child process that POSTs one invocation (a DEL) and prints the reply: the agent asks the kernel who it is.
  const child = (cwd: string, wrap: string[] = []) => {
    const inv = invocation('DEL', `child-${n}`)
    const code = `const http = require('node:http'); const body = ${JSON.stringify(
      JSON.stringify({env: inv.env, stdin: inv.conf, pid: 1}),
    )}; const req = http.request({socketPath: ${JSON.stringify(socket)}, method: 'POST', path: '/v1/invoke'}, (res) => { let t = ''; res.on('data', (d) => (t += d)); res.on('end', () => console.log(JSON.stringify({status: res.statusCode, body: JSON.parse(t)}))) }); req.end(body)`
    const args = [...wrap, process.execPath, '-e', code]
    return {inv, run: () => runProcess(args[0]!, args.slice(1), {cwd, env: {PATH: process.env.PATH}})}
  }
  const reply = (stdout: string) =>
    JSON.parse(stdout) as {status: number; body: {exit?: number; error?: {message: string; direct?: boolean}}}

  it('another process in the same namespaces and working directory: run', async () => {
    const before = await counters()
    const {inv, run} = child(process.cwd())
    const p = await run()
    assert.equal(p.code, 0, p.stderr)
    assert.equal(reply(p.stdout).body.exit, 0)
    assert.match(readLog(inv.log), /no addresses to release/)
    assert.equal((await counters()).run, before.run + 1)
  })

  it('another working directory: refused with direct (the plugin runs it itself), nothing written', async () => {
    const before = await counters()
    const {inv, run} = child('/')
    const p = await run()
    const r = reply(p.stdout)
    assert.equal(r.status, 421)
    assert.equal(r.body.error?.direct, true)
    assert.equal(r.body.error?.message, `not run by the agent: the plugin runs in /, the agent in ${process.cwd()}`)
    assert.equal(readLog(inv.log), '')
    assert.equal((await counters()).refused, before.refused + 1)
  })

  it('another mount namespace: refused', async (t) => {
    if (process.getuid?.() !== 0 || spawnSync('unshare', ['-m', 'true']).status !== 0)
      return t.skip('needs root and unshare(1) for a mount namespace')
    const {inv, run} = child(process.cwd(), ['unshare', '-m'])
    const r = reply((await run()).stdout)
    assert.equal(r.status, 421)
    assert.equal(r.body.error?.message, 'not run by the agent: the plugin runs in another mount namespace')
    assert.equal(readLog(inv.log), '')
  })

  it('another user: refused, whatever the request says', async (t) => {
    if (process.getuid?.() !== 0 || spawnSync('setpriv', ['--help']).status !== 0)
      return t.skip('needs root and setpriv(1) to run as another user')
    // The socket is the agent's group's (0660): open it to the other user for this test only.
    fs.chmodSync(socket, 0o666)
    fs.chmodSync(tmp, 0o755)
    try {
      const {inv, run} = child(process.cwd(), ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'])
      const r = reply((await run()).stdout)
      assert.equal(r.status, 421)
      assert.equal(r.body.error?.message, `not run by the agent: the plugin runs as uid 65534, the agent as 0`)
      assert.equal(readLog(inv.log), '')
    } finally {
      fs.chmodSync(socket, 0o660)
      fs.chmodSync(tmp, 0o700)
    }
  })
})

describe('/v1/invoke: the ipamctl-ipam process', () => {
  // The plugin as a runtime runs it: the bin, the CNI environment (plus PATH), the netconf on stdin.
  const plugin = (inv: {conf: string; env: Record<string, string>}, cwd: string) =>
    runProcess(process.execPath, [path.join(ROOT, 'bin', 'ipamctl-ipam.cjs')], {cwd, env: inv.env, stdin: inv.conf})

  it('is run by the agent; from another working directory it runs the invocation itself, with the same result', async () => {
    ensureBuilt()
    const before = await counters()
    const results = []
    for (const cwd of [process.cwd(), '/']) {
      const cid = `proc-${cwd === '/' ? 'root' : 'here'}`
      const add = await plugin(invocation('ADD', cid, {}, {CNI_ARGS: 'K8S_POD_NAMESPACE=default;IP=10.66.1.1'}), cwd)
      const del = invocation('DEL', cid)
      const p = await plugin(del, cwd)
      results.push({add: [add.code, add.stdout], del: [p.code, p.stdout], log: untimed(readLog(del.log))})
    }
    const after = await counters()
    assert.deepEqual([after.run - before.run, after.refused - before.refused], [2, 2])
    assert.equal(results[0]!.add[0], 0)
    assert.match(String(results[0]!.add[1]), /"address": "10\.66\.1\.1\/32"/)
    assert.match(results[0]!.log, /released addresses ips=10\.66\.1\.1 handle=net\.proc-here/)
    // The same output and the same lines but for the container's name and the process's pid.
    const same = (log: string) => log.replaceAll('proc-root', 'proc-here').replace(/\]\[\d+\] /g, '][pid] ')
    assert.deepEqual({...results[1], log: same(results[1]!.log)}, {...results[0], log: same(results[0]!.log)})
  })
})
