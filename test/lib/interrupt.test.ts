// The Interrupt token and the operations that honour it, in process: a stop is requested at a chosen point
// (as the CLI's signal handler would), so each case is deterministic.
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'
import {ConflictError, DatastoreUnavailableError, InterruptedError} from '../../src/lib/errors.ts'
import {Interrupt} from '../../src/lib/interrupt.ts'
import {autoAssign} from '../../src/lib/ipam/autoassign.ts'
import {makeCtx} from '../../src/lib/ipam/context.ts'
import {createPools, deletePool, setPoolDisabled} from '../../src/lib/ipam/pool-admin.ts'
import {ipStatus} from '../../src/lib/ipam/query.ts'
import {releaseByHandle, releaseIps} from '../../src/lib/ipam/release.ts'
import {keys} from '../../src/lib/store/keys.ts'
import {MemoryStore} from '../../src/lib/store/memory.ts'
import {fakeClock} from './ipam/helpers.ts'

function env() {
  const store = new MemoryStore()
  const interrupt = new Interrupt()
  return {store, interrupt, ctx: makeCtx(store, {clock: fakeClock(), interrupt})}
}

async function until(cond: () => Promise<boolean>): Promise<void> {
  while (!(await cond())) await new Promise((r) => setImmediate(r))
}

const disabled = async (store: MemoryStore, name: string) =>
  /"disabled":true/.test((await store.get(keys.pool(name)))?.value ?? '')

describe('Interrupt', () => {
  test('a checkpoint throws only once a stop is requested, and the error carries the signal and the progress', async () => {
    const it = new Interrupt()
    await it.checkpoint({done: ''})
    assert.equal(it.armed, true)
    it.request('SIGTERM')
    await assert.rejects(it.checkpoint({done: 'did X', undo: 'ipamctl undo-x'}), (err: unknown) => {
      assert.ok(err instanceof InterruptedError)
      assert.equal(err.exitCode, 130)
      assert.equal(err.message, 'interrupted by SIGTERM: did X; to undo: ipamctl undo-x')
      return true
    })
  })

  test('a request ends a sleep at once', async () => {
    const it = new Interrupt()
    const slept = it.sleep(3_600_000)
    it.request('SIGINT')
    await slept // would hang the test for an hour otherwise
  })
})

describe('deletePool interrupted', () => {
  test('during the grace wait: the pool is re-enabled and not deleted', async () => {
    const {store, interrupt, ctx} = env()
    await createPools(ctx, [{name: 'p1', cidr: '10.9.0.0/24'}])
    const del = deletePool(ctx, 'p1', {graceMs: 3_600_000})
    await until(() => disabled(store, 'p1'))
    interrupt.request('SIGINT')
    await assert.rejects(
      del,
      /^InterruptedError: interrupted by SIGINT: IP pool p1 was not deleted and is enabled again$/,
    )
    assert.equal(await disabled(store, 'p1'), false)
  })

  test('someone else changed the pool meanwhile: it is left as they left it, and the undo is printed', async () => {
    const {store, interrupt, ctx} = env()
    await createPools(ctx, [{name: 'p1', cidr: '10.9.0.0/24'}])
    const del = deletePool(ctx, 'p1', {graceMs: 3_600_000})
    await until(() => disabled(store, 'p1'))
    const other = makeCtx(store)
    await setPoolDisabled(other, 'p1', false)
    await setPoolDisabled(other, 'p1', true)
    interrupt.request('SIGINT')
    await assert.rejects(
      del,
      /was left as it is now \(it was changed by someone else meanwhile, or could not be re-enabled\); to undo: ipamctl pool update p1 --enable$/,
    )
    assert.equal(await disabled(store, 'p1'), true)
  })

  test('someone re-enables the pool just before its resource is deleted: it is not deleted, and stays enabled', async () => {
    const store = new MemoryStore()
    await createPools(makeCtx(store), [{name: 'p1', cidr: '10.9.0.0/24'}])
    // The other writer's re-enable lands right before the delete transaction.
    const racing = new Proxy(store, {
      get(target, prop, receiver) {
        if (prop === 'txn') {
          return async (...a: Parameters<MemoryStore['txn']>) => {
            if (a[1].some((op) => 'delete' in op && op.delete === keys.pool('p1')))
              await setPoolDisabled(makeCtx(target), 'p1', false)
            return target.txn(...a)
          }
        }
        const v = Reflect.get(target, prop, receiver)
        return typeof v === 'function' ? v.bind(target) : v
      },
    })
    await assert.rejects(deletePool(makeCtx(racing), 'p1', {graceMs: 0}), (err: unknown) => {
      assert.ok(err instanceof ConflictError)
      assert.match(
        err.message,
        /^IP pool p1 was changed by someone else while it was being deleted; IP pool p1 was not deleted and was left as it is now/,
      )
      return true
    })
    assert.equal(await disabled(store, 'p1'), false)
  })

  test('a pool that was already disabled stays disabled and is not deleted', async () => {
    const {store, interrupt, ctx} = env()
    await createPools(ctx, [{name: 'p1', cidr: '10.9.0.0/24', disabled: true}])
    const del = deletePool(ctx, 'p1', {graceMs: 3_600_000})
    // Past the first checkpoint (where a stop would mean "nothing was changed"): the pool was read as disabled.
    await until(async () => interrupt.lastCommitted.done !== '')
    interrupt.request('SIGINT')
    await assert.rejects(del, /IP pool p1 was not deleted \(it was already disabled, and stays so\)$/)
    assert.ok(await store.get(keys.pool('p1')))
  })
})

