// Which WorkloadEndpoint records CNI GC collects (endpointsToCollect) and the guard on deleting them.
import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {endpointsToCollect, putEndpoint, removeCollectedEndpoint} from '../../../src/lib/node-ipam/endpoint-record.ts'
import {MemoryStore} from '../../../src/lib/store/memory.ts'
import {
  decodeWorkloadEndpoint,
  encodeWorkloadEndpoint,
  newWorkloadEndpoint,
  workloadEndpointName,
} from '../../../src/lib/workload/endpoint.ts'

const NOW = new Date('2026-01-02T03:04:05Z')
const rec = (cid: string, o: {node?: string; network?: string; ip?: string} = {}) =>
  newWorkloadEndpoint(
    {
      name: workloadEndpointName({node: o.node ?? 'node-1', orchestrator: 'cni', containerId: cid, ifName: 'eth0'}),
      namespace: 'default',
      orchestrator: 'cni',
      node: o.node ?? 'node-1',
      containerID: cid,
      endpoint: 'eth0',
      ipNetworks: [o.ip ?? '10.1.0.1/32'],
      interfaceName: 'cali0123456789a',
      network: o.network,
    },
    NOW,
  )

describe('CNI GC: endpoint records', () => {
  it('the network annotation round-trips and is absent from records without it', () => {
    assert.equal(decodeWorkloadEndpoint(encodeWorkloadEndpoint(rec('c', {network: 'net-a'}))).network, 'net-a')
    assert.match(encodeWorkloadEndpoint(rec('c', {network: 'net-a'})), /"ipamctl.io\/network":"net-a"/)
    assert.equal('network' in decodeWorkloadEndpoint(encodeWorkloadEndpoint(rec('c'))), false)
  })

  it('collects records of this node and network whose container is not valid; legacy records only if all their addresses were released', async () => {
    const store = new MemoryStore()
    for (const w of [
      rec('valid', {network: 'net-a'}),
      rec('gone', {network: 'net-a'}),
      rec('gone-other-net', {network: 'net-b'}),
      rec('gone-other-node', {network: 'net-a', node: 'node-2'}),
      rec('legacy-released', {ip: '10.1.0.7/32'}),
      rec('legacy-not-released', {ip: '10.1.0.8/32'}),
    ])
      await putEndpoint(store, w)
    const got = await endpointsToCollect(store, {
      node: 'node-1',
      network: 'net-a',
      valid: new Set(['valid']),
      released: new Set(['10.1.0.7']),
    })
    assert.deepEqual(got.map((w) => w.containerID).sort(), ['gone', 'legacy-released'])
  })

  it('a record changed since it was read is not deleted', async () => {
    const store = new MemoryStore()
    await putEndpoint(store, rec('gone', {network: 'net-a'}))
    const [w] = await endpointsToCollect(store, {
      node: 'node-1',
      network: 'net-a',
      valid: new Set(),
      released: new Set(),
    })
    await putEndpoint(store, rec('gone', {network: 'net-a', ip: '10.1.0.9/32'})) // a new ADD rewrote it
    assert.equal(await removeCollectedEndpoint(store, w!), false)
    assert.equal((await store.list('/calico/resources/v3/projectcalico.org/workloadendpoints/')).length, 1)
    const [again] = await endpointsToCollect(store, {
      node: 'node-1',
      network: 'net-a',
      valid: new Set(),
      released: new Set(),
    })
    assert.equal(await removeCollectedEndpoint(store, again!), true)
    assert.equal((await store.list('/calico/resources/v3/projectcalico.org/workloadendpoints/')).length, 0)
  })
})
