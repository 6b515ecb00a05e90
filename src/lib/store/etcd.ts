// etcd v3 backend. Guards map to Txn compares (version == 0 for "absent", mod_revision == rev); every call
// carries a deadline and is also raced against our own timer, so an unreachable or stuck etcd becomes a
// one-line DatastoreUnavailableError instead of a hang. Revisions stay strings/bigint end to end.
import fs from 'node:fs'
import {noop} from 'cockatiel'
import {Etcd3, type IOptions, type IRangeResponse} from 'etcd3'
import {DatastoreUnavailableError, ValidationError} from '../errors.js'
import {EtcdChangeFeed} from './etcd-watch.js'
import {FIRST_PAGE, type KeyWindow, nextWindow, pageLimit, windowPage} from './key-windows.js'
import type {
  ChangeFeed,
  Condition,
  KeyValue,
  ReadRequest,
  ReadResult,
  Scan,
  Store,
  StoreMember,
  TxnResult,
  WriteOp,
} from './store.js'
import {type KeyRange, rangesOutside} from './store.js'

export interface EtcdConnectOptions {
  endpoints: string[]
  keyFile?: string
  certFile?: string
  caCertFile?: string
  username?: string
  password?: string
  timeoutMs: number
}

// grpc-js passes the host as TLS servername, and Node warns (DEP0123) when that is an IP address, which
// is how etcd endpoints are usually written. The connection is still verified against the certificate's
// IP SANs; the warning would only break our one-line output.
const emitWarning = process.emitWarning.bind(process)
process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
  const opt = rest[0]
  const code = typeof opt === 'object' && opt !== null ? (opt as {code?: string}).code : rest[1]
  if (code === 'DEP0123') return
  return (emitWarning as (...a: unknown[]) => void)(warning, ...rest)
}) as typeof process.emitWarning

// Page sizes and windows: FIRST_PAGE, pageLimit and nextWindow in key-windows.ts (docs/etcd-paging.md). Ranges
// ask for no sort order: etcd returns keys in ascending byte order anyway, and with an explicit order etcd 3.4 reads
// every value to the end of the range for each page before truncating it (~200 ms instead of ~25 ms for the first
// 500 of 100,000 endpoints).
/** Receive limit per gRPC message; a page that still exceeds it is retried with fewer keys. */
const MAX_RECEIVE_BYTES = 64 * 1024 * 1024
/** etcd's default --max-txn-ops, which also bounds the ranges of one read-only Txn. */
const MAX_TXN_OPS = 128

