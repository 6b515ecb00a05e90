// The agent's cached usage view against `ipam show`'s own functions, on any store: each change made after the
// first refresh (allocation, release, block claim, borrowed address, pool create and delete, reservation,
// cooldown expiry, a node losing its last block) must show in the next refresh, figure for figure.
import assert from 'node:assert/strict'
import {it} from 'node:test'
import {UsageView} from '../../../src/lib/agent/usage-view.ts'
import {assignIp} from '../../../src/lib/ipam/assign-ip.ts'
import {autoAssign} from '../../../src/lib/ipam/autoassign.ts'
import {ownerHost} from '../../../src/lib/ipam/block.ts'
import {updateConfig} from '../../../src/lib/ipam/config.ts'
import type {Ctx} from '../../../src/lib/ipam/context.ts'
import {removeNode} from '../../../src/lib/ipam/node-removal.ts'
import {createPools, deletePool} from '../../../src/lib/ipam/pool-admin.ts'
import {borrowedIps, listBlocks, utilization} from '../../../src/lib/ipam/query.ts'
import {releaseIps} from '../../../src/lib/ipam/release.ts'
import {createReservation} from '../../../src/lib/ipam/reservation.ts'
import {CountedStore} from '../../../src/lib/store/counted.ts'
import {type Env, freshCtx, type StoreOpener} from '../ipam/helpers.ts'

interface Figures {
  pools: {name: string; cidr: string; capacity: bigint; inUse: bigint; free: bigint; reserved: bigint}[]
  borrowed: number
  nodes: Record<string, number>
}

/** What `ipam show -o json`, `--show-borrowed` and the blocks' owners say, read from scratch. */
async function fromScratch(ctx: Ctx): Promise<Figures> {
  const nodes: Record<string, number> = {}
  for (const {block} of await listBlocks(ctx)) {
    const h = ownerHost(block)
    if (h !== undefined) nodes[h] = (nodes[h] ?? 0) + 1
  }
  return {
    pools: (await utilization(ctx)).map(({name, cidr, capacity, inUse, free, reserved}) => ({
      name,
      cidr,
      capacity,
      inUse,
      free,
      reserved,
    })),
    borrowed: (await borrowedIps(ctx)).borrowed.length,
    nodes,
  }
}

async function fromView(view: UsageView): Promise<Figures> {
  const f = await view.refresh()
  return {
    pools: f.pools.map(({name, cidr, capacity, inUse, free, reserved}) => ({
      name,
      cidr,
      capacity,
      inUse,
      free,
      reserved,
    })),
    borrowed: f.pools.reduce((s, p) => s + p.borrowed, 0),
    nodes: Object.fromEntries(f.nodeBlocks),
  }
}

export function usageViewScenarios(open: StoreOpener, opts: {incremental: boolean}): void {
  it('each change after the first refresh shows in the next one, as ipam show counts it', async () => {
    const env: Env = await freshCtx({open: async () => new CountedStore(await open())})
    const {ctx, clock} = env
    const counts = (env.store as CountedStore).counts
    const view = new UsageView(ctx)
    try {
      const same = async (what: string, expect?: (f: Figures) => void) => {
        const want = await fromScratch(ctx)
        const got = await fromView(view)
        assert.deepEqual(got, want, what)
        expect?.(got)
      }
      await createPools(ctx, [{name: 'p4', cidr: '10.65.0.0/16'}])
      const first = await autoAssign(ctx, {host: 'n1', num4: 3, num6: 0, handle: 'h1', attrs: {node: 'n1'}})
      await same('first refresh', (f) => assert.equal(f.pools[0]!.inUse, 3n))

      await autoAssign(ctx, {host: 'n1', num4: 1, num6: 0, handle: 'h2', attrs: {node: 'n1'}})
      await same('allocation', (f) => assert.equal(f.pools[0]!.inUse, 4n))

      await releaseIps(ctx, [{ip: first.v4.ips[0]!.address}])
      await same('release', (f) => assert.equal(f.pools[0]!.inUse, 3n))

      await autoAssign(ctx, {host: 'n2', num4: 1, num6: 0, handle: 'h3', attrs: {node: 'n2'}})
      await same('block claim', (f) => assert.deepEqual(f.nodes, {n1: 1, n2: 1}))

      const base = first.v4.ips[0]!.block.split('/')[0]!.split('.')
      await assignIp(ctx, {ip: `${base[0]}.${base[1]}.${base[2]}.${Number(base[3]) + 60}`, host: 'n3', handle: 'b1'})
      await assignIp(ctx, {
        ip: `${base[0]}.${base[1]}.${base[2]}.${Number(base[3]) + 61}`,
        host: 'n3',
        handle: 'b2',
        attrs: {node: 'n3'},
      })
      await same('borrowed addresses', (f) => assert.equal(f.borrowed, 2))

      await createPools(ctx, [{name: 'p5', cidr: '10.66.0.0/16'}])
      await same('pool create', (f) =>
        assert.deepEqual(
          f.pools.map((p) => p.name),
          ['p4', 'p5'],
        ),
      )
      await autoAssign(ctx, {host: 'n4', num4: 1, num6: 0, handle: 'h5', pools: ['p5']})
      await same('allocation in the new pool', (f) => assert.equal(f.nodes.n4, 1))
      await releaseIps(ctx, [{ip: '10.66.0.0', handle: 'h5'}]).catch(() => undefined)
      await removeNode(ctx, 'n4', {releaseAddresses: true})
      await deletePool(ctx, 'p5', {graceMs: 0})
      await same('pool delete', (f) => {
        assert.deepEqual(
          f.pools.map((p) => p.name),
          ['p4'],
        )
        assert.equal(f.nodes.n4, undefined)
      })

      await createReservation(ctx, {name: 'held', reservedCIDRs: ['10.65.255.0/30']})
      await same('reservation', (f) => assert.equal(f.pools[0]!.reserved, 4n))

      await updateConfig(ctx, {ipCooldownSeconds: 30})
      const cooling = await autoAssign(ctx, {host: 'n1', num4: 1, num6: 0, handle: 'h6', attrs: {node: 'n1'}})
      await same('cooldown config')
      await releaseIps(ctx, [{ip: cooling.v4.ips[0]!.address}])
      const inUse = (await fromView(view)).pools[0]!.inUse
      clock.advance(31)
      await same('cooldown over', (f) => assert.equal(f.pools[0]!.inUse, inUse - 1n))

      await removeNode(ctx, 'n2', {releaseAddresses: true})
      await same('a node loses its last block', (f) => assert.deepEqual(Object.keys(f.nodes).sort(), ['n1']))

      if (opts.incremental) {
        // The view's own requests: the feed's catch-up, nothing else (no block is listed or scanned).
        const viewCalls = async () => {
          const before = {...counts.calls}
          await view.refresh()
          return Object.fromEntries(
            Object.entries(counts.calls).map(([k, v]) => [k, v - before[k as keyof typeof before]]),
          )
        }
        const only = {get: 0, list: 0, listKeys: 0, read: 0, each: 0, watch: 1, txn: 0, revision: 0}
        assert.deepEqual(await viewCalls(), only, 'nothing changed')
        await autoAssign(ctx, {host: 'n1', num4: 1, num6: 0, handle: 'h7', attrs: {node: 'n1'}})
        assert.deepEqual(await viewCalls(), only, 'one allocation')
        await same('after one allocation')
      }
    } finally {
      await view.close()
      await env.store.close()
    }
  })
}
