import {test} from 'node:test'
import assert from 'node:assert/strict'
import {countWithPercent, percentHalfEven} from '../../../src/lib/format/numbers.ts'

test('countWithPercent matches calicoctl for counts below 100000', () => {
  assert.equal(countWithPercent(5n, 64n), '5 (8%)')
  assert.equal(countWithPercent(59n, 64n), '59 (92%)')
  assert.equal(countWithPercent(5n, 65536n), '5 (0%)')
  assert.equal(countWithPercent(65531n, 65536n), '65531 (100%)')
  assert.equal(countWithPercent(3n, 8n), '3 (38%)') // 37.5 -> 38
  assert.equal(countWithPercent(0n, 64n), '0 (0%)')
  assert.equal(countWithPercent(64n, 64n), '64 (100%)')
})

test('countWithPercent prints large IPv6 counts exactly, never in exponent form or negative', () => {
  const total = 2n ** 64n
  assert.equal(countWithPercent(total - 5n, total), '18446744073709551611 (100%)')
  assert.equal(countWithPercent(2n ** 127n, 2n ** 128n), '170141183460469231731687303715884105728 (50%)')
})

test('percentages round half to even', () => {
  assert.equal(percentHalfEven(5n, 8n), 62n) // 62.5 -> 62
  assert.equal(percentHalfEven(3n, 8n), 38n) // 37.5 -> 38
  assert.equal(percentHalfEven(1n, 200n), 0n) // 0.5 -> 0
  assert.equal(percentHalfEven(3n, 200n), 2n) // 1.5 -> 2
  assert.equal(percentHalfEven(5n, 200n), 2n) // 2.5 -> 2
  assert.equal(percentHalfEven(1n, 3n), 33n)
  assert.equal(percentHalfEven(2n, 3n), 67n)
  assert.equal(percentHalfEven(5n, 1024n), 0n) // 0.488...
  assert.equal(percentHalfEven(6n, 1024n), 1n) // 0.585...
})

test('percentages are exact for IPv6-sized totals', () => {
  const total = 2n ** 80n
  assert.equal(percentHalfEven(total / 8n, total), 12n) // 12.5 -> 12
  assert.equal(percentHalfEven((total / 8n) * 3n, total), 38n) // 37.5 -> 38
  assert.equal(percentHalfEven(2n ** 127n + 1n, 2n ** 128n), 50n)
  assert.equal(percentHalfEven(total - 1n, total), 100n)
})

test('a zero total yields 0% instead of dividing by zero', () => {
  assert.equal(percentHalfEven(0n, 0n), 0n)
  assert.equal(countWithPercent(7n, 0n), '7 (0%)')
})

test('countWithPercent gives the exact rational percentage for every count and total, small or large', () => {
  const exact = (n: bigint, total: bigint) => `${n} (${percentHalfEven(n, total)}%)`
  // Every count of every block size (halves included), totals that divide 100 unevenly, and counts and totals on
  // either side of where the arithmetic changes (2^32) and far beyond it.
  const totals = [
    1n,
    3n,
    7n,
    8n,
    64n,
    200n,
    1000n,
    999_999n,
    2n ** 32n - 1n,
    2n ** 32n,
    2n ** 32n + 1n,
    2n ** 53n,
    2n ** 64n,
  ]
  let checked = 0
  for (const total of totals) {
    const counts = new Set<bigint>([0n, 1n, total / 2n, total / 3n, total - 1n, total, total + 1n, 2n ** 32n - 1n])
    for (let n = 0n; n <= (total < 1001n ? total : 0n); n++) counts.add(n)
    for (let k = 1n; k < 200n; k++) counts.add((total * k) / 200n) // the half-percent boundaries
    for (const n of counts) {
      assert.equal(countWithPercent(n, total), exact(n, total), `${n} of ${total}`)
      checked++
    }
  }
  assert.ok(checked > 2000, `${checked} pairs`)
  assert.equal(countWithPercent(1n, 200n), '1 (0%)') // 0.5 -> 0
  assert.equal(countWithPercent(3n, 200n), '3 (2%)') // 1.5 -> 2
  assert.equal(countWithPercent(2n ** 31n + 1n, 2n ** 32n), '2147483649 (50%)') // 50.0000000233 -> 50
})
