// The per-node agent applies namespace labels: the real ipamctl-ipam plugin sends them (from its netconf or
// CNI_ARGS) in its assign request, and the real agent's batches serve each request from the pool that selects
// its namespace, even when requests of different namespaces share a batch.
import assert from 'node:assert/strict'
import path from 'node:path'
import {after, before, describe, it} from 'node:test'
import {type AgentProc, addEnv, ipamPluginProc, parseMetrics, resultIp, startAgentProc} from '../support/agent.ts'
import {ensureBuilt, type Sandbox, sandbox} from './helpers.ts'
import {notInfo} from '../support/log.ts'

const NODE = 'node-a'
const MANIFEST = `apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: team-a}
spec: {cidr: 10.40.0.0/24, namespaceSelector: 'team == "a"', allowedUses: [Workload]}
---
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: team-b}
spec: {cidr: 10.41.0.0/24, namespaceSelector: 'team == "b"', allowedUses: [Workload]}
`

before(() => ensureBuilt())

describe('ipamctl agent with namespace labels', () => {
  let sb: Sandbox
  let agent: AgentProc
  let socket: string
  const netconf = (ipam: Record<string, unknown> = {}) => ({
    cniVersion: '1.0.0',
    name: 'net1',
    type: 'ipamctl-ipam',
    nodename: NODE,
    datastore_path: sb.db,
    ipam_lock_file: path.join(sb.dir, 'ipam.lock'),
    ipamctl_agent_socket: socket,
    ipam: {type: 'ipamctl-ipam', ...ipam},
  })

  before(async () => {
    sb = sandbox()
    await sb.ok('pool', 'create', '-f', sb.file('pools.yaml', MANIFEST))
    socket = path.join(sb.dir, 'agent.sock')
    agent = await startAgentProc(['--node', NODE, '--socket', socket, '--metrics-address', '127.0.0.1:0'], {
      IPAMCTL_DATASTORE_PATH: sb.db,
    })
  })
  after(() => agent?.proc.kill('SIGKILL'))

  it('parallel ADDs of two namespaces (netconf labels and CNI_ARGS labels) each get an address of their own pool, all through the agent', async () => {
    const ids = Array.from({length: 12}, (_, i) => `c${i}`)
    const team = (i: number) => (i % 2 ? 'b' : 'a')
    const runs = await Promise.all(
      ids.map((c, i) =>
        i % 3 === 0
          ? ipamPluginProc({...addEnv(c), CNI_ARGS: `IPAMCTL_NAMESPACE_LABELS=team:${team(i)}`}, netconf())
          : ipamPluginProc(addEnv(c), netconf({namespace_labels: {team: team(i)}})),
      ),
    )
    runs.forEach((r, i) => {
      assert.equal(r.code, 0, `${ids[i]}: ${r.stdout}${r.stderr}`)
      assert.deepEqual(notInfo(r.stderr), [], 'no fallback, no warnings')
      assert.match(resultIp(r.stdout), team(i) === 'a' ? /^10\.40\.0\./ : /^10\.41\.0\./, `${ids[i]} (team ${team(i)})`)
    })
    const m = parseMetrics(await (await fetch(agent.metricsUrl!)).text())
    assert.equal(
      m.get('ipamctl_agent_requests_total{op="assign",outcome="ok"}'),
      ids.length,
      'every ADD was served by the agent',
    )
  })

  it('labels no pool selects: the agent answers with the selection error (no direct retry)', async () => {
    const r = await ipamPluginProc(addEnv('none'), netconf({namespace_labels: {team: 'c'}}))
    assert.equal(r.code, 1, r.stdout)
    assert.match(
      JSON.parse(r.stdout).msg,
      /the namespaceSelector of team-a, team-b does not match the namespace labels \{team=c\}/,
    )
    assert.doesNotMatch(r.stderr, /datastore directly|WARNING/, 'answered by the agent')
  })
})
