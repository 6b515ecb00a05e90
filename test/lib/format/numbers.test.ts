import { test } from 'node:test';
import assert from 'node:assert/strict';
import { countWithPercent, goG5, percentHalfEven } from '../../../src/lib/format/numbers.js';

test('goG5 matches Go %.5g for the documented values', () => {
  const cases: Array<[bigint, string]> = [
    [0n, '0'],
    [1n, '1'],
    [64n, '64'],
    [65536n, '65536'],
    [99999n, '99999'],
    [100000n, '1e+05'],
    [123456n, '1.2346e+05'],
    [1048576n, '1.0486e+06'],
    [9223372036854775807n, '9.2234e+18'],
    [2n ** 80n, '1.2089e+24'],
    [1208925819614629174706176n, '1.2089e+24'],
  ];
  for (const [n, want] of cases) assert.equal(goG5(n), want, `goG5(${n})`);
});

test('goG5 formats IPv6 sizes exactly (bigint beyond 2^64)', () => {
  assert.equal(goG5(2n ** 64n), '1.8447e+19');
  assert.equal(goG5(2n ** 96n), '7.9228e+28');
  assert.equal(goG5(2n ** 128n), '3.4028e+38');
  assert.equal(goG5(2n ** 122n), '5.3169e+36');
  // Exponents with three digits keep all of them.
  assert.equal(goG5(10n ** 100n), '1e+100');
});

test('goG5 rounds the fifth significant digit half to even', () => {
  assert.equal(goG5(100005n), '1e+05'); // 1.0000|5 -> even stays
  assert.equal(goG5(100015n), '1.0002e+05'); // 1.0001|5 -> odd rounds up
  assert.equal(goG5(100025n), '1.0002e+05');
  assert.equal(goG5(100026n), '1.0003e+05'); // above half
  assert.equal(goG5(123445n), '1.2344e+05');
  assert.equal(goG5(123455n), '1.2346e+05');
  assert.equal(goG5(1234450n), '1.2344e+06');
  assert.equal(goG5(1234451n), '1.2345e+06'); // digits beyond the 5 break the tie
  assert.equal(goG5(999994n), '9.9999e+05');
  assert.equal(goG5(999995n), '1e+06'); // carry adds a digit
  assert.equal(goG5(999999n), '1e+06');
});

test('goG5 removes trailing zeros in exponent form', () => {
  assert.equal(goG5(120000n), '1.2e+05');
  assert.equal(goG5(1000000n), '1e+06');
  assert.equal(goG5(10000n), '10000');
});

test('goG5 converts to float64 first, like Go', () => {
  // 12344500000000000001 is not a float64; it rounds to 12344500000000000000,
  // an exact tie at the fifth digit that Go rounds to even. Rounding the
  // integer itself would give 1.2345e+19.
  assert.equal(goG5(12344500000000000001n), '1.2344e+19');
  assert.equal(goG5(12344500000000000000n), '1.2344e+19');
  assert.equal(goG5(12344500000000004096n), '1.2345e+19');
});

test('goG5 handles negatives and float64 overflow', () => {
  assert.equal(goG5(-123456n), '-1.2346e+05');
  assert.equal(goG5(-5n), '-5');
  assert.equal(goG5(2n ** 1024n), '+Inf');
  assert.equal(goG5(2n ** 1023n), '8.9885e+307');
});

test('countWithPercent matches calicoctl "%.5g (%.f%%)"', () => {
  assert.equal(countWithPercent(5n, 64n), '5 (8%)');
  assert.equal(countWithPercent(59n, 64n), '59 (92%)');
  assert.equal(countWithPercent(5n, 65536n), '5 (0%)');
  assert.equal(countWithPercent(65531n, 65536n), '65531 (100%)');
  assert.equal(countWithPercent(3n, 8n), '3 (38%)'); // 37.5 -> 38
  assert.equal(countWithPercent(0n, 64n), '0 (0%)');
  assert.equal(countWithPercent(64n, 64n), '64 (100%)');
});

test('percentages round half to even', () => {
  assert.equal(percentHalfEven(5n, 8n), 62n); // 62.5 -> 62
  assert.equal(percentHalfEven(3n, 8n), 38n); // 37.5 -> 38
  assert.equal(percentHalfEven(1n, 200n), 0n); // 0.5 -> 0
  assert.equal(percentHalfEven(3n, 200n), 2n); // 1.5 -> 2
  assert.equal(percentHalfEven(5n, 200n), 2n); // 2.5 -> 2
  assert.equal(percentHalfEven(1n, 3n), 33n);
  assert.equal(percentHalfEven(2n, 3n), 67n);
  assert.equal(percentHalfEven(5n, 1024n), 0n); // 0.488...
  assert.equal(percentHalfEven(6n, 1024n), 1n); // 0.585...
  assert.equal(countWithPercent(5n, 8n), '5 (62%)');
  assert.equal(countWithPercent(1n, 200n), '1 (0%)');
});

test('percentages are exact for IPv6-sized totals', () => {
  const total = 2n ** 80n;
  assert.equal(countWithPercent(total / 2n, total), '6.0446e+23 (50%)');
  assert.equal(countWithPercent(total - 1n, total), '1.2089e+24 (100%)');
  assert.equal(countWithPercent(1n, total), '1 (0%)');
  // 2^80 * 0.125 = 12.5% -> 12, 2^80 * 0.375 = 37.5% -> 38
  assert.equal(percentHalfEven(total / 8n, total), 12n);
  assert.equal(percentHalfEven((total / 8n) * 3n, total), 38n);
  assert.equal(percentHalfEven(2n ** 127n + 1n, 2n ** 128n), 50n);
});

test('a zero total yields 0% instead of dividing by zero', () => {
  assert.equal(percentHalfEven(0n, 0n), 0n);
  assert.equal(countWithPercent(0n, 0n), '0 (0%)');
  assert.equal(countWithPercent(7n, 0n), '7 (0%)');
});
