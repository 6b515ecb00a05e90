// The GC ownership rule (isWorkloadAllocation) and the tunnel addresses a Node record names.
import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {nodeTunnelAddresses} from '../../../src/lib/ipam/node.ts'
import {isWorkloadAllocation, NETNS_ATTRIBUTE, TUNNEL_TYPES} from '../../../src/lib/ipam/ownership.ts'

const pod = {node: 'node-1', namespace: 'default', pod: 'web-0', timestamp: '2026-01-02 03:04:05 +0000 UTC'}

describe('isWorkloadAllocation', () => {
  it('a CNI handle with namespace and pod, or with the netns attribute, is a workload allocation', () => {
    assert.equal(isWorkloadAllocation(pod, 'k8s-pod-network.0123abcd'), true)
    assert.equal(isWorkloadAllocation({node: 'node-1', [NETNS_ATTRIBUTE]: '/var/run/netns/demo'}, 'net1.c-1_x'), true)
  })

  it('a manual or unattributed allocation is not', () => {
    assert.equal(isWorkloadAllocation(pod, 'gateway'), false, 'no <network>.<containerID> shape')
    assert.equal(isWorkloadAllocation(pod, undefined), false, 'no handle')
    assert.equal(isWorkloadAllocation({node: 'node-1'}, 'k8s-pod-network.0123abcd'), false, 'no workload attributes')
    assert.equal(
      isWorkloadAllocation({namespace: 'default'}, 'k8s-pod-network.0123abcd'),
      false,
      'namespace without pod',
    )
    assert.equal(
      isWorkloadAllocation({pod: 'web-0', namespace: ''}, 'k8s-pod-network.0123abcd'),
      false,
      'empty namespace',
    )
    assert.equal(isWorkloadAllocation(pod, '.abc'), false)
    assert.equal(isWorkloadAllocation(pod, 'net.'), false)
    assert.equal(isWorkloadAllocation(pod, 'windows-reserved-ipam-handle'), false)
  })

  it('a tunnel address is never one, even with a handle that has a dot (a node named by its FQDN)', () => {
    for (const type of TUNNEL_TYPES) {
      assert.equal(
        isWorkloadAllocation({node: 'ip-10-0-0-1.ec2.internal', type}, 'vxlan-tunnel-addr-ip-10-0-0-1.ec2.internal'),
        false,
        type,
      )
      assert.equal(isWorkloadAllocation({...pod, type}, 'k8s-pod-network.0123abcd'), false, type)
    }
  })
})

describe('nodeTunnelAddresses', () => {
  const node = (spec: unknown) =>
    JSON.stringify({kind: 'Node', apiVersion: 'projectcalico.org/v3', metadata: {name: 'node-1'}, spec})

  it('reads every tunnel address field Calico writes, IPv6 ones too, normalized', () => {
    const text = node({
      bgp: {ipv4Address: '192.168.0.1/24', ipv4IPIPTunnelAddr: '10.65.0.1'},
      ipv4VXLANTunnelAddr: '10.65.0.2',
      ipv6VXLANTunnelAddr: 'fd00:0::3',
      wireguard: {interfaceIPv4Address: '10.65.0.4', interfaceIPv6Address: 'fd00::4'},
    })
    assert.deepEqual(nodeTunnelAddresses(text), ['10.65.0.1', '10.65.0.2', 'fd00::3', '10.65.0.4', 'fd00::4'])
  })

  it('an ipamctl node record, damaged JSON or odd fields name nothing', () => {
    assert.deepEqual(nodeTunnelAddresses(node({})), [])
    assert.deepEqual(nodeTunnelAddresses('{"spec": '), [])
    assert.deepEqual(
      nodeTunnelAddresses(node({bgp: 'x', ipv4VXLANTunnelAddr: 42, wireguard: {interfaceIPv4Address: 'banana'}})),
      [],
    )
    assert.deepEqual(nodeTunnelAddresses('null'), [])
  })
})
