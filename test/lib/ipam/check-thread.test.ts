// ipam check's endpoint thread (CheckOptions.endpointThread) on an embedded store file: the result is the one a
// single thread gives; the thread's work is used only when its snapshot has the main thread's revision (else the
// endpoints are read again in the main thread's snapshot); a `nodeNetnsExists` function keeps the work in one thread.
import assert from 'node:assert/strict'
import {after, before, describe, it} from 'node:test'
import {autoAssign} from '../../../src/lib/ipam/autoassign.ts'
import {
  type CheckOptions,
  type CheckResult,
  checkIpam,
  RevisionSignal,
  scanEndpointsForThread,
} from '../../../src/lib/ipam/check.ts'
import {type Ctx, makeCtx} from '../../../src/lib/ipam/context.ts'
import {createPools} from '../../../src/lib/ipam/pool-admin.ts'
import {goTimeString} from '../../../src/lib/codec/gotime.ts'
import {keys} from '../../../src/lib/store/keys.ts'
import type {SqliteStore} from '../../../src/lib/store/sqlite.ts'
import type {Scan, Store} from '../../../src/lib/store/store.ts'
import {encodeWorkloadEndpoint, endpointKey, newWorkloadEndpoint} from '../../../src/lib/workload/endpoint.ts'
import {fakeClock, tempSqlite} from './helpers.ts'

const sqlite = tempSqlite()
after(() => sqlite.cleanup())

const ENDPOINTS = keys.resourcePrefix('workloadendpoints')
const NODE =
  '{"kind":"Node","apiVersion":"projectcalico.org/v3","metadata":{"name":"node-1"},' +
  '"spec":{"bgp":{"ipv4Address":"10.0.0.1/24","ipv4IPIPTunnelAddr":"10.65.0.1"},"ipv4VXLANTunnelAddr":"10.66.0.2"}}'

/** A view of `store` that records the prefixes each snapshot reads, and shows the check `shift` added to its revision. */
function watched(store: SqliteStore, shift: bigint): {store: Store; read: string[]} {
  const read: string[] = []
  const view = Object.create(store) as SqliteStore
  view.eachAtRevision = (plan) =>
    store.eachAtRevision((revision) => {
      const scans: Scan[] = [...plan(revision + shift)]
      read.push(...scans.map((s) => s.prefix))
      return scans
    })
  return {store: view, read}
}

/** Everything check found, as plain data (the owner texts included). */
function view(r: CheckResult) {
  return {
    blocks: r.blocks.map((b) => [b.cidr, b.affinity]),
    allocations: r.allocations.map((a) => [a.ip, a.handle, a.inUse, a.owners]),
    owners: [...r.owners],
    rest: {...r, blocks: undefined, allocations: undefined, owners: undefined},
  }
}

