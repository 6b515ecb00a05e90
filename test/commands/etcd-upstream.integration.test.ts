// Data written by upstream Calico (put with etcdctl, byte for byte as docs/calico.md#block-json shows it) is read,
// extended and released correctly: sequence numbers beyond 2^53 stay exact, legacy `hostAffinity` blocks are
// understood.
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
  '"spec":{"cidr":"10.65.0.0/24","vxlanMode":"Never","ipipMode":"Never","natOutgoing":true,"blockSize":26,"nodeSelector":"all()","allowedUses":["Workload","Tunnel"]}}'
const NODE_KEY = '/calico/resources/v3/projectcalico.org/nodes/node-1'
const NODE =
  '{"kind":"Node","apiVersion":"projectcalico.org/v3","metadata":{"name":"node-1","uid":"0b5f7b7e-7d0e-4d1b-9c1e-000000000002","creationTimestamp":"2026-01-02T03:04:05Z"},"spec":{}}'

const HANDLE = 'k8s-pod-network.0123456789abcdef'
const SEEDED_ATTR = `{"handle_id":"${HANDLE}","secondary":{"namespace":"default","node":"node-1","pod":"web-0","timestamp":"2026-01-02 03:04:06.123456789 +0000 UTC"}}`
const BLOCK_KEY = '/calico/ipam/v2/assignment/ipv4/block/10.65.0.0-26'
// docs/calico.md#block-json, the block after one CNI allocation (ordinal 0), for a /26.
const BLOCK =
  `{"cidr":"10.65.0.0/26","affinity":"host:node-1","affinity_claim_time":"2026-01-02T03:04:05Z","allocations":[0,${nulls(63)}],"unallocated":[${range(1, 64).join(',')}],` +
  `"attributes":[${SEEDED_ATTR}],"sequenceNumber":1767323045000000001,"sequenceNumberForAllocation":{"0":1767323045000000000},"deleted":false}`
const AFFINITY_KEY = '/calico/ipam/v2/host/node-1/ipv4/block/10.65.0.0-26'
const HANDLE_KEY = `/calico/ipam/v2/handle/${HANDLE}`

// A legacy block: no affinity, the owner only in the deprecated hostAffinity, no claim time.
const LEGACY_KEY = '/calico/ipam/v2/assignment/ipv4/block/10.65.0.64-26'
const LEGACY =
  `{"cidr":"10.65.0.64/26","affinity":null,"hostAffinity":"old-node","allocations":[0,0,${nulls(62)}],"unallocated":[${range(2, 64).join(',')}],` +
  `"attributes":[{"handle_id":"legacy-h","secondary":{"node":"old-node"}}],"sequenceNumber":5,"sequenceNumberForAllocation":{"0":4,"1":4},"deleted":false}`
const LEGACY_AFFINITY_KEY = '/calico/ipam/v2/host/old-node/ipv4/block/10.65.0.64-26'

const GO_TIME = String.raw`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{0,8}[1-9])? \+0000 UTC`
const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')

before(async () => {
  if (etcdSkipReason) return
  server = await startEtcd()
  const put = (k: string, v: string) => server.ctl('put', k, v)
  put(POOL_KEY, POOL)
  put(NODE_KEY, NODE)
  put(BLOCK_KEY, BLOCK)
  put(AFFINITY_KEY, '{"state":"confirmed","deleted":false}')
  put(HANDLE_KEY, '{"block":{"10.65.0.0/26":1},"deleted":false}')
  put(LEGACY_KEY, LEGACY)
  put(LEGACY_AFFINITY_KEY, '{"state":"confirmed","deleted":false}')
  put('/calico/ipam/v2/handle/legacy-h', '{"block":{"10.65.0.64/26":2},"deleted":false}')
})

after(async () => {
  await server?.stop()
})