describe('pool create interrupted between slices', () => {
  test('the slices already written are deleted again: nothing stays', async () => {
    const {store, interrupt, ctx} = env()
    const inputs = Array.from({length: 150}, (_, i) => ({name: `p${i}`, cidr: `10.${i}.0.0/16`}))
    const create = createPools(ctx, inputs)
    await until(async () => (await store.listKeys(keys.resourcePrefix('ippools'))).length > 0)
    interrupt.request('SIGINT')
    await assert.rejects(
      create,
      /^InterruptedError: interrupted by SIGINT: nothing was changed \(the 100 pools already created were deleted again\)$/,
    )
    assert.deepEqual(await store.listKeys(keys.resourcePrefix('ippools')), [])
  })
})

describe('releaseByHandle interrupted', () => {
  test('says how many were released and how to finish; finishing releases the rest', async () => {
    const {store, interrupt, ctx} = env()
    await createPools(ctx, [{name: 'p1', cidr: '10.0.0.0/16', blockSize: 30}])
    await autoAssign(makeCtx(store), {host: 'n1', num4: 40, num6: 0, handle: 'h'})
    const rel = releaseByHandle(ctx, 'h')
    await until(
      async () =>
        (await store.get(keys.handle('h')))?.value !== undefined &&
        !/"block":\{("[^"]+":4,?){10}\}/.test((await store.get(keys.handle('h')))!.value),
    )
    interrupt.request('SIGINT')
    const err = await rel.then(
      () => undefined,
      (e: unknown) => e,
    )
    assert.ok(err instanceof InterruptedError, String(err))
    const m =
      /^interrupted by SIGINT: released (\d+) addresses of handle h; to finish: ipamctl ipam release --handle h --yes$/.exec(
        err.message,
      )
    assert.ok(m, err.message)
    const left = Object.values(
      JSON.parse((await store.get(keys.handle('h')))!.value).block as Record<string, number>,
    ).reduce((a, b) => a + b, 0)
    assert.equal(Number(m[1]) + left, 40)
    assert.equal((await releaseByHandle(makeCtx(store), 'h')).length, left)
  })
})

describe('releaseIps interrupted', () => {
  test('the finish command names exactly the addresses not yet released', async () => {
    const {store, interrupt, ctx} = env()
    await createPools(ctx, [{name: 'p1', cidr: '10.0.0.0/16', blockSize: 30}])
    const r = await autoAssign(makeCtx(store), {host: 'n1', num4: 40, num6: 0})
    const all = r.v4.ips.map((i) => i.address)
    const stillAssigned = async () =>
      (await Promise.all(all.map((ip) => ipStatus(makeCtx(store), ip)))).filter((s) => s.state === 'assigned').length
    const rel = releaseIps(
      ctx,
      all.map((ip) => ({ip})),
    )
    await until(async () => (await stillAssigned()) < 40)
    interrupt.request('SIGINT')
    const err = await rel.then(
      () => undefined,
      (e: unknown) => e,
    )
    assert.ok(err instanceof InterruptedError, String(err))
    const m =
      /^interrupted by SIGINT: released (\d+) of 40 addresses; to finish: ipamctl ipam release ((?:--ip \S+ )+)--yes$/.exec(
        err.message,
      )
    assert.ok(m, err.message)
    const rest = m[2]!
      .trim()
      .split(' ')
      .filter((w) => w !== '--ip')
    assert.equal(rest.length, await stillAssigned())
    assert.equal(Number(m[1]), 40 - rest.length)
    assert.deepEqual(
      (
        await releaseIps(
          makeCtx(store),
          rest.map((ip) => ({ip})),
          {requireAllocated: true},
        )
      ).released.sort(),
      [...rest].sort(),
    )
    assert.equal(await stillAssigned(), 0)
  })
})

describe('deletePool failing half-way', () => {
  test('a datastore error after the disable re-enables the pool and the error says so', async () => {
    const store = new MemoryStore()
    await createPools(makeCtx(store), [{name: 'p1', cidr: '10.9.0.0/24'}])
    await autoAssign(makeCtx(store), {host: 'n1', num4: 1, num6: 0})
    // The second transaction (the first affinity release; the disable is the first) fails once, as a lost etcd would.
    let txns = 0
    const flaky = new Proxy(store, {
      get(target, prop, receiver) {
        if (prop === 'txn') {
          return async (...a: Parameters<MemoryStore['txn']>) => {
            if (++txns === 2) throw new DatastoreUnavailableError('etcd is unreachable')
            return target.txn(...a)
          }
        }
        const v = Reflect.get(target, prop, receiver)
        return typeof v === 'function' ? v.bind(target) : v
      },
    })
    await assert.rejects(deletePool(makeCtx(flaky), 'p1', {graceMs: 0}), (err: unknown) => {
      assert.ok(err instanceof DatastoreUnavailableError)
      assert.equal(err.message, 'etcd is unreachable; IP pool p1 was not deleted and is enabled again')
      return true
    })
    assert.equal(await disabled(store, 'p1'), false)
    assert.equal((await store.listKeys(keys.hostAffinityPrefix('n1', 4))).length, 1)
  })
})
