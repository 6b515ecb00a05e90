// Node removal (upstream's RemoveIPAMHost, docs/calico.md#node-removal) and per-node usage, on every embedded store backend.
import assert from 'node:assert/strict'
import {after, describe} from 'node:test'
import {NotFoundError} from '../../../src/lib/errors.ts'
import {autoAssign} from '../../../src/lib/ipam/autoassign.ts'
import {updateConfig} from '../../../src/lib/ipam/config.ts'
import {upsertNode} from '../../../src/lib/ipam/node.ts'
import {nodeUsage, planNodeRemoval, removeNode} from '../../../src/lib/ipam/node-removal.ts'
import {createPools} from '../../../src/lib/ipam/pool-admin.ts'
import {releaseIps} from '../../../src/lib/ipam/release.ts'
import {keys} from '../../../src/lib/store/keys.ts'
import {encodeWorkloadEndpoint, endpointKey, newWorkloadEndpoint} from '../../../src/lib/workload/endpoint.ts'
import {
  affinityList,
  assertInvariants,
  blockCidrs,
  type Env,
  handleCounts,
  openMemory,
  scenario,
  rawValue,
  seed,
  type StoreOpener,
  storedBlock,
  tempSqlite,
} from './helpers.ts'

const sqlite = tempSqlite()
after(() => sqlite.cleanup())

async function assign(env: Env, host: string, n: number, handle?: string): Promise<string[]> {
  const r = await autoAssign(env.ctx, {host, num4: n, num6: 0, handle})
  assert.equal(r.v4.ips.length, n, r.v4.messages.join('; '))
  return r.v4.ips.map((i) => i.address)
}

async function rejectsNotFound(p: Promise<unknown>): Promise<void> {
  await assert.rejects(p, (err: unknown) => err instanceof NotFoundError && /node .* not found/.test(err.message))
}

