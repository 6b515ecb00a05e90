// datastore export / import on the embedded store: export → import → export is byte-identical, the IPAM keys are
// restored byte for byte, a non-empty target is refused, -o never overwrites a file that is not an export, and an
// export written by calicoctl (sorted YAML keys, resourceVersions, upstream's ClusterInformation) imports.
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import {describe, test} from 'node:test'
import {assertRejected, sandbox, type Sandbox} from './helpers.ts'
import {provisioningScript} from './provisioning.ts'

const ipamKvs = (sb: Sandbox) => new Map(sb.keys('/calico/ipam/').map((k) => [k, sb.value(k)!]))

async function seeded(): Promise<Sandbox> {
  const sb = sandbox()
  await sb.ok('apply', '-f', sb.file('p.yaml', provisioningScript()))
  await sb.ok('ipam', 'assign', '--host', 'node-a', '--count', '20', '--handle', 'h-a')
  await sb.ok('ipam', 'assign', '--host', 'node-b', '--count', '5')
  await sb.ok('datastore', 'lock')
  return sb
}

describe('datastore export and import', {concurrency: true}, () => {
  test('export → import → export is byte-identical; IPAM keys restored byte for byte', async () => {
    const src = await seeded()
    const file = path.join(src.dir, 'backup.txt')
    assert.match(
      await src.ok('datastore', 'export', '-o', file),
      /^Exported 15 resources, 3 blocks, 3 block affinities, 1 handles and the IPAM configuration to /,
    )
    assert.equal(fs.statSync(file).mode & 0o777, 0o600)
    const text = fs.readFileSync(file, 'utf8')
    assert.equal(text.split('\n===\n').length, 3)
    assert.doesNotMatch(text.split('===\n')[0]!, /uid:|resourceVersion:|creationTimestamp:/)
    assert.equal(await src.ok('datastore', 'export'), text)
    const dst = sandbox()
    assert.match(await dst.ok('datastore', 'import', '-f', file), /^Imported \d+ keys from /)
    assert.equal(await dst.ok('datastore', 'export'), text)
    assert.deepEqual([...ipamKvs(dst)], [...ipamKvs(src)])
    const cluster = '/calico/resources/v3/projectcalico.org/clusterinformations/default'
    assert.equal(dst.value(cluster), src.value(cluster))
    const blocks = src.keys('/calico/ipam/v2/assignment/')
    assert.equal(blocks.length, 3)
    for (const key of blocks) {
      const cidr = key.split('/').at(-1)!.replace('-', '/')
      assert.equal(await dst.ok('block', 'inspect', cidr), await src.ok('block', 'inspect', cidr))
    }
    // The restored store works: allocation carries on where the source would.
    assert.equal(
      await dst.ok('ipam', 'assign', '--host', 'node-a', '--count', '1'),
      await src.ok('ipam', 'assign', '--host', 'node-a', '--count', '1'),
    )
  })

  test('a non-empty target is refused (exit 4) unless --force, which asks; bad files change nothing', async () => {
    const src = await seeded()
    const file = path.join(src.dir, 'backup.txt')
    await src.ok('datastore', 'export', '-o', file)
    await assertRejected(
      src,
      ['datastore', 'import', '-f', file],
      4,
      /already holds \d+ keys under \/calico\/; refusing/,
    )
    await assertRejected(src, ['datastore', 'import', '-f', file, '--force'], 2, /refusing without confirmation/)
    assert.match(await src.ok('datastore', 'import', '-f', file, '--force', '--yes'), /^Imported/)
    const empty = sandbox()
    await assertRejected(
      empty,
      ['datastore', 'import', '-f', empty.file('x.txt', 'kind: IPPool\n')],
      2,
      /not a datastore export/,
    )
    const broken = fs
      .readFileSync(file, 'utf8')
      .replace(/("cidr": "\d+\.\d+\.\d+\.)(\d+)/, (_m, a: string, b: string) => `${a}${(Number(b) + 16) % 256}`)
    await assertRejected(empty, ['datastore', 'import', '-f', empty.file('y.txt', broken)], 2, /is another CIDR/)
    assert.equal(fs.existsSync(empty.db), false, 'a refused import creates no store')
    // -o replaces an earlier export only.
    await assertRejected(src, ['datastore', 'export', '-o', src.db], 2, /not an earlier datastore export/)
  })

  test('imports an export written by calicoctl (sorted keys, resourceVersions, upstream ClusterInformation)', async () => {
    const upstream = `apiVersion: projectcalico.org/v3
items:
- apiVersion: projectcalico.org/v3
  kind: IPPool
  metadata:
    name: default-ipv4-ippool
  spec:
    allowedUses:
    - Workload
    - Tunnel
    blockSize: 26
    cidr: 192.168.0.0/16
    ipipMode: Always
    natOutgoing: true
    nodeSelector: all()
    vxlanMode: Never
kind: IPPoolList
metadata:
  resourceVersion: "4241"
---
apiVersion: projectcalico.org/v3
items: []
kind: BGPPeerList
metadata:
  resourceVersion: "4241"
---
===
{
  "kind": "ClusterInformation",
  "apiVersion": "projectcalico.org/v3",
  "metadata": {
    "name": "default",
    "uid": "6e2c8a4e-3d43-4bd5-9c4b-2a1f4b5a6c7d",
    "resourceVersion": "17",
    "creationTimestamp": "2026-01-02T03:04:05Z"
  },
  "spec": {
    "clusterGUID": "0f1e2d3c4b5a69788796a5b4c3d2e1f0",
    "clusterType": "k8s,bgp",
    "calicoVersion": "v3.31.0",
    "datastoreReady": false
  }
}
===
{
  "block_affinities": [
    {
      "Key": "/calico/ipam/v2/host/worker-1/ipv4/block/192.168.10.0-26",
      "Value": {
        "state": "confirmed",
        "deleted": false
      },
      "TTL": 0
    }
  ],
  "blocks": [
    {
      "Key": "/calico/ipam/v2/assignment/ipv4/block/192.168.10.0-26",
      "Value": {"cidr":"192.168.10.0/26","affinity":"host:worker-1","allocations":[0,${'null,'.repeat(62)}null],"unallocated":[${Array.from({length: 63}, (_, i) => i + 1).join(',')}],"attributes":[{"handle_id":"ipip-tunnel-addr-worker-1","secondary":{"node":"worker-1","type":"ipipTunnelAddress"}}],"sequenceNumber":1767323045000000001,"sequenceNumberForAllocation":{"0":1767323045000000000},"deleted":false},
      "TTL": 0
    }
  ],
  "handles": [
    {
      "Key": "/calico/ipam/v2/handle/ipip-tunnel-addr-worker-1",
      "Value": {
        "block": {
          "192.168.10.0/26": 1
        },
        "deleted": false
      },
      "TTL": 0
    }
  ],
  "config": {
    "Key": "/calico/ipam/v2/config",
    "Value": {
      "strict_affinity": false,
      "auto_allocate_blocks": true
    },
    "TTL": 0
  }
}
`
    const sb = sandbox()
    assert.match(await sb.ok('datastore', 'import', '-f', sb.file('calicoctl.txt', upstream)), /^Imported 6 keys/)
    assert.equal(
      sb.value('/calico/ipam/v2/assignment/ipv4/block/192.168.10.0-26'),
      /"Value": (\{"cidr".*\}),\n/.exec(upstream)![1],
    )
    assert.equal(sb.value('/calico/ipam/v2/config'), '{"strict_affinity":false,"auto_allocate_blocks":true}')
    assert.match(
      sb.value('/calico/resources/v3/projectcalico.org/clusterinformations/default')!,
      /"clusterGUID":"0f1e2d3c4b5a69788796a5b4c3d2e1f0"/,
    )
    assert.doesNotMatch(
      sb.value('/calico/resources/v3/projectcalico.org/clusterinformations/default')!,
      /resourceVersion/,
    )
    assert.match(await sb.ok('get', 'ippool', 'default-ipv4-ippool', '-o', 'yaml'), /ipipMode: Always/)
    await sb.ok('datastore', 'unlock', '--yes')
    assert.equal(await sb.ok('ipam', 'assign', '--host', 'worker-1', '--count', '1'), '192.168.10.1\n')
  })
})
