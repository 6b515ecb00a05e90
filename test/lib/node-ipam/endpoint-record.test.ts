// The main plugin's WorkloadEndpoint record, written and removed the same way by the plugin and by the agent.
import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {putEndpoint, takeEndpoint} from '../../../src/lib/node-ipam/endpoint-record.ts'
import {MemoryStore} from '../../../src/lib/store/memory.ts'
import type {Store} from '../../../src/lib/store/store.ts'
import {
  decodeWorkloadEndpoint,
  endpointKey,
  newWorkloadEndpoint,
  type WorkloadEndpoint,
} from '../../../src/lib/workload/endpoint.ts'

const wep = (containerID: string, ip = '10.1.0.5/32'): WorkloadEndpoint =>
  newWorkloadEndpoint(
    {
      name: 'node--1-k8s-web-eth0',
      namespace: 'team',
      orchestrator: 'k8s',
      node: 'node-1',
      containerID,
      pod: 'web',
      endpoint: 'eth0',
      ipNetworks: [ip],
      interfaceName: 'cali0123456789a',
    },
    new Date('2026-01-02T03:04:05Z'),
  )
const KEY = endpointKey('team', 'node--1-k8s-web-eth0')

/** A store that counts its requests. */
function counted(inner: Store): Store & {calls: string[]} {
  const calls: string[] = []
  return Object.assign(Object.create(inner) as Store, {
    calls,
    get: (k: string) => {
      calls.push('get')
      return inner.get(k)
    },
    txn: (c: Parameters<Store['txn']>[0], o: Parameters<Store['txn']>[1]) => {
      calls.push('txn')
      return inner.txn(c, o)
    },
  })
}

describe('WorkloadEndpoint record', () => {
  it("a new pod's record is one request; a record left by an earlier attempt is replaced", async () => {
    const inner = new MemoryStore()
    const store = counted(inner)
    await putEndpoint(store, wep('c1'))
    assert.deepEqual(store.calls, ['txn'])
    await putEndpoint(store, wep('c2', '10.1.0.6/32'))
    const now = decodeWorkloadEndpoint((await inner.get(KEY))!.value)
    assert.deepEqual([now.containerID, now.ipNetworks], ['c2', ['10.1.0.6/32']])
  })

  it("DEL: another container's record stays (stale sandbox), its own goes, a missing one is fine", async () => {
    const store = new MemoryStore()
    await putEndpoint(store, wep('live'))
    const stale = await takeEndpoint(store, 'team', 'node--1-k8s-web-eth0', 'old')
    assert.deepEqual([stale.stale, stale.wep?.containerID], [true, 'live'])
    assert.ok(await store.get(KEY))
    const own = await takeEndpoint(store, 'team', 'node--1-k8s-web-eth0', 'live')
    assert.deepEqual([own.stale, own.wep?.ipNetworks], [false, ['10.1.0.5/32']])
    assert.equal(await store.get(KEY), undefined)
    assert.deepEqual(await takeEndpoint(store, 'team', 'node--1-k8s-web-eth0', 'live'), {wep: undefined, stale: false})
  })
})
