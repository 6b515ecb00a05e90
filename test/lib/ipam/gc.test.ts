// ipam gc: only old leaked allocations and leaked handles go, each guarded by what the scan saw.
import assert from 'node:assert/strict'
import {after, describe, it} from 'node:test'
import {assignIp} from '../../../src/lib/ipam/assign-ip.ts'
import {autoAssign} from '../../../src/lib/ipam/autoassign.ts'
import type {Ctx} from '../../../src/lib/ipam/context.ts'
import {parseDuration, parseGoTime, planGc, runGc} from '../../../src/lib/ipam/gc.ts'
import {createPools} from '../../../src/lib/ipam/pool-admin.ts'
import {ipStatus} from '../../../src/lib/ipam/query.ts'
import {releaseIps} from '../../../src/lib/ipam/release.ts'
import {goTimeString} from '../../../src/lib/codec/gotime.ts'
import {keys} from '../../../src/lib/store/keys.ts'
import {encodeWorkloadEndpoint, endpointKey, newWorkloadEndpoint} from '../../../src/lib/workload/endpoint.ts'
import {assertInvariants, freshCtx, handleCounts, openMemory, seed, type StoreOpener, tempSqlite} from './helpers.ts'

const sqlite = tempSqlite()
after(() => sqlite.cleanup())

async function allocate(ctx: Ctx, handle: string, opts: {timestamp?: boolean} = {}): Promise<string> {
  const attrs: Record<string, string> = {node: 'node-1', pod: handle, namespace: 'default'}
  if (opts.timestamp !== false) attrs.timestamp = goTimeString(ctx.clock.now())
  const r = await autoAssign(ctx, {host: 'node-1', num4: 1, num6: 0, handle, attrs})
  return r.v4.ips[0]!.address
}

async function writeWep(ctx: Ctx, pod: string, ip: string): Promise<void> {
  const w = newWorkloadEndpoint(
    {
      name: `node-1-k8s-${pod}-eth0`,
      namespace: 'default',
      orchestrator: 'k8s',
      node: 'node-1',
      containerID: pod,
      pod,
      endpoint: 'eth0',
      ipNetworks: [`${ip}/32`],
      interfaceName: 'eth0',
    },
    ctx.clock.now(),
  )
  await seed(ctx.store, endpointKey('default', w.name), encodeWorkloadEndpoint(w))
}

async function setup(open: StoreOpener) {
  const env = await freshCtx({open})
  await createPools(env.ctx, [{name: 'p4', cidr: '10.65.0.0/16'}])
  return env
}

const TEN_MIN = 600_000

describe('gc parsing', () => {
  it('Go durations and Go time strings', () => {
    assert.equal(parseDuration('10m'), TEN_MIN)
    assert.equal(parseDuration('1h30m'), 5_400_000)
    assert.equal(parseDuration('0s'), 0)
    assert.equal(parseDuration('0'), 0)
    assert.equal(parseDuration('1.5s'), 1500)
    assert.throws(() => parseDuration('10'), /invalid duration/)
    assert.throws(() => parseDuration('ten minutes'), /invalid duration/)
    assert.equal(parseGoTime('2026-01-02 03:04:06.123456789 +0000 UTC')!.toISOString(), '2026-01-02T03:04:06.123Z')
    assert.equal(parseGoTime('2026-01-02 03:04:06 +0000 UTC')!.toISOString(), '2026-01-02T03:04:06.000Z')
    assert.equal(parseGoTime('yesterday'), undefined)
  })
})

