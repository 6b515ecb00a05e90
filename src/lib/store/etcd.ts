// etcd v3 backend. Guards map to Txn compares (version == 0 for "absent", mod_revision == rev); every call
// carries a deadline and is also raced against our own timer, so an unreachable or stuck etcd becomes a
// one-line DatastoreUnavailableError instead of a hang. Revisions stay strings/bigint end to end.
import fs from 'node:fs'
import {noop} from 'cockatiel'
import {Etcd3, type IOptions, type IRangeResponse} from 'etcd3'
import {DatastoreUnavailableError, ValidationError} from '../errors.js'
import type {Condition, KeyValue, ReadRequest, ReadResult, Store, TxnResult, WriteOp} from './store.js'

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

/** Keys on the first range page of a list. */
const FIRST_PAGE = 500
/**
 * Later pages are sized from the bytes per key seen so far. They must be large: etcd 3.4 walks its index from
 * the page start to the END of the range for every page (the limit is applied afterwards), so small pages
 * make listing 100,000 handles quadratic (~15 s at 500 keys a page, ~0.5 s at 20,000).
 */
const PAGE_BYTES = 4 * 1024 * 1024
const MAX_PAGE = 20_000
/** Receive limit per gRPC message; a page that still exceeds it is retried with fewer keys. */
const MAX_RECEIVE_BYTES = 64 * 1024 * 1024
/** etcd's default --max-txn-ops, which also bounds the ranges of one read-only Txn. */
const MAX_TXN_OPS = 128

/** Where a prefix scan continues: after `from`, at the revision the scan started reading. */
interface ScanState {
  from: Buffer
  revision: string | undefined
  out: KeyValue[]
  bytes: number
}

