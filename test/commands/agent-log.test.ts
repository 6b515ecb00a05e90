// `ipamctl agent run --log-format json --log-level debug` as a real process: every line is one JSON object with
// the logger's fields; plugin ADDs through it log the pod's assignment, each batch (size, latency, conflicts) is
// a debug line, and a GC pass that decides anything is an info line.
import assert from 'node:assert/strict'
import path from 'node:path'
import {after, before, test} from 'node:test'
import {type AgentProc, addEnv, ipamPluginProc, startAgentProc} from '../support/agent.ts'
import {ensureBuilt, type Sandbox, sandbox} from './helpers.ts'

const NODE = 'node-log'
let sb: Sandbox
let agent: AgentProc | undefined
before(async () => {
  await ensureBuilt()
  sb = sandbox()
  await sb.ok('pool', 'create', 'p4', '--cidr', '10.71.0.0/16')
})
after(() => agent?.proc.kill('SIGKILL'))

interface Line {
  time: string
  level: string
  pid: number
  component: string
  node: string
  msg: string
  [k: string]: unknown
}

const lines = (text: string): Line[] =>
  text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Line)

async function until(what: string, fn: () => boolean): Promise<void> {
  // Up to 60 s: GC passes every 300 ms, but a loaded CI machine can delay the first ones by many seconds.
  for (let i = 0; i < 1200 && !fn(); i++) await new Promise((r) => setTimeout(r, 50))
  assert.ok(fn(), what)
}

test('agent JSON log: every line parses; assignments carry the pod, batches are debug lines, GC decisions info', async () => {
  const socket = path.join(sb.dir, 'agent.sock')
  agent = await startAgentProc(
    [
      '--node',
      NODE,
      '--socket',
      socket,
      '--metrics-address',
      '',
      '--log-format',
      'json',
      '--log-level',
      'debug',
      '--gc-interval',
      '300ms',
      '--gc-grace',
      '0s',
    ],
    {IPAMCTL_DATASTORE_PATH: sb.db},
  )
  const conf = {
    cniVersion: '1.0.0',
    name: 'net1',
    type: 'ipamctl-ipam',
    nodename: NODE,
    datastore_path: sb.db,
    ipam_lock_file: path.join(sb.dir, 'ipam.lock'),
    ipamctl_agent_socket: socket,
    ipam: {type: 'ipamctl-ipam'},
  }
  const runs = await Promise.all(
    ['a1', 'a2', 'a3'].map((c) =>
      ipamPluginProc({...addEnv(c), CNI_ARGS: `K8S_POD_NAMESPACE=ns1;K8S_POD_NAME=pod-${c}`}, conf),
    ),
  )
  for (const r of runs) assert.equal(r.code, 0, r.stdout + r.stderr)
  // No WorkloadEndpoint names these addresses: GC sees them leaked, defers them, then releases them.
  await until('a GC pass released something', () => agent!.log().includes('"msg":"GC released'))
  agent.proc.kill('SIGTERM')
  await agent.exited
  const log = lines(agent.log())
  for (const l of log) {
    assert.match(l.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    assert.ok(['error', 'warning', 'info', 'debug'].includes(l.level), l.level)
    assert.equal(l.component, 'agent')
    assert.equal(l.node, NODE)
    assert.equal(typeof l.pid, 'number')
    assert.equal(typeof l.msg, 'string')
  }
  assert.ok(log.some((l) => l.level === 'info' && l.msg.startsWith('ready on ')))
  // The first ADD on the empty pool made the agent claim a block for this node.
  const claims = log.filter((l) => l.msg.startsWith('claimed block '))
  assert.ok(claims.length >= 1, 'a block claim is logged')
  for (const c of claims) {
    assert.equal(c.level, 'info')
    assert.equal(c.node, NODE)
    assert.match(String(c.block), /^10\.71\.\d+\.\d+\/26$/)
  }
  for (const c of ['a1', 'a2', 'a3']) {
    const a = log.find((l) => l.msg === 'assigned addresses' && l.pod === `ns1/pod-${c}`)
    assert.ok(a, `assignment of ${c}`)
    assert.equal(a.handle, `net1.${c}`)
    assert.equal(a.level, 'info')
    assert.equal(a.netns, `/var/run/netns/${c}`)
  }
  const batches = log.filter((l) => l.msg === 'batch')
  assert.ok(batches.length >= 1)
  for (const b of batches) {
    assert.equal(b.level, 'debug')
    assert.equal(typeof b.size, 'number')
    assert.equal(typeof b.latency_ms, 'number')
    assert.equal(typeof b.conflicts, 'number')
  }
  assert.equal(
    batches.reduce((n, b) => n + (b.size as number), 0),
    3,
    'every assignment was in a batch',
  )
  const decided = log.filter((l) => l.msg === 'GC pass' && l.level === 'info')
  assert.ok(
    decided.some((l) => (l.deferred as number) >= 3),
    'the first pass defers the three leaks',
  )
  assert.ok(
    decided.some((l) => (l.released as number) >= 3),
    'a later pass releases them',
  )
  assert.ok(log.some((l) => l.level === 'info' && l.msg.startsWith('GC released ')))
})

test('agent --log-level rejects an unknown level (exit 2, one line)', async () => {
  const r = await startAgentProc(['--node', NODE, '--socket', path.join(sb.dir, 'x.sock'), '--log-level', 'loud'], {
    IPAMCTL_DATASTORE_PATH: sb.db,
  }).catch((e: {code: number; log: string}) => e)
  assert.equal((r as {code: number}).code, 2)
  assert.match((r as {log: string}).log, /^Error: --log-level loud: use one of error, warning, info, debug\n$/)
})
