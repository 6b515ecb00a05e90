// autoAssignBatch: many requests of one host served by one transaction per block, with autoAssign's results.
import assert from 'node:assert/strict'
import {after, describe, it} from 'node:test'
import {autoAssign, type AutoAssignArgs} from '../../../src/lib/ipam/autoassign.ts'
import {autoAssignBatch, MAX_HANDLES_PER_TXN} from '../../../src/lib/ipam/batch-assign.ts'
import {createPools} from '../../../src/lib/ipam/pool-admin.ts'
import {ipsByHandle} from '../../../src/lib/ipam/query.ts'
import {CountedStore} from '../../../src/lib/store/counted.ts'
import {makeCtx} from '../../../src/lib/ipam/context.ts'
import {NotFoundError, ValidationError} from '../../../src/lib/errors.ts'
import type {Store} from '../../../src/lib/store/store.ts'
import {assertInvariants, fakeClock, openMemory, type StoreOpener, tempSqlite} from './helpers.ts'

const sqlite = tempSqlite()
after(() => sqlite.cleanup())

const req = (handle: string, extra: Partial<AutoAssignArgs> = {}): AutoAssignArgs => ({
  host: 'node-1',
  num4: 1,
  num6: 0,
  handle,
  attrs: {node: 'node-1', pod: handle},
  ...extra,
})

/** A counting store with pools, and a context on it. */
async function setup(
  open: StoreOpener,
  pools = [
    {name: 'p4', cidr: '10.65.0.0/16'},
    {name: 'p6', cidr: 'fd00:65::/48'},
  ],
) {
  const inner: Store = await open()
  const store = new CountedStore(inner)
  const ctx = makeCtx(store, {clock: fakeClock()})
  await createPools(ctx, pools)
  return {ctx, store}
}

const addrs = (o: Awaited<ReturnType<typeof autoAssignBatch>>) =>
  o.map((x) => {
    assert.ok('ok' in x, `unexpected error: ${'error' in x ? (x.error as Error).message : ''}`)
    return [...x.ok.v4.ips, ...x.ok.v6.ips].map((i) => i.address)
  })

