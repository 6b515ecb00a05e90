// The one datastore contract. It is deliberately etcd-shaped (a global revision counter, per-key
// mod-revisions, guarded multi-key transactions) so the IPAM core runs unchanged on the embedded store
// and on etcd v3.

/**
 * What the caller will do with the store, declared by the caller (each command class, plugin verb, the agent):
 * - 'read': only reads. A missing embedded store is a StoreMissingError (exit 3) and nothing is created; an
 *   existing one is read without any write, also from a read-only mount.
 * - 'update': writes, but only to change or remove what exists (release, delete, gc, remove, unlock): a missing
 *   embedded store is a StoreMissingError too, since there is nothing to change and the path is likely wrong.
 * - 'create': writes new state; a missing embedded store is created by the first write (0600 in 0700
 *   directories; until then it reads as empty, see CreateOnWriteStore) and `onCreated(path)` is called once,
 *   by the process that created it.
 * etcd has no such distinction: the cluster exists or it does not answer.
 */
export type OpenMode = 'read' | 'update' | 'create'

export interface KeyValue {
  readonly key: string
  readonly value: string
  /** Revision of the last write to this key; never 0 for a key that exists. */
  readonly modRevision: bigint
}

/**
 * A guard on one key: it must be absent, or its mod-revision must equal `modRevision`. Or on a prefix: no key
 * under `prefix` may have been written (created or updated) after revision `notAfter`; deletions are not seen.
 */
export type Condition =
  | {readonly key: string; readonly absent: true}
  | {readonly key: string; readonly modRevision: bigint}
  | {readonly prefix: string; readonly notAfter: bigint}

export type WriteOp = {readonly put: string; readonly value: string} | {readonly delete: string}

export interface TxnResult {
  readonly succeeded: boolean
  /** The store revision after the commit (or the current one when the guards failed). */
  readonly revision: bigint
}

/** Several reads issued as one request: single keys, and whole prefixes (as `list` returns them). */
export interface ReadRequest {
  readonly gets?: readonly string[]
  readonly lists?: readonly string[]
}

export interface ReadResult {
  /** In request order; undefined where the key does not exist. */
  readonly gets: (KeyValue | undefined)[]
  /** In request order, each in key order. */
  readonly lists: KeyValue[][]
}

/** One member of a replicated datastore as it sees itself (etcd: its maintenance status). */
export interface StoreMember {
  endpoint: string
  reachable: boolean
  /** The member id (etcd: hex, as etcdctl prints it). */
  id?: string
  /** This member is the leader. */
  leader?: boolean
  /** This member knows of a leader at all. */
  hasLeader?: boolean
  dbSizeBytes?: number
  raftIndex?: bigint
  /** The last raft entry this member has applied to its store (behind `raftIndex` while it catches up). */
  raftAppliedIndex?: bigint
  raftTerm?: bigint
  version?: string
  /** Why it did not answer. */
  error?: string
}

/**
 * One prefix of `Store.eachAtOnce`: its keys visited in order, or only counted (`count`, called once, is cheaper
 * than a keys-only walk: SQLite counts in its own loop, etcd answers a count-only range).
 */
export type Scan =
  | {
      readonly prefix: string
      readonly visit: (kv: KeyValue) => void
      readonly keysOnly?: boolean
      /**
       * The visit never reads `modRevision` (it is given 0n): the embedded store then leaves the column unread,
       * ~15 % of a whole-store read (`datastore export`). Others read it anyway.
       */
      readonly noRevision?: boolean
      /**
       * Prefixes under `prefix` that this scan leaves out: their keys are not visited and not read (SQLite seeks
       * past them, etcd reads only the ranges between them). ASCII only (see rangesOutside).
       */
      readonly except?: readonly string[]
    }
  | {readonly prefix: string; readonly count: (n: number) => void}

/** A key range `[from, to)`; `to` undefined: to the end of the prefix it lies in. */
export interface KeyRange {
  readonly from: string
  readonly to?: string
}

