// Counts for `ipam show`: exact integers (IPv6 pools hold up to 2^128 addresses) with calicoctl's
// whole-number percentage rounded half to even, as Go's `%.f` rounds.

/**
 * `n * 100 / total` rounded to an integer, half to even, on the exact rational. calicoctl divides in
 * float64; block and pool sizes are powers of two, for which that division is exact, so both agree.
 * A zero total yields 0 rather than dividing by zero.
 */
export function percentHalfEven(n: bigint, total: bigint): bigint {
  if (total === 0n) return 0n
  let num = n * 100n
  let den = total
  if (den < 0n) {
    num = -num
    den = -den
  }
  const neg = num < 0n
  if (neg) num = -num
  let q = num / den
  const twiceRem = (num - q * den) * 2n
  if (twiceRem > den || (twiceRem === den && (q & 1n) === 1n)) q += 1n
  return neg ? -q : q
}

const SMALL = 1n << 32n

/**
 * `5 (8%)`, `65531 (100%)`. calicoctl prints the count with Go's %.5g (1.8447e+19 for a /64); we print
 * it exactly, which is identical below 100000 and truthful above it.
 */
export function countWithPercent(n: bigint, total: bigint): string {
  // Block-sized counts (every row of `ipam show --show-blocks`, 10,000s of them) in exact float64 integer
  // arithmetic: n * 100 and q * total stay far below 2^53, so the quotient and remainder are those of the bigints.
  if (n >= 0n && n <= SMALL && total > 0n && total <= SMALL) {
    const num = Number(n) * 100
    const den = Number(total)
    let q = Math.floor(num / den)
    let rem = num - q * den
    // The float quotient may be one off; the remainder puts it right.
    if (rem < 0) {
      q--
      rem += den
    } else if (rem >= den) {
      q++
      rem -= den
    }
    if (rem * 2 > den || (rem * 2 === den && q % 2 === 1)) q++
    return `${n} (${q}%)`
  }
  return `${n} (${percentHalfEven(n, total)}%)`
}
