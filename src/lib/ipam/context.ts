// Shared plumbing of the IPAM operations: the context they run in, reads that every operation does, the
// one retry helper, and a write batch that turns a logical change into one guarded transaction.
import {ConflictError, RevisionConflict} from '../errors.js'
import {type Cidr, formatCidr} from '../net/cidr.js'
import type {Interrupt} from '../interrupt.js'
import {keys} from '../store/keys.js'
import type {Condition, KeyValue, Store, WriteOp} from '../store/store.js'
import {guardFor} from '../store/store.js'
import {type Block, decodeBlock, encodeBlock, garbageCollect} from './block.js'
import {decodePool, type Pool} from './pool.js'
import {DEFAULT_IPAM_CONFIG, decodeHandle, decodeIpamConfig, encodeHandle, type IpamConfig} from './records.js'
import {type Clock, systemClock} from '../clock.js'

export interface Ctx {
  readonly store: Store
  readonly clock: Clock
  /** Attempts per guarded write before giving up; upstream uses 100. */
  readonly maxAttempts: number
  /** Set by the CLI: multi-transaction operations stop at their next checkpoint when it is requested. */
  readonly interrupt?: Interrupt
}

export function makeCtx(store: Store, opts: {clock?: Clock; maxAttempts?: number; interrupt?: Interrupt} = {}): Ctx {
  return {store, clock: opts.clock ?? systemClock, maxAttempts: opts.maxAttempts ?? 100, interrupt: opts.interrupt}
}

export const MAX_RETRIES_MESSAGE = 'Max retries hit - excessive concurrent IPAM requests'

/**
 * Run `fn` until it stops losing compare-and-swap races. Only RevisionConflict is retried; it means
 * "re-read and recompute", so `fn` must do its reads inside. Jittered back-off keeps many processes
 * racing for one block from retrying in lock-step.
 */
export async function withRetry<T>(ctx: Ctx, fn: (attempt: number) => Promise<T>): Promise<T> {
  for (let attempt = 0; attempt < ctx.maxAttempts; attempt++) {
    try {
      return await fn(attempt)
    } catch (err) {
      if (!(err instanceof RevisionConflict)) throw err
      if (attempt >= 1) await new Promise((r) => setTimeout(r, Math.random() * Math.min(50, 2 ** attempt)))
    }
  }
  throw new ConflictError(MAX_RETRIES_MESSAGE)
}

export async function loadConfig(ctx: Ctx): Promise<IpamConfig> {
  return configFrom(await ctx.store.get(keys.ipamConfig()))
}

/** The config stored at keys.ipamConfig(), however it was read. */
export function configFrom(kv: KeyValue | undefined): IpamConfig {
  // Upstream returns defaults for a missing config without writing them.
  return kv ? decodeIpamConfig(kv.value) : {...DEFAULT_IPAM_CONFIG}
}

/** All pools in name order (the store's key order), as upstream processes them. */
export async function listPools(ctx: Ctx): Promise<Pool[]> {
  return poolsFrom(await ctx.store.list(keys.resourcePrefix('ippools')))
}

/**
 * Decoded pools by their stored text. Every allocation reads the pools and they seldom change, so each distinct
 * text is decoded (JSON, defaults, selector validation) once per process; the pools are frozen because callers
 * share them. The memo is emptied when full, so a store with ever-changing pools costs a decode, not memory.
 */
const poolMemo = new Map<string, Pool>()
const POOL_MEMO_MAX = 256

export const poolsFrom = (kvs: readonly KeyValue[]): Pool[] =>
  kvs.map((kv) => {
    let pool = poolMemo.get(kv.value)
    if (!pool) {
      if (poolMemo.size >= POOL_MEMO_MAX) poolMemo.clear()
      pool = deepFreeze(decodePool(kv.value))
      poolMemo.set(kv.value, pool)
    }
    return pool
  })

function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null && !Object.isFrozen(v)) {
    Object.freeze(v)
    for (const x of Object.values(v)) deepFreeze(x)
  }
  return v
}

export interface LoadedBlock {
  readonly kv: KeyValue
  /** Already garbage-collected; writing it persists the collection in the same CAS. */
  readonly block: Block
}

export async function loadBlock(ctx: Ctx, cidr: Cidr, cooldownSeconds: number): Promise<LoadedBlock | undefined> {
  return blockFrom(ctx, await ctx.store.get(keys.block(cidr)), cooldownSeconds)
}

/** A block however it was read (alone or in a batched read). */
export function blockFrom(ctx: Ctx, kv: KeyValue | undefined, cooldownSeconds: number): LoadedBlock | undefined {
  if (!kv) return undefined
  const block = decodeBlock(kv.value)
  garbageCollect(block, cooldownSeconds, ctx.clock.now())
  return {kv, block}
}

/** The pieces of one logical change, committed as a single guarded transaction
 * (docs/calico.md#atomic-writes: upstream splits them across requests). */
export class WriteBatch {
  private readonly conditions: Condition[] = []
  private readonly ops: WriteOp[] = []
  private readonly handleDeltas = new Map<string, Map<string, number>>()
  private readonly handleReads = new Map<string, Promise<KeyValue | undefined>>()