describe('upstream-format data in etcd', {skip: etcdSkipReason}, () => {
  test('the seed itself is consistent (the checker accepts upstream data)', () => {
    assert.deepEqual(checkConsistency(etcdDump(server).kvs).problems, [])
  })

  test('reads: ipam show --ip, block list, show --show-blocks', async () => {
    const [ip, legacy, blocks, util] = await Promise.all([
      run('ipam', 'show', '--ip', '10.65.0.0'),
      run('ipam', 'show', '--ip', '10.65.0.65'),
      run('block', 'list'),
      run('ipam', 'show', '--show-blocks', '-o', 'json'),
    ])
    assert.equal(
      ip,
      `IP 10.65.0.0 is in use\nHandle ID: ${HANDLE}\nActive Owner Attributes:\n  namespace: default\n  node: node-1\n  pod: web-0\n  timestamp: 2026-01-02 03:04:06.123456789 +0000 UTC\n`,
    )
    assert.equal(legacy, 'IP 10.65.0.65 is in use\nHandle ID: legacy-h\nActive Owner Attributes:\n  node: old-node\n')
    assert.match(blocks, /^10\.65\.0\.0\/26\s+host:node-1\s+2026-01-02T03:04:05Z\s+1\s+63\s*$/m)
    assert.match(
      blocks,
      /^10\.65\.0\.64\/26\s+host:old-node\s+2\s+62\s*$/m,
      "the legacy hostAffinity is read as the block's owner",
    )
    assert.ok(util.includes('10.65.0.0/24'), util)
    assert.ok(util.includes('10.65.0.64/26'), util)
  })

  test('ipam assign --host node-1 takes the next ordinal; sequenceNumber becomes exactly …002', async () => {
    assert.equal(await run('ipam', 'assign', '--host', 'node-1', '--handle', 'new-h'), '10.65.0.1\n')
    const v = etcdValue(server, BLOCK_KEY)!
    assert.match(v, /"sequenceNumber":1767323045000000002,/)
    const re = new RegExp(
      '^' +
        esc(
          `{"cidr":"10.65.0.0/26","affinity":"host:node-1","affinity_claim_time":"2026-01-02T03:04:05Z","allocations":[0,1,${nulls(62)}],"unallocated":[${range(2, 64).join(',')}],`,
        ) +
        esc(`"attributes":[${SEEDED_ATTR},{"handle_id":"new-h","secondary":{"node":"node-1","timestamp":"`) +
        GO_TIME +
        esc('"}}],') +
        esc(
          '"sequenceNumber":1767323045000000002,"sequenceNumberForAllocation":{"0":1767323045000000000,"1":1767323045000000001},"deleted":false}',
        ) +
        '$',
    )
    assert.match(v, re)
    assert.equal(etcdValue(server, '/calico/ipam/v2/handle/new-h'), '{"block":{"10.65.0.0/26":1},"deleted":false}')
    assert.equal(
      etcdValue(server, HANDLE_KEY),
      '{"block":{"10.65.0.0/26":1},"deleted":false}',
      'the seeded handle is untouched',
    )
    assert.equal(etcdValue(server, NODE_KEY), NODE, 'the existing node record is untouched')
  })

  test('block inspect: json is the stored bytes; yaml keeps the sequence numbers exact', async () => {
    const [json, yaml] = await Promise.all([
      run('block', 'inspect', '10.65.0.0/26'),
      run('block', 'inspect', '10.65.0.0/26', '-o', 'yaml'),
    ])
    assert.equal(json, `${etcdValue(server, BLOCK_KEY)}\n`)
    assert.match(yaml, /^sequenceNumber: 1767323045000000002$/m)
    assert.match(yaml, /^ {2}"0": 1767323045000000000$/m)
  })

  test('ipam release --handle <seeded handle> frees ordinal 0 to the tail, GCs its attribute, bumps the sequence', async () => {
    assert.equal(
      await run('ipam', 'release', '--yes', '--handle', HANDLE),
      `Successfully released 1 IP address of handle ${HANDLE}: 10.65.0.0\n`,
    )
    assert.equal(etcdValue(server, HANDLE_KEY), undefined)
    const v = etcdValue(server, BLOCK_KEY)!
    const re = new RegExp(
      '^' +
        esc(
          `{"cidr":"10.65.0.0/26","affinity":"host:node-1","affinity_claim_time":"2026-01-02T03:04:05Z","allocations":[null,0,${nulls(62)}],"unallocated":[${[...range(2, 64), 0].join(',')}],`,
        ) +
        esc('"attributes":[{"handle_id":"new-h","secondary":{"node":"node-1","timestamp":"') +
        GO_TIME +
        esc('"}}],') +
        esc(
          '"sequenceNumber":1767323045000000003,"sequenceNumberForAllocation":{"1":1767323045000000001},"deleted":false}',
        ) +
        '$',
    )
    assert.match(v, re)
    assert.equal(await run('ipam', 'show', '--ip', '10.65.0.0'), '10.65.0.0 is not assigned\n')
  })

  test('legacy block: old-node allocates from it (its affinity is kept) and its handle releases', async () => {
    assert.equal(await run('ipam', 'assign', '--host', 'old-node', '--handle', 'old-new'), '10.65.0.66\n')
    assert.equal(etcdValue(server, LEGACY_AFFINITY_KEY), '{"state":"confirmed","deleted":false}')
    assert.equal(
      await run('ipam', 'release', '--yes', '--handle', 'legacy-h'),
      'Successfully released 2 IP addresses of handle legacy-h: 10.65.0.64, 10.65.0.65\n',
    )
    const b = JSON.parse(etcdValue(server, LEGACY_KEY)!)
    const owner = typeof b.affinity === 'string' ? b.affinity : b.hostAffinity ? `host:${b.hostAffinity}` : null
    assert.equal(owner, 'host:old-node')
    assert.deepEqual(b.allocations.slice(0, 4), [null, null, 0, null])
    assert.equal(b.sequenceNumber, 7)
    assert.equal(etcdValue(server, '/calico/ipam/v2/handle/legacy-h'), undefined)
    assert.deepEqual(checkConsistency(etcdDump(server).kvs).problems, [])
  })
})
