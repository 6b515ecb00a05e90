// A Store that counts what it does: every call is one datastore round trip, and a transaction whose guards
// fail is a lost compare-and-swap race (the retry helper then re-reads and tries again). The agent exports
// both as metrics, which is how its batching shows; the benchmarks report round trips per operation with it.
import type {
  ChangeFeed,
  Condition,
  KeyValue,
  ReadRequest,
  ReadResult,
  Scan,
  Store,
  TxnResult,
  WriteOp,
} from './store.js'

export type StoreOp = 'get' | 'list' | 'listKeys' | 'read' | 'each' | 'watch' | 'txn' | 'revision'

export interface StoreCounts {
  /** Round trips by operation. */
  calls: Record<StoreOp, number>
  /** Transactions whose guards failed. */
  conflicts: number
}

const zero = (): StoreCounts => ({
  calls: {get: 0, list: 0, listKeys: 0, read: 0, each: 0, watch: 0, txn: 0, revision: 0},
  conflicts: 0,
})

/** Round trips that read or write (not `revision`, which only asks for the counter). */
export const roundTrips = (c: StoreCounts): number =>
  c.calls.get + c.calls.list + c.calls.listKeys + c.calls.read + c.calls.each + c.calls.txn

export class CountedStore implements Store {
  /** Live counts (the agent's metrics hold on to this object). */
  readonly counts: StoreCounts = zero()

  read?: (req: ReadRequest) => Promise<ReadResult>
  each?: (prefix: string, visit: (kv: KeyValue) => void, opts?: {keysOnly?: boolean}) => Promise<void>
  eachAtOnce?: (scans: Iterable<Scan>) => Promise<void>
  watch?: (prefixes: readonly string[]) => ChangeFeed

  constructor(private readonly inner: Store) {
    // Forwarded only when the inner store has them, so that readMany()/forEachKv() make the same requests
    // through this wrapper as without it.
    if (inner.read)
      this.read = (req) => {
        this.counts.calls.read++
        return inner.read!(req)
      }
    if (inner.each)
      this.each = (prefix, visit, opts) => {
        this.counts.calls.each++
        return inner.each!(prefix, visit, opts)
      }
    // Counted as one `each`: a snapshot scan is a few streamed reads, like a few `each` calls.
    if (inner.eachAtOnce)
      this.eachAtOnce = (scans) => {
        this.counts.calls.each++
        return inner.eachAtOnce!(scans)
      }
    // Each catch-up of a feed counts as one round trip (etcd: the progress request on its watch stream).
    if (inner.watch)
      this.watch = (prefixes) => {
        const feed = inner.watch!(prefixes)
        return {
          next: (h) => {
            this.counts.calls.watch++
            return feed.next(h)
          },
          close: () => feed.close(),
        }
      }
  }

  get description(): string {
    return this.inner.description
  }

  /** A copy of the counts so far; the live counts start again from zero. */
  reset(): StoreCounts {
    const c = {calls: {...this.counts.calls}, conflicts: this.counts.conflicts}
    Object.assign(this.counts, zero())
    return c
  }

  get(key: string): Promise<KeyValue | undefined> {
    this.counts.calls.get++
    return this.inner.get(key)
  }

  list(prefix: string): Promise<KeyValue[]> {
    this.counts.calls.list++
    return this.inner.list(prefix)
  }

  listKeys(prefix: string): Promise<string[]> {
    this.counts.calls.listKeys++
    return this.inner.listKeys(prefix)
  }

  async txn(conditions: readonly Condition[], ops: readonly WriteOp[]): Promise<TxnResult> {
    this.counts.calls.txn++
    const r = await this.inner.txn(conditions, ops)
    if (!r.succeeded) this.counts.conflicts++
    return r
  }

  revision(): Promise<bigint> {
    this.counts.calls.revision++
    return this.inner.revision()
  }

  close(): Promise<void> {
    return this.inner.close()
  }
}
