// The agent's background GC releases workload allocations only: a manual assignment or a tunnel address that
// looks leaked on every pass is counted, never released, while a workload leak beside it goes on the second pass.
import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {GcLoop} from '../../../src/lib/agent/gc-loop.ts'
import {assignIp} from '../../../src/lib/ipam/assign-ip.ts'
import {createPools} from '../../../src/lib/ipam/pool-admin.ts'
import {ipStatus} from '../../../src/lib/ipam/query.ts'
import {goTimeString} from '../../../src/lib/codec/gotime.ts'
import {keys} from '../../../src/lib/store/keys.ts'
import {assertInvariants, freshCtx} from '../ipam/helpers.ts'

const MIN = 60_000

describe('agent GC loop: ownership', () => {
  it('leaves non-workload allocations alone over two passes and releases the workload leak', async () => {
    const {ctx, clock, store} = await freshCtx()
    await createPools(ctx, [{name: 'p4', cidr: '10.65.0.0/16'}])
    const at = {timestamp: goTimeString(ctx.clock.now())}
    const manual = [
      (await assignIp(ctx, {ip: '10.65.0.10', host: 'node-1', handle: 'gateway', attrs: {node: 'node-1', ...at}}))
        .address,
      (
        await assignIp(ctx, {
          ip: '10.65.0.11',
          host: 'node-1',
          handle: 'ipip-tunnel-addr-node-1',
          attrs: {node: 'node-1', type: 'ipipTunnelAddress'},
        })
      ).address,
      (await assignIp(ctx, {ip: '10.65.0.12', host: 'node-1', attrs: {node: 'node-1', ...at}})).address,
    ]
    const workload = (
      await assignIp(ctx, {
        ip: '10.65.0.30',
        host: 'node-1',
        handle: 'k8s-pod-network.c0ffee',
        attrs: {node: 'node-1', namespace: 'default', pod: 'web-0', ...at},
      })
    ).address
    clock.advance(11 * 60)
    const loop = new GcLoop(ctx, {intervalMs: MIN, graceMs: 10 * MIN, exclusive: (fn) => fn()})
    const first = await loop.pass()
    assert.deepEqual([first.candidates, first.notWorkload, first.result], [1, 3, undefined])
    const second = await loop.pass()
    assert.deepEqual(second.result?.released, [workload])
    assert.equal(second.notWorkload, 3)
    const third = await loop.pass()
    assert.deepEqual([third.candidates, third.notWorkload, third.result], [0, 3, undefined])
    for (const ip of manual) assert.equal((await ipStatus(ctx, ip)).state, 'assigned', ip)
    assert.equal((await ipStatus(ctx, workload)).state, 'free')
    assert.ok(await store.get(keys.handle('gateway')))
    await assertInvariants(store, clock.now())
  })
})
