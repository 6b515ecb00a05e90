// `ipamctl block inspect|list`: the stored JSON verbatim, the list layout, --host, -o json.
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'
import {assertRejected, fixture, type Sandbox} from './helpers.ts'

const PREFIX = '/calico/ipam/v2/assignment/ipv4/block/'

// Pool 10.60.0.0/25 = two /26 blocks. hostA takes 2 addresses (claims one block), then hostB takes 1 and
// claims the other block (a new block is preferred to borrowing).
const twoHosts = (): Promise<Sandbox> =>
  fixture('two-hosts', [
    ['pool', 'create', 'p', '--cidr', '10.60.0.0/25'],
    ['ipam', 'assign', '--host', 'hostA', '--count', '2', '--handle', 'ha'],
    ['ipam', 'assign', '--host', 'hostB', '--count', '1'],
  ])

interface Stored {
  key: string
  value: string
  block: {
    cidr: string
    affinity: string | null
    affinity_claim_time?: string
    allocations: (number | null)[]
    unallocated: number[]
  }
}

function stored(sb: Sandbox): Stored[] {
  return sb.keys(PREFIX).map((key) => {
    const value = sb.value(key)!
    return {key, value, block: JSON.parse(value)}
  })
}

const byOwner = (sb: Sandbox, host: string): Stored => stored(sb).find((s) => s.block.affinity === `host:${host}`)!

describe('block', {concurrency: true}, () => {
  test('the fixture has one block per host', async () => {
    const blocks = stored(await twoHosts())
    assert.deepEqual(blocks.map((b) => b.block.cidr).sort(), ['10.60.0.0/26', '10.60.0.64/26'])
    assert.deepEqual(blocks.map((b) => b.block.affinity).sort(), ['host:hostA', 'host:hostB'])
  })

  test('inspect by CIDR prints the stored value exactly', async () => {
    const sb = await twoHosts()
    const a = byOwner(sb, 'hostA')
    assert.equal(await sb.ok('block', 'inspect', a.block.cidr), `${a.value}\n`)
  })

  test('inspect by an address inside the block prints the same value', async () => {
    const sb = await twoHosts()
    const b = byOwner(sb, 'hostB')
    const base = b.block.cidr.split('/')[0]!.split('.').map(Number)
    const ip = [...base.slice(0, 3), base[3]! + 37].join('.')
    assert.equal(await sb.ok('block', 'inspect', ip), `${b.value}\n`)
  })

  test('inspect of a block that does not exist: exit 3', async () => {
    const sb = await twoHosts()
    await assertRejected(sb, ['block', 'inspect', '192.0.2.0/26'], 3, 'no allocation block contains 192.0.2.0/26')
  })

  test('list: CIDR, AFFINITY, CLAIMED, IN USE, FREE in key order', async () => {
    const sb = await twoHosts()
    const rows = stored(sb).map((s) => [
      s.block.cidr,
      s.block.affinity!,
      s.block.affinity_claim_time!,
      s.block.affinity === 'host:hostA' ? '2' : '1',
      s.block.affinity === 'host:hostA' ? '62' : '63',
    ])
    for (const r of rows) assert.match(r[2]!, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/)
    const cidrW = 13 + 3 // '10.60.0.64/26' is 13 wide
    const expected = [
      `${'CIDR'.padEnd(cidrW)}${'AFFINITY'.padEnd(13)}${'CLAIMED'.padEnd(23)}IN USE   FREE`,
      ...rows.map((r) => `${r[0]!.padEnd(cidrW)}${r[1]!.padEnd(13)}${r[2]!.padEnd(23)}${r[3]!.padEnd(9)}${r[4]}`),
      '',
    ].join('\n')
    assert.equal(await sb.ok('block', 'list'), expected)
  })

  test("list --host keeps only that host's blocks; -o json", async () => {
    const sb = await twoHosts()
    const a = byOwner(sb, 'hostA')
    const text = await sb.ok('block', 'list', '--host', 'hostA', '-o', 'json')
    const json = JSON.parse(text)
    assert.equal(json.length, 1)
    assert.equal(json[0].cidr, a.block.cidr)
    assert.equal(json[0].affinity, 'host:hostA')
    assert.equal(json[0].affinityClaimTime, a.block.affinity_claim_time)
    assert.equal(json[0].inUse, 2)
    assert.equal(json[0].free, 62)
    // Sequence numbers exceed 2^53: compare the digits as printed with the digits as stored.
    assert.equal(text.match(/"sequenceNumber": (\d+)/)![1], a.value.match(/"sequenceNumber":(\d+)/)![1])
    assert.equal(await sb.ok('block', 'list', '--host', 'nobody'), 'CIDR   AFFINITY   CLAIMED   IN USE   FREE\n')
  })
})