/** Not empty, and every character below U+007F (so raising the last one stays ASCII). */
function asciiPrefix(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) >= 0x7f) return false
  return s.length > 0
}

/**
 * The first string after every key that starts with `prefix`: its last character raised by one. Defined for the
 * ASCII prefixes rangesOutside accepts, where UTF-16 order (JavaScript's `<`) and byte order (SQLite's and
 * etcd's) agree on every comparison with it.
 */
function prefixEnd(prefix: string): string {
  if (!asciiPrefix(prefix)) throw new Error(`internal: ${JSON.stringify(prefix)} is not an ASCII prefix`)
  return prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1)
}

/**
 * The ranges under `prefix` that are outside every `except` prefix, in key order (Scan's `except`). An except
 * prefix outside `prefix` leaves nothing out; one inside another adds nothing.
 */
export function rangesOutside(prefix: string, except: readonly string[]): KeyRange[] {
  const cut = except
    .filter((e) => e.startsWith(prefix))
    .map((e) => ({from: e, to: prefixEnd(e)}))
    .sort((a, b) => (a.from < b.from ? -1 : a.from > b.from ? 1 : 0))
  const out: KeyRange[] = []
  let from = prefix
  for (const c of cut) {
    if (c.to <= from) continue
    if (c.from > from) out.push({from, to: c.from})
    from = c.to
  }
  // Past the prefix's own end (an except equal to it): nothing remains.
  if (from === prefix || from.startsWith(prefix)) out.push({from})
  return out
}

export interface Store {
  /** A short description for status output, e.g. `embedded (/var/lib/ipamctl/ipam.db)`. */
  readonly description: string
  get(key: string): Promise<KeyValue | undefined>
  /** Every key starting with `prefix`, in lexicographic (byte) order. */
  list(prefix: string): Promise<KeyValue[]>
  /** Keys only: cheap enough to walk thousands of blocks without reading their values. */
  listKeys(prefix: string): Promise<string[]>
  /**
   * Every read of `req` in one round trip, all at one revision (etcd: one read-only Txn). Optional, so a
   * wrapper need not implement it: call it through readMany(), which falls back to separate calls.
   */
  read?(req: ReadRequest): Promise<ReadResult>
  /**
   * Optional streaming form of `list`, for whole-store scans (`ipam check`) that must not hold 100,000 values at
   * once: visits each key in order; with `keysOnly` the value is '' and never read. Use `forEachKv`, which falls
   * back to `list` for stores (or wrappers) without it.
   */
  each?(prefix: string, visit: (kv: KeyValue) => void, opts?: {keysOnly?: boolean}): Promise<void>
  /**
   * Optional: several scans, one after the other, all of ONE snapshot of the store (as `read` is), each streamed
   * as `each` streams. `scans` is iterated lazily, so a later scan may depend on what the earlier ones visited
   * (`datastore export` first lists the keys outside its bulk subtrees, then reads the values in its own order).
   * Call it through `eachAtOnce`, which falls back to `each`/`list` per scan for stores without it (a count scan
   * is then a keys-only walk, and `except` a filter).
   */
  eachAtOnce?(scans: Iterable<Scan>): Promise<void>
  /**
   * Optional: `eachAtOnce` told the store revision of its snapshot before it reads anything (`plan` is called
   * with it and returns the scans); resolves with that revision. The embedded store bumps its revision in every
   * transaction that writes, so two of its connections whose snapshots have one revision read the same records:
   * `ipam check` relies on it to read part of the store on a worker thread (see checkIpam).
   */
  eachAtRevision?(plan: (revision: bigint) => Iterable<Scan>): Promise<bigint>
  /** The embedded store's file, which another connection (a worker thread's) can open; undefined for others. */
  readonly file?: string
  /** All ops apply atomically iff every condition holds. */
  txn(conditions: readonly Condition[], ops: readonly WriteOp[]): Promise<TxnResult>
  revision(): Promise<bigint>
  /** Each member's own status, unreachable ones included (etcd only; undefined for a single-file store). */
  members?(): Promise<StoreMember[]>
  /**
   * Optional: follow the keys under `prefixes` (see ChangeFeed), so a long-running reader (the agent's metrics)
   * reads what changed instead of everything. Use `changeFeed`, which falls back to full re-reads.
   */
  watch?(prefixes: readonly string[]): ChangeFeed
  close(): Promise<void>
}

