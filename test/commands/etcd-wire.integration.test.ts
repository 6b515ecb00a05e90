// Wire compatibility: what ipamctl writes to etcd is exactly Calico's key layout and Go encoding/json values
// (docs/calico.md#key-layout and #block-json), read back with etcdctl; `block inspect` prints the stored bytes.
import assert from 'node:assert/strict'
import {after, before, describe, test} from 'node:test'
import {etcdSkipReason, startEtcd, type EtcdServer} from '../support/etcd-server.ts'
import {checkConsistency, Cli, etcdDump, etcdValue} from './etcd-cli.ts'
import {assertCleanError} from './helpers.ts'

let server: EtcdServer
const cli = new Cli()
const run = (...args: string[]) => cli.ok(server.endpoint, args)

const BLOCK = '/calico/ipam/v2/assignment/ipv4/block/10.70.0.0-26'
const AFFINITY = '/calico/ipam/v2/host/node-1/ipv4/block/10.70.0.0-26'
const HANDLE = '/calico/ipam/v2/handle/h1'
const POOL = '/calico/resources/v3/projectcalico.org/ippools/wire'
const NODE = '/calico/resources/v3/projectcalico.org/nodes/node-1'

const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')
const range = (from: number, to: number) => Array.from({length: to - from}, (_, i) => from + i)
/** Go's time.Now().UTC().String(): fraction without trailing zeros (and none at all when zero). */
const GO_TIME = String.raw`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{0,8}[1-9])? \+0000 UTC`
const RFC3339_S = String.raw`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`
const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'

before(async () => {
  if (etcdSkipReason) return
  server = await startEtcd()
})

after(async () => {
  await server?.stop()
})

