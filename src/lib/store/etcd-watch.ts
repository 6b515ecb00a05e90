// A ChangeFeed on etcd: one watch stream with a watcher per prefix. Events are buffered as they arrive and handed
// over by `next`, which first asks the cluster for its current revision (a linearizable read, so a write that
// completed before the call counts) and then sends progress requests on the stream until the answer reaches that
// revision: the events up to it arrived before the answer, on the same stream (an etcd whose progress answer can
// overtake events still queued for the stream hands those over one call late; see docs/design.md). Whenever the
// stream breaks, a watcher is cancelled (its start revision was compacted away) or an answer is late, the feed
// starts over: new watchers from the revision read before a full read of the prefixes.
import type {Etcd3, IWatchRequest, IWatchResponse} from 'etcd3'
import {DatastoreUnavailableError} from '../errors.js'
import type {ChangeFeed, ChangeHandler, KeyValue, Store} from './store.js'

type Stream = Awaited<ReturnType<Etcd3['watchClient']['watch']>>

export class EtcdChangeFeed implements ChangeFeed {
  private stream: Stream | undefined
  /** Events since the last `next`, the latest per key (undefined: deleted). */
  private pending = new Map<string, KeyValue | undefined>()
  /** Whoever waits for the next created or progress answer, in the order the requests were written. */
  private waiters: {created: boolean; resolve: (r: IWatchResponse) => void; reject: (e: Error) => void}[] = []
  private closed = false

  constructor(
    private readonly store: Store,
    /** Each prefix with its range end (prefixRangeEnd in etcd.ts). */
    private readonly ranges: readonly {prefix: string; end: Buffer}[],
    /** The client of the member to watch on (the store's preferred one at each start). */
    private readonly client: () => Etcd3,
    private readonly timeoutMs: number,
  ) {}

  async next(h: ChangeHandler): Promise<bigint> {
    const target = await this.store.revision()
    try {
      if (!this.stream) await this.start(h, target)
      let reached = await this.ask({progress_request: {}}, false)
      // A member behind the cluster answers with an older revision: ask again until it has caught up.
      for (let i = 0; reached < target; i++) {
        if (i >= 20) throw new Error(`the watched member stays behind revision ${target} (at ${reached})`)
        await new Promise((r) => setTimeout(r, 10 * (i + 1)))
        reached = await this.ask({progress_request: {}}, false)
      }
      const batch = this.pending
      this.pending = new Map()
      for (const [key, kv] of batch) h.change(key, kv)
      return reached
    } catch (err) {
      this.drop(err as Error)
      if (err instanceof DatastoreUnavailableError) throw err
      throw new DatastoreUnavailableError(`etcd watch failed: ${(err as Error).message}`, {cause: err})
    }
  }

  private async start(h: ChangeHandler, from: bigint): Promise<void> {
    this.pending = new Map()
    const stream = await this.client().watchClient.watch()
    this.stream = stream
    stream.on('data', (r: IWatchResponse) => this.receive(stream, r))
    stream.on('error', (e: Error) => this.lose(stream, e))
    stream.on('end', () => this.lose(stream, new Error('watch stream ended')))
    // Watch first, read second: the watchers replay every change after `from`, so whatever the read missed
    // (keys written while it ran) arrives as events and is applied after it.
    for (const {prefix, end} of this.ranges)
      await this.ask(
        {create_request: {key: Buffer.from(prefix), range_end: end, start_revision: (from + 1n).toString()}},
        true,
      )
    h.reset()
    for (const {prefix: p} of this.ranges) {
      if (this.store.each) await this.store.each(p, (kv) => h.change(kv.key, kv))
      else for (const kv of await this.store.list(p)) h.change(kv.key, kv)
    }
  }

  /** Write a request and wait for its answer (a created watcher, or a progress revision). */
  private ask(req: IWatchRequest, created: true): Promise<IWatchResponse>
  private ask(req: IWatchRequest, created: false): Promise<bigint>
  private ask(req: IWatchRequest, created: boolean): Promise<IWatchResponse | bigint> {
    const stream = this.stream
    if (!stream) return Promise.reject(new Error('no watch stream'))
    return new Promise<IWatchResponse>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new Error(`no answer on the watch stream within ${this.timeoutMs / 1000} s`))
      }, this.timeoutMs)
      this.waiters.push({
        created,
        resolve: (r) => {
          clearTimeout(timer)
          resolve(r)
        },
        reject: (e) => {
          clearTimeout(timer)
          reject(e)
        },
      })
      stream.write(req)
    }).then((r) => (created ? r : BigInt(r.header.revision)))
  }

  private receive(stream: Stream, r: IWatchResponse): void {
    if (stream !== this.stream) return
    if (r.canceled) {
      this.lose(stream, new Error(r.cancel_reason || `watch cancelled at ${r.compact_revision}`))
      return
    }
    for (const ev of r.events ?? []) {
      const key = ev.kv.key.toString()
      this.pending.set(
        key,
        ev.type === 'Delete'
          ? undefined
          : {key, value: ev.kv.value.toString(), modRevision: BigInt(ev.kv.mod_revision)},
      )
    }
    if (r.created || (r.events ?? []).length === 0) {
      const i = this.waiters.findIndex((w) => w.created === r.created)
      if (i >= 0) this.waiters.splice(i, 1)[0]!.resolve(r)
    }
  }

  private lose(stream: Stream, err: Error): void {
    if (stream === this.stream) this.drop(err)
  }

  /** Forget the stream: the next call starts over with a full read. */
  private drop(err: Error): void {
    const stream = this.stream
    this.stream = undefined
    this.pending = new Map()
    const waiters = this.waiters
    this.waiters = []
    for (const w of waiters) w.reject(err)
    if (stream) {
      // `receive` and `lose` ignore a stream that is no longer the current one; cancelling ends it with an error.
      stream.on('error', () => {})
      stream.cancel()
    }
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.drop(new Error('closed'))
  }
}
