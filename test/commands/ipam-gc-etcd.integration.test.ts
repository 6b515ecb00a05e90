// GC ownership on etcd shared with Calico: tunnel addresses as Calico's node agent allocates them and names them
// in its Node record are counted by ipam check and never touched by ipam gc, nor is a manual assignment; a
// genuine workload leak in the same block is released. Data is put byte for byte as Calico writes it.
import assert from 'node:assert/strict'
import {after, before, describe, test} from 'node:test'
import {etcdSkipReason, startEtcd, type EtcdServer} from '../support/etcd-server.ts'
import {checkConsistency, Cli, etcdDump, etcdValue} from './etcd-cli.ts'

let server: EtcdServer
const cli = new Cli()
const run = (...args: string[]) => cli.ok(server.endpoint, args)

const range = (from: number, to: number) => Array.from({length: to - from}, (_, i) => from + i)
const nulls = (n: number) => Array(n).fill('null').join(',')

const POOL_KEY = '/calico/resources/v3/projectcalico.org/ippools/up-pool'
const POOL =
  '{"kind":"IPPool","apiVersion":"projectcalico.org/v3","metadata":{"name":"up-pool","uid":"0b5f7b7e-7d0e-4d1b-9c1e-000000000001","creationTimestamp":"2026-01-02T03:04:05Z"},' +
  '"spec":{"cidr":"10.65.0.0/24","vxlanMode":"Always","ipipMode":"Never","natOutgoing":true,"blockSize":26,"nodeSelector":"all()","allowedUses":["Workload","Tunnel"]}}'
const NODE_KEY = '/calico/resources/v3/projectcalico.org/nodes/node-1.example.org'
const NODE =
  '{"kind":"Node","apiVersion":"projectcalico.org/v3","metadata":{"name":"node-1.example.org","uid":"0b5f7b7e-7d0e-4d1b-9c1e-000000000002","creationTimestamp":"2026-01-02T03:04:05Z"},' +
  '"spec":{"bgp":{"ipv4Address":"192.168.0.1/24","ipv4IPIPTunnelAddr":"10.65.0.0"},"ipv4VXLANTunnelAddr":"10.65.0.1","wireguard":{"interfaceIPv4Address":"10.65.0.2"},"orchRefs":[{"nodeName":"node-1.example.org","orchestrator":"k8s"}]}}'

const TS = '2026-01-02 03:04:06.123456789 +0000 UTC'
const attr = (handle: string, secondary: string) => `{"handle_id":"${handle}","secondary":{${secondary}}}`
const NODE_ATTR = '"node":"node-1.example.org"'
const ATTRS = [
  // Calico's tunnel allocations: handle <kind>-tunnel-addr-<node> (a dot in it, the node being an FQDN) and a type.
  attr('ipip-tunnel-addr-node-1.example.org', `${NODE_ATTR},"type":"ipipTunnelAddress"`),
  attr('vxlan-tunnel-addr-node-1.example.org', `${NODE_ATTR},"type":"vxlanTunnelAddress"`),
  attr('wireguard-tunnel-addr-node-1.example.org', `${NODE_ATTR},"type":"wireguardTunnelAddress"`),
  // A pod whose WorkloadEndpoint is gone: a genuine leak.
  attr('k8s-pod-network.0123456789abcdef', `"namespace":"default",${NODE_ATTR},"pod":"web-0","timestamp":"${TS}"`),
]
const BLOCK_KEY = '/calico/ipam/v2/assignment/ipv4/block/10.65.0.0-26'
const BLOCK =
  `{"cidr":"10.65.0.0/26","affinity":"host:node-1.example.org","affinity_claim_time":"2026-01-02T03:04:05Z","allocations":[0,1,2,3,${nulls(60)}],"unallocated":[${range(4, 64).join(',')}],` +
  `"attributes":[${ATTRS.join(',')}],"sequenceNumber":1767323045000000004,"sequenceNumberForAllocation":{"0":1767323045000000000,"1":1767323045000000001,"2":1767323045000000002,"3":1767323045000000003},"deleted":false}`