  constructor(private readonly ctx: Ctx) {}

  guard(key: string, seen: KeyValue | undefined): this {
    this.conditions.push(guardFor(key, seen))
    return this
  }

  /** Commit only if `condition` holds (a guard built earlier, e.g. from a read made for a previous write). */
  require(condition: Condition): this {
    this.conditions.push(condition)
    return this
  }

  /** Commit only if no key under `prefix` has been written after revision `notAfter`. */
  guardPrefix(prefix: string, notAfter: bigint): this {
    this.conditions.push({prefix, notAfter})
    return this
  }

  put(key: string, value: string, seen: KeyValue | undefined): this {
    this.guard(key, seen)
    this.ops.push({put: key, value})
    return this
  }

  delete(key: string, seen: KeyValue): this {
    this.guard(key, seen)
    this.ops.push({delete: key})
    return this
  }

  /** Update (bumping the sequence number, as upstream's updateBlock does) or create a block. */
  putBlock(block: Block, seen: KeyValue | undefined): this {
    if (seen) block.sequenceNumber += 1n
    return this.put(keys.block(block.cidr), encodeBlock(block), seen)
  }

  /** Record that `handle` gains (or loses) `delta` addresses in `block`; -Infinity drops the block entry. */
  countHandle(handle: string | undefined, block: Cidr, delta: number): this {
    if (handle === undefined || delta === 0) return this
    const per = this.handleDeltas.get(handle) ?? new Map<string, number>()
    const cidr = formatCidr(block)
    per.set(cidr, (per.get(cidr) ?? 0) + delta)
    this.handleDeltas.set(handle, per)
    return this
  }

  /**
   * Start reading a handle now, alongside the caller's other reads, to save a round trip at commit. The
   * value is still guarded by its revision, so reading early is never unsafe.
   */
  prefetchHandle(handle: string | undefined): this {
    if (handle !== undefined && !this.handleReads.has(handle))
      this.handleReads.set(handle, this.ctx.store.get(keys.handle(handle)))
    return this
  }

  /** The caller read `handle` itself (e.g. in a batched read); the commit is guarded on what it saw. */
  knownHandle(handle: string | undefined, seen: KeyValue | undefined): this {
    if (handle !== undefined) this.handleReads.set(handle, Promise.resolve(seen))
    return this
  }

  /**
   * Throws RevisionConflict if anything it read has changed since. Returns the revision of the write (every key
   * it wrote has that mod-revision); undefined when there was nothing to write (and nothing was checked).
   */
  async commit(): Promise<bigint | undefined> {
    for (const h of this.handleDeltas.keys()) this.prefetchHandle(h)
    for (const [handle, deltas] of this.handleDeltas) {
      const key = keys.handle(handle)
      const seen = await this.handleReads.get(handle)!
      const counts = seen ? decodeHandle(seen.value) : new Map<string, number>()
      for (const [cidr, d] of deltas) {
        // Never below zero: legacy over-counted handles (upstream quirk 3.15.1) must still release cleanly.
        const n = Math.max(0, (counts.get(cidr) ?? 0) + d)
        if (n === 0) counts.delete(cidr)
        else counts.set(cidr, n)
      }
      if (counts.size > 0) this.put(key, encodeHandle(counts), seen)
      else if (seen) this.delete(key, seen)
    }
    if (this.ops.length === 0) return undefined
    const r = await this.ctx.store.txn(this.conditions, this.ops)
    if (!r.succeeded) throw new RevisionConflict('datastore changed while writing; retrying')
    noteWritten(this.ctx.store, this.ops, r.revision)
    return r.revision
  }
}

/**
 * Blocks and handles remembered per store, the least recently written forgotten first: a node's allocator rewrites
 * its few blocks on every allocation, so they stay; a handle is needed only until the same request's next family.
 * At most about 10 MB even when every entry is a full /26 block of long attributes (a GC pass over many blocks).
 */
const MAX_WRITTEN = 1024
const written = new WeakMap<Store, Map<string, KeyValue>>()
const REMEMBERED = [keys.blockPrefix(), keys.handlePrefix()]

function noteWritten(store: Store, ops: readonly WriteOp[], revision: bigint): void {
  let known = written.get(store)
  for (const op of ops) {
    const key = 'put' in op ? op.put : op.delete
    if (!REMEMBERED.some((p) => key.startsWith(p))) continue
    if (!known) {
      known = new Map()
      written.set(store, known)
    }
    known.delete(key) // re-inserted last: most recently written
    if ('put' in op) known.set(key, {key, value: op.value, modRevision: revision})
  }
  while (known && known.size > MAX_WRITTEN) known.delete(known.keys().next().value!)
}

/**
 * The block or handle at `key` as this process last wrote it through a WriteBatch on `store` (the value and the
 * revision of that write), or undefined (never written here, deleted here, or forgotten). Only a fact about the
 * past: another process may have written the key since, so a write based on it must be guarded on that
 * revision, and a lost guard means: read it again.
 */
export function lastWritten(store: Store, key: string): KeyValue | undefined {
  return written.get(store)?.get(key)
}
