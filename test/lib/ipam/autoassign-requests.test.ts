// Datastore requests per AutoAssign (docs/design.md#scale): allocating from the host's existing block is one batched read
// and one guarded write in a process that allocated for that host before (the write alone in the steady state,
// docs/design.md#steady-state-allocation), one more read in a fresh process, whatever the number of other hosts. Counted through a wrapper of the store, as bench/support.ts does.
import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {autoAssign} from '../../../src/lib/ipam/autoassign.ts'
import {makeCtx} from '../../../src/lib/ipam/context.ts'
import {createPools} from '../../../src/lib/ipam/pool-admin.ts'
import {ensureNode, upsertNode} from '../../../src/lib/ipam/node.ts'
import {releaseIps} from '../../../src/lib/ipam/release.ts'
import {MemoryStore} from '../../../src/lib/store/memory.ts'
import {assertInvariants, counting} from './helpers.ts'

describe('AutoAssign datastore requests', () => {
  for (const others of [10, 300]) {
    it(`from an existing affine block: constant, with ${others} other hosts holding blocks`, async () => {
      const inner = new MemoryStore()
      const setup = makeCtx(inner)
      await createPools(setup, [{name: 'p', cidr: '10.0.0.0/8', blockSize: 26}])
      for (let h = 0; h < others; h++) await autoAssign(setup, {host: `other-${h}`, num4: 1, num6: 0, handle: `o.${h}`})
      const store = counting(inner)
      const ctx = makeCtx(store)
      await autoAssign(ctx, {host: 'me', num4: 1, num6: 0, handle: 'claim'}) // claims the block
      for (let i = 0; i < 5; i++) {
        store.requests.length = 0
        const r = await autoAssign(ctx, {host: 'me', num4: 1, num6: 0, handle: `h.${i}`})
        assert.equal(r.v4.ips.length, 1)
        // The first from the known block reads; then the steady state (steady-assign.test.ts) is one transaction,
        // also after this process's own releases.
        assert.deepEqual(store.requests, i === 0 ? ['read', 'txn'] : ['txn'], `allocation ${i}`)
        if (i % 2) await releaseIps(ctx, [{ip: r.v4.ips[0]!.address}])
      }
      // A new process (a CNI ADD) does not know the host's block yet: it reads it after the affinities.
      const fresh = counting(inner)
      await autoAssign(makeCtx(fresh), {host: 'me', num4: 1, num6: 0, handle: 'cold'})
      assert.deepEqual(fresh.requests, ['read', 'read', 'txn'])
      await assertInvariants(inner)
    })
  }

  it("a new host's first allocation claims a block in 4 requests: read, probe, claim transaction, node record", async () => {
    const inner = new MemoryStore()
    await createPools(makeCtx(inner), [{name: 'p', cidr: '10.0.0.0/8', blockSize: 26}])
    for (let h = 0; h < 50; h++)
      await autoAssign(makeCtx(inner), {host: `other-${h}`, num4: 1, num6: 0, handle: `o.${h}`})
    const store = counting(inner)
    const r = await autoAssign(makeCtx(store), {host: 'newcomer', num4: 1, num6: 0, handle: 'first'})
    assert.equal(r.v4.ips.length, 1)
    assert.deepEqual(store.requests, ['read', 'get', 'txn', 'txn'])
    // The node record was created by the second transaction, and a racing creator would only cost a read.
    assert.ok(await inner.get('/calico/resources/v3/projectcalico.org/nodes/newcomer'))
    await assertInvariants(inner)
  })

  it('ensureNode after a read that saw no node: created in one transaction; one created meanwhile is kept, not overwritten', async () => {
    const inner = new MemoryStore()
    const store = counting(inner)
    await ensureNode(store, 'fresh', new Date(), {seenAbsent: true})
    assert.deepEqual(store.requests, ['txn'])
    await upsertNode(inner, 'raced', {zone: 'a'}, new Date())
    const kept = await ensureNode(inner, 'raced', new Date(), {seenAbsent: true})
    assert.deepEqual(kept.labels, {zone: 'a'})
  })

  it('a stale guess (the block was released and re-claimed elsewhere) costs reads, never an address', async () => {
    const inner = new MemoryStore()
    const store = counting(inner)
    const ctx = makeCtx(store)
    await createPools(ctx, [{name: 'p', cidr: '10.0.0.0/30', blockSize: 31}])
    const a = await autoAssign(ctx, {host: 'me', num4: 1, num6: 0, handle: 'a'})
    // Another process takes the rest of that block and then everything else.
    const other = makeCtx(inner)
    const b = await autoAssign(other, {host: 'me', num4: 1, num6: 0, handle: 'b'})
    const c = await autoAssign(other, {host: 'you', num4: 2, num6: 0, handle: 'c'})
    const d = await autoAssign(ctx, {host: 'me', num4: 1, num6: 0, handle: 'd'})
    const all = [a, b, c, d].flatMap((r) => r.v4.ips.map((ip) => ip.address))
    assert.deepEqual(all.sort(), ['10.0.0.0', '10.0.0.1', '10.0.0.2', '10.0.0.3'])
    assert.equal(d.v4.ips.length, 0, 'the pool is full')
    await assertInvariants(inner)
  })
})
