// In-process store with the same semantics as the persistent ones: for fast unit tests of the core and for
// `ipam plan --simulate`, which runs the allocator over hundreds of thousands of keys. Keys are kept in a
// sorted index, so a prefix listing or a prefix guard costs the keys under that prefix, not the whole store.
import {compareBytes} from '../codec/gojson.js'
import type {Condition, KeyValue, ReadRequest, ReadResult, Store, TxnResult, WriteOp} from './store.js'

/** First index in `xs` whose element is not below `key`. */
function lowerBound(xs: readonly string[], key: string): number {
  let lo = 0
  let hi = xs.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (compareBytes(xs[mid]!, key) < 0) lo = mid + 1
    else hi = mid
  }
  return lo
}

const CHUNK = 512

/** Sorted keys in chunks of at most 2 × CHUNK: an insert or delete moves one chunk, not every key. */
class SortedKeys {
  private readonly chunks: string[][] = []

  /** The chunk that holds `key` or would: the first whose last key is not below it (or the last chunk). */
  private chunkFor(key: string): number {
    let lo = 0
    let hi = this.chunks.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      const c = this.chunks[mid]!
      if (compareBytes(c[c.length - 1]!, key) < 0) lo = mid + 1
      else hi = mid
    }
    return Math.min(lo, this.chunks.length - 1)
  }

  insert(key: string): void {
    if (this.chunks.length === 0) {
      this.chunks.push([key])
      return
    }
    const ci = this.chunkFor(key)
    const c = this.chunks[ci]!
    c.splice(lowerBound(c, key), 0, key)
    if (c.length > 2 * CHUNK) this.chunks.splice(ci + 1, 0, c.splice(CHUNK))
  }

  remove(key: string): void {
    if (this.chunks.length === 0) return
    const ci = this.chunkFor(key)
    const c = this.chunks[ci]!
    const at = lowerBound(c, key)
    if (c[at] !== key) return
    c.splice(at, 1)
    if (c.length === 0) this.chunks.splice(ci, 1)
  }

  /** Every key starting with `prefix`, in order. */
  *withPrefix(prefix: string): Generator<string> {
    if (this.chunks.length === 0) return
    let ci = this.chunkFor(prefix)
    let at = lowerBound(this.chunks[ci]!, prefix)
    for (; ci < this.chunks.length; ci++, at = 0) {
      const c = this.chunks[ci]!
      for (; at < c.length; at++) {
        if (!c[at]!.startsWith(prefix)) return
        yield c[at]!
      }
    }
  }
}

export class MemoryStore implements Store {
  readonly description = 'memory'
  private readonly data = new Map<string, KeyValue>()
  private readonly index = new SortedKeys()
  private rev = 0n

  async get(key: string): Promise<KeyValue | undefined> {
    return this.data.get(key)
  }

  private listNow(prefix: string): KeyValue[] {
    const out: KeyValue[] = []
    for (const k of this.index.withPrefix(prefix)) out.push(this.data.get(k)!)
    return out
  }

  async list(prefix: string): Promise<KeyValue[]> {
    return this.listNow(prefix)
  }

  async listKeys(prefix: string): Promise<string[]> {
    return [...this.index.withPrefix(prefix)]
  }

  async read(req: ReadRequest): Promise<ReadResult> {
    return {
      gets: (req.gets ?? []).map((k) => this.data.get(k)),
      lists: (req.lists ?? []).map((p) => this.listNow(p)),
    }
  }

  async txn(conditions: readonly Condition[], ops: readonly WriteOp[]): Promise<TxnResult> {
    for (const c of conditions) {
      let ok: boolean
      if ('prefix' in c) ok = this.listNow(c.prefix).every((kv) => kv.modRevision <= c.notAfter)
      else {
        const seen = this.data.get(c.key)
        ok = 'absent' in c ? seen === undefined : seen?.modRevision === c.modRevision
      }
      if (!ok) return {succeeded: false, revision: this.rev}
    }
    if (ops.length === 0) return {succeeded: true, revision: this.rev}
    this.rev++
    for (const op of ops) {
      if ('put' in op) {
        if (!this.data.has(op.put)) this.index.insert(op.put)
        this.data.set(op.put, {key: op.put, value: op.value, modRevision: this.rev})
      } else if (this.data.delete(op.delete)) this.index.remove(op.delete)
    }
    return {succeeded: true, revision: this.rev}
  }

  async revision(): Promise<bigint> {
    return this.rev
  }

  async close(): Promise<void> {}
}
