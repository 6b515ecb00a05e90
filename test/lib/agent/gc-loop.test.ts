// The agent's background GC: ipam gc's logic, but a leak is released only when two consecutive passes saw it
// (same handle and sequence number), past the grace period.
import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {GcLoop} from '../../../src/lib/agent/gc-loop.ts'
import {assignIp} from '../../../src/lib/ipam/assign-ip.ts'
import {autoAssign} from '../../../src/lib/ipam/autoassign.ts'
import type {Ctx} from '../../../src/lib/ipam/context.ts'
import {createPools} from '../../../src/lib/ipam/pool-admin.ts'
import {ipStatus} from '../../../src/lib/ipam/query.ts'
import {releaseIps} from '../../../src/lib/ipam/release.ts'
import {goTimeString} from '../../../src/lib/codec/gotime.ts'
import {keys} from '../../../src/lib/store/keys.ts'
import {assertInvariants, freshCtx, seed} from '../ipam/helpers.ts'

const MIN = 60_000

/** A workload allocation, as the CNI plugin writes it: handle `<network>.<containerID>`, namespace and pod. */
async function allocate(ctx: Ctx, containerId: string): Promise<string> {
  const handle = `k8s-pod-network.${containerId}`
  const attrs = {node: 'node-1', namespace: 'default', pod: containerId, timestamp: goTimeString(ctx.clock.now())}
  return (await autoAssign(ctx, {host: 'node-1', num4: 1, num6: 0, handle, attrs})).v4.ips[0]!.address
}

async function setup() {
  const env = await freshCtx()
  await createPools(env.ctx, [{name: 'p4', cidr: '10.65.0.0/16'}])
  const loop = new GcLoop(env.ctx, {intervalMs: 1000, graceMs: 10 * MIN, exclusive: (fn) => fn()})
  return {...env, loop}
}

describe('agent GC loop', () => {
  it('releases a leak on the second pass only, and never one younger than the grace period', async () => {
    const {ctx, clock, store, loop} = await setup()
    const old = await allocate(ctx, 'old')
    clock.advance(11 * 60)
    const young = await allocate(ctx, 'young')
    const first = await loop.pass()
    assert.deepEqual([first.candidates, first.tooYoung, first.deferred, first.result], [1, 1, 1, undefined])
    assert.equal((await ipStatus(ctx, old)).state, 'assigned', 'one sighting is not enough')
    const second = await loop.pass()
    assert.deepEqual(second.result?.released, [old])
    assert.equal((await ipStatus(ctx, old)).state, 'free')
    assert.equal((await ipStatus(ctx, young)).state, 'assigned')
    await assertInvariants(store, clock.now())
  })

  it('an address released and re-assigned between passes is a new allocation: not released', async () => {
    const {ctx, clock, loop} = await setup()
    const ip = await allocate(ctx, 'first')
    clock.advance(11 * 60)
    await loop.pass()
    await releaseIps(ctx, [{ip}])
    // The same address for another handle (cooldown over), looking leaked and old enough too.
    clock.advance(11 * 60)
    const attrs = {
      node: 'node-1',
      namespace: 'default',
      pod: 'second',
      timestamp: goTimeString(new Date(clock.now().getTime() - 11 * MIN)),
    }
    await assignIp(ctx, {ip, host: 'node-1', handle: 'k8s-pod-network.second', attrs})
    const p = await loop.pass()
    assert.equal(p.candidates, 1)
    assert.equal(p.result, undefined, 'the second pass saw a different allocation than the first')
    const st = await ipStatus(ctx, ip)
    assert.ok(st.state === 'assigned' && st.owner.handle === 'k8s-pod-network.second')
    assert.deepEqual((await loop.pass()).result?.released, [ip], 'seen twice now')
  })

  it('a leaked handle is deleted on the second pass if its revision did not change', async () => {
    const {store, loop} = await setup()
    await seed(store, keys.handle('orphan'), '{"block":{"10.65.0.0/26":1},"deleted":false}')
    assert.equal((await loop.pass()).result, undefined)
    const p = await loop.pass()
    assert.deepEqual(p.result?.deletedHandles, ['orphan'])
    assert.equal(await store.get(keys.handle('orphan')), undefined)
  })
})
