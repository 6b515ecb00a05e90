// Shared fixtures for the allocator scenarios: a fresh context on any Store with a controllable clock,
// store openers (memory, SQLite on a temp file), raw readers for stored records, and assertInvariants,
// which checks the datastore-wide invariants every scenario must leave behind.
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {it} from 'node:test'
import {type Block, blockProblems, decodeBlock} from '../../../src/lib/ipam/block.ts'
import {type Ctx, makeCtx} from '../../../src/lib/ipam/context.ts'
import {decodeAffinity, decodeHandle} from '../../../src/lib/ipam/records.ts'
import type {Clock} from '../../../src/lib/clock.ts'
import {type Cidr, formatCidr, overlaps, parseCidr} from '../../../src/lib/net/cidr.ts'
import {keys, parseAffinityKey} from '../../../src/lib/store/keys.ts'
import {MemoryStore} from '../../../src/lib/store/memory.ts'
import {SqliteStore} from '../../../src/lib/store/sqlite.ts'
import type {KeyValue, Store} from '../../../src/lib/store/store.ts'

/** Where every scenario's clock starts: the time used in the reference's stored-value examples. */
export const T0 = '2026-01-02T03:04:05Z'

export interface FakeClock extends Clock {
  /** Move the clock forward (or back, with a negative value) by `seconds`. */
  advance(seconds: number): void
  set(at: Date | string): void
}

export function fakeClock(start: Date | string = T0): FakeClock {
  let current = new Date(start).getTime()
  return {
    now: () => new Date(current),
    advance(seconds: number) {
      current += seconds * 1000
    },
    set(at: Date | string) {
      current = new Date(at).getTime()
    },
  }
}

export type StoreOpener = () => Promise<Store>

export const openMemory: StoreOpener = async () => new MemoryStore()

/** SQLite stores on fresh files in one temp directory; call cleanup() once the file's tests are done. */
export function tempSqlite(): {open: StoreOpener; cleanup: () => void} {
  let dir: string | undefined
  let n = 0
  return {
    open: async () => {
      dir ??= fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-allocator-'))
      return SqliteStore.open(path.join(dir, `ipam-${++n}.db`))
    },
    cleanup: () => {
      if (dir) fs.rmSync(dir, {recursive: true, force: true})
    },
  }
}

export interface Env {
  ctx: Ctx
  store: Store
  clock: FakeClock
}

export async function freshCtx(
  opts: {open?: StoreOpener; start?: Date | string; maxAttempts?: number} = {},
): Promise<Env> {
  const store = await (opts.open ?? openMemory)()
  const clock = fakeClock(opts.start)
  return {ctx: makeCtx(store, {clock, maxAttempts: opts.maxAttempts}), store, clock}
}

// ---- raw readers ---------------------------------------------------------------------------------

export async function rawValue(store: Store, key: string): Promise<string | undefined> {
  return (await store.get(key))?.value
}

/** The stored JSON of the block `cidr` (a string such as `10.65.0.0/26`). */
export async function rawBlock(store: Store, cidr: string): Promise<string | undefined> {
  return rawValue(store, keys.block(parseCidr(cidr)))
}

export async function storedBlock(store: Store, cidr: string): Promise<Block | undefined> {
  const text = await rawBlock(store, cidr)
  return text === undefined ? undefined : decodeBlock(text)
}

export async function allBlocks(store: Store): Promise<Block[]> {
  return (await store.list(keys.blockPrefix())).map((kv) => decodeBlock(kv.value))
}

export async function blockCidrs(store: Store): Promise<string[]> {
  return (await allBlocks(store)).map((b) => formatCidr(b.cidr)).sort()
}

/** A handle's per-block counts as a plain object, or undefined when the handle key does not exist. */
export async function handleCounts(store: Store, handle: string): Promise<Record<string, number> | undefined> {
  const text = await rawValue(store, keys.handle(handle))
  return text === undefined ? undefined : Object.fromEntries(decodeHandle(text))
}

export async function affinityState(store: Store, host: string, cidr: string): Promise<string | undefined> {
  const text = await rawValue(store, keys.affinity(host, parseCidr(cidr)))
  return text === undefined ? undefined : decodeAffinity(text)
}

/** Host affinity keys as `host cidr` strings, sorted. */
export async function affinityList(store: Store): Promise<string[]> {
  const out: string[] = []
  for (const key of await store.listKeys(keys.allHostAffinitiesPrefix())) {
    const a = parseAffinityKey(key)
    if (a) out.push(`${a.host} ${formatCidr(a.cidr)}`)
  }
  return out.sort()
}

/** Write a raw value at `key`, as another tool (or a crashed upstream process) would have left it. */
export async function seed(store: Store, key: string, value: string): Promise<void> {
  const r = await store.txn([], [{put: key, value}])
  assert.ok(r.succeeded)
}

/** The ordinal of `ip` inside the block `cidr` (IPv4 only; enough for these tests). */
export function ordinal(ip: string, cidr: string): number {
  const toInt = (a: string) => a.split('.').reduce((n, p) => n * 256 + Number(p), 0)
  return toInt(ip) - toInt(cidr.split('/')[0]!)
}

/**
 * A view of `store` whose next get(key) runs `around(read)` instead: `around` may change the store
 * before and after calling `read()` and returns what the caller sees. This reproduces a race between
 * one operation's read and its write deterministically.
 */
export function interceptGet(
  store: Store,
  key: string,
  around: (read: () => Promise<KeyValue | undefined>) => Promise<KeyValue | undefined>,
): Store {
  let armed = true
  return {
    description: `${store.description} (intercepted)`,
    get: (k) => {
      if (armed && k === key) {
        armed = false
        return around(() => store.get(k))
      }
      return store.get(k)
    },
    list: (p) => store.list(p),
    listKeys: (p) => store.listKeys(p),
    txn: (c, o) => store.txn(c, o),
    revision: () => store.revision(),
    close: async () => {},
  }
}

