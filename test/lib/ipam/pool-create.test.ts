// createPools against concurrent pool writes, deterministically: a store wrapper performs another writer's
// pool create at a chosen moment (between a manifest's first and second transaction), as a racing process would.
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'
import {ConflictError} from '../../../src/lib/errors.ts'
import {listPools, makeCtx} from '../../../src/lib/ipam/context.ts'
import {createPools} from '../../../src/lib/ipam/pool-admin.ts'
import type {PoolInput} from '../../../src/lib/ipam/pool.ts'
import {keys} from '../../../src/lib/store/keys.ts'
import {MemoryStore} from '../../../src/lib/store/memory.ts'
import type {Condition, Store, TxnResult, WriteOp} from '../../../src/lib/store/store.ts'

/** A memory store that runs `between` once, right after the first successful write of pools. */
class InterleavingStore extends MemoryStore {
  private fired = false
  constructor(private readonly between: (store: Store) => Promise<void>) {
    super()
  }
  override async txn(conditions: readonly Condition[], ops: readonly WriteOp[]): Promise<TxnResult> {
    const r = await super.txn(conditions, ops)
    if (r.succeeded && !this.fired && ops.some((o) => 'put' in o && o.put.startsWith(keys.resourcePrefix('ippools')))) {
      this.fired = true
      await this.between(this)
    }
    return r
  }
}

/** 150 /24 pools inside 10.1.0.0/16: more than one transaction holds. */
const manifest = (): PoolInput[] => Array.from({length: 150}, (_, i) => ({name: `m-${i}`, cidr: `10.1.${i}.0/24`}))

describe('createPools: a manifest written in several transactions', () => {
  test('a pool created between its transactions that overlaps a later one of it: the manifest fails whole, naming that pool', async () => {
    const store = new InterleavingStore(async (s) => {
      await createPools(makeCtx(s), [{name: 'intruder', cidr: '10.1.140.0/24'}])
    })
    const ctx = makeCtx(store)
    await assert.rejects(
      createPools(ctx, manifest()),
      (err: Error) =>
        err instanceof ConflictError && /IPPool\(m-140\) CIDR overlaps with IPPool\(intruder\)/.test(err.message),
    )
    assert.deepEqual(
      (await listPools(ctx)).map((p) => p.name),
      ['intruder'],
    )
  })

  test('a pool created between its transactions that overlaps none of it: the manifest is completed', async () => {
    const store = new InterleavingStore(async (s) => {
      await createPools(makeCtx(s), [{name: 'elsewhere', cidr: '10.2.0.0/24'}])
    })
    const ctx = makeCtx(store)
    const created = await createPools(ctx, manifest())
    assert.equal(created.length, 150)
    assert.equal((await listPools(ctx)).length, 151)
  })

  test('a concurrent single create that overlaps a pool already written loses, naming it', async () => {
    let intruderError: unknown
    const store = new InterleavingStore(async (s) => {
      intruderError = await createPools(makeCtx(s), [{name: 'late', cidr: '10.1.3.0/24'}]).catch((e: unknown) => e)
    })
    const ctx = makeCtx(store)
    await createPools(ctx, manifest())
    assert.ok(
      intruderError instanceof ConflictError &&
        /IPPool\(late\) CIDR overlaps with IPPool\(m-3\)/.test(intruderError.message),
      String(intruderError),
    )
    assert.equal((await listPools(ctx)).length, 150)
  })
})

test('createPools: a create that read the pools before a concurrent overlapping one committed loses on its guard and names it', async () => {
  // Two creates whose reads both precede both writes: the old write-then-check code let the second commit too.
  const store = new MemoryStore()
  const ctx = makeCtx(store)
  const origList = store.list.bind(store)
  let reads = 0
  let release!: () => void
  const bothRead = new Promise<void>((r) => (release = r))
  store.list = async (prefix: string) => {
    const out = await origList(prefix)
    if (prefix === keys.resourcePrefix('ippools') && ++reads <= 2) {
      if (reads === 2) release()
      await bothRead
    }
    return out
  }
  const results = await Promise.allSettled([
    createPools(ctx, [{name: 'a', cidr: '10.9.0.0/24'}]),
    createPools(ctx, [{name: 'b', cidr: '10.9.0.0/24'}]),
  ])
  const won = results.filter((r) => r.status === 'fulfilled')
  assert.equal(won.length, 1)
  const winner = (await listPools(ctx)).map((p) => p.name)
  assert.equal(winner.length, 1)
  const lost = results.find((r) => r.status === 'rejected') as PromiseRejectedResult
  assert.ok(
    lost.reason instanceof ConflictError && lost.reason.message.includes(`overlaps with IPPool(${winner[0]})`),
    String(lost.reason),
  )
})