for (const [name, open] of [
  ['memory', openMemory],
  ['sqlite', sqlite.open],
] as const) {
  describe(`ipam gc (${name})`, () => {
    it('respects the grace period; allocations without a timestamp count as old', async () => {
      const {ctx, clock} = await setup(open)
      const young = await allocate(ctx, 'net.young')
      const noTs = await allocate(ctx, 'net.nots', {timestamp: false})
      clock.advance(5 * 60)
      let plan = await planGc(ctx, {graceMs: TEN_MIN})
      assert.deepEqual(
        plan.tooYoung.map((c) => c.ip),
        [young],
      )
      assert.deepEqual(
        plan.ips.map((c) => c.ip),
        [noTs],
      )
      clock.advance(6 * 60)
      plan = await planGc(ctx, {graceMs: TEN_MIN})
      assert.deepEqual(plan.ips.map((c) => c.ip).sort(), [young, noTs].sort())
      const r = await runGc(ctx, plan)
      assert.deepEqual(r.released.sort(), [young, noTs].sort())
      assert.equal((await ipStatus(ctx, young)).state, 'free')
      assert.equal(await handleCounts(ctx.store, 'net.young'), undefined)
      await assertInvariants(ctx.store, clock.now())
    })

    it('never releases an address re-assigned since the scan (sequence-number guard)', async () => {
      const {ctx, clock} = await setup(open)
      const ip = await allocate(ctx, 'net.reuse')
      const plan = await planGc(ctx, {graceMs: 0})
      assert.deepEqual(
        plan.ips.map((c) => c.ip),
        [ip],
      )
      // Meanwhile: released and handed out again, even under the same handle.
      await releaseIps(ctx, [{ip}])
      clock.advance(1)
      await assignIp(ctx, {ip, host: 'node-1', handle: 'net.reuse', attrs: {node: 'node-1'}})
      const r = await runGc(ctx, plan)
      assert.deepEqual([r.released, r.skippedIps], [[], [ip]])
      assert.equal((await ipStatus(ctx, ip)).state, 'assigned')
    })

    it('never touches an address whose workload endpoint exists, even one written after the scan', async () => {
      const {ctx} = await setup(open)
      const live = await allocate(ctx, 'net.live')
      await writeWep(ctx, 'live', live)
      const late = await allocate(ctx, 'net.late')
      const plan = await planGc(ctx, {graceMs: 0})
      assert.deepEqual(
        plan.ips.map((c) => c.ip),
        [late],
      )
      await writeWep(ctx, 'late', late)
      const r = await runGc(ctx, plan)
      assert.deepEqual([r.released, r.skippedIps], [[], [late]])
      assert.equal((await ipStatus(ctx, live)).state, 'assigned')
      assert.equal((await ipStatus(ctx, late)).state, 'assigned')
    })

    it('deletes a leaked handle, but not one changed since the scan', async () => {
      const {ctx, store} = await setup(open)
      await seed(store, keys.handle('orphan'), '{"block":{"10.65.0.0/26":1},"deleted":false}')
      await seed(store, keys.handle('changing'), '{"block":{"10.65.0.0/26":1},"deleted":false}')
      const plan = await planGc(ctx, {graceMs: 0})
      assert.deepEqual(plan.handles.map((h) => h.id).sort(), ['changing', 'orphan'])
      await seed(store, keys.handle('changing'), '{"block":{"10.65.0.0/26":2},"deleted":false}')
      const r = await runGc(ctx, plan)
      assert.deepEqual([r.deletedHandles, r.skippedHandles], [['orphan'], ['changing']])
      assert.equal(await store.get(keys.handle('orphan')), undefined)
      assert.ok(await store.get(keys.handle('changing')))
    })

    it('planning (a dry run) changes nothing', async () => {
      const {ctx, store} = await setup(open)
      await allocate(ctx, 'net.leak', {timestamp: false})
      await seed(store, keys.handle('orphan'), '{"block":{"10.65.0.0/26":1},"deleted":false}')
      const before = await store.revision()
      const dump = JSON.stringify(await store.list('/'), (_k, v) => (typeof v === 'bigint' ? String(v) : v))
      const plan = await planGc(ctx, {graceMs: 0})
      assert.equal(plan.ips.length + plan.handles.length, 2)
      assert.equal(await store.revision(), before)
      assert.equal(
        JSON.stringify(await store.list('/'), (_k, v) => (typeof v === 'bigint' ? String(v) : v)),
        dump,
      )
    })
  })
}