const HANDLES = [
  'ipip-tunnel-addr-node-1.example.org',
  'vxlan-tunnel-addr-node-1.example.org',
  'wireguard-tunnel-addr-node-1.example.org',
  'k8s-pod-network.0123456789abcdef',
]

before(async () => {
  if (etcdSkipReason) return
  server = await startEtcd()
  const put = (k: string, v: string) => server.ctl('put', k, v)
  put(POOL_KEY, POOL)
  put(NODE_KEY, NODE)
  put(BLOCK_KEY, BLOCK)
  put('/calico/ipam/v2/host/node-1.example.org/ipv4/block/10.65.0.0-26', '{"state":"confirmed","deleted":false}')
  for (const h of HANDLES) put(`/calico/ipam/v2/handle/${h}`, '{"block":{"10.65.0.0/26":1},"deleted":false}')
})

after(async () => {
  await server?.stop()
})

describe('GC ownership on etcd shared with Calico', {skip: etcdSkipReason}, () => {
  test('ipam check counts the three tunnel addresses of the Node record; only the pod address is leaked', async () => {
    const before = etcdDump(server).revision
    const out = await run('ipam', 'check', '--show-all-ips', '--show-problem-ips')
    assert.equal(etcdDump(server).revision, before, 'check is read-only')
    for (const ip of ['10.65.0.0', '10.65.0.1', '10.65.0.2'])
      assert.ok(out.includes(`  ${ip} belongs to Node(node-1.example.org)\n`), out)
    assert.match(out, /^Found 3 node tunnel IPs\.$/m)
    assert.match(out, /^Workloads and nodes are using 3 IPs\.$/m)
    assert.match(out, /^Found 1 IPs that are allocated in IPAM but not actually in use\.$/m)
    assert.match(out, /^ {2}10\.65\.0\.3 leaked; attrs Main:k8s-pod-network\.0123456789abcdef /m)
  })

  test('ipam gc --grace 0s --yes releases the pod leak only; a manual assignment is listed, not released', async () => {
    assert.equal(
      await run('ipam', 'assign', '--host', 'node-1.example.org', '--ip', '10.65.0.10', '--handle', 'gateway'),
      '10.65.0.10\n',
    )
    const out = await run('ipam', 'gc', '--grace', '0s', '--yes')
    assert.match(
      out,
      /^Releasing 10\.65\.0\.3 \(handle k8s-pod-network\.0123456789abcdef, allocated 2026-01-02 03:04:06\.123456789 \+0000 UTC\)$/m,
    )
    assert.match(
      out,
      /^Leaked, not released: not a workload allocation \(release it with `ipam release`\): 1 addresses\n {2}10\.65\.0\.10 \(handle gateway, /m,
    )
    assert.match(out, /^Released 1 addresses; deleted 0 handles\.$/m)
    for (const ip of ['10.65.0.0', '10.65.0.1', '10.65.0.2', '10.65.0.10'])
      assert.match(await run('ipam', 'show', '--ip', ip), /is in use/, ip)
    assert.match(await run('ipam', 'show', '--ip', '10.65.0.3'), /is not assigned/)
    // Calico's records are as it wrote them: the Node untouched, every tunnel handle still there.
    assert.equal(etcdValue(server, NODE_KEY), NODE)
    for (const h of HANDLES.slice(0, 3))
      assert.equal(etcdValue(server, `/calico/ipam/v2/handle/${h}`), '{"block":{"10.65.0.0/26":1},"deleted":false}', h)
    assert.equal(etcdValue(server, '/calico/ipam/v2/handle/k8s-pod-network.0123456789abcdef'), undefined)
    assert.deepEqual(checkConsistency(etcdDump(server).kvs).problems, [])
  })
})
