// The per-node agent on a real etcd: the plugin's ADDs go through it without loading etcd3, 20 parallel ADDs
// share block transactions (the agent waits 1 s before taking a batch, so that ADDs started together but spread
// out by a busy machine still meet in the queue; with no window they meet only while a batch is in flight), the metrics match `ipam show`, and with the agent gone the plugin uses etcd itself.
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import {after, before, describe, it} from 'node:test'
import {makeCtx} from '../../src/lib/ipam/context.ts'
import {ipsByHandle} from '../../src/lib/ipam/query.ts'
import {EtcdStore} from '../../src/lib/store/etcd.ts'
import {type AgentProc, addEnv, ipamPluginProc, parseMetrics, resultIp, startAgentProc} from '../support/agent.ts'
import {etcdSkipReason, type EtcdServer, startEtcd} from '../support/etcd-server.ts'
import {Cli, DATASTORE_ENV} from './etcd-cli.ts'
import {ROOT} from './helpers.ts'
import {notInfo} from '../support/log.ts'

const NET = 'net1'
const NODE = 'node-e'
const TRACE = path.join(ROOT, 'test', 'support', 'trace-modules.mjs')

describe('ipamctl agent on etcd', {skip: etcdSkipReason}, () => {
  let server: EtcdServer
  let agent: AgentProc
  const cli = new Cli()
  const socket = path.join(cli.dir, 'agent.sock')
  const netconf = () => ({
    cniVersion: '1.0.0',
    name: NET,
    type: 'ipamctl-ipam',
    nodename: NODE,
    etcd_endpoints: server.endpoint,
    ipam_lock_file: path.join(cli.dir, 'ipam.lock'),
    ipamctl_agent_socket: socket,
    ipam: {type: 'ipamctl-ipam'},
  })
  const got = new Map<string, string>()

  before(async () => {
    server = await startEtcd()
    await cli.ok(server.endpoint, ['pool', 'create', 'p4', '--cidr', '10.72.0.0/16'])
    const env: Record<string, string | undefined> = Object.fromEntries(DATASTORE_ENV.map((k) => [k, undefined]))
    agent = await startAgentProc(
      [
        '--node',
        NODE,
        '--socket',
        socket,
        '--metrics-address',
        '127.0.0.1:0',
        '--batch-window',
        '1s',
        '--datastore',
        'etcdv3',
        '--etcd-endpoints',
        server.endpoint,
        '--config',
        cli.emptyConfig,
      ],
      env,
    )
  })
  after(async () => {
    agent?.proc.kill('SIGKILL')
    await server?.stop()
  })

  it('an ADD through the agent loads no etcd3 in the plugin', async () => {
    const trace = path.join(cli.dir, 'trace.txt')
    const r = await ipamPluginProc({...addEnv('traced'), IPAMCTL_TRACE_MODULES: trace}, netconf(), ['--import', TRACE])
    assert.equal(r.code, 0, r.stdout + r.stderr)
    assert.deepEqual(notInfo(r.stderr), [])
    got.set('traced', resultIp(r.stdout))
    const modules = fs.readFileSync(trace, 'utf8').split('\n')
    assert.ok(
      modules.some((m) => /\/(dist\/plugins\/ipam\/main\.js|bin\/start\.cjs)$/.test(m)),
      'the trace saw the plugin',
    )
    assert.deepEqual(
      modules.filter((m) => /\/node_modules\/(etcd3|@grpc|prom-client)\//.test(m)),
      [],
    )
  })

  it('20 parallel ADDs: distinct addresses in etcd, fewer transactions than requests', async (t) => {
    const ids = Array.from({length: 20}, (_, i) => `e${i}`)
    const runs = await Promise.all(ids.map((c) => ipamPluginProc(addEnv(c), netconf())))
    runs.forEach((r, i) => {
      assert.equal(r.code, 0, `${ids[i]}: ${r.stdout}${r.stderr}`)
      got.set(ids[i]!, resultIp(r.stdout))
    })
    assert.equal(new Set(got.values()).size, got.size)
    const store = await EtcdStore.connect({endpoints: [server.endpoint], timeoutMs: 5000})
    try {
      const held = await Promise.all(ids.map((c) => ipsByHandle(makeCtx(store), `${NET}.${c}`)))
      assert.deepEqual(
        held,
        ids.map((c) => [got.get(c)]),
      )
    } finally {
      await store.close()
    }
    const st = JSON.parse(await cli.ok(server.endpoint, ['agent', 'status', '--socket', socket, '-o', 'json']))
    assert.equal(st.counters.batchedRequests, 21)
    assert.ok(
      st.counters.datastoreRoundTrips.txn < 21,
      `txns ${st.counters.datastoreRoundTrips.txn} for 21 requests (batches ${st.counters.batches})`,
    )
    t.diagnostic(
      `etcd: ${st.counters.batchedRequests} requests, ${st.counters.batches} batches, ${st.counters.blockTransactions} batched block transactions, ${st.counters.datastoreRoundTrips.txn} transactions in all, ${st.counters.casConflicts} CAS conflicts`,
    )
    const m = parseMetrics(await (await fetch(agent.metricsUrl!)).text())
    const show = JSON.parse(await cli.ok(server.endpoint, ['ipam', 'show', '-o', 'json']))[0]
    const l = `{pool="${show.name}",cidr="${show.cidr}"}`
    assert.deepEqual(
      ['capacity', 'in_use', 'free', 'reserved'].map((k) => m.get(`ipamctl_pool_${k}_addresses${l}`)),
      [show.capacity, show.inUse, show.free, show.reserved],
    )
    assert.equal(show.inUse, 21)
    assert.ok(m.get('ipamctl_agent_block_transactions_total')! < 21)
  })

  it('with the agent killed, the plugin uses etcd directly', async () => {
    agent.proc.kill('SIGKILL')
    await agent.exited
    const r = await ipamPluginProc(addEnv('after'), netconf())
    assert.equal(r.code, 0, r.stdout + r.stderr)
    assert.match(r.stderr, /ECONNREFUSED; using the datastore directly/)
    assert.ok(!got.has(resultIp(r.stdout)) && ![...got.values()].includes(resultIp(r.stdout)))
  })
})