function readPem(file: string, what: string): Buffer {
  try {
    return fs.readFileSync(file)
  } catch (err) {
    throw new ValidationError(
      `cannot read etcd ${what} ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    )
  }
}

/** The smallest key greater than every key starting with `prefix` (etcd's range_end for a prefix). */
export function prefixRangeEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix)
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i]! < 0xff) {
      end[i]!++
      return end.subarray(0, i + 1)
    }
  }
  return Buffer.from([0]) // every key
}

/** `win` cut at `bound` (exclusive): undefined when it starts there or later. */
function bounded(win: KeyWindow | undefined, bound: Buffer | undefined): KeyWindow | undefined {
  if (!win || !bound) return win
  if (Buffer.compare(win.from, bound) >= 0) return undefined
  return win.end !== undefined && Buffer.compare(win.end, bound) <= 0 ? win : {from: win.from, end: bound}
}

type RawKv = IRangeResponse['kvs'][number]

function toKv(kv: RawKv, keysOnly = false): KeyValue {
  return {key: kv.key.toString(), value: keysOnly ? '' : kv.value.toString(), modRevision: BigInt(kv.mod_revision)}
}

function tooLarge(err: unknown): boolean {
  return /RESOURCE_EXHAUSTED|larger than max/.test(String((err as Error).message))
}

/**
 * An error that says the member could not be asked or could not answer (down, frozen, restarting, without a
 * leader), as opposed to an answer (a refused request): only these move a request to another member.
 */
const UNAVAILABLE =
  /UNAVAILABLE|DEADLINE_EXCEEDED|CANCELLED|No connection established|ECONNREFUSED|ECONNRESET|EPIPE|Connection dropped|no answer within|etcdserver: (request timed out|leader changed|no leader|server stopped|too many requests|not capable)/
/** The request never left this process (no connection to the member): even a write may go to another one. */
const NOT_SENT = /No connection established|ECONNREFUSED|connect E[A-Z]+/
/** order() of a store with one member. */
const ONLY_MEMBER: readonly number[] = [0]
/** A member that failed is asked last, after the others, for this long. */
const DEMOTED_MS = 30_000

const errText = (err: unknown): string =>
  ((err as Error).message || String(err)).split('\n')[0]!.replace(/\.?\s*Resolution note:.*$/, '')

export class EtcdStore implements Store {
  readonly description: string
  private closed = false
  /** One client per member, each pinned to its endpoint: which member is asked is decided here (`order`). */
  private readonly clients: Etcd3[]
  /** The member asked first; it changes only when it fails. */
  private preferred: number
  private readonly failedAt: number[]

  private constructor(
    clients: Etcd3[],
    private readonly opts: EtcdConnectOptions,
  ) {
    this.clients = clients
    this.description = `etcdv3 (${opts.endpoints.join(',')})`
    this.failedAt = clients.map(() => 0)
    // Each process starts at a random member, so many short-lived processes spread over the cluster.
    this.preferred = Math.floor(Math.random() * clients.length)
  }

  static async connect(o: EtcdConnectOptions): Promise<EtcdStore> {
    if (o.endpoints.length === 0) throw new ValidationError('no etcd endpoint given')
    const base: Omit<IOptions, 'hosts'> = {
      dialTimeout: o.timeoutMs,
      defaultCallOptions: () => ({deadline: Date.now() + o.timeoutMs}),
      // etcd3's default per-host circuit breaker refuses every call for seconds after one failure and hides
      // the cause, and its global retry repeats a write whose outcome is unknown; `call` decides instead.
      faultHandling: {host: () => noop, global: noop},
      // A page of 500 full blocks is ~8 MB, twice gRPC's default 4 MiB receive limit.
      grpcOptions: {'grpc.max_receive_message_length': MAX_RECEIVE_BYTES},
    }
    if (o.caCertFile || o.certFile) {
      base.credentials = {
        rootCertificate: o.caCertFile ? readPem(o.caCertFile, 'CA certificate') : Buffer.alloc(0),
        privateKey: o.keyFile ? readPem(o.keyFile, 'key') : undefined,
        certChain: o.certFile ? readPem(o.certFile, 'certificate') : undefined,
      }
    }
    if (o.username) base.auth = {username: o.username, password: o.password ?? ''}
    return new EtcdStore(
      o.endpoints.map((host) => new Etcd3({...base, hosts: host})),
      o,
    )
  }

  /** Members in the order to ask them: the preferred one, then the others, members that failed lately last. */
  private order(): readonly number[] {
    const n = this.clients.length
    // One member: nothing to order (`call` does not ask with one member; the watch and `demote` do).
    if (n === 1) return ONLY_MEMBER
    const now = Date.now()
    const all = Array.from({length: n}, (_, k) => (this.preferred + k) % n)
    const fresh = (i: number) => now - this.failedAt[i]! > DEMOTED_MS
    return [...all.filter(fresh), ...all.filter((i) => !fresh(i))]
  }

  private demote(i: number): void {
    this.failedAt[i] = Date.now()
    if (this.preferred === i && this.clients.length > 1) this.preferred = this.order()[0]!
  }

  /**
   * One request, bounded by the timeout as a whole, turned into one actionable line on failure. With several
   * members (docs/design.md#etcd-cluster):
   * - a read goes to the preferred member; if that one fails to answer, or has not answered within half the
   *   timeout, the same read goes to the next member too (reads are safe to repeat) and the first answer wins,
   *   so a dead or frozen member costs at most half a request timeout and the request still ends within one;
   * - a write goes to one member only, and to the next one only when it never left this process (no connection):
   *   a write that may have reached a member is never repeated, its outcome is unknown and the caller's guards
   *   and cleanup handle it (see `docs/write-paths.md`);
   * - a member that failed is asked last for a while, so the next requests go straight to a working one.
   */
  private call<T>(
    what: string,
    fn: (client: Etcd3, options: {deadline: number}) => Promise<T>,
    o: {read: boolean; size?: {writes: number; guards: number}},
  ): Promise<T> {
    const timeoutMs = this.opts.timeoutMs
    const deadline = Date.now() + timeoutMs
    // One member: nothing to hedge or fall back to, and gRPC's deadline alone ends the request on time
    // (DEADLINE_EXCEEDED below), so no timers of our own on this path, which every request of a claim takes.
    if (this.clients.length === 1)
      return fn(this.clients[0]!, {deadline}).catch((err: unknown) => this.failed(what, err, o))
    const order = this.order()
    return new Promise<T>((resolve, reject) => {
      let next = 0
      let pending = 0
      let settled = false
      const inFlight = new Set<number>()
      let hedge: NodeJS.Timeout | undefined
      const finish = (f: () => void) => {
        settled = true
        clearTimeout(hedge)
        clearTimeout(overall)
        f()
      }
      const overall = setTimeout(() => {
        for (const i of inFlight) this.demote(i)
        // Whatever failed earlier elsewhere, what ends the request is the member(s) still silent.
        finish(() => reject(new Error(`no answer within ${timeoutMs / 1000} s`)))
      }, timeoutMs)
      const launch = () => {
        const i = order[next++]!
        pending++
        inFlight.add(i)
        clearTimeout(hedge)
        if (o.read && next < order.length)
          hedge = setTimeout(() => {
            if (!settled) launch()
          }, timeoutMs / 2)
        fn(this.clients[i]!, {deadline}).then(
          (v) => {
            pending--
            inFlight.delete(i)
            if (settled) return
            // Members asked before this one and still silent are demoted: the next request skips them.
            for (const j of inFlight) if (order.indexOf(j) < order.indexOf(i)) this.demote(j)
            if (i !== order[0]) this.preferred = i
            finish(() => resolve(v))
          },
          (err: unknown) => {
            pending--
            inFlight.delete(i)
            if (settled) return
            const msg = errText(err)
            if (!UNAVAILABLE.test(msg) || err instanceof ValidationError) return finish(() => reject(err))
            this.demote(i)
            if (next < order.length && Date.now() < deadline && (o.read || NOT_SENT.test(msg))) return launch()
            if (pending === 0) finish(() => reject(err))
          },
        )
      }
      launch()
    }).catch((err: unknown) => this.failed(what, err, o))
  }

  /** A request that did not succeed, as the one error its caller gets (see `call`). */
  private failed(what: string, err: unknown, o: {size?: {writes: number; guards: number}}): never {
    if (err instanceof ValidationError) throw err
    // gRPC's own deadline is the same instant as the overall timer and may fire first: either way the request
    // was ended by the timeout, and says so in the same words.
    const text = errText(err)
    const msg = /DEADLINE_EXCEEDED/.test(text) ? `no answer within ${this.opts.timeoutMs / 1000} s` : text
    // etcd answered, and said no to the size: the request, not the server, is the problem.
    if (/too many operations in txn request/.test(msg)) {
      throw new ValidationError(
        `etcd refused a transaction of ${o.size?.writes ?? '?'} writes and ${o.size?.guards ?? '?'} guards as too large (each may be at most its --max-txn-ops, 128 by default); do less in one command, e.g. fewer addresses in new blocks per ipam assign`,
      )
    }
    throw new DatastoreUnavailableError(`etcd at ${this.opts.endpoints.join(',')} is unavailable (${what}): ${msg}`, {
      cause: err,
    })
  }

  /** Every member's own status, asked in parallel (an unreachable member is listed, not an error). */
  async members(): Promise<StoreMember[]> {
    const timeoutMs = this.opts.timeoutMs
    return Promise.all(
      this.clients.map(async (client, i): Promise<StoreMember> => {
        const endpoint = this.opts.endpoints[i]!
        let timer: NodeJS.Timeout | undefined
        try {
          const s = await Promise.race([
            client.maintenance.status({deadline: Date.now() + timeoutMs}),
            new Promise<never>((_, reject) => {
              timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs / 1000} s`)), timeoutMs)
            }),
          ])
          const hex = (v: string) => BigInt(v).toString(16)
          return {
            endpoint,
            reachable: true,
            id: hex(s.header.member_id),
            leader: s.leader === s.header.member_id,
            hasLeader: s.leader !== '0',
            dbSizeBytes: Number(s.dbSize),
            raftIndex: BigInt(s.raftIndex),
            raftAppliedIndex: BigInt(s.raftAppliedIndex),
            raftTerm: BigInt(s.raftTerm),
            version: s.version,
          }
        } catch (err) {
          return {endpoint, reachable: false, error: errText(err)}
        } finally {
          clearTimeout(timer)
        }
      }),
    )
  }

  async get(key: string): Promise<KeyValue | undefined> {
    if (key === '') return undefined // etcd has no empty key (and rejects the request)
    const r = await this.call('get', (c, opt) => c.kv.range({key: Buffer.from(key)}, opt), {read: true})
    return r.kvs[0] && toKv(r.kvs[0])
  }

  /**
   * Every key with the prefix, page by page, at the first page's revision. The next page is requested before
   * the current one is visited, so a caller's per-key work overlaps etcd's. `start`: read at `revision`, and
   * the first page was already read (by `read`) when `page` is given. Returns the revision it read at.
   */
  private async scan(
    prefix: string,
    keysOnly: boolean,
    visit: (kv: KeyValue) => void,
    start?: {page?: IRangeResponse; revision: string},
    range?: KeyRange,
  ): Promise<string | undefined> {
    const prefixBytes = Buffer.from(prefix)
    // Every window ends at or before `bound`: the range's end, else the prefix's.
    const bound = range?.to === undefined ? undefined : Buffer.from(range.to)
    const end = bound ?? prefixRangeEnd(prefixBytes)
    // etcd rejects an empty key; "\0" is the smallest key there is.
    const from = range ? Buffer.from(range.from) : prefixBytes
    let win: KeyWindow = {from: from.length === 0 ? Buffer.from([0]) : from, end: bound}
    let revision = start?.revision
    let limit = FIRST_PAGE
    let bytes = 0
    let count = 0
    const page = async (w: KeyWindow) => {
      for (;;) {
        try {
          return await this.call(
            'list',
            (c, opt) => c.kv.range({key: w.from, range_end: w.end ?? end, limit, keys_only: keysOnly, revision}, opt),
            {read: true},
          )
        } catch (err) {
          // Values much larger than the ones seen so far can push a page past the receive limit: ask for fewer
          // keys per page from here on.
          if (limit > 1 && tooLarge(err)) {
            limit = Math.max(1, Math.floor(limit / 2))
            continue
          }
          throw err
        }
      }
    }
    let r = start?.page ?? (await page(win))
    for (;;) {
      // Later pages read at the first page's revision: one consistent snapshot, as a single range would be.
      revision ??= r.header.revision
      for (const kv of r.kvs) bytes += kv.key.length + kv.value.length
      count += r.kvs.length
      if (count > 0) limit = pageLimit(bytes, count)
      // The rest is read in windows of about one page each (docs/etcd-paging.md): a range to the prefix's end
      // would make etcd walk every remaining key for every page.
      const following = bounded(nextWindow(prefixBytes, win, windowPage(r), limit), bound)
      let next: Promise<typeof r> | undefined
      if (following) {
        win = following
        next = page(win)
        // Settled below; until then a failure must not surface as an unhandled rejection.
        next.catch(() => {})
      }
      for (const kv of r.kvs) visit(toKv(kv, keysOnly))
      if (!next) return revision
      r = await next
    }
  }

  async list(prefix: string): Promise<KeyValue[]> {
    const out: KeyValue[] = []
    await this.scan(prefix, false, (kv) => out.push(kv))
    return out
  }

  async listKeys(prefix: string): Promise<string[]> {
    const out: string[] = []
    await this.scan(prefix, true, (kv) => out.push(kv.key))
    return out
  }

  async each(prefix: string, visit: (kv: KeyValue) => void, opts: {keysOnly?: boolean} = {}): Promise<void> {
    await this.scan(prefix, opts.keysOnly === true, visit)
  }

  async eachAtOnce(scans: Iterable<Scan>): Promise<void> {
    // The later scans read at the first one's revision: one snapshot, as `read` gives.
    let revision: string | undefined
    for (const s of scans) {
      if ('count' in s) {
        const prefix = Buffer.from(s.prefix)
        const r = await this.call(
          'list',
          (c, opt) =>
            c.kv.range(
              {
                key: prefix.length === 0 ? Buffer.from([0]) : prefix,
                range_end: prefixRangeEnd(prefix),
                count_only: true,
                revision,
              },
              opt,
            ),
          {read: true},
        )
        revision ??= r.header.revision
        s.count(Number(r.count))
        continue
      }
      for (const range of rangesOutside(s.prefix, s.except ?? []))
        revision = await this.scan(s.prefix, s.keysOnly === true, s.visit, revision ? {revision} : undefined, range)
    }
  }

  async read(req: ReadRequest): Promise<ReadResult> {
    const gets = req.gets ?? []
    const lists = req.lists ?? []
    const ops = [
      ...gets.map((key) => ({key: key === '' ? Buffer.from([0]) : Buffer.from(key)})),
      ...lists.map((prefix) => ({
        key: prefix === '' ? Buffer.from([0]) : Buffer.from(prefix),
        range_end: prefixRangeEnd(Buffer.from(prefix)),
        // No sort options: etcd returns ranges in key order anyway, and etcd 3.4 ignores the limit of a
        // sorted range (it reads the whole range to sort it).
        limit: FIRST_PAGE,
      })),
    ]
    if (ops.length === 0) return {gets: [], lists: []}
    let responses: IRangeResponse[] = []
    let revision: string | undefined
    try {
      // More ranges than one Txn may hold go in several, the later ones pinned to the first one's revision.
      for (let i = 0; i < ops.length; i += MAX_TXN_OPS) {
        const chunk = ops
          .slice(i, i + MAX_TXN_OPS)
          .map((range) => ({request_range: revision === undefined ? range : {...range, revision}}))
        const r = await this.call('read', (c, opt) => c.kv.txn({compare: [], success: chunk, failure: []}, opt), {
          read: true,
        })
        revision ??= r.header.revision
        responses = responses.concat(r.responses.map((op) => op.response_range))
      }
    } catch (err) {
      // Several large values together can exceed the receive limit that each would fit on its own.
      if (!tooLarge(err)) throw err
      const [g, l] = await Promise.all([
        Promise.all(gets.map((k) => this.get(k))),
        Promise.all(lists.map((p) => this.list(p))),
      ])
      return {gets: g, lists: l}
    }
    const first = (r: IRangeResponse): KeyValue | undefined => r.kvs[0] && toKv(r.kvs[0])
    // etcd has no empty key: that get asked for "\0" as a placeholder and finds nothing.
    const out: ReadResult = {gets: gets.map((key, i) => (key === '' ? undefined : first(responses[i]!))), lists: []}
    for (const [j, prefix] of lists.entries()) {
      const page = responses[gets.length + j]!
      // Nearly always the one page is the whole list (pools, a host's affinities): no windows to work out.
      if (!page.more) {
        out.lists.push(page.kvs.map((kv) => toKv(kv)))
        continue
      }
      // A list longer than one page goes on with ordinary range calls at the read's revision.
      const list: KeyValue[] = []
      await this.scan(prefix, false, (kv) => list.push(kv), {page, revision: revision!})
      out.lists.push(list)
    }
    return out
  }

  async txn(conditions: readonly Condition[], ops: readonly WriteOp[]): Promise<TxnResult> {
    const r = await this.call(
      'txn',
      (c, opt) =>
        c.kv.txn(
          {
            compare: conditions.map((c) =>
              'prefix' in c
                ? // A range compare (etcd >= 3.3): every key in the range, none for an empty one, must satisfy it.
                  {
                    key: Buffer.from(c.prefix),
                    range_end: prefixRangeEnd(Buffer.from(c.prefix)),
                    target: 'Mod' as const,
                    result: 'Less' as const,
                    mod_revision: (c.notAfter + 1n).toString(),
                  }
                : 'absent' in c
                  ? {key: Buffer.from(c.key), target: 'Version' as const, result: 'Equal' as const, version: 0}
                  : {
                      key: Buffer.from(c.key),
                      target: 'Mod' as const,
                      result: 'Equal' as const,
                      mod_revision: c.modRevision.toString(),
                    },
            ),
            success: ops.map((op) =>
              'put' in op
                ? {request_put: {key: Buffer.from(op.put), value: Buffer.from(op.value)}}
                : {request_delete_range: {key: Buffer.from(op.delete)}},
            ),
            failure: [],
          },
          opt,
        ),
      {read: false, size: {writes: ops.length, guards: conditions.length}},
    )
    return {succeeded: r.succeeded, revision: BigInt(r.header.revision)}
  }

  /** A watch on the preferred member (see EtcdChangeFeed). */
  watch(prefixes: readonly string[]): ChangeFeed {
    const ranges = prefixes.map((prefix) => ({prefix, end: prefixRangeEnd(Buffer.from(prefix))}))
    return new EtcdChangeFeed(this, ranges, () => this.clients[this.order()[0]!]!, this.opts.timeoutMs)
  }

  async revision(): Promise<bigint> {
    const r = await this.call('status', (c, opt) => c.kv.range({key: Buffer.from('/calico/'), count_only: true}, opt), {
      read: true,
    })
    return BigInt(r.header.revision)
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    for (const c of this.clients) c.close()
  }
}
