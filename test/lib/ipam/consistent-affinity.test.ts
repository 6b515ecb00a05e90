// A node that a pool no longer selects (its labels changed, or the pool's nodeSelector) gives up its blocks in
// that pool once they are empty: at the release that empties one (upstream's ensureConsistentAffinity) and when
// the node next allocates (upstream's prepareAffinityBlocksForHost). Blocks with addresses stay until they empty.
import assert from 'node:assert/strict'
import {after, describe, it} from 'node:test'
import {autoAssign} from '../../../src/lib/ipam/autoassign.ts'
import {autoAssignBatch} from '../../../src/lib/ipam/batch-assign.ts'
import {deselectedBlocks} from '../../../src/lib/ipam/consistent-affinity.ts'
import {upsertNode} from '../../../src/lib/ipam/node.ts'
import {createPools} from '../../../src/lib/ipam/pool-admin.ts'
import {releaseByHandle, releaseIps} from '../../../src/lib/ipam/release.ts'
import {keys} from '../../../src/lib/store/keys.ts'
import {
  affinityList,
  assertInvariants,
  blockCidrs,
  type Env,
  freshCtx,
  openMemory,
  type StoreOpener,
  tempSqlite,
} from './helpers.ts'

const sqlite = tempSqlite()
after(() => sqlite.cleanup())

const ZONES = [
  {name: 'zone-a', cidr: '10.10.0.0/16', nodeSelector: 'zone == "a"'},
  {name: 'zone-b', cidr: '10.20.0.0/16', nodeSelector: 'zone == "b"'},
]

async function zoned(open: StoreOpener): Promise<Env> {
  const env = await freshCtx({open})
  await createPools(env.ctx, ZONES)
  await upsertNode(env.store, 'n1', {zone: 'a'}, env.clock.now())
  return env
}
const assign = async (env: Env, handle: string, extra = {}) =>
  (await autoAssign(env.ctx, {host: 'n1', num4: 1, num6: 0, handle, ...extra})).v4.ips[0]!.address
const moveTo = (env: Env, zone: string) => upsertNode(env.store, 'n1', {zone}, env.clock.now())
/** The /16 of each block n1 holds ('10.10', …): which block of a pool the host gets is seeded by its name. */
const held = async (env: Env) =>
  (await affinityList(env.store)).map((a) => a.replace(/^n1 (\d+\.\d+)\.\d+\.\d+\/26$/, '$1')).sort()
const blocks = async (env: Env) =>
  (await blockCidrs(env.store)).map((c) => c.replace(/^(\d+\.\d+)\.\d+\.\d+\/26$/, '$1')).sort()

for (const [name, open] of [
  ['MemoryStore', openMemory],
  ['SqliteStore', sqlite.open],
] as const) {
  describe(`consistent affinity (${name})`, () => {
    it('a release that empties a block of a node its pool no longer selects lets the block go', async () => {
      const env = await zoned(open)
      assert.match(await assign(env, 'h1'), /^10\.10\./)
      await moveTo(env, 'b')
      await releaseByHandle(env.ctx, 'h1')
      assert.deepEqual(await affinityList(env.store), [])
      assert.deepEqual(await blockCidrs(env.store), [])
      await assertInvariants(env.store)
    })

    it('the same through a release by address', async () => {
      const env = await zoned(open)
      const ip = await assign(env, 'h1')
      await moveTo(env, 'b')
      assert.deepEqual((await releaseIps(env.ctx, [{ip: ip.split('/')[0]!}])).released, [ip.split('/')[0]])
      assert.deepEqual(await affinityList(env.store), [])
    })

    it('a node the pool still selects keeps its empty block for reuse', async () => {
      const env = await zoned(open)
      await assign(env, 'h1')
      await releaseByHandle(env.ctx, 'h1')
      assert.deepEqual(await held(env), ['10.10'])
      assert.deepEqual(await blocks(env), ['10.10'])
    })

    it('a deselected block with addresses left stays until its last one is released', async () => {
      const env = await zoned(open)
      await assign(env, 'h1')
      await assign(env, 'h2')
      await moveTo(env, 'b')
      await releaseByHandle(env.ctx, 'h1')
      assert.deepEqual(await held(env), ['10.10'])
      await releaseByHandle(env.ctx, 'h2')
      assert.deepEqual(await affinityList(env.store), [])
    })

    it('no Node record: nothing to judge the selector by, the block stays', async () => {
      const env = await zoned(open)
      await assign(env, 'h1')
      await moveTo(env, 'b')
      await env.store.txn([], [{delete: keys.node('n1')}])
      await releaseByHandle(env.ctx, 'h1')
      assert.deepEqual(await held(env), ['10.10'])
    })

    it('allocating on a moved node first lets its empty old blocks go, and keeps ones still in use', async () => {
      const env = await zoned(open)
      await assign(env, 'h1') // a block in zone-a, emptied below while still selected
      await createPools(env.ctx, [{name: 'zone-a2', cidr: '10.30.0.0/16', nodeSelector: 'zone == "a"'}])
      await assign(env, 'keep', {pools4: ['zone-a2']}) // a block in zone-a2, still in use
      await releaseByHandle(env.ctx, 'h1')
      assert.deepEqual(await held(env), ['10.10', '10.30'])
      await moveTo(env, 'b')
      assert.match(await assign(env, 'h2'), /^10\.20\./)
      assert.deepEqual(await held(env), ['10.20', '10.30'])
      assert.deepEqual(await blocks(env), ['10.20', '10.30'])
      await assertInvariants(env.store)
    })

    it("the agent's batched allocation does the same", async () => {
      const env = await zoned(open)
      await assign(env, 'h1')
      await releaseByHandle(env.ctx, 'h1')
      await moveTo(env, 'b')
      const out = await autoAssignBatch(env.ctx, [
        {host: 'n1', num4: 1, num6: 0, handle: 'b1'},
        {host: 'n1', num4: 1, num6: 0, handle: 'b2'},
      ])
      for (const o of out) assert.match('ok' in o ? o.ok.v4.ips[0]!.address : String(o.error), /^10\.20\./)
      assert.deepEqual(await held(env), ['10.20'])
    })

    it('pools requested by name: blocks of pools that still select the node are left alone', async () => {
      const env = await zoned(open)
      await assign(env, 'h1')
      await releaseByHandle(env.ctx, 'h1')
      assert.match(await assign(env, 'h2', {pools4: ['zone-b']}), /^10\.20\./)
      assert.deepEqual(await held(env), ['10.10', '10.20'])
    })
  })
}

describe('deselectedBlocks', () => {
  it('only blocks outside the allowed pools, in an enabled pool whose selector does not match', async () => {
    const env = await freshCtx()
    const [a, b, off] = await createPools(env.ctx, [
      {name: 'a', cidr: '10.1.0.0/16', nodeSelector: 'zone == "a"'},
      {name: 'b', cidr: '10.2.0.0/16', nodeSelector: 'all()'},
      {name: 'off', cidr: '10.3.0.0/16', nodeSelector: 'zone == "a"', disabled: true},
    ])
    const key = (c: string) => `/calico/ipam/v2/host/n1/ipv4/block/${c.replace('/', '-')}`
    const affs = [key('10.1.0.0/26'), key('10.2.0.0/26'), key('10.3.0.0/26'), key('10.9.0.0/26')]
    assert.deepEqual(
      deselectedBlocks(affs, [b!], [a!, b!, off!], {zone: 'b'}).map((c) => c.base),
      [0x0a010000n],
    )
    assert.deepEqual(deselectedBlocks(affs, [b!], [a!, b!, off!], {zone: 'a'}), [])
  })
})