describe('wire compatibility', {skip: etcdSkipReason}, () => {
  let assignedAt = 0

  test('pool create + ipam assign --count 2 --handle h1 write exactly the five upstream keys', async () => {
    await run('pool', 'create', 'wire', '--cidr', '10.70.0.0/26')
    assignedAt = Date.now()
    assert.equal(
      await run('ipam', 'assign', '--host', 'node-1', '--count', '2', '--handle', 'h1'),
      '10.70.0.0\n10.70.0.1\n',
    )
    const {kvs} = etcdDump(server)
    assert.deepEqual([...kvs.keys()], [BLOCK, HANDLE, AFFINITY, POOL, NODE])
  })

  test('handle and affinity values are byte-exact', () => {
    assert.equal(etcdValue(server, HANDLE), '{"block":{"10.70.0.0/26":2},"deleted":false}')
    assert.equal(etcdValue(server, AFFINITY), '{"state":"confirmed","deleted":false}')
  })

  test('the block value follows Go field order and encoding', () => {
    const v = etcdValue(server, BLOCK)!
    const re = new RegExp(
      '^' +
        esc('{"cidr":"10.70.0.0/26","affinity":"host:node-1","affinity_claim_time":"') +
        `(${RFC3339_S})` +
        esc(`","allocations":[0,0,${Array(62).fill('null').join(',')}],"unallocated":[${range(2, 64).join(',')}],`) +
        esc('"attributes":[{"handle_id":"h1","secondary":{"node":"node-1","timestamp":"') +
        `(${GO_TIME})` +
        esc('"}}],') +
        esc('"sequenceNumber":') +
        '(\\d+)' +
        esc(',"sequenceNumberForAllocation":{"0":') +
        '(\\d+)' +
        esc(',"1":') +
        '(\\d+)' +
        esc('},"deleted":false}') +
        '$',
    )
    const m = re.exec(v)
    assert.ok(m, `block value does not match upstream's encoding:\n${v}`)
    const [, claim, ts, seq, s0, s1] = m
    // Claim time: UTC, seconds precision, now. Timestamp: the same moment.
    assert.ok(Math.abs(Date.parse(claim!) - assignedAt) < 60_000, claim)
    assert.ok(Math.abs(Date.parse(ts!.replace(' ', 'T').replace(/ \+0000 UTC$/, 'Z')) - assignedAt) < 60_000, ts)
    // A new block's sequence number is a UnixNano time (far beyond 2^53), written without loss.
    const n = BigInt(seq!)
    assert.ok(n > 2n ** 53n, seq)
    assert.ok(
      n / 1_000_000n - BigInt(assignedAt) < 60_000n && BigInt(assignedAt) - n / 1_000_000n < 60_000n,
      `sequenceNumber ${seq} is not a UnixNano time`,
    )
    for (const s of [s0!, s1!]) assert.ok(BigInt(s) <= n, `sequenceNumberForAllocation ${s} > sequenceNumber ${seq}`)
  })

  test('pool and node resources: kind, apiVersion, metadata (uid, creationTimestamp), spec', () => {
    const pool = etcdValue(server, POOL)!
    assert.match(
      pool,
      new RegExp(
        `^\\{"kind":"IPPool","apiVersion":"projectcalico\\.org/v3","metadata":\\{"name":"wire","uid":"${UUID}","creationTimestamp":"${RFC3339_S}"\\},"spec":\\{`,
      ),
    )
    assert.deepEqual(JSON.parse(pool).spec, {
      cidr: '10.70.0.0/26',
      vxlanMode: 'Never',
      ipipMode: 'Never',
      blockSize: 26,
      nodeSelector: 'all()',
      allowedUses: ['Workload', 'Tunnel'],
      assignmentMode: 'Automatic',
    })
    assert.doesNotMatch(pool, /resourceVersion|selfLink/)
    assert.match(
      etcdValue(server, NODE)!,
      new RegExp(
        `^\\{"kind":"Node","apiVersion":"projectcalico\\.org/v3","metadata":\\{"name":"node-1","uid":"${UUID}","creationTimestamp":"${RFC3339_S}"\\},"spec":\\{\\}\\}$`,
      ),
    )
  })

  test('block inspect prints exactly what etcdctl shows, by CIDR or by address', async () => {
    const stored = etcdValue(server, BLOCK)!
    const [byCidr, byIp, missing] = await Promise.all([
      run('block', 'inspect', '10.70.0.0/26'),
      run('block', 'inspect', '10.70.0.1'),
      cli.etcd(server.endpoint, ['block', 'inspect', '10.71.0.0/26']),
    ])
    assert.equal(byCidr, `${stored}\n`)
    assert.equal(byIp, `${stored}\n`)
    assertCleanError(missing, 3)
  })

  test('IPv6: block and affinity keys use the compressed CIDR with the first "/" → "-"', async () => {
    await run('pool', 'create', 'wire6', '--cidr', 'fd00:70::/122')
    assert.equal(
      await run('ipam', 'assign', '--host', 'node-1', '--count', '0', '--count6', '1', '--handle', 'h6'),
      'fd00:70::\n',
    )
    const {kvs} = etcdDump(server, '/calico/ipam/')
    assert.ok(kvs.has('/calico/ipam/v2/assignment/ipv6/block/fd00:70::-122'), [...kvs.keys()].join('\n'))
    assert.equal(
      kvs.get('/calico/ipam/v2/host/node-1/ipv6/block/fd00:70::-122'),
      '{"state":"confirmed","deleted":false}',
    )
    assert.equal(kvs.get('/calico/ipam/v2/handle/h6'), '{"block":{"fd00:70::/122":1},"deleted":false}')
    assert.match(
      kvs.get('/calico/ipam/v2/assignment/ipv6/block/fd00:70::-122')!,
      /^\{"cidr":"fd00:70::\/122","affinity":"host:node-1",/,
    )
    assert.deepEqual(checkConsistency(kvs).problems, [])
  })

  test('release --handle h1 (cooldown 0): ordinals go to the tail, attributes [] , sequence numbers bump, handle deleted', async () => {
    const before = etcdValue(server, BLOCK)!
    const seqBefore = BigInt(/"sequenceNumber":(\d+)/.exec(before)![1]!)
    const claim = /"affinity_claim_time":"([^"]+)"/.exec(before)![1]
    assert.equal(
      await run('ipam', 'release', '--yes', '--handle', 'h1'),
      'Successfully released 2 IP addresses of handle h1: 10.70.0.0, 10.70.0.1\n',
    )
    assert.equal(etcdValue(server, HANDLE), undefined)
    assert.equal(
      etcdValue(server, AFFINITY),
      '{"state":"confirmed","deleted":false}',
      'the empty affine block keeps its affinity',
    )
    const after = etcdValue(server, BLOCK)!
    const expected =
      `{"cidr":"10.70.0.0/26","affinity":"host:node-1","affinity_claim_time":"${claim}","allocations":[${Array(64).fill('null').join(',')}],` +
      `"unallocated":[${[...range(2, 64), 0, 1].join(',')}],"attributes":[],"sequenceNumber":${seqBefore + 1n},"sequenceNumberForAllocation":{},"deleted":false}`
    assert.equal(after, expected)
    assert.deepEqual(checkConsistency(etcdDump(server).kvs).problems, [])
  })
})
