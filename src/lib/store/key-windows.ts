// How a long etcd range is paged: page sizes, and bounded windows so that reading N keys costs etcd about N index
// steps instead of N²/page. Why and how: docs/etcd-paging.md. Pure: the store (EtcdStore.scan) and the scale
// bench's raw floor (bench/raw-read.mjs) issue the ranges, so both page alike.

/** Keys on a scan's first request, which covers the whole prefix: its `count` and keys tell the density. */
export const FIRST_PAGE = 500
/**
 * Later pages aim at this many bytes, sized from the bytes per key seen so far, up to MAX_PAGE keys. Streamed
 * scans (`each`) once used 1 MiB pages to keep `ipam check`'s memory down; since check keeps only what it needs of
 * each record, 4 MiB pages cost it nothing (496 MB against 520 MB at 550,000 allocations on three members) and
 * spare three requests in four: `ipam show` there went from 1.54 × to 1.00 × its floor (BENCHMARKS.md).
 */
const PAGE_BYTES = 4 * 1024 * 1024
const MAX_PAGE = 20_000

/** The limit of the next page, after `keys` keys of `bytes` bytes (keys and values) were read. */
export function pageLimit(bytes: number, keys: number): number {
  return Math.max(1, Math.min(MAX_PAGE, Math.floor(PAGE_BYTES / Math.max(1, bytes / keys))))
}

/** One range request: keys in [from, end), or [from, the range's end) when `end` is undefined. */
export interface KeyWindow {
  from: Buffer
  end?: Buffer
}

/** What a range response over a window said. */
export interface WindowPage {
  /** Keys returned (at most the request's limit). */
  keys: number
  firstKey?: Buffer
  lastKey?: Buffer
  /** etcd's `more`: the window holds keys beyond the limit. */
  more: boolean
  /** etcd's `count`: every key in the window, limit or not. */
  count: number
}

/** What nextWindow needs of an etcd range response (`count` is an int64 in a string). */
export function windowPage(r: {kvs: {key: Buffer}[]; more: boolean; count: string | number}): WindowPage {
  const n = r.kvs.length
  return {
    keys: n,
    firstKey: r.kvs[0]?.key,
    lastKey: r.kvs[n - 1]?.key,
    more: r.more && n > 0,
    count: Number(r.count),
  }
}

/**
 * Positions are the key's bytes after the prefix read as a fraction with this many bytes, so that key distances
 * can be scaled. Keys that differ only beyond it share a position and a window simply holds more of them.
 */
const FRACTION_BYTES = 128
const TOP = 1n << BigInt(8 * FRACTION_BYTES)
/** Windows aim at this share of the next page's limit, so most fit one request. */
const FILL = 0.8
/** An empty window is followed by one this many times wider (a gap in the key space). */
const GALLOP = 4n
const ZERO = Buffer.from([0])

/** The position in [0, TOP) of a key that starts with `prefix`. */
export function keyPosition(prefix: Buffer, key: Buffer): bigint {
  const frac = Buffer.alloc(FRACTION_BYTES)
  key.copy(frac, 0, prefix.length, prefix.length + FRACTION_BYTES)
  return BigInt(`0x${frac.toString('hex')}`)
}

/** The smallest key at `position`, or undefined at or past the end of the prefix's range. */
export function keyAt(prefix: Buffer, position: bigint): Buffer | undefined {
  if (position >= TOP) return undefined
  const frac = Buffer.from(position.toString(16).padStart(2 * FRACTION_BYTES, '0'), 'hex')
  let n = frac.length
  while (n > 0 && frac[n - 1] === 0) n--
  return Buffer.concat([prefix, frac.subarray(0, n)])
}

/**
 * The window after `win`, whose response was `page`, sized for about `limit` keys from the key density seen so
 * far; undefined when the range is read to its end. Each window starts where the last key read ends, so the
 * windows cover the range exactly once, whatever the estimate.
 */
export function nextWindow(prefix: Buffer, win: KeyWindow, page: WindowPage, limit: number): KeyWindow | undefined {
  if (!page.more && win.end === undefined) return undefined
  const from = page.more && page.lastKey ? Buffer.concat([page.lastKey, ZERO]) : win.end!
  const start = keyPosition(prefix, win.from)
  const winWidth = max1((win.end === undefined ? TOP : keyPosition(prefix, win.end)) - start)
  const want = BigInt(Math.max(1, Math.round(limit * FILL)))
  let width: bigint
  if (page.more && page.keys >= 2 && page.firstKey && page.lastKey) {
    // Cut short by the limit: the page's own keys tell the density where reading goes on.
    const span = max1(keyPosition(prefix, page.lastKey) - keyPosition(prefix, page.firstKey))
    width = (span * want) / BigInt(page.keys - 1)
  } else if (page.count > 0) {
    width = (winWidth * want) / BigInt(page.count)
  } else {
    width = winWidth * GALLOP
  }
  const end = keyAt(prefix, keyPosition(prefix, from) + max1(width))
  // keyAt rounds to FRACTION_BYTES: a window that would not move past `from` reads to the range's end.
  return {from, end: end && Buffer.compare(end, from) > 0 ? end : undefined}
}

function max1(n: bigint): bigint {
  return n < 1n ? 1n : n
}
