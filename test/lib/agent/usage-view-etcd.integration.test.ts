// Needs etcd. The agent's usage view on a real etcd (its watch-based change feed): the scenarios of
// usage-view-scenarios.ts, and a feed that loses its watch (history compacted away while it was down) and
// starts over with a full read.
import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {EtcdStore} from '../../../src/lib/store/etcd.ts'
import type {ChangeHandler, KeyValue} from '../../../src/lib/store/store.ts'
import {etcdSkipReason, sharedEtcd} from '../../support/etcd-server.ts'
import {usageViewScenarios} from './usage-view-scenarios.ts'

describe('usage view on etcd', {skip: etcdSkipReason}, () => {
  const etcd = sharedEtcd()
  usageViewScenarios(
    async () => {
      await etcd.wipe()
      return EtcdStore.connect({endpoints: [etcd.server.endpoint], timeoutMs: 5000})
    },
    {incremental: true},
  )

  it('the etcd change feed hands over puts and deletes, and starts over after a compaction', async () => {
    await etcd.wipe()
    const store = await EtcdStore.connect({endpoints: [etcd.server.endpoint], timeoutMs: 5000})
    const feed = store.watch(['/t/a/', '/t/b/'])
    const state = new Map<string, string>()
    let resets = 0
    const h: ChangeHandler = {
      reset: () => {
        resets++
        state.clear()
      },
      change: (key: string, kv: KeyValue | undefined) => (kv ? state.set(key, kv.value) : state.delete(key)),
    }
    const put = (key: string, value: string) => store.txn([], [{put: key, value}])
    try {
      await put('/t/a/1', 'x')
      await put('/t/c/1', 'not watched')
      await feed.next(h)
      assert.deepEqual([resets, Object.fromEntries(state)], [1, {'/t/a/1': 'x'}])
      await put('/t/a/1', 'y')
      await put('/t/b/2', 'z')
      await store.txn([], [{delete: '/t/a/1'}])
      await put('/t/a/3', 'w')
      const rev = await feed.next(h)
      assert.deepEqual([resets, Object.fromEntries(state)], [1, {'/t/b/2': 'z', '/t/a/3': 'w'}])
      assert.equal(rev, await store.revision())
      // Nothing changed: no reset, nothing handed over.
      await feed.next(h)
      assert.deepEqual([resets, Object.fromEntries(state)], [1, {'/t/b/2': 'z', '/t/a/3': 'w'}])
      // The member restarts (the stream breaks) and history is compacted meanwhile: a full read.
      await etcd.server.restart()
      // Written and compacted with etcdctl: this process's connection may not be back yet.
      const {header} = JSON.parse(etcd.server.ctl('put', '/t/a/4', 'v', '-w', 'json')) as {header: {revision: number}}
      etcd.server.ctl('compact', String(header.revision))
      let after: bigint | undefined
      for (let i = 0; i < 3 && after === undefined; i++) after = await feed.next(h).catch(() => undefined)
      assert.ok(after !== undefined, 'the feed recovered')
      assert.deepEqual(Object.fromEntries(state), {'/t/b/2': 'z', '/t/a/3': 'w', '/t/a/4': 'v'})
      assert.equal(resets, 2)
    } finally {
      await feed.close()
      await store.close()
    }
  })
})