function readPem(file: string, what: string): Buffer {
  try {
    return fs.readFileSync(file)
  } catch (err) {
    throw new ValidationError(`cannot read etcd ${what} ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
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

type RawKv = IRangeResponse['kvs'][number]

function toKv(kv: RawKv, keysOnly = false): KeyValue {
  return {key: kv.key.toString(), value: keysOnly ? '' : kv.value.toString(), modRevision: BigInt(kv.mod_revision)}
}

function tooLarge(err: unknown): boolean {
  return /RESOURCE_EXHAUSTED|larger than max/.test(String((err as Error).message))
}

/** Append one range page to a scan; true if there is more to read (`from` then points past the page). */
function takePage(st: ScanState, r: IRangeResponse, keysOnly: boolean): boolean {
  for (const kv of r.kvs) {
    st.bytes += kv.key.length + kv.value.length
    st.out.push(toKv(kv, keysOnly))
  }
  if (!r.more || r.kvs.length === 0) return false
  st.from = Buffer.concat([r.kvs[r.kvs.length - 1]!.key, Buffer.from([0])])
  return true
}

function nextPageSize(st: ScanState): number {
  return Math.max(1, Math.min(MAX_PAGE, Math.floor(PAGE_BYTES / Math.max(1, st.bytes / st.out.length))))
}

export class EtcdStore implements Store {
  readonly description: string
  private closed = false

  private constructor(private readonly client: Etcd3, private readonly opts: EtcdConnectOptions) {
    this.description = `etcdv3 (${opts.endpoints.join(',')})`
  }

  static async connect(o: EtcdConnectOptions): Promise<EtcdStore> {
    const options: IOptions = {
      hosts: o.endpoints,
      dialTimeout: o.timeoutMs,
      defaultCallOptions: () => ({deadline: Date.now() + o.timeoutMs}),
      // etcd3's default per-host circuit breaker refuses every call for seconds after one failure and hides
      // the cause; our own deadline and retry policy bound things instead.
      faultHandling: {host: () => noop},
      // A page of 500 full blocks is ~8 MB, twice gRPC's default 4 MiB receive limit.
      grpcOptions: {'grpc.max_receive_message_length': MAX_RECEIVE_BYTES},
    }
    if (o.caCertFile || o.certFile) {
      options.credentials = {
        rootCertificate: o.caCertFile ? readPem(o.caCertFile, 'CA certificate') : Buffer.alloc(0),
        privateKey: o.keyFile ? readPem(o.keyFile, 'key') : undefined,
        certChain: o.certFile ? readPem(o.certFile, 'certificate') : undefined,
      }
    }
    if (o.username) options.auth = {username: o.username, password: o.password ?? ''}
    return new EtcdStore(new Etcd3(options), o)
  }

  /** Bound a request by the timeout and turn every failure into one actionable line. */
  private async call<T>(what: string, fn: () => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${this.opts.timeoutMs / 1000} s`)), this.opts.timeoutMs)
    })
    try {
      return await Promise.race([fn(), deadline])
    } catch (err) {
      if (err instanceof ValidationError) throw err
      const msg = ((err as Error).message || String(err)).split('\n')[0]!.replace(/\.?\s*Resolution note:.*$/, '')
      throw new DatastoreUnavailableError(`etcd at ${this.opts.endpoints.join(',')} is unavailable (${what}): ${msg}`, {cause: err})
    } finally {
      clearTimeout(timer)
    }
  }

  async get(key: string): Promise<KeyValue | undefined> {
    if (key === '') return undefined // etcd has no empty key (and rejects the request)
    const r = await this.call('get', () => this.client.kv.range({key: Buffer.from(key)}))
    return r.kvs[0] && toKv(r.kvs[0])
  }

  private async scan(prefix: string, keysOnly: boolean, state?: ScanState): Promise<KeyValue[]> {
    const end = prefixRangeEnd(Buffer.from(prefix))
    // etcd rejects an empty key; "\0" is the smallest key there is.
    const st: ScanState = state ?? {from: prefix === '' ? Buffer.from([0]) : Buffer.from(prefix), revision: undefined, out: [], bytes: 0}
    let limit = st.out.length > 0 ? nextPageSize(st) : FIRST_PAGE
    for (;;) {
      const range = () =>
        // Unsorted: etcd returns a range in key order anyway, and etcd 3.4 reads the WHOLE range to sort it
        // before applying the limit (~8x slower per page over 40,000 keys).
        this.client.kv.range({key: st.from, range_end: end, limit, keys_only: keysOnly, revision: st.revision})
      let r: Awaited<ReturnType<typeof range>>
      try {
        r = await this.call('list', range)
      } catch (err) {
        // Values much larger than the ones seen so far can push a page past the receive limit: ask for fewer
        // keys per page from here on.
        if (limit > 1 && tooLarge(err)) {
          limit = Math.max(1, Math.floor(limit / 2))
          continue
        }
        throw err
      }
      // Later pages read at the first page's revision: one consistent snapshot, as a single range would be.
      st.revision ??= r.header.revision
      if (!takePage(st, r, keysOnly)) return st.out
      limit = nextPageSize(st)
    }
  }

  async list(prefix: string): Promise<KeyValue[]> {
    return this.scan(prefix, false)
  }

  async listKeys(prefix: string): Promise<string[]> {
    return (await this.scan(prefix, true)).map((kv) => kv.key)
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
        const chunk = ops.slice(i, i + MAX_TXN_OPS).map((range) => ({request_range: {...range, revision}}))
        const r = await this.call('read', () => this.client.kv.txn({compare: [], success: chunk, failure: []}))
        revision ??= r.header.revision
        responses = responses.concat(r.responses.map((op) => op.response_range))
      }
    } catch (err) {
      // Several large values together can exceed the receive limit that each would fit on its own.
      if (!tooLarge(err)) throw err
      const [g, l] = await Promise.all([Promise.all(gets.map((k) => this.get(k))), Promise.all(lists.map((p) => this.list(p)))])
      return {gets: g, lists: l}
    }
    const first = (r: IRangeResponse): KeyValue | undefined => r.kvs[0] && toKv(r.kvs[0])
    // etcd has no empty key: that get asked for "\0" as a placeholder and finds nothing.
    const out: ReadResult = {gets: gets.map((key, i) => (key === '' ? undefined : first(responses[i]!))), lists: []}
    for (const [j, prefix] of lists.entries()) {
      const st: ScanState = {from: Buffer.alloc(0), revision, out: [], bytes: 0}
      // A list longer than one page goes on with ordinary range calls at the read's revision.
      out.lists.push(takePage(st, responses[gets.length + j]!, false) ? await this.scan(prefix, false, st) : st.out)
    }
    return out
  }

  async txn(conditions: readonly Condition[], ops: readonly WriteOp[]): Promise<TxnResult> {
    const r = await this.call('txn', () =>
      this.client.kv.txn({
        compare: conditions.map((c) =>
          'absent' in c
            ? {key: Buffer.from(c.key), target: 'Version' as const, result: 'Equal' as const, version: 0}
            : {key: Buffer.from(c.key), target: 'Mod' as const, result: 'Equal' as const, mod_revision: c.modRevision.toString()},
        ),
        success: ops.map((op) =>
          'put' in op ? {request_put: {key: Buffer.from(op.put), value: Buffer.from(op.value)}} : {request_delete_range: {key: Buffer.from(op.delete)}},
        ),
        failure: [],
      }),
    )
    return {succeeded: r.succeeded, revision: BigInt(r.header.revision)}
  }

  async revision(): Promise<bigint> {
    const r = await this.call('status', () => this.client.kv.range({key: Buffer.from('/calico/'), count_only: true}))
    return BigInt(r.header.revision)
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.client.close()
  }
}
