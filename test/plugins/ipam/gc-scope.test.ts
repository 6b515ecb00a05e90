// CNI GC's reach: the valid-attachments list comes from one node's runtime, so GC on that node must not release
// another node's attachments of the same network (their handles are cluster-wide, `<network>.<containerID>`).
import assert from 'node:assert/strict'
import {beforeEach, describe, it} from 'node:test'
import {ipamPlugin} from '../../../src/plugins/ipam/plugin.ts'
import type {IpamPluginDeps} from '../../../src/lib/node-ipam/request.ts'
import {type Ctx, makeCtx} from '../../../src/lib/ipam/context.ts'
import {createPools} from '../../../src/lib/ipam/pool-admin.ts'
import {ipStatus} from '../../../src/lib/ipam/query.ts'
import {MemoryStore} from '../../../src/lib/store/memory.ts'
import {addEnv, runSkel} from '../../lib/cni/helpers.ts'

const NET = 'k8s-pod-network'
let store: MemoryStore
let ctx: Ctx

const deps = (): IpamPluginDeps => ({
  openStore: async () => store,
  readFile: () => {
    throw new Error('ENOENT')
  },
  osHostname: () => 'os-host',
  lock: () => () => {},
})
const conf = (node: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    cniVersion: '1.1.0',
    name: NET,
    type: 'calico',
    nodename: node,
    datastore_path: '/nonexistent/ipam.db',
    ...extra,
    ipam: {type: 'calico-ipam'},
  })
const add = async (cid: string, node: string): Promise<string> => {
  const r = await runSkel(ipamPlugin(deps()), addEnv({CNI_CONTAINERID: cid}), conf(node, {cniVersion: '1.0.0'}))
  assert.equal(r.code, 0, r.stdout)
  return JSON.parse(r.stdout).ips[0].address.split('/')[0]
}

describe('CNI GC scope', () => {
  beforeEach(async () => {
    store = new MemoryStore()
    ctx = makeCtx(store)
    await createPools(ctx, [{name: 'p4', cidr: '10.70.0.0/16'}])
  })

  it("releases only this node's attachments that are not listed; another node's stay", async () => {
    const mine = await add('mine-gone', 'node-1')
    const kept = await add('mine-kept', 'node-1')
    const theirs = await add('theirs', 'node-2')
    const r = await runSkel(
      ipamPlugin(deps()),
      {CNI_COMMAND: 'GC', CNI_PATH: '/opt/cni/bin'},
      conf('node-1', {'cni.dev/valid-attachments': [{containerID: 'mine-kept', ifname: 'eth0'}]}),
    )
    assert.deepEqual([r.code, r.stdout], [0, ''], r.stderr)
    assert.equal((await ipStatus(ctx, mine)).state, 'free')
    assert.equal((await ipStatus(ctx, kept)).state, 'assigned')
    assert.equal((await ipStatus(ctx, theirs)).state, 'assigned', "node-2's attachment is not node-1's to collect")
  })
})
