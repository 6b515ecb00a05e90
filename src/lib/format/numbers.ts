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

/**
 * `5 (8%)`, `65531 (100%)`. calicoctl prints the count with Go's %.5g (1.8447e+19 for a /64); we print
 * it exactly, which is identical below 100000 and truthful above it.
 */
export function countWithPercent(n: bigint, total: bigint): string {
  return `${n} (${percentHalfEven(n, total)}%)`
}