// ---- invariants -----------------------------------------------------------------------------------

/**
 * Datastore-wide invariants after any sequence of IPAM operations:
 *  (a) every block is valid (blockProblems is empty) and stored under its own key;
 *  (b) handles are exactly consistent with the blocks, both ways (no over-count, no missing or leaked handle);
 *  (c) every confirmed host affinity has a block with that host's affinity, and every host-affine block
 *      has a confirmed affinity key for its host;
 *  (d) no address is allocated twice: block CIDRs never overlap.
 */
export async function assertInvariants(store: Store, now: Date = new Date()): Promise<void> {
  const problems: string[] = []
  const blockKvs = await store.list(keys.blockPrefix())
  const blocks = new Map<string, Block>()
  // handle → block CIDR → number of allocations the blocks record for it
  const fromBlocks = new Map<string, Map<string, number>>()
  for (const kv of blockKvs) {
    const b = decodeBlock(kv.value)
    const cidr = formatCidr(b.cidr)
    if (kv.key !== keys.block(b.cidr)) problems.push(`block ${cidr} is stored under ${kv.key}`)
    for (const p of blockProblems(b, now)) problems.push(`block ${cidr}: ${p}`)
    blocks.set(cidr, b)
    b.allocations.forEach((idx) => {
      if (idx === null) return
      const h = b.attributes?.[idx]?.handle_id
      if (h === undefined) return
      const per = fromBlocks.get(h) ?? new Map<string, number>()
      per.set(cidr, (per.get(cidr) ?? 0) + 1)
      fromBlocks.set(h, per)
    })
  }

  // (b) handles, exactly.
  const fromHandles = new Map<string, Map<string, number>>()
  for (const kv of await store.list(keys.handlePrefix())) {
    const id = kv.key.slice(keys.handlePrefix().length)
    const counts = decodeHandle(kv.value)
    if (counts.size === 0) problems.push(`handle ${id} is stored with no blocks`)
    fromHandles.set(id, counts)
  }
  for (const id of new Set([...fromBlocks.keys(), ...fromHandles.keys()])) {
    const want = Object.fromEntries([...(fromBlocks.get(id) ?? [])].sort())
    const got = fromHandles.has(id) ? Object.fromEntries([...fromHandles.get(id)!].sort()) : undefined
    if (got === undefined) problems.push(`handle ${id} is used by blocks ${JSON.stringify(want)} but has no handle key`)
    else if (JSON.stringify(got) !== JSON.stringify(want)) {
      problems.push(`handle ${id} counts ${JSON.stringify(got)} but the blocks hold ${JSON.stringify(want)}`)
    }
  }

  // (c) affinities both ways.
  const confirmed = new Set<string>()
  for (const kv of await store.list(keys.allHostAffinitiesPrefix())) {
    const a = parseAffinityKey(kv.key)
    if (a?.type !== 'host') continue
    const cidr = formatCidr(a.cidr)
    if (decodeAffinity(kv.value) !== 'confirmed') continue
    confirmed.add(`${a.host} ${cidr}`)
    const b = blocks.get(cidr)
    if (!b) problems.push(`confirmed affinity of ${a.host} for ${cidr} has no block`)
    else if (b.affinity !== `host:${a.host}`)
      problems.push(`confirmed affinity of ${a.host} for ${cidr}, but the block's affinity is ${b.affinity}`)
  }
  for (const [cidr, b] of blocks) {
    if (!b.affinity?.startsWith('host:')) continue
    const host = b.affinity.slice('host:'.length)
    if (!confirmed.has(`${host} ${cidr}`))
      problems.push(`block ${cidr} has affinity ${b.affinity} but no confirmed affinity key`)
  }

  // (d) no two blocks share an address.
  const cidrs: Cidr[] = [...blocks.values()].map((b) => b.cidr)
  for (let i = 0; i < cidrs.length; i++) {
    for (let j = i + 1; j < cidrs.length; j++) {
      if (overlaps(cidrs[i]!, cidrs[j]!))
        problems.push(`blocks ${formatCidr(cidrs[i]!)} and ${formatCidr(cidrs[j]!)} overlap`)
    }
  }
  assert.deepEqual(problems, [], `datastore invariants violated:\n  ${problems.join('\n  ')}`)
}

/** One scenario: fresh store, the body, then the invariants; the store is closed whatever happens. */
export function scenario(
  open: StoreOpener,
  title: string,
  body: (env: Env) => Promise<void>,
  opts: {todo?: string} = {},
): void {
  it(title, opts, async () => {
    const env = await freshCtx({open})
    try {
      await body(env)
      await assertInvariants(env.store, env.clock.now())
    } finally {
      await env.store.close()
    }
  })
}

/**
 * A view of `inner` that records every request (a batched read as one `read`); another view of the same data is
 * another process.
 */
export function counting(inner: Store): Store & {requests: string[]} {
  const requests: string[] = []
  const count = <T>(what: string, p: Promise<T>): Promise<T> => {
    requests.push(what)
    return p
  }
  return {
    requests,
    description: inner.description,
    get: (k) => count('get', inner.get(k)),
    list: (p) => count('list', inner.list(p)),
    listKeys: (p) => count('listKeys', inner.listKeys(p)),
    read: (req) => count('read', inner.read!(req)),
    txn: (c, o) => count('txn', inner.txn(c, o)),
    revision: () => inner.revision(),
    close: async () => {},
  }
}
