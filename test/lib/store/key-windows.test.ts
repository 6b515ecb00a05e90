// The window planner of etcd scans (src/lib/store/key-windows.ts, docs/etcd-paging.md), driven against a model of
// etcd 3.4's range cost: a request returns up to `limit` keys of [from, end) plus the count of ALL keys in it,
// and costs etcd one index step per key in [from, end). The real store's scans are tested on a real etcd in
// test/lib/store/etcd.integration.test.ts.
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'
import {
  type KeyWindow,
  keyAt,
  keyPosition,
  nextWindow,
  pageLimit,
  windowPage,
} from '../../../src/lib/store/key-windows.ts'

const cmp = Buffer.compare

/** Sorted unique keys. */
function sorted(keys: string[]): Buffer[] {
  return [...new Set(keys)].map((k) => Buffer.from(k)).sort(cmp)
}

/** First index with keys[i] >= k. */
function lowerBound(keys: Buffer[], k: Buffer): number {
  let lo = 0
  let hi = keys.length
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (cmp(keys[mid]!, k) < 0) lo = mid + 1
    else hi = mid
  }
  return lo
}

function rangeEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix)
  end[end.length - 1]!++
  return end
}

/** Reads every key under `prefix` with windows, as EtcdStore.scan does; returns the keys and the index steps. */
function scan(all: Buffer[], prefix: string, limit: number): {keys: Buffer[]; steps: number; requests: number} {
  const p = Buffer.from(prefix)
  const end = rangeEnd(p)
  const out: Buffer[] = []
  let steps = 0
  let requests = 0
  let win: KeyWindow | undefined = {from: p}
  let pageLimit = 500
  while (win) {
    const lo = lowerBound(all, win.from)
    const hi = lowerBound(all, win.end ?? end)
    assert.ok(hi >= lo, 'a window ends before it starts')
    const got = all.slice(lo, Math.min(hi, lo + pageLimit))
    steps += hi - lo
    requests++
    out.push(...got)
    const page = {
      keys: got.length,
      firstKey: got[0],
      lastKey: got[got.length - 1],
      more: hi - lo > got.length,
      count: hi - lo,
    }
    pageLimit = limit
    win = nextWindow(p, win, page, limit)
    assert.ok(requests < 1_000_000, 'the scan does not end')
  }
  return {keys: out, steps, requests}
}

/** The index steps of paging to the range's end every time (what windows replace). */
function naiveSteps(n: number, limit: number): number {
  let steps = 0
  for (let left = n; left > 0; left -= limit) steps += left
  return steps
}

const hex = (n: number, width: number) => n.toString(16).padStart(width, '0')
/** xorshift32: the same keys every run. */
let seed = 7
const rand = () => {
  seed ^= seed << 13
  seed ^= seed >>> 17
  seed ^= seed << 5
  return (seed >>> 0) / 2 ** 32
}

const shapes: [string, (n: number) => string[]][] = [
  // Handles as the CNI plugin names them: one long shared prefix, then a sequential container id.
  ['sequential handles', (n) => Array.from({length: n}, (_, i) => `/h/k8s-pod-network.${hex(i, 12)}${'c'.repeat(52)}`)],
  [
    'random container ids',
    (n) => Array.from({length: n}, () => `/h/k8s-pod-network.${hex(Math.floor(rand() * 2 ** 48), 12)}`),
  ],
  // Endpoints: a few namespaces of very different sizes, unpadded node and pod numbers.
  [
    'endpoints in skewed namespaces',
    (n) =>
      Array.from({length: n}, (_, i) => {
        const ns = i % 10 === 0 ? 'kube-system' : i % 3 === 0 ? 'a' : 'zz-team'
        return `/h/${ns}/node--${Math.floor(i / 110)}-k8s-pod--${i}-eth0`
      }),
  ],
  // Two dense clusters far apart in key space.
  [
    'two clusters and a gap',
    (n) => Array.from({length: n}, (_, i) => (i % 2 ? `/h/\u0001${hex(i, 8)}` : `/h/~~${hex(i, 8)}`)),
  ],
  // Keys that differ only after 128 bytes past the prefix share one position.
  [
    'a shared head longer than a position',
    (n) => Array.from({length: n}, (_, i) => `/h/${'x'.repeat(200)}${hex(i, 6)}`),
  ],
]

