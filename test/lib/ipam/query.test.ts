// poolUsage (src/lib/ipam/query.ts): a pool's counts are the sums of its blocks', exact at any size. The sums are
// taken in float64 while that is exact and in bigint beyond, so both sides of that line are checked here.
import assert from 'node:assert/strict'
import {test} from 'node:test'
import {normalizePool, type Pool} from '../../../src/lib/ipam/pool.ts'
import {ORPHANED, poolUsage, type Usage} from '../../../src/lib/ipam/query.ts'
import {reservedMatcher} from '../../../src/lib/ipam/reservation.ts'
import {parseCidr} from '../../../src/lib/net/cidr.ts'

const usage = (cidr: string, capacity: bigint, inUse: bigint, reserved = 0n): Usage => ({
  name: cidr,
  cidr,
  capacity,
  inUse,
  reserved,
  free: capacity - inUse - reserved,
})

test('poolUsage sums 10,000 blocks exactly, and orphaned blocks of any size exactly', () => {
  const {name, spec} = normalizePool({name: 'p', cidr: '10.0.0.0/8'})
  const pool: Pool = {name, spec, uid: 'u', creationTimestamp: '', cidr: parseCidr(spec.cidr)}
  const blocks = Array.from({length: 10_000}, (_, i) => {
    const cidr = `10.${i >> 8}.${i & 255}.0/26`
    return {cidr: parseCidr(cidr), usage: usage(cidr, 64n, BigInt(i % 65))}
  })
  // Orphans (in no pool): one with more addresses than float64 holds exactly, beside small ones.
  const huge = 2n ** 64n + 1n
  blocks.push({cidr: parseCidr('fd00::/64'), usage: usage('fd00::/64', huge, huge - 3n)})
  blocks.push({cidr: parseCidr('192.168.0.0/26'), usage: usage('192.168.0.0/26', 64n, 5n, 2n)})
  const out = poolUsage([pool], reservedMatcher([]), blocks, {orphans: true})
  const p = out.find((g) => g.name === 'p')!
  const inUse = blocks.slice(0, 10_000).reduce((s, b) => s + b.usage.inUse, 0n)
  assert.equal(p.inUse, inUse)
  assert.equal(p.free, 2n ** 24n - inUse)
  const orphans = out.find((g) => g.name === ORPHANED)!
  assert.equal(orphans.capacity, huge + 64n)
  assert.equal(orphans.inUse, huge - 3n + 5n)
  assert.equal(orphans.reserved, 2n)
  assert.equal(orphans.free, 3n + 57n)
})
