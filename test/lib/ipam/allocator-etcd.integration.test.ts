// Runs every allocator scenario (allocator-scenarios.ts) against EtcdStore on one real etcd, shared by the
// whole file: each scenario wipes every key first, so it starts from an empty datastore (the revision counter
// keeps counting, which no scenario depends on). Skipped when etcd is not installed.
// A few etcd-only cases follow: etcd caps one transaction at --max-txn-ops (128 by default), a limit the
// embedded stores do not have.
import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {autoAssign} from '../../../src/lib/ipam/autoassign.ts'
import {listPools} from '../../../src/lib/ipam/context.ts'
import {createPools} from '../../../src/lib/ipam/pool-admin.ts'
import {releaseIps} from '../../../src/lib/ipam/release.ts'
import {EtcdStore} from '../../../src/lib/store/etcd.ts'
import {etcdSkipReason, sharedEtcd} from '../../support/etcd-server.ts'
import {allocatorScenarios} from './allocator-scenarios.ts'
import {assertInvariants, blockCidrs, freshCtx, handleCounts} from './helpers.ts'

describe('allocator on a real etcd', {skip: etcdSkipReason}, () => {
  const etcd = sharedEtcd()

  const open = async (): Promise<EtcdStore> => {
    await etcd.wipe()
    return EtcdStore.connect({endpoints: [etcd.server.endpoint], timeoutMs: 5000})
  }

  allocatorScenarios('EtcdStore', open)

  describe('EtcdStore: more writes than one etcd transaction allows (--max-txn-ops 128)', () => {
    it('creating 130 pools in one call', async () => {
      const env = await freshCtx({open})
      try {
        await createPools(
          env.ctx,
          Array.from({length: 130}, (_, i) => ({name: `pool-${i}`, cidr: `10.${i}.0.0/16`})),
        )
        assert.equal((await listPools(env.ctx)).length, 130)
        await assertInvariants(env.store, env.clock.now())
      } finally {
        await env.store.close()
      }
    })

    it('releasing 130 addresses with 130 handles from one /24 block', async () => {
      const env = await freshCtx({open})
      try {
        await createPools(env.ctx, [{name: 'pool1', cidr: '10.65.0.0/16', blockSize: 24}])
        const ips: string[] = []
        for (let i = 0; i < 130; i++) {
          const r = await autoAssign(env.ctx, {host: 'host-a', num4: 1, num6: 0, handle: `h${i}`})
          ips.push(...r.v4.ips.map((ip) => ip.address))
        }
        assert.equal((await blockCidrs(env.store)).length, 1, 'all 130 addresses should come from one block')
        const r = await releaseIps(
          env.ctx,
          ips.map((ip) => ({ip})),
        )
        assert.equal(r.released.length, 130)
        assert.deepEqual(r.unallocated, [])
        for (let i = 0; i < 130; i++) assert.equal(await handleCounts(env.store, `h${i}`), undefined, `h${i}`)
        await assertInvariants(env.store, env.clock.now())
      } finally {
        await env.store.close()
      }
    })
  })
})
