// `ipam split` (docs/calico.md#ipam-split): child pools, the rules, the lock requirement, and that the split is one
// transaction: every failure leaves the datastore exactly as it was.
import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {ConflictError, NotFoundError, ValidationError} from '../../../src/lib/errors.ts'
import {autoAssign} from '../../../src/lib/ipam/autoassign.ts'
import {commitSplit, childName, NO_POOL_GIVEN, NOT_LOCKED, planSplit, splitPool} from '../../../src/lib/ipam/split.ts'
import {listPools} from '../../../src/lib/ipam/context.ts'
import {createPools} from '../../../src/lib/ipam/pool-admin.ts'
import {keys} from '../../../src/lib/store/keys.ts'
import type {Store} from '../../../src/lib/store/store.ts'
import {type Env, freshCtx, seed} from './helpers.ts'

const CI_KEY = '/calico/resources/v3/projectcalico.org/clusterinformations/default'
const clusterInfo = (ready: boolean) =>
  JSON.stringify({
    kind: 'ClusterInformation',
    apiVersion: 'projectcalico.org/v3',
    metadata: {name: 'default'},
    spec: {clusterGUID: 'g', datastoreReady: ready},
  })

async function dump(store: Store): Promise<string> {
  const kvs = await store.list('/')
  return JSON.stringify([String(await store.revision()), kvs.map((kv) => [kv.key, kv.value, String(kv.modRevision)])])
}

async function lockedEnv(): Promise<Env> {
  const env = await freshCtx()
  await seed(env.store, CI_KEY, clusterInfo(false))
  return env
}

async function rejectsUnchanged(
  env: Env,
  p: () => Promise<unknown>,
  cls: new (...a: never[]) => Error,
  message: RegExp | string,
): Promise<void> {
  const before = await dump(env.store)
  await assert.rejects(p(), (err: unknown) => {
    assert.ok(err instanceof cls, String(err))
    if (typeof message === 'string') assert.equal((err as Error).message, message)
    else assert.match((err as Error).message, message)
    return true
  })
  assert.equal(await dump(env.store), before)
}

