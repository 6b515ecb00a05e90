// Every allocation path (CLI, CNI plugin, agent) stores the address's owner in its `node` attribute; a `node`
// attribute naming another host than the one the address is assigned to is refused before anything is written.
// (The CLI refuses every reserved key outright: test/reliability/hostile-input-ownership.test.ts.)
import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {ValidationError} from '../../../src/lib/errors.ts'
import {assignIp} from '../../../src/lib/ipam/assign-ip.ts'
import {autoAssign, refuseReservedAttributes, RESERVED_ATTRIBUTE_KEYS} from '../../../src/lib/ipam/autoassign.ts'
import {autoAssignBatch} from '../../../src/lib/ipam/batch-assign.ts'
import {createPools} from '../../../src/lib/ipam/pool-admin.ts'
import type {Store} from '../../../src/lib/store/store.ts'
import {allBlocks, freshCtx} from './helpers.ts'

const snapshot = async (store: Store): Promise<string> =>
  (await store.list('')).map((kv) => `${kv.key} @${kv.modRevision} ${kv.value}`).join('\n')

const mismatch = (e: unknown) =>
  e instanceof ValidationError && /attribute node="evil" does not match the host "n1"/.test(e.message)

describe('owner attributes', () => {
  it('autoAssign, assignIp and the agent batch refuse a node attribute that is not the host, writing nothing', async () => {
    const env = await freshCtx()
    await createPools(env.ctx, [{name: 'a', cidr: '10.88.0.0/26'}])
    const before = await snapshot(env.store)
    const attrs = {node: 'evil', pod: 'web', namespace: 'default'}
    await assert.rejects(autoAssign(env.ctx, {host: 'n1', num4: 1, num6: 0, handle: 'h', attrs}), mismatch)
    await assert.rejects(assignIp(env.ctx, {ip: '10.88.0.5', host: 'n1', handle: 'h', attrs}), mismatch)
    const [outcome] = await autoAssignBatch(env.ctx, [{host: 'n1', num4: 1, num6: 0, handle: 'h', attrs}])
    assert.ok(outcome && 'error' in outcome && mismatch(outcome.error))
    assert.equal(await snapshot(env.store), before)
  })

  it("the plugins' own attributes (node = host, timestamp, pod, namespace) are stored as given", async () => {
    const env = await freshCtx()
    await createPools(env.ctx, [{name: 'a', cidr: '10.89.0.0/26'}])
    const attrs = {node: 'n1', timestamp: '2026-01-02 03:04:05.000000001 +0000 UTC', pod: 'web', namespace: 'default'}
    await autoAssign(env.ctx, {host: 'n1', num4: 1, num6: 0, handle: 'h', attrs})
    const [block] = await allBlocks(env.store)
    assert.deepEqual(block!.attributes![0]!.secondary, attrs)
  })

  it('refuseReservedAttributes names the key; other keys pass', () => {
    for (const k of RESERVED_ATTRIBUTE_KEYS) {
      assert.throws(
        () => refuseReservedAttributes({note: 'x', [k]: 'v'}),
        (e: unknown) => e instanceof ValidationError && e.message.includes(`"${k}"`),
      )
    }
    refuseReservedAttributes({note: 'x', type: 'ipipTunnelAddress'})
  })
})
