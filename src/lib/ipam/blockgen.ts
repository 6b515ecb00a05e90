// Which block a host tries first. Upstream seeds Go's math/rand with the FNV-1 hash of the host name and
// walks the pool's blocks sequentially from a random start, wrapping around. Hosts thus spread over a pool
// and a host retries the same sequence every time. We keep the seed and the walk; the start index comes
// from a SplitMix64 stream instead of a port of Go's generator (docs/calico.md#block-choice).
import {type Cidr, subnet, subnetCount} from '../net/cidr.js'

/** FNV-1 (multiply, then xor), 32-bit. */
export function fnv1(text: string): number {
  let h = 2166136261
  for (const byte of Buffer.from(text, 'utf8')) {
    h = Math.imul(h, 16777619) >>> 0
    h = (h ^ byte) >>> 0
  }
  return h
}

const MASK64 = (1n << 64n) - 1n

function* splitmix64(seed: bigint): Generator<bigint> {
  let x = seed & MASK64
  for (;;) {
    x = (x + 0x9e3779b97f4a7c15n) & MASK64
    let z = x
    z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK64
    z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK64
    yield z ^ (z >> 31n)
  }
}

/** Uniform start index in [0, n); 128 random bits keep the bias negligible even for IPv6 pools. */
export function startIndex(host: string, n: bigint, blockIsSingleAddress = false): bigint {
  if (n <= 1n) return 0n
  // Single-address blocks would all collide on the same start, so upstream seeds them with the time.
  const seed = blockIsSingleAddress ? process.hrtime.bigint() : BigInt(fnv1(host))
  const g = splitmix64(seed)
  let r = 0n
  for (let i = 0; i < 2; i++) r = (r << 64n) | g.next().value
  return r % n
}

/** Block indexes in walk order: start, start+1, …, n−1, 0, …, start−1. */
export function* walkOrder(n: bigint, start: bigint): Generator<bigint> {
  for (let i = 0n; i < n; i++) yield (start + i) % n
}

export function* blockWalk(pool: Cidr, blockSize: number, host: string): Generator<Cidr> {
  const n = subnetCount(pool, blockSize)
  const start = startIndex(host, n, blockSize === (pool.family === 4 ? 32 : 128))
  for (const i of walkOrder(n, start)) yield subnet(pool, blockSize, i)
}
