// The IPAM plugin applies namespace labels to pool selection: from the netconf (`ipam.namespace_labels`) or
// CNI_ARGS (`IPAMCTL_NAMESPACE_LABELS=k:v,...`, which replaces the netconf's), in-process on a MemoryStore.
import assert from 'node:assert/strict'
import {beforeEach, describe, it} from 'node:test'
import {parseAssign} from '../../../src/lib/agent-client/protocol.ts'
import {ipamPlugin} from '../../../src/plugins/ipam/plugin.ts'
import {addPlan} from '../../../src/lib/node-ipam/request.ts'
import type {IpamPluginDeps} from '../../../src/lib/node-ipam/request.ts'
import {parseCniArgs} from '../../../src/lib/node-ipam/cni-args.ts'
import {parseNetConf} from '../../../src/lib/node-ipam/netconf.ts'
import {type Ctx, makeCtx} from '../../../src/lib/ipam/context.ts'
import {createPools} from '../../../src/lib/ipam/pool-admin.ts'
import {MemoryStore} from '../../../src/lib/store/memory.ts'
import {addEnv, errorOf, type RunOutcome, runSkel} from '../../lib/cni/helpers.ts'

const NOW = new Date('2026-01-02T03:04:05.250Z')

let store: MemoryStore
let ctx: Ctx

function deps(): IpamPluginDeps {
  return {
    openStore: async () => store,
    clock: {now: () => NOW},
    readFile: () => {
      throw new Error('ENOENT')
    },
    osHostname: () => 'os-host',
    lock: () => () => {},
  }
}

function conf(ipam: Record<string, unknown> = {}): string {
  return JSON.stringify({
    cniVersion: '1.0.0',
    name: 'net1',
    type: 'calico',
    nodename: 'node-1',
    datastore_path: '/nonexistent/ipam.db',
    ipam_lock_file: '/tmp/test-ipam.lock',
    ipamctl_agent_socket: '',
    ipam: {type: 'calico-ipam', ...ipam},
  })
}

const add = (cid: string, stdin: string, env: Record<string, string> = {}): Promise<RunOutcome> =>
  runSkel(ipamPlugin(deps()), addEnv({CNI_CONTAINERID: cid, ...env}), stdin)

const snapshot = async () => (await store.list('')).map((kv) => `${kv.key}@${kv.modRevision} ${kv.value}`).join('\n')

function address(r: RunOutcome): string {
  assert.equal(r.code, 0, `exit ${r.code}: ${r.stdout}\n${r.stderr}`)
  return (JSON.parse(r.stdout) as {ips: {address: string}[]}).ips[0]!.address
}

beforeEach(async () => {
  store = new MemoryStore()
  ctx = makeCtx(store, {clock: {now: () => NOW}})
  await createPools(ctx, [
    {name: 'team-a', cidr: '10.30.0.0/26', namespaceSelector: 'team == "a"', allowedUses: ['Workload']},
    {name: 'team-b', cidr: '10.31.0.0/26', namespaceSelector: 'team == "b"', allowedUses: ['Workload']},
  ])
})

describe('ipamctl-ipam ADD with namespace labels', () => {
  it('netconf ipam.namespace_labels choose the pool', async () => {
    assert.equal(address(await add('c1', conf({namespace_labels: {team: 'a'}}))), '10.30.0.0/26')
    assert.equal(address(await add('c2', conf({namespace_labels: {team: 'b', env: 'prod'}}))), '10.31.0.0/26')
  })

  it('CNI_ARGS IPAMCTL_NAMESPACE_LABELS choose the pool, and replace the netconf labels', async () => {
    assert.equal(address(await add('c3', conf(), {CNI_ARGS: 'IPAMCTL_NAMESPACE_LABELS=team:b'})), '10.31.0.0/26')
    assert.equal(
      address(
        await add('c4', conf({namespace_labels: {team: 'a'}}), {
          CNI_ARGS: 'K8S_POD_NAMESPACE=ns1;IPAMCTL_NAMESPACE_LABELS=team:b,env:prod',
        }),
      ),
      '10.31.0.1/26',
    )
  })

  it('no labels: no pool with a namespaceSelector serves the ADD (an error naming the pools), and nothing is written', async () => {
    const before = await snapshot()
    const r = await add('c5', conf())
    assert.notEqual(r.code, 0)
    assert.match(
      errorOf(r).msg,
      /no configured Calico pools for node node-1 \(IPv4\): the namespaceSelector of team-a, team-b does not match the namespace labels none/,
    )
    assert.equal(await snapshot(), before)
  })

  it('bad labels: a CNI error on one line, nothing written', async () => {
    const before = await snapshot()
    const fromArgs = await add('c6', conf(), {CNI_ARGS: 'IPAMCTL_NAMESPACE_LABELS=team=a'})
    assert.equal(errorOf(fromArgs).msg, 'ARGS: invalid pair "IPAMCTL_NAMESPACE_LABELS=team=a"')
    const badValue = await add('c7', conf(), {CNI_ARGS: 'IPAMCTL_NAMESPACE_LABELS=team:a b'})
    assert.equal(
      errorOf(badValue).msg,
      'ARGS: error parsing value of pair "IPAMCTL_NAMESPACE_LABELS=team:a b": invalid value "a b" for namespace label team',
    )
    const fromConf = await add('c8', conf({namespace_labels: {'bad key': 'a'}}))
    assert.equal(errorOf(fromConf).code, 7)
    assert.equal(
      errorOf(fromConf).msg,
      'failed to load netconf: field "ipam.namespace_labels": invalid namespace label key "bad key"',
    )
    const notStrings = await add('c9', conf({namespace_labels: {team: 1}}))
    assert.match(errorOf(notStrings).msg, /field "ipam\.namespace_labels" must be an object of strings/)
    assert.equal(await snapshot(), before)
  })
})

describe('the agent path carries the labels', () => {
  it('the plan sent to the agent holds them, and the agent parses them back', () => {
    const netconf = parseNetConf(conf({namespace_labels: {team: 'a'}}))
    const ids = {
      node: 'node-1',
      handleId: 'net1.c1',
      workloadId: 'c1',
      orchestrator: 'cni',
      namespace: 'default',
      pod: '',
      endpoint: 'eth0',
    }
    const plan = addPlan(
      {conf: netconf, args: parseCniArgs('IPAMCTL_NAMESPACE_LABELS=team:b'), ids} as unknown as Parameters<
        typeof addPlan
      >[0],
      NOW,
    )
    assert.deepEqual(plan.namespaceLabels, {team: 'b'})
    const wire = JSON.parse(JSON.stringify({...plan, node: 'node-1', datastore: 'embedded:/x'}))
    assert.deepEqual(parseAssign(wire).namespaceLabels, {team: 'b'})
    assert.equal(parseAssign({...wire, namespaceLabels: undefined}).namespaceLabels, undefined)
    assert.throws(
      () => parseAssign({...wire, namespaceLabels: ['team']}),
      /"namespaceLabels" must be an object of strings/,
    )
  })
})