describe('ipam check with the endpoint thread', () => {
  let store: SqliteStore
  let ctx: Ctx
  const check = (s: Store, opts: CheckOptions) => checkIpam({...ctx, store: s}, opts)
  let alone: ReturnType<typeof view>

  before(async () => {
    store = (await sqlite.open()) as SqliteStore
    ctx = makeCtx(store, {clock: fakeClock()})
    await createPools(ctx, [{name: 'p4', cidr: '10.65.0.0/16'}])
    const ops: {put: string; value: string}[] = [{put: `${keys.resourcePrefix('nodes')}node-1`, value: NODE}]
    // More endpoints than one page of the store's reads and of the owner names, on two nodes, some leaked.
    for (let i = 0; i < 300; i++) {
      const node = `node-${i % 2}`
      const r = await autoAssign(ctx, {
        host: node,
        num4: 1,
        num6: 0,
        handle: `h-${i}`,
        attrs: {node, pod: `pod-${i}`, namespace: 'default', timestamp: goTimeString(ctx.clock.now())},
      })
      if (i % 50 === 7) continue
      const ipNetworks = [`${r.v4.ips[0]!.address}/32`]
      // A second owner of one address, an address outside the pools, one without an allocation, an IPv6 one.
      if (i === 3) ipNetworks.push('10.65.0.1/32', '10.65.0.5/32', '10.65.200.1/32', '192.168.9.9/32', 'fd00::1/128')
      const w = newWorkloadEndpoint(
        {
          name: `${node}-k8s-pod--${i}-eth0`,
          namespace: i % 3 === 0 ? 'default' : `ns-${i % 5}`,
          orchestrator: 'k8s',
          node,
          containerID: `cid-${i}`,
          pod: `pod-${i}`,
          endpoint: 'eth0',
          ipNetworks,
          interfaceName: `cali-${i}`,
          // A namespace that does not exist: gone when check runs for node-1.
          netns: i % 10 === 1 ? `/nonexistent/netns-${i}` : undefined,
        },
        ctx.clock.now(),
      )
      ops.push({put: endpointKey(w.namespace, w.name), value: encodeWorkloadEndpoint(w)})
    }
    ops.push({put: `${keys.handlePrefix()}no-such-allocation`, value: '{}'})
    assert.ok((await store.txn([], ops)).succeeded)
    alone = view(await check(store, {netnsNode: 'node-1'}))
    // The data has what the comparisons are about.
    assert.ok(alone.rest.leaked.length >= 6)
    assert.ok(alone.rest.goneEndpoints.length > 0 && alone.rest.multipleOwners.length > 0)
    assert.ok(alone.rest.notInActivePool.length > 0 && alone.rest.noAllocation.length > 0)
    assert.ok(alone.owners.length > 256 && alone.rest.nodeTunnelIps === 2)
  })

  it('reads the endpoints on the thread when both snapshots have one revision, with the same result', async () => {
    const w = watched(store, 0n)
    const r = view(await check(w.store, {netnsNode: 'node-1', endpointThread: true}))
    assert.deepEqual(r, alone)
    assert.ok(w.read.includes(keys.blockPrefix()))
    assert.ok(!w.read.includes(ENDPOINTS), 'the endpoints were read by the thread')
  })

  it('reads the endpoints itself, in its own snapshot, when the revisions differ', async () => {
    const w = watched(store, 1n)
    const r = view(await check(w.store, {netnsNode: 'node-1', endpointThread: true}))
    assert.deepEqual(r, alone)
    assert.ok(w.read.includes(ENDPOINTS))
  })

  it('reads the endpoints itself when the thread cannot open the store, without waiting out its revision', async () => {
    const w = watched(store, 0n)
    Object.defineProperty(w.store, 'file', {value: `${store.file}.missing`})
    const started = Date.now()
    const r = view(await check(w.store, {netnsNode: 'node-1', endpointThread: true}))
    assert.deepEqual(r, alone)
    assert.ok(w.read.includes(ENDPOINTS))
    // Not a speed test: had the thread not said it failed, the main thread would have blocked for REVISION_WAIT_MS
    // (10 s), and a blocked thread runs no test timeout.
    assert.ok(Date.now() - started < 5_000, 'the thread signalled its failure')
  })

  it('keeps the work in one thread for a nodeNetnsExists function, or without the option', async () => {
    for (const opts of [{nodeNetnsExists: () => true, endpointThread: true}, {}] as CheckOptions[]) {
      const w = watched(store, 0n)
      await check(w.store, opts)
      assert.ok(w.read.includes(ENDPOINTS))
    }
  })
})

describe('RevisionSignal', () => {
  it('gives the revision published, on any thread that shares its memory', () => {
    const signal = new RevisionSignal()
    new RevisionSignal(signal.buffer).publish(42n)
    assert.equal(signal.wait(0), 42n)
  })

  it('gives no revision when the thread failed, or has published none within the wait', () => {
    assert.equal(new RevisionSignal().wait(1), undefined)
    const failed = new RevisionSignal()
    failed.fail()
    assert.equal(failed.wait(60_000), undefined)
  })

  it('is set failed by the thread whose scan fails before its snapshot begins', async () => {
    const signal = new RevisionSignal()
    const broken = {} as Store
    await assert.rejects(scanEndpointsForThread(broken, {file: '', active: [], signal: signal.buffer}, () => {}))
    // Its state (slot 0): failed, not pending, so a thread that waits for it returns at once.
    assert.equal(new BigInt64Array(signal.buffer)[0], 2n)
  })
})