for (const [name, open] of [
  ['memory', openMemory],
  ['sqlite', sqlite.open],
] as const) {
  describe(`autoAssignBatch (${name})`, () => {
    it('a batch for a host it served before is two datastore requests: one read (handles and block included) and one transaction; then one transaction (the steady state)', async () => {
      const {ctx, store} = await setup(open)
      addrs(await autoAssignBatch(ctx, [req('warm')]))
      const calls = () => Object.values(store.counts.calls).reduce((a, b) => a + b, 0)
      for (const n of [1, 5]) {
        const before = {...store.counts.calls}
        const total = calls()
        const out = addrs(
          await autoAssignBatch(
            ctx,
            Array.from({length: n}, (_, i) => req(`two-${n}-${i}`)),
          ),
        )
        assert.equal(out.flat().length, n)
        // The first batch after the claim reads; the next is served by the steady state (steady-assign.test.ts).
        const reads = n === 1 ? 1 : 0
        assert.equal(
          calls() - total,
          reads + 1,
          `requests for a batch of ${n}: ${JSON.stringify(store.counts.calls)} (before ${JSON.stringify(before)})`,
        )
        assert.equal(store.counts.calls.read - before.read, reads)
        assert.equal(store.counts.calls.txn - before.txn, 1)
      }
      await assertInvariants(store)
    })

    it('serves 40 requests from the affine block in one transaction, handles and invariants exact', async () => {
      const {ctx, store} = await setup(open)
      const first = await autoAssignBatch(ctx, [req('warm')]) // claims the block (autoAssign's path)
      assert.equal(addrs(first)[0]!.length, 1)
      const before = store.counts.calls.txn
      let blockTxns = 0
      const out = await autoAssignBatch(
        ctx,
        Array.from({length: 40}, (_, i) => req(`h${i}`)),
        {onBlockTxn: () => blockTxns++},
      )
      const got = addrs(out).flat()
      assert.equal(new Set([...got, ...addrs(first).flat()]).size, 41)
      assert.equal(store.counts.calls.txn - before, 1, 'one transaction for the whole batch')
      assert.equal(blockTxns, 1)
      for (let i = 0; i < 40; i++) assert.deepEqual(await ipsByHandle(ctx, `h${i}`), [got[i]])
      await assertInvariants(store, ctx.clock.now())
    })

    it('a fresh node: the first request claims a block, the other 39 share one transaction', async () => {
      const {ctx, store} = await setup(open)
      let blockTxns = 0
      const out = await autoAssignBatch(
        ctx,
        Array.from({length: 40}, (_, i) => req(`f${i}`)),
        {onBlockTxn: () => blockTxns++},
      )
      assert.equal(new Set(addrs(out).flat()).size, 40)
      assert.equal(blockTxns, 1)
      // The claim (block + affinity + handle), the Node record, then one block transaction for the rest.
      assert.equal(store.counts.calls.txn, 1 + 1 + 1 + 1, 'pool creation, claim, node, batch')
      await assertInvariants(store, ctx.clock.now())
    })

    it('spills into a new block when the affine one fills, and chunks transactions at MAX_HANDLES_PER_TXN handles', async () => {
      const {ctx, store} = await setup(open, [{name: 'small', cidr: '10.66.0.0/24'}]) // /26 blocks of 64
      await autoAssignBatch(ctx, [req('warm')])
      const ops: number[] = []
      const txn = store.txn.bind(store)
      store.txn = async (c, o) => {
        ops.push(o.length)
        return txn(c, o)
      }
      const n = 150
      const out = await autoAssignBatch(
        ctx,
        Array.from({length: n}, (_, i) => req(`c${i}`)),
      )
      const got = addrs(out).flat()
      assert.equal(got.length, n)
      assert.equal(new Set(got).size, n)
      assert.ok(Math.max(...ops) <= MAX_HANDLES_PER_TXN + 1, `largest transaction has ${Math.max(...ops)} ops`)
      const blocks = new Set(out.map((o) => ('ok' in o ? o.ok.v4.ips[0]!.block : '')))
      assert.equal(blocks.size, 3, 'three /26 blocks hold 151 addresses')
      await assertInvariants(store, ctx.clock.now())
    })

    it('dual stack, a named pool, and per-request errors as autoAssign reports them', async () => {
      const {ctx, store} = await setup(open)
      const out = await autoAssignBatch(ctx, [
        req('dual', {num6: 1}),
        req('named', {pools4: ['10.65.0.0/16']}),
        req('bad-count', {num4: -1}),
        req('no-pool', {pools4: ['10.99.0.0/16']}),
        req('six-only', {num4: 0, num6: 2}),
      ])
      assert.equal(addrs([out[0]!])[0]!.length, 2)
      assert.equal(addrs([out[1]!])[0]!.length, 1)
      assert.ok('error' in out[2]! && out[2].error instanceof ValidationError)
      assert.ok('error' in out[3]! && out[3].error instanceof NotFoundError)
      await assert.rejects(autoAssign(ctx, req('x', {pools4: ['10.99.0.0/16']})), {
        message: (out[3] as {error: Error}).error.message,
      })
      assert.equal(addrs([out[4]!])[0]!.length, 2)
      await assertInvariants(store, ctx.clock.now())
    })

    it('a full pool: same addresses and shortfall messages as autoAssign request by request', async () => {
      const pools = [{name: 'tiny', cidr: '10.67.0.0/30', blockSize: 30}]
      const batched = await setup(open, pools)
      const plain = await setup(open, pools)
      const reqs = [req('a', {num4: 3}), req('b', {num4: 3})]
      const out = await autoAssignBatch(batched.ctx, reqs)
      for (const [i, r] of reqs.entries()) {
        const want = await autoAssign(plain.ctx, r)
        const got = out[i]!
        assert.ok('ok' in got)
        assert.deepEqual(got.ok.v4.ips, want.v4.ips)
        assert.deepEqual(got.ok.v4.messages, want.v4.messages)
      }
      assert.equal((out[1] as {ok: {v4: {ips: unknown[]}}}).ok.v4.ips.length, 1)
    })
  })
}
