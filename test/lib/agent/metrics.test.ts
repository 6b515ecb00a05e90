// The agent's metrics in process: the leak scan never runs on a scrape's path and only while /metrics is being
// scraped, and a scrape brings the pool and node gauges up to date.
import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {AgentMetrics} from '../../../src/lib/agent/metrics.ts'
import {autoAssign} from '../../../src/lib/ipam/autoassign.ts'
import {makeCtx} from '../../../src/lib/ipam/context.ts'
import {createPools} from '../../../src/lib/ipam/pool-admin.ts'
import {CountedStore, roundTrips} from '../../../src/lib/store/counted.ts'
import {MemoryStore} from '../../../src/lib/store/memory.ts'
import {parseMetrics} from '../../support/agent.ts'

describe('AgentMetrics', () => {
  it('scans for leaks in the background, only once scraped, and serves the scan time', async () => {
    const store = new CountedStore(new MemoryStore())
    const ctx = makeCtx(store)
    await createPools(ctx, [{name: 'p4', cidr: '10.65.0.0/16'}])
    await autoAssign(ctx, {host: 'n1', num4: 2, num6: 0, handle: 'h1'})
    const metrics = new AgentMetrics(ctx, store.counts, () => 0)
    const errors: unknown[] = []
    metrics.enableLeakScans(20, (e) => errors.push(e))
    try {
      const before = roundTrips(store.counts)
      await new Promise((r) => setTimeout(r, 100))
      assert.equal(roundTrips(store.counts), before, 'nobody scraped: no scan, no feed')
      let m = parseMetrics(await metrics.render())
      assert.equal(m.get('ipamctl_pool_in_use_addresses{pool="p4",cidr="10.65.0.0/16"}'), 2)
      assert.equal(m.get('ipamctl_node_blocks{node="n1"}'), 1)
      for (let i = 0; i < 100 && !m.get('ipamctl_leak_scan_timestamp_seconds'); i++) {
        await new Promise((r) => setTimeout(r, 20))
        m = parseMetrics(await metrics.render())
      }
      assert.ok(m.get('ipamctl_leak_scan_timestamp_seconds')! > 0)
      assert.equal(m.get('ipamctl_leak_candidate_addresses'), 2, 'no endpoints: both are candidates')
      await autoAssign(ctx, {host: 'n2', num4: 1, num6: 0, handle: 'h2'})
      m = parseMetrics(await metrics.render())
      assert.equal(m.get('ipamctl_pool_in_use_addresses{pool="p4",cidr="10.65.0.0/16"}'), 3)
      assert.equal(m.get('ipamctl_node_blocks{node="n2"}'), 1)
      assert.deepEqual(errors, [])
    } finally {
      await metrics.stop()
    }
  })
})
