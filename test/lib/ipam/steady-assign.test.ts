// A long-running allocator's steady state (docs/design.md#steady-state-allocation): after a plain allocation from
// the host's first block, the next request of the same shape is one guarded transaction and no read. Whatever
// changed since (a pool disabled or deleted, a reservation added, node labels, another writer of the block) must be
// honoured exactly as a full read would: each case below would hand out a wrong address without its guard.
import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {autoAssign} from '../../../src/lib/ipam/autoassign.ts'
import {autoAssignBatch} from '../../../src/lib/ipam/batch-assign.ts'
import {makeCtx} from '../../../src/lib/ipam/context.ts'
import {createPools, setPoolDisabled} from '../../../src/lib/ipam/pool-admin.ts'
import {releaseIps} from '../../../src/lib/ipam/release.ts'
import {createReservation, deleteReservation} from '../../../src/lib/ipam/reservation.ts'
import {upsertNode} from '../../../src/lib/ipam/node.ts'
import {keys} from '../../../src/lib/store/keys.ts'
import {MemoryStore} from '../../../src/lib/store/memory.ts'
import {assertInvariants, counting} from './helpers.ts'

/** `ip` (an IPv4 address of the test's /24) plus `n`. */
const plus = (ip: string, n: number): string => ip.replace(/\d+$/, (last) => String(Number(last) + n))

/**
 * A store with pool `p` (10.0.0.0/24, /26 blocks) where host `me` (with `labels`) has claimed its block and is
 * in steady state: it has allocated the block's first 3 addresses.
 */
async function steady(opts: {nodeSelector?: string; labels?: Record<string, string>} = {}) {
  const inner = new MemoryStore()
  const pool = {name: 'p', cidr: '10.0.0.0/24', blockSize: 26}
  await createPools(makeCtx(inner), [opts.nodeSelector ? {...pool, nodeSelector: opts.nodeSelector} : pool])
  if (opts.labels) await upsertNode(inner, 'me', opts.labels, new Date())
  const store = counting(inner)
  const ctx = makeCtx(store)
  const got: string[] = []
  const assign = async (handle: string) => {
    store.requests.length = 0
    const r = await autoAssign(ctx, {host: 'me', num4: 1, num6: 0, handle})
    got.push(...r.v4.ips.map((ip) => ip.address))
    return r
  }
  await assign('claim')
  await assign('first') // a full read: from now on the shape is known
  await assign('steady')
  assert.deepEqual(store.requests, ['txn'], 'the steady state is one transaction')
  return {inner, store, ctx, assign, got}
}