describe('nextWindow', () => {
  for (const [name, make] of shapes) {
    test(`${name}: every key read once, in order, nothing from outside the prefix`, () => {
      const mine = sorted(make(20_000))
      const all = sorted([...mine.map(String), '/h', '/h0', '/h0/x', '/g/1', '/i'])
      const r = scan(all, '/h/', 1000)
      assert.equal(r.keys.length, mine.length)
      assert.deepEqual(r.keys, mine)
    })
  }

  test('index steps grow linearly with the keys where paging to the end grows quadratically', (t) => {
    for (const [name, make] of shapes.slice(0, 4)) {
      const small = scan(sorted(make(20_000)), '/h/', 1000)
      const big = scan(sorted(make(100_000)), '/h/', 1000)
      // The first request counts the whole range once; windows aim at one page each.
      t.diagnostic(
        `${name}: ${small.steps} steps / ${small.requests} requests for 20,000 keys, ${big.steps} / ${big.requests} for 100,000`,
      )
      assert.ok(big.steps < 12 * 100_000, `${name}: ${big.steps} steps for 100,000 keys`)
      assert.ok(big.steps / small.steps < 5 * 2, `${name}: ${small.steps} → ${big.steps} steps for 5 × the keys`)
      assert.ok(big.steps < naiveSteps(100_000, 1000) / 4, `${name}: ${big.steps} steps, no better than paging`)
      assert.ok(big.requests < (100_000 / 1000) * 4, `${name}: ${big.requests} requests for 100 pages of keys`)
    }
  })

  test('an empty prefix, one key, and keys only at the range ends', () => {
    assert.deepEqual(scan(sorted(['/a', '/i']), '/h/', 10).keys, [])
    assert.deepEqual(scan(sorted(['/h/', '/h0']), '/h/', 10).keys, [Buffer.from('/h/')])
    const edges = sorted(['/h/', '/h/\u0000', `/h/${'\u00ff'.repeat(3)}`, '/h/\u00ff\u00ff\u00ff\u00ff'])
    assert.deepEqual(scan(edges, '/h/', 1).keys, edges)
  })

  test('the empty prefix reads every key', () => {
    const all = sorted(Array.from({length: 5000}, (_, i) => `/k/${hex(i * 7919, 8)}`).concat(['\u0001', '~']))
    const p = Buffer.alloc(0)
    const out: Buffer[] = []
    let win: KeyWindow | undefined = {from: Buffer.from([0])}
    while (win) {
      const lo = lowerBound(all, win.from)
      const hi = win.end ? lowerBound(all, win.end) : all.length
      const got = all.slice(lo, Math.min(hi, lo + 300))
      out.push(...got)
      win = nextWindow(
        p,
        win,
        {keys: got.length, firstKey: got[0], lastKey: got.at(-1), more: hi - lo > got.length, count: hi - lo},
        300,
      )
    }
    assert.deepEqual(out, all)
  })
})

describe('keyPosition and keyAt', () => {
  const p = Buffer.from('/h/')

  test('positions keep byte order, and keyAt(position) is at or below the key', () => {
    const keys = sorted(['/h/', '/h/a', '/h/a\u0000', '/h/ab', '/h/b', `/h/${'z'.repeat(300)}`])
    for (let i = 1; i < keys.length; i++)
      assert.ok(keyPosition(p, keys[i - 1]!) <= keyPosition(p, keys[i]!), `${keys[i - 1]} > ${keys[i]}`)
    for (const k of keys) assert.ok(cmp(keyAt(p, keyPosition(p, k))!, k) <= 0, String(k))
  })

  test('one step past a key is a key after it', () => {
    for (const k of ['/h/', '/h/a', '/h/\u00ff\u00ff', `/h/${'q'.repeat(200)}`])
      assert.ok(cmp(keyAt(p, keyPosition(p, Buffer.from(k)) + 1n)!, Buffer.from(k)) > 0, k)
  })

  test('past the last position is the end of the range', () => {
    const top = keyPosition(p, Buffer.from(`/h/${'\u00ff'.repeat(128)}`, 'latin1'))
    assert.equal(keyAt(p, top + 1n), undefined)
    assert.deepEqual(keyAt(p, 0n), p)
  })
})

describe('pageLimit and windowPage', () => {
  test('pages aim at 4 MiB from the bytes per key seen, between 1 and 20,000 keys', () => {
    assert.equal(pageLimit(600_000, 1000), Math.floor((4 * 1024 * 1024) / 600))
    assert.equal(pageLimit(100 * 50, 100), 20_000, 'small keys: capped')
    assert.equal(pageLimit(64 * 1024 * 1024, 1), 1, 'one value larger than a page: one key')
  })

  test('a response becomes what nextWindow needs: its ends, the limit cut, the count as a number', () => {
    const kvs = ['/h/a', '/h/b', '/h/c'].map((k) => ({key: Buffer.from(k)}))
    assert.deepEqual(windowPage({kvs, more: true, count: '12'}), {
      keys: 3,
      firstKey: Buffer.from('/h/a'),
      lastKey: Buffer.from('/h/c'),
      more: true,
      count: 12,
    })
    // etcd says more with no keys only if something is wrong; a window must not be read again from nowhere.
    assert.equal(windowPage({kvs: [], more: true, count: '0'}).more, false)
  })
})