function scenarios(name: string, open: StoreOpener): void {
  const s = (title: string, body: (env: Env) => Promise<void>) => scenario(open, title, body)

  describe(`${name}: node removal`, () => {
    s(
      'non-empty blocks lose their owner and stay usable, empty ones are deleted, no affinity or record is left',
      async (env) => {
        // One /26 per pool: pool "a" fills, "b" stays empty once its address is released.
        await createPools(env.ctx, [
          {name: 'a', cidr: '10.80.0.0/26'},
          {name: 'b', cidr: '10.81.0.0/26'},
        ])
        const [ip1, ip2] = await assign(env, 'n1', 2, 'h1')
        const other = await autoAssign(env.ctx, {host: 'n1', num4: 1, num6: 0, handle: 'h2', pools4: ['b']})
        await releaseIps(env.ctx, [{ip: other.v4.ips[0]!.address}])
        assert.deepEqual(await blockCidrs(env.store), ['10.80.0.0/26', '10.81.0.0/26'])
        await seed(env.store, `${keys.allHostAffinitiesPrefix()}n1`, '{}') // legacy host key

        const r = await removeNode(env.ctx, 'n1', {releaseAddresses: false})
        assert.deepEqual(r, {
          affinitiesReleased: 2,
          blocksDeleted: 1,
          blocksKeptNonAffine: 1,
          addressesReleased: 0,
          endpointsDeleted: 0,
        })
        assert.deepEqual(await affinityList(env.store), [])
        assert.equal(await rawValue(env.store, keys.node('n1')), undefined)
        assert.equal(await rawValue(env.store, `${keys.allHostAffinitiesPrefix()}n1`), undefined)
        assert.deepEqual(await blockCidrs(env.store), ['10.80.0.0/26'])
        const kept = (await storedBlock(env.store, '10.80.0.0/26'))!
        assert.equal(kept.affinity, null)
        assert.deepEqual(await handleCounts(env.store, 'h1'), {'10.80.0.0/26': 2})
        await assertInvariants(env.store, env.clock.now())

        // Another host borrows from the ownerless block (strict affinity is off, and the pool has no free block).
        const borrowed = await autoAssign(env.ctx, {host: 'n2', num4: 1, num6: 0, handle: 'h3', pools4: ['a']})
        const ip3 = borrowed.v4.ips[0]?.address
        assert.equal(ip3, '10.80.0.2')
        assert.equal((await storedBlock(env.store, '10.80.0.0/26'))!.affinity, null)

        // Releasing its last address deletes it.
        await releaseIps(env.ctx, [{ip: ip1!}, {ip: ip2!}])
        assert.deepEqual(
          (await blockCidrs(env.store)).filter((c) => c.startsWith('10.80.')),
          ['10.80.0.0/26'],
        )
        await releaseIps(env.ctx, [{ip: ip3!}])
        assert.deepEqual(
          (await blockCidrs(env.store)).filter((c) => c.startsWith('10.80.')),
          [],
        )
      },
    )

    s('with strict affinity an ownerless block is not borrowed from', async (env) => {
      await createPools(env.ctx, [{name: 'a', cidr: '10.82.0.0/26'}])
      await assign(env, 'n1', 1, 'h1')
      await removeNode(env.ctx, 'n1', {releaseAddresses: false})
      await updateConfig(env.ctx, {strictAffinity: true})
      const r = await autoAssign(env.ctx, {host: 'n2', num4: 1, num6: 0})
      assert.equal(r.v4.ips.length, 0)
    })

    s(
      "releaseAddresses releases the node's addresses and handles, deletes its endpoints, and leaves others alone",
      async (env) => {
        await createPools(env.ctx, [{name: 'a', cidr: '10.83.0.0/24'}])
        await assign(env, 'n1', 2, 'h1')
        await assign(env, 'n1', 1) // no handle: released by address
        const theirs = await assign(env, 'n2', 1, 'h2')
        const now = env.clock.now()
        const mk = (node: string, pod: string) =>
          newWorkloadEndpoint(
            {
              name: `${node}-k8s-${pod}-eth0`,
              namespace: 'default',
              orchestrator: 'k8s',
              node,
              containerID: 'c',
              pod,
              endpoint: 'eth0',
              ipNetworks: [],
              interfaceName: 'cali0',
            },
            now,
          )
        for (const w of [mk('n1', 'web'), mk('n2', 'db')])
          await seed(env.store, endpointKey(w.namespace, w.name), encodeWorkloadEndpoint(w))

        const plan = await planNodeRemoval(env.ctx, 'n1', {releaseAddresses: true})
        assert.deepEqual(plan.predicted, {
          affinitiesReleased: 1,
          blocksDeleted: 1,
          blocksKeptNonAffine: 0,
          addressesReleased: 3,
          endpointsDeleted: 1,
        })
        const r = await removeNode(env.ctx, 'n1', {releaseAddresses: true})
        assert.deepEqual(r, {
          affinitiesReleased: 1,
          blocksDeleted: 1,
          blocksKeptNonAffine: 0,
          addressesReleased: 3,
          endpointsDeleted: 1,
        })
        assert.equal(await handleCounts(env.store, 'h1'), undefined)
        assert.deepEqual(Object.values((await handleCounts(env.store, 'h2'))!), [1])
        assert.deepEqual(
          (await env.store.listKeys(keys.resourcePrefix('workloadendpoints'))).map((k) => k.split('/').at(-1)),
          ['n2-k8s-db-eth0'],
        )
        const usage = await nodeUsage(env.ctx)
        assert.deepEqual([...usage.keys()], ['n2'])
        assert.deepEqual(usage.get('n2'), {blocks: 1, addresses: theirs.length})
      },
    )

    s("an address borrowed by the removed node from another node's block is released, the block stays", async (env) => {
      await createPools(env.ctx, [{name: 'a', cidr: '10.84.0.0/26'}])
      await assign(env, 'n2', 1, 'h2')
      await assign(env, 'n1', 1, 'h1') // pool full: borrowed from n2's block
      assert.deepEqual((await nodeUsage(env.ctx)).get('n1'), {blocks: 0, addresses: 1})
      const r = await removeNode(env.ctx, 'n1', {releaseAddresses: true})
      assert.equal(r.addressesReleased, 1)
      assert.equal(r.affinitiesReleased, 0)
      assert.equal((await storedBlock(env.store, '10.84.0.0/26'))!.affinity, 'host:n2')
    })

    s('an unknown node, and a node removed already, are NotFound', async (env) => {
      await createPools(env.ctx, [{name: 'a', cidr: '10.85.0.0/24'}])
      await rejectsNotFound(removeNode(env.ctx, 'ghost', {releaseAddresses: true}))
      await upsertNode(env.store, 'bare', {}, env.clock.now())
      assert.equal((await removeNode(env.ctx, 'bare', {releaseAddresses: false})).affinitiesReleased, 0)
      await rejectsNotFound(removeNode(env.ctx, 'bare', {releaseAddresses: false}))

      await assign(env, 'n1', 2, 'h1')
      await removeNode(env.ctx, 'n1', {releaseAddresses: true})
      await rejectsNotFound(removeNode(env.ctx, 'n1', {releaseAddresses: true}))
      await rejectsNotFound(removeNode(env.ctx, 'n1', {releaseAddresses: false}))

      // A plain removal leaves the addresses; a later removal with releaseAddresses still finds them.
      await assign(env, 'n3', 1, 'h3')
      await removeNode(env.ctx, 'n3', {releaseAddresses: false})
      await rejectsNotFound(removeNode(env.ctx, 'n3', {releaseAddresses: false}))
      assert.equal((await removeNode(env.ctx, 'n3', {releaseAddresses: true})).addressesReleased, 1)
      await rejectsNotFound(removeNode(env.ctx, 'n3', {releaseAddresses: true}))
    })
  })
}

scenarios('MemoryStore', openMemory)
scenarios('SqliteStore', sqlite.open)
