/**
 * Number formatting for `ipam show`, reproducing the Go `fmt` verbs calicoctl
 * uses (`%.5g` and `%.5g (%.f%%)`). Inputs are bigints because IPv6 address
 * counts exceed 2^64; everything is computed exactly, without going through
 * JavaScript numbers.
 */

const FLOAT64_MANTISSA_BITS = 53n;
const FLOAT64_MAX_EXP = 1024n; // values >= 2^1024 overflow to +Inf

function bitLength(n: bigint): bigint {
  return BigInt(n.toString(2).length);
}

/**
 * Round a non-negative integer to the nearest float64 value (round half to
 * even on the 53-bit significand), returned as the exact integer it
 * represents, or `null` when it overflows to +Inf. This is Go's
 * `float64(n)` conversion.
 */
function toFloat64Exact(n: bigint): bigint | null {
  const len = bitLength(n);
  if (len <= FLOAT64_MANTISSA_BITS) return n;
  const shift = len - FLOAT64_MANTISSA_BITS;
  let m = n >> shift;
  const rem = n - (m << shift);
  const half = 1n << (shift - 1n);
  if (rem > half || (rem === half && (m & 1n) === 1n)) m += 1n;
  const r = m << shift;
  return bitLength(r) > FLOAT64_MAX_EXP ? null : r;
}

/**
 * Round the decimal digit string `digits` (no leading zeros) to at most
 * `prec` significant digits with round-half-to-even on the exact value.
 * Returns the significant digits with trailing zeros removed and the decimal
 * exponent of the first digit (Go's `decimalSlice` with dp = exp + 1).
 */
function roundSignificant(digits: string, prec: number): { d: string; exp: number } {
  let exp = digits.length - 1;
  if (digits.length <= prec) return { d: digits.replace(/0+$/, ''), exp };
  const kept = digits.slice(0, prec);
  const first = digits.charCodeAt(prec) - 48;
  const restNonZero = /[1-9]/.test(digits.slice(prec + 1));
  let m = BigInt(kept);
  const lastOdd = (m & 1n) === 1n;
  if (first > 5 || (first === 5 && (restNonZero || lastOdd))) m += 1n;
  let d = m.toString();
  if (d.length > prec) {
    // carried into a new digit, e.g. 99999|5 -> 100000
    d = d.slice(0, prec);
    exp += 1;
  }
  return { d: d.replace(/0+$/, ''), exp };
}

/**
 * Go `fmt.Sprintf("%.5g", float64(n))`.
 *
 * `n` is first rounded to float64 exactly as Go's conversion does, then the
 * exact decimal value of that float is rounded to 5 significant digits with
 * round-half-to-even. Plain notation is used while the decimal exponent is
 * below 5, otherwise exponent notation with trailing zeros removed and an
 * exponent of at least two digits: 65536 -> "65536", 100000 -> "1e+05",
 * 1048576 -> "1.0486e+06". Values beyond float64 range print as "+Inf"/"-Inf".
 */
export function goG5(n: bigint): string {
  const PREC = 5;
  const neg = n < 0n;
  const f = toFloat64Exact(neg ? -n : n);
  if (f === null) return neg ? '-Inf' : '+Inf';
  if (f === 0n) return '0';
  const sign = neg ? '-' : '';
  const { d, exp } = roundSignificant(f.toString(), PREC);
  // Integers never have exp < -4; %g switches to %e when exp >= precision.
  if (exp >= PREC) {
    const mant = d.length > 1 ? `${d[0]}.${d.slice(1)}` : d;
    const e = String(exp).padStart(2, '0');
    return `${sign}${mant}e+${e}`;
  }
  return sign + d.padEnd(exp + 1, '0');
}

/**
 * `n * 100 / total` rounded to an integer with round-half-to-even, computed
 * on the exact rational (Go `%.f` of the float64 quotient). calicoctl computes
 * `100*n/total` in float64; block and pool sizes are powers of two, for which
 * that float division is exact, so both agree. A zero `total` yields 0 rather
 * than dividing by zero (Go would print NaN or +Inf).
 */
export function percentHalfEven(n: bigint, total: bigint): bigint {
  if (total === 0n) return 0n;
  let num = n * 100n;
  let den = total;
  if (den < 0n) {
    num = -num;
    den = -den;
  }
  const neg = num < 0n;
  if (neg) num = -num;
  let q = num / den;
  const twiceRem = (num - q * den) * 2n;
  if (twiceRem > den || (twiceRem === den && (q & 1n) === 1n)) q += 1n;
  return neg ? -q : q;
}

/**
 * Go `fmt.Sprintf("%.5g (%.f%%)", n, 100*n/total)`, e.g. "5 (8%)",
 * "65531 (100%)", "3 (38%)". The percentage is rounded half to even; a zero
 * total gives "0%".
 */
export function countWithPercent(n: bigint, total: bigint): string {
  return `${goG5(n)} (${percentHalfEven(n, total).toString()}%)`;
}