describe('ipam split', () => {
  it('splits into children in address order with the spec copied, enabled, and the old pool gone', async () => {
    const env = await lockedEnv()
    await createPools(env.ctx, [
      {
        name: 'p',
        cidr: '10.0.0.0/24',
        natOutgoing: true,
        vxlanMode: 'Always',
        nodeSelector: "zone == 'a'",
        disabled: true,
        labels: {a: 'b'},
      },
    ])
    const r = await splitPool(env.ctx, {name: 'p', number: '4'})
    assert.equal(r.old.name, 'p')
    const pools = await listPools(env.ctx)
    assert.deepEqual(
      pools.map((p) => [p.name, p.spec.cidr]),
      [
        ['split-p-0', '10.0.0.0/26'],
        ['split-p-1', '10.0.0.64/26'],
        ['split-p-2', '10.0.0.128/26'],
        ['split-p-3', '10.0.0.192/26'],
      ],
    )
    for (const p of pools) {
      assert.equal(p.spec.disabled, false)
      assert.equal(p.spec.natOutgoing, true)
      assert.equal(p.spec.vxlanMode, 'Always')
      assert.equal(p.spec.nodeSelector, "zone == 'a'")
      assert.equal(p.spec.blockSize, 26)
      assert.equal(p.labels, undefined, 'metadata is reset')
      assert.ok(p.uid)
    }
    assert.equal(await env.store.get(keys.pool('p')), undefined)
  })

  it('finds the pool by CIDR, and keeps blocks and affinities (no affinity release)', async () => {
    const env = await lockedEnv()
    await createPools(env.ctx, [{name: 'p', cidr: 'fd00::/120'}])
    await autoAssign(env.ctx, {host: 'h1', num4: 0, num6: 1})
    const before = (await env.store.list('/calico/ipam/')).map((kv) => [kv.key, kv.value])
    await splitPool(env.ctx, {cidr: 'fd00::/120', number: 2})
    assert.deepEqual(
      (await listPools(env.ctx)).map((p) => p.spec.cidr),
      ['fd00::/121', 'fd00::80/121'],
    )
    assert.deepEqual(
      (await env.store.list('/calico/ipam/')).map((kv) => [kv.key, kv.value]),
      before,
    )
  })

  it('truncates a long old name so every child name is valid', () => {
    const long = 'a'.repeat(250)
    assert.equal(childName('p', 3, 4), 'split-p-3')
    assert.equal(childName(long, 0, 2), `split-${'a'.repeat(245)}-0`)
    assert.equal(childName(long, 63, 64).length, 253)
  })

  it('refuses without a name or CIDR, without the lock, for an unknown pool, and for bad numbers, changing nothing', async () => {
    const env = await freshCtx()
    await createPools(env.ctx, [{name: 'p', cidr: '10.0.0.0/24'}])
    await rejectsUnchanged(env, () => splitPool(env.ctx, {number: 2}), ValidationError, NO_POOL_GIVEN)
    await rejectsUnchanged(env, () => splitPool(env.ctx, {name: 'p', number: 2}), ConflictError, NOT_LOCKED)
    await seed(env.store, CI_KEY, clusterInfo(true))
    await rejectsUnchanged(env, () => splitPool(env.ctx, {name: 'p', number: 2}), ConflictError, NOT_LOCKED)
    await seed(env.store, CI_KEY, clusterInfo(false))
    await rejectsUnchanged(
      env,
      () => splitPool(env.ctx, {name: 'q', number: 2}),
      NotFoundError,
      'unable to find IP pool q covering the specified CIDR ',
    )
    await rejectsUnchanged(
      env,
      () => splitPool(env.ctx, {cidr: '10.9.0.0/24', number: 2}),
      NotFoundError,
      'unable to find IP pool  covering the specified CIDR 10.9.0.0/24',
    )
    for (const n of ['1', '0', '3', '6', 'x', '-2', '2.0']) {
      await rejectsUnchanged(
        env,
        () => splitPool(env.ctx, {name: 'p', number: n}),
        ValidationError,
        `number to split CIDR into is not a valid power of 2: ${n}`,
      )
    }
    await rejectsUnchanged(
      env,
      () => splitPool(env.ctx, {name: 'p', number: '8'}),
      ValidationError,
      /smaller than the pool's block size \/26/,
    )
    await rejectsUnchanged(
      env,
      () => splitPool(env.ctx, {name: 'p', number: '128'}),
      ValidationError,
      /at most 128 operations per transaction; split into 64 or fewer/,
    )
  })

  it('refuses a CIDR too small for the number of parts', async () => {
    const env = await lockedEnv()
    await createPools(env.ctx, [{name: 'p', cidr: '10.0.0.0/31', blockSize: 32}])
    await rejectsUnchanged(
      env,
      () => splitPool(env.ctx, {name: 'p', number: '4'}),
      ValidationError,
      'the CIDR 10.0.0.0/31 is not large enough to be split into 4 parts',
    )
  })

  it('splits a /32-block pool all the way to 64 children in one transaction', async () => {
    const env = await lockedEnv()
    await createPools(env.ctx, [{name: 'p', cidr: '10.0.0.0/26', blockSize: 32}])
    await splitPool(env.ctx, {name: 'p', number: 64})
    const pools = await listPools(env.ctx)
    assert.equal(pools.length, 64)
    assert.ok(pools.some((p) => p.name === 'split-p-63' && p.spec.cidr === '10.0.0.63/32'))
  })

  it('refuses when a child name is taken', async () => {
    const env = await lockedEnv()
    await createPools(env.ctx, [
      {name: 'p', cidr: '10.0.0.0/24'},
      {name: 'split-p-1', cidr: '10.1.0.0/24'},
    ])
    await rejectsUnchanged(
      env,
      () => splitPool(env.ctx, {name: 'p', number: 2}),
      ConflictError,
      /IP pool split-p-1 already exists/,
    )
  })

  it('commits nothing if the pool, the lock or a child name changes after planning', async () => {
    for (const race of [
      async (env: Env) => seed(env.store, keys.pool('p'), (await env.store.get(keys.pool('p')))!.value),
      async (env: Env) => seed(env.store, CI_KEY, clusterInfo(true)),
      async (env: Env) => seed(env.store, keys.pool('split-p-1'), (await env.store.get(keys.pool('p')))!.value),
    ]) {
      const env = await lockedEnv()
      await createPools(env.ctx, [{name: 'p', cidr: '10.0.0.0/24'}])
      const plan = await planSplit(env.ctx, {name: 'p', number: 2})
      await race(env)
      await rejectsUnchanged(
        env,
        () => commitSplit(env.ctx, plan),
        ConflictError,
        /changed while splitting; nothing was changed/,
      )
      assert.ok(await env.store.get(keys.pool('p')))
      assert.equal(await env.store.get(keys.pool('split-p-0')), undefined)
    }
  })
})