describe('steady-state allocation', () => {
  it('hands out the block in FIFO order, one transaction each, also after a release by the same process', async () => {
    const s = await steady()
    await releaseIps(s.ctx, [{ip: s.got[1]!}])
    await s.assign('after-release')
    assert.deepEqual(s.store.requests, ['txn'], 'its own release does not cost the steady state')
    assert.deepEqual(
      s.got,
      [0, 1, 2, 3].map((n) => plus(s.got[0]!, n)),
      'a released address goes to the back of the line',
    )
    await assertInvariants(s.inner)
  })

  it('a disabled pool is honoured: no address from it', async () => {
    const s = await steady()
    await setPoolDisabled(makeCtx(s.inner), 'p', true)
    await assert.rejects(s.assign('after-disable'), /no configured Calico pools/)
    assert.equal(s.got.length, 3)
  })

  it('a deleted pool is honoured, though a deletion leaves no newer revision under the prefix', async () => {
    const s = await steady()
    await s.inner.txn([], [{delete: keys.resource('ippools', 'p')}])
    await assert.rejects(s.assign('after-delete'), /no configured Calico pools/)
  })

  it('a reservation added is honoured: the next address in line is skipped', async () => {
    const s = await steady()
    const next = plus(s.got[0]!, 3)
    await createReservation(makeCtx(s.inner), {name: 'r', reservedCIDRs: [`${next}/32`]})
    await s.assign('after-reserve')
    assert.deepEqual(s.store.requests, ['txn', 'read', 'txn'], 'the lost guard sends it through a full read')
    assert.equal(s.got.at(-1), plus(next, 1))
    await s.assign('reserved-steady')
    assert.deepEqual(s.store.requests, ['txn'], 'and the steady state resumes with the reservation')
    assert.equal(s.got.at(-1), plus(next, 2))
    // Deleting it frees the address for the next request, though a deletion writes no newer revision.
    await deleteReservation(makeCtx(s.inner), 'r')
    await s.assign('after-unreserve')
    assert.equal(s.got.at(-1), next)
  })

  it('node labels that no longer match the pool are honoured', async () => {
    const s = await steady({nodeSelector: "zone == 'a'", labels: {zone: 'a'}})
    await upsertNode(s.inner, 'me', {zone: 'b'}, new Date())
    await assert.rejects(s.assign('relabelled'), /no configured Calico pools/)
  })

  it('another writer of the block: the guard is lost, the full path reads and no address is given twice', async () => {
    const s = await steady()
    const other = makeCtx(counting(s.inner))
    const theirs = await autoAssign(other, {host: 'me', num4: 2, num6: 0, handle: 'other-process'})
    await s.assign('after-other')
    assert.deepEqual(s.store.requests, ['txn', 'read', 'txn'])
    const all = [...s.got, ...theirs.v4.ips.map((ip) => ip.address)]
    assert.equal(new Set(all).size, all.length, `duplicates in ${all.join(' ')}`)
    await assertInvariants(s.inner)
  })

  it("the agent's batches: one transaction per batch, and a change in between honoured the same way", async () => {
    const s = await steady()
    const batch = async (tag: string, n: number) => {
      s.store.requests.length = 0
      const reqs = Array.from({length: n}, (_, i) => ({host: 'me', num4: 1, num6: 0, handle: `${tag}-${i}`}))
      const out = await autoAssignBatch(s.ctx, reqs)
      for (const o of out) {
        assert.ok('ok' in o)
        s.got.push(...o.ok.v4.ips.map((ip) => ip.address))
      }
    }
    await batch('b1', 4)
    assert.deepEqual(s.store.requests, ['txn'], 'a batch from the steady state is one transaction')
    const next = plus(s.got[0]!, s.got.length)
    await createReservation(makeCtx(s.inner), {name: 'r', reservedCIDRs: [`${next}/32`]})
    await batch('b2', 2)
    assert.deepEqual(s.store.requests, ['txn', 'read', 'txn'], 'the lost guard sends it through a full read')
    assert.ok(!s.got.includes(next), `${next} is reserved`)
    await batch('b3', 3)
    assert.deepEqual(s.store.requests, ['txn'])
    assert.equal(new Set(s.got).size, s.got.length)
    await assertInvariants(s.inner)
  })

  it("the agent's batches past a full first block: steady in the block that serves them, until a block passed over changes", async () => {
    const inner = new MemoryStore()
    await createPools(makeCtx(inner), [{name: 'p', cidr: '10.0.0.0/24', blockSize: 26}])
    const store = counting(inner)
    const ctx = makeCtx(store)
    const got: string[] = []
    const batch = async (tag: string, n: number) => {
      store.requests.length = 0
      const reqs = Array.from({length: n}, (_, i) => ({host: 'me', num4: 1, num6: 0, handle: `${tag}-${i}`}))
      for (const o of await autoAssignBatch(ctx, reqs)) {
        assert.ok('ok' in o)
        got.push(...o.ok.v4.ips.map((ip) => ip.address))
      }
    }
    await batch('fill', 64) // the host's first block, now full
    await batch('claim', 1) // the second block, claimed by the full path
    await batch('full', 1) // a full read: the first block passed over, the second serves
    await batch('steady', 2)
    assert.deepEqual(store.requests, ['txn'], 'from the second block in one transaction, no read')
    assert.equal(new Set(got).size, 68)
    // Another process frees an address of the first block: a full read would take it first, so must this.
    const freed = got[5]!
    await releaseIps(makeCtx(inner), [{ip: freed}])
    await batch('after-release', 1)
    assert.deepEqual(store.requests, ['txn', 'read', 'txn'], 'the lost guard sends it through a full read')
    assert.equal(got.at(-1), freed)
    assert.equal(new Set(got).size, 68)
    await assertInvariants(inner)
  })

  it('both families under one handle stay one transaction each (the handle is guarded at its own write)', async () => {
    const inner = new MemoryStore()
    await createPools(makeCtx(inner), [
      {name: 'p4', cidr: '10.0.0.0/24', blockSize: 26},
      {name: 'p6', cidr: 'fd00::/120', blockSize: 122},
    ])
    const store = counting(inner)
    const ctx = makeCtx(store)
    for (let i = 0; i < 4; i++) {
      store.requests.length = 0
      const r = await autoAssign(ctx, {host: 'me', num4: 1, num6: 1, handle: `pod-${i}`})
      assert.equal(r.v4.ips.length + r.v6.ips.length, 2)
    }
    assert.deepEqual(store.requests, ['txn', 'txn'])
    await assertInvariants(inner)
  })
})
