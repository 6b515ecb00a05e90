// assertInvariants must catch each kind of inconsistency it claims to check, or the scenarios prove nothing.
import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {encodeBlock, newBlock, takeOrdinals} from '../../../src/lib/ipam/block.ts'
import {parseCidr} from '../../../src/lib/net/cidr.ts'
import {keys} from '../../../src/lib/store/keys.ts'
import {MemoryStore} from '../../../src/lib/store/memory.ts'
import {assertInvariants, fakeClock, seed, T0} from './helpers.ts'

const CONFIRMED = '{"state":"confirmed","deleted":false}'
const now = new Date(T0)

/** A store holding one block of host-a with `n` addresses of handle `h`, its affinity and its handle. */
async function consistent(n = 2): Promise<MemoryStore> {
  const store = new MemoryStore()
  const cidr = parseCidr('10.0.0.0/26')
  const b = newBlock(cidr, 'host:host-a', now, 1n)
  takeOrdinals(b, n, {handle_id: 'h', secondary: {node: 'host-a'}})
  await seed(store, keys.block(cidr), encodeBlock(b))
  await seed(store, keys.affinity('host-a', cidr), CONFIRMED)
  await seed(store, keys.handle('h'), `{"block":{"10.0.0.0/26":${n}},"deleted":false}`)
  return store
}

async function violates(store: MemoryStore, message: RegExp): Promise<void> {
  await assert.rejects(assertInvariants(store, now), (err: unknown) => {
    assert.ok(err instanceof assert.AssertionError)
    assert.match(err.message, message)
    return true
  })
}

describe('assertInvariants', () => {
  it('accepts a consistent store, and an empty one', async () => {
    await assertInvariants(await consistent(), now)
    await assertInvariants(new MemoryStore(), now)
  })

  it('rejects an invalid block', async () => {
    const store = await consistent()
    const raw = (await store.get(keys.block(parseCidr('10.0.0.0/26'))))!.value.replace(
      '"unallocated":[2,',
      '"unallocated":[2,2,',
    )
    await seed(store, keys.block(parseCidr('10.0.0.0/26')), raw)
    await violates(store, /ordinal 2 appears more than once/)
  })

  it('rejects a block whose releasedAt lies in the future', async () => {
    const store = new MemoryStore()
    const cidr = parseCidr('10.0.0.0/29')
    const b = newBlock(cidr, null, now, 1n)
    takeOrdinals(b, 1, {releasedAt: '2026-01-02T03:05:00Z'})
    await seed(store, keys.block(cidr), encodeBlock(b))
    await violates(store, /releasedAt in the future/)
    await assertInvariants(store, new Date('2026-01-02T03:05:00Z'))
  })

  it('rejects an over-counted handle (upstream quirk 3.15.1)', async () => {
    const store = await consistent()
    await seed(store, keys.handle('h'), '{"block":{"10.0.0.0/26":3},"deleted":false}')
    await violates(store, /handle h counts \{"10\.0\.0\.0\/26":3\} but the blocks hold \{"10\.0\.0\.0\/26":2\}/)
  })

  it('rejects a missing handle key and a leaked one', async () => {
    const store = await consistent()
    await store.txn([], [{delete: keys.handle('h')}])
    await violates(store, /handle h is used by blocks .* but has no handle key/)
    const leaked = await consistent()
    await seed(leaked, keys.handle('gone'), '{"block":{"10.0.0.64/26":1},"deleted":false}')
    await violates(leaked, /handle gone counts/)
  })

  it("rejects a confirmed affinity without its block, or pointing at another host's block", async () => {
    const store = await consistent()
    await seed(store, keys.affinity('host-a', parseCidr('10.0.1.0/26')), CONFIRMED)
    await violates(store, /confirmed affinity of host-a for 10\.0\.1\.0\/26 has no block/)
    const other = await consistent()
    await seed(other, keys.affinity('host-b', parseCidr('10.0.0.0/26')), CONFIRMED)
    await violates(other, /but the block's affinity is host:host-a/)
    // A pending affinity with no block is a claim in progress, not an inconsistency.
    const pending = await consistent()
    await seed(pending, keys.affinity('host-b', parseCidr('10.0.1.0/26')), '{"state":"pending","deleted":false}')
    await assertInvariants(pending, now)
  })

  it('rejects an affine block without a confirmed affinity key', async () => {
    const store = await consistent()
    await store.txn([], [{delete: keys.affinity('host-a', parseCidr('10.0.0.0/26'))}])
    await violates(store, /block 10\.0\.0\.0\/26 has affinity host:host-a but no confirmed affinity key/)
  })

  it('rejects overlapping blocks', async () => {
    const store = await consistent()
    const small = parseCidr('10.0.0.8/29')
    await seed(store, keys.block(small), encodeBlock(newBlock(small, null, now, 1n)))
    await violates(store, /blocks 10\.0\.0\.0\/26 and 10\.0\.0\.8\/29 overlap/)
  })

  it('the fake clock starts at T0 and advances by seconds', () => {
    const clock = fakeClock()
    assert.equal(clock.now().toISOString(), '2026-01-02T03:04:05.000Z')
    clock.advance(61)
    assert.equal(clock.now().toISOString(), '2026-01-02T03:05:06.000Z')
  })
})