/** What a ChangeFeed hands its reader. */
export interface ChangeHandler {
  /** Forget every key: what follows is the whole content of the prefixes (first call, or the feed was lost). */
  reset(): void
  /** `key` is now `kv`; undefined: it was deleted. */
  change(key: string, kv: KeyValue | undefined): void
}

/**
 * The keys under some prefixes, as a stream of changes. Each `next` brings the reader from what the previous
 * call gave it to the store as of a revision at or after the call began (so a write that completed before the
 * call is seen), and returns that revision. The first call, and any call after the feed lost track (etcd: its
 * watch was compacted away or its connection dropped), starts with `reset` and gives every key.
 */
export interface ChangeFeed {
  next(h: ChangeHandler): Promise<bigint>
  close(): Promise<void>
}

/** `store.watch(prefixes)`, or a feed that re-reads every prefix on each call for a store without it. */
export function changeFeed(store: Store, prefixes: readonly string[]): ChangeFeed {
  if (store.watch) return store.watch(prefixes)
  return {
    async next(h) {
      const rev = await store.revision()
      h.reset()
      for (const p of prefixes) await forEachKv(store, p, (kv) => h.change(kv.key, kv))
      return rev
    },
    async close() {},
  }
}

/** Guard that reflects what the caller read: absent if it read nothing, else the revision it saw. */
export function guardFor(key: string, seen: KeyValue | undefined): Condition {
  return seen ? {key, modRevision: seen.modRevision} : {key, absent: true}
}

/**
 * `store.read(req)`, or the same reads as separate parallel calls for a store without it. Either is safe for
 * the IPAM core: what it writes is guarded by the revisions it read, so reads need not share a snapshot.
 */
export async function readMany(store: Store, req: ReadRequest): Promise<ReadResult> {
  if (store.read) return store.read(req)
  const [gets, lists] = await Promise.all([
    Promise.all((req.gets ?? []).map((k) => store.get(k))),
    Promise.all((req.lists ?? []).map((p) => store.list(p))),
  ])
  return {gets, lists}
}

/** Visit every key starting with `prefix` in order, streaming when the store can (see `Store.each`). */
export async function forEachKv(
  store: Store,
  prefix: string,
  visit: (kv: KeyValue) => void,
  opts: {keysOnly?: boolean} = {},
): Promise<void> {
  if (store.each) return store.each(prefix, visit, opts)
  for (const kv of await store.list(prefix))
    visit(opts.keysOnly ? {key: kv.key, value: '', modRevision: kv.modRevision} : kv)
}

/**
 * Several scans of one snapshot, streamed (see `Store.eachAtOnce`). A store without it (the in-process memory
 * store, a wrapper that lacks it) is scanned prefix by prefix, which is one snapshot only when nothing else writes.
 */
export async function eachAtOnce(store: Store, scans: Iterable<Scan>): Promise<void> {
  if (store.eachAtOnce) return store.eachAtOnce(scans)
  for (const s of scans) {
    if ('count' in s) {
      let n = 0
      await forEachKv(store, s.prefix, () => n++, {keysOnly: true})
      s.count(n)
      continue
    }
    const except = s.except ?? []
    const visit = s.visit
    const kept = (kv: KeyValue) => {
      if (!except.some((e) => kv.key.startsWith(e))) visit(kv)
    }
    await forEachKv(store, s.prefix, except.length === 0 ? visit : kept, {keysOnly: s.keysOnly === true})
  }
}
