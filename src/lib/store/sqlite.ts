// Embedded datastore: one SQLite file in WAL mode, shared safely by any number of processes.
// Every write is one IMMEDIATE transaction that checks its guards and bumps a single global revision,
// which gives the same compare-and-swap semantics as etcd's Txn.
import fs from 'node:fs'
import path from 'node:path'
import Database from 'better-sqlite3'
import {DatastoreUnavailableError, IpamError, StoreMissingError} from '../errors.js'
import {sqliteNativeBinding} from './sqlite-addon.js'
import type {
  ChangeFeed,
  ChangeHandler,
  Condition,
  KeyValue,
  OpenMode,
  ReadRequest,
  ReadResult,
  Scan,
  Store,
  TxnResult,
  WriteOp,
} from './store.js'
import {rangesOutside} from './store.js'

export const DEFAULT_BUSY_TIMEOUT_MS = 10_000

type Row = {key: string; value: string; mod_revision: bigint}

/** How an embedded store is named in messages, whether or not it exists yet. */
export function embeddedDescription(file: string): string {
  return `embedded (${file})`
}

export class SqliteStore implements Store {
  readonly description: string
  private readonly db: Database.Database

  private readonly stmt: ReturnType<typeof prepareStatements>
  // IMMEDIATE takes the write lock up front, so two writers never both read and then deadlock on upgrade.
  private readonly txnImmediate: (conditions: readonly Condition[], ops: readonly WriteOp[]) => TxnResult
  // A deferred (read) transaction: WAL gives it one snapshot without blocking or waiting for writers.
  private readonly readSnapshot: (req: ReadRequest) => ReadResult
  private readonly scanSnapshot: (scans: Iterable<Scan>) => void
  private readonly scanAtRevision: (plan: (revision: bigint) => Iterable<Scan>) => bigint

  private constructor(
    readonly file: string,
    db: Database.Database,
    /** Opened by a command that only reads: a write here is a bug, refused before it reaches SQLite. */
    private readonly readOnly: boolean,
  ) {
    this.db = db
    this.description = embeddedDescription(file)
    const st = prepareStatements(db)
    this.stmt = st
    const body = db.transaction((conditions: readonly Condition[], ops: readonly WriteOp[]): TxnResult => {
      const now = st.current.get() as bigint
      for (const c of conditions) {
        let ok: boolean
        if ('prefix' in c) ok = !writtenAfter(st, c.prefix, c.notAfter)
        else {
          const seen = st.rev.get(c.key) as bigint | undefined
          ok = 'absent' in c ? seen === undefined : seen === c.modRevision
        }
        if (!ok) return {succeeded: false, revision: now}
      }
      if (ops.length === 0) return {succeeded: true, revision: now}
      const next = now + 1n
      for (const op of ops) {
        if ('put' in op) st.put.run(op.put, op.value, next)
        else st.del.run(op.delete)
      }
      st.bump.run(next)
      return {succeeded: true, revision: next}
    })
    this.txnImmediate = (conditions, ops) => body.immediate(conditions, ops)
    const reads = db.transaction(
      (req: ReadRequest): ReadResult => ({
        gets: (req.gets ?? []).map((key) => {
          const row = st.get.get(key) as Row | undefined
          return row && toKv(row)
        }),
        lists: (req.lists ?? []).map((prefix) => this.scan('all', prefix).map((r) => toKv(r as Row))),
      }),
    )
    this.readSnapshot = (req) => reads.deferred(req)
    // One deferred transaction: SQLite's read snapshot (WAL) holds from its first read to its end.
    const scans = db.transaction((all: Iterable<Scan>): void => runScans(st, all))
    this.scanSnapshot = (all) => scans.deferred(all)
    // The revision is the transaction's first read, so it is the revision of the snapshot the scans read.
    const atRevision = db.transaction((plan: (revision: bigint) => Iterable<Scan>): bigint => {
      const revision = st.current.get() as bigint
      runScans(st, plan(revision))
      return revision
    })
    this.scanAtRevision = (plan) => atRevision.deferred(plan)
  }

  /**
   * Open the store file. `mode` is the caller's declared intent, never guessed: 'create' makes a missing file
   * (and its directories, 0700/0600) and calls `onCreated` when this process made it; 'update' and 'read'
   * refuse a missing file with StoreMissingError and create nothing. 'read' also runs no write at all and
   * reads stores that SQLite cannot open read-write (read-only mount or permissions): see openForRead.
   */
  static open(
    file: string,
    opts: {busyTimeoutMs?: number; mode?: OpenMode; onCreated?: (file: string) => void} = {},
  ): SqliteStore {
    const busy = opts.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS
    const mode = opts.mode ?? 'create'
    let db: Database.Database
    try {
      if (mode === 'create') {
        ensureDir(path.dirname(file))
        if (!fs.existsSync(file) && createDatabase(file)) opts.onCreated?.(file)
      } else if (!storeFileExists(file)) {
        throw new StoreMissingError(
          `embedded datastore ${file} does not exist; nothing was created (check the path; only commands that write create a store)`,
        )
      }
      if (mode === 'read') db = openForRead(file, busy)
      else {
        db = new Database(file, {timeout: busy, fileMustExist: true, nativeBinding: sqliteNativeBinding()})
        db.pragma(`busy_timeout = ${busy}`)
        db.pragma('synchronous = FULL')
        // WAL is a property of the file, set at creation; only repair it if someone changed it since.
        if (db.pragma('journal_mode', {simple: true}) !== 'wal') db.pragma('journal_mode = WAL')
        // The schema statements are writes: run them only on a file that lacks the tables, so that opening
        // neither waits for another process's write lock nor fails on a read-only file.
        if (!hasSchema(db)) db.exec(SCHEMA)
      }
    } catch (err) {
      if (err instanceof IpamError) throw err
      if (((err as {code?: string}).code ?? '').startsWith('SQLITE_BUSY')) throw busyError(file, err)
      throw new DatastoreUnavailableError(
        `cannot open embedded datastore ${file}: ${describe(err)}${storageHint(file)}`,
        {cause: err},
      )
    }
    return new SqliteStore(file, db, mode === 'read')
  }

  private run<T>(fn: () => T): T {
    try {
      return fn()
    } catch (err) {
      const code = (err as {code?: string}).code ?? ''
      if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) throw busyError(this.file, err)
      if (code.startsWith('SQLITE_')) {
        throw new DatastoreUnavailableError(`embedded datastore ${this.file} failed: ${describe(err)}`, {cause: err})
      }
      throw err
    }
  }

  async get(key: string): Promise<KeyValue | undefined> {
    return this.run(() => {
      const row = this.stmt.get.get(key) as Row | undefined
      return row && toKv(row)
    })
  }

  async list(prefix: string): Promise<KeyValue[]> {
    return this.run(() => this.scan('all', prefix).map((r) => toKv(r as Row)))
  }

  async listKeys(prefix: string): Promise<string[]> {
    return this.run(() => this.scan('key', prefix).map((r) => (r as {key: string}).key))
  }

  async read(req: ReadRequest): Promise<ReadResult> {
    return this.run(() => this.readSnapshot(req))
  }

  async each(prefix: string, visit: (kv: KeyValue) => void, opts: {keysOnly?: boolean} = {}): Promise<void> {
    // One read transaction, so one snapshot (as list() has) across the pages visitRows reads.
    this.run(() => this.scanSnapshot([{prefix, visit, keysOnly: opts.keysOnly}]))
  }

  async eachAtOnce(scans: Iterable<Scan>): Promise<void> {
    this.run(() => this.scanSnapshot(scans))
  }

  async eachAtRevision(plan: (revision: bigint) => Iterable<Scan>): Promise<bigint> {
    return this.run(() => this.scanAtRevision(plan))
  }

  private scan(columns: 'key' | 'all', prefix: string): unknown[] {
    return [...rowsUnder(columns === 'key' ? this.stmt.scanKeys : this.stmt.scan, prefix)]
  }

  async txn(conditions: readonly Condition[], ops: readonly WriteOp[]): Promise<TxnResult> {
    if (this.readOnly && ops.length > 0)
      throw new Error(`internal: a write to ${this.file}, which was opened for reading only`)
    return this.run(() => this.txnImmediate(conditions, ops))
  }

  async revision(): Promise<bigint> {
    return this.run(() => this.stmt.current.get() as bigint)
  }

  /**
   * Deleted rows leave no trace here (there is no history table), so the feed keeps each key's mod-revision. A
   * call whose store revision is unchanged reads nothing. Otherwise, per prefix, SQLite finds the keys written
   * since the last call and counts the keys, both from an index on (key, mod_revision) that holds no values
   * (made by the first feed on a store opened for writing, see ensureRevisionIndex); the values of those keys are
   * read, and only when the count says keys were deleted are the keys listed to find which. Without the index (a
   * store opened for reading) the rows are walked instead, which reads past every value. One read transaction,
   * so one snapshot.
   */
  watch(prefixes: readonly string[]): ChangeFeed {
    const idx = this.ensureRevisionIndex() ? `INDEXED BY ${REV_INDEX}` : ''
    const st = this.stmt
    const movedSince = this.db
      .prepare(`SELECT key FROM kv ${idx} WHERE key >= ? AND key < ? AND mod_revision > ?`)
      .safeIntegers(true)
      .pluck()
    const count = this.db.prepare(`SELECT count(*) FROM kv ${idx} WHERE key >= ? AND key < ?`).pluck()
    const keysUnder = this.db.prepare(`SELECT key FROM kv ${idx} WHERE key >= ? AND key < ?`).pluck()
    // The keys under each prefix as of `at`.
    const known = prefixes.map(() => new Set<string>())
    let at: bigint | undefined
    const step = this.db.transaction((h: ChangeHandler): bigint => {
      const now = st.current.get() as bigint
      if (at !== undefined && now === at) return now
      // A revision that went back: the file was replaced (restored), start over.
      if (at === undefined || now < at) {
        h.reset()
        for (const [i, p] of prefixes.entries()) {
          known[i]!.clear()
          for (const r of rowsUnder<Row>(st.scan, p)) {
            known[i]!.add(r.key)
            h.change(r.key, toKv(r))
          }
        }
        at = now
        return now
      }
      for (const [i, p] of prefixes.entries()) {
        const mine = known[i]!
        const end = prefixEnd(p)
        for (const key of movedSince.all(p, end, at) as string[]) {
          mine.add(key)
          h.change(key, toKv(st.get.get(key) as Row))
        }
        // As many keys as known (new ones included): none was deleted.
        if ((count.get(p, end) as number) === mine.size) continue
        const present = new Set(keysUnder.all(p, end) as string[])
        for (const key of [...mine])
          if (!present.has(key)) {
            mine.delete(key)
            h.change(key, undefined)
          }
      }
      at = now
      return now
    })
    return {
      next: async (h) => this.run(() => step.deferred(h)),
      close: async () => {},
    }
  }

  /**
   * The index on (key, mod_revision) that lets a change feed find what was written since a revision, and count
   * keys, without reading values: created once, by the first feed on a store opened for writing (the agent). It
   * costs one more index entry per key written. False where it is missing and may not be made (a store opened
   * for reading, or the write lock held too long by others): the feed then walks the rows.
   */
  private ensureRevisionIndex(): boolean {
    const has = () =>
      this.db.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = ?").pluck().get(REV_INDEX) ===
      1
    if (has()) return true
    if (this.readOnly) return false
    try {
      this.db.exec(`CREATE INDEX IF NOT EXISTS ${REV_INDEX} ON kv (key, mod_revision)`)
      return true
    } catch {
      return false
    }
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close()
  }
}

const REV_INDEX = 'kv_key_revision'

/** A string above every key that starts with `prefix` (key paths are ASCII; '' is every key). */
function prefixEnd(prefix: string): string {
  if (prefix === '' || prefix.charCodeAt(prefix.length - 1) >= 0x7f) return `${prefix}\u{10ffff}`
  return prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1)
}

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value TEXT NOT NULL, mod_revision INTEGER NOT NULL) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
  INSERT OR IGNORE INTO meta (name, value) VALUES ('revision', 0);
`

/**
 * Build a new store file privately and publish it with link(2), which fails if another process got there
 * first (then it returns false: another process created the store). Several processes opening a brand-new file
 * at once would otherwise all race to switch it to WAL (which needs an exclusive lock) and stall each other for
 * seconds in SQLite's busy handler.
 */
function createDatabase(file: string): boolean {
  const tmp = `${file}.new-${process.pid}-${Date.now()}`
  // Our own open() so the mode is 0600 whatever the umask; SQLite gives -wal and -shm files the same mode.
  fs.closeSync(fs.openSync(tmp, 'wx', 0o600))
  try {
    const db = new Database(tmp, {nativeBinding: sqliteNativeBinding()})
    db.pragma('journal_mode = WAL')
    db.exec(SCHEMA)
    db.close()
    try {
      fs.linkSync(tmp, file)
      return true
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
      return false
    }
  } finally {
    for (const f of [tmp, `${tmp}-wal`, `${tmp}-shm`]) fs.rmSync(f, {force: true})
  }
}

function hasSchema(db: Database.Database): boolean {
  return (
    db.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('kv', 'meta')").pluck().get() === 2
  )
}

/**
 * Open an existing store for reading without writing to it, wherever SQLite can read it:
 * 1. An ordinary connection: it reads committed transactions from FILE-wal through the wal-index FILE-shm
 *    (which any WAL reader creates if missing). No statement that writes is run on it.
 * 2. If FILE-shm cannot be created or written (read-only mount, or a directory or file this user may not
 *    write), a read-only connection: when FILE-wal and FILE-shm both exist, SQLite builds a private wal-index
 *    from FILE-wal, so nothing committed is missed.
 * 3. Otherwise, with no FILE-wal (or an empty one) every committed transaction is in FILE itself: it is read
 *    into memory and opened from there. The copy is used only if FILE did not change and no FILE-wal appeared
 *    while it was read, so a writer that could still reach the file cannot give us a torn copy.
 * 4. A FILE-wal holding data without a FILE-shm, where FILE-shm cannot be made: refused with one line, because
 *    reading FILE alone would miss the transactions in FILE-wal.
 */
function openForRead(file: string, busy: number): Database.Database {
  for (const readonly of [false, true]) {
    let db: Database.Database | undefined
    try {
      db = new Database(file, {readonly, timeout: busy, fileMustExist: true, nativeBinding: sqliteNativeBinding()})
      db.pragma(`busy_timeout = ${busy}`)
      if (!hasSchema(db)) throw notAStore(file)
      return db
    } catch (err) {
      db?.close()
      const code = (err as {code?: string}).code ?? ''
      if (!code.startsWith('SQLITE_CANTOPEN') && !code.startsWith('SQLITE_READONLY')) throw err
    }
  }
  return openSnapshot(file)
}

function openSnapshot(file: string): Database.Database {
  const wal = `${file}-wal`
  for (let attempt = 0; attempt < 3; attempt++) {
    if (sizeOf(wal) > 0) {
      throw new DatastoreUnavailableError(
        `cannot read embedded datastore ${file}: ${wal} holds committed transactions but ${file}-shm is missing and cannot be created${storageHint(file)}; ` +
          `copy ${file}-shm along with it, or open the store once where it is writable`,
      )
    }
    const before = fs.statSync(file)
    const buf = fs.readFileSync(file)
    const after = fs.statSync(file)
    const unchanged =
      before.ino === after.ino &&
      before.size === after.size &&
      before.mtimeMs === after.mtimeMs &&
      before.ctimeMs === after.ctimeMs
    if (!unchanged || buf.length !== after.size || sizeOf(wal) > 0) continue
    // Bytes 18 and 19 of the header say "WAL" (2); SQLite will not open a WAL database from memory. With no
    // WAL, every committed page is in `buf`, so the copy is marked as an ordinary (rollback-journal) database.
    if (buf.length >= 100) buf[18] = buf[19] = 1
    const db = new Database(buf, {readonly: true, nativeBinding: sqliteNativeBinding()})
    if (!hasSchema(db)) {
      db.close()
      throw notAStore(file)
    }
    return db
  }
  throw new DatastoreUnavailableError(`embedded datastore ${file} kept changing while it was being read; try again`)
}

/**
 * Whether the store file exists. Only ENOENT means no: a path below a regular file or in a directory we may
 * not search is an error (exit 5), not a missing store.
 */
export function storeFileExists(file: string): boolean {
  try {
    fs.statSync(file)
    return true
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false
    throw new DatastoreUnavailableError(`cannot open embedded datastore ${file}: ${describe(err)}`, {cause: err})
  }
}

/** Size of a file, 0 when it does not exist. */
function sizeOf(file: string): number {
  try {
    return fs.statSync(file).size
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0
    throw err
  }
}

function notAStore(file: string): DatastoreUnavailableError {
  return new DatastoreUnavailableError(`${file} is not an ipamctl datastore (it has no kv and meta tables)`)
}

/**
 * mkdir -p with mode 0700 for the directories we create. Node 20's recursive mkdirSync spins forever on
 * some paths (e.g. under /proc), so walk the missing ancestors ourselves.
 */
function ensureDir(dir: string): void {
  const missing: string[] = []
  let d = path.resolve(dir)
  while (!fs.existsSync(d)) {
    missing.unshift(d)
    const parent = path.dirname(d)
    if (parent === d) break
    d = parent
  }
  for (const m of missing) {
    try {
      fs.mkdirSync(m, {mode: 0o700})
    } catch (err) {
      // Another process creating the same store made it first (four writers racing on a missing path): a
      // directory there is what we wanted; anything else is still an error.
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || !fs.lstatSync(m).isDirectory()) throw err
    }
  }
}

function prepareStatements(db: Database.Database) {
  return {
    get: db.prepare('SELECT key, value, mod_revision FROM kv WHERE key = ?').safeIntegers(true),
    scan: db.prepare('SELECT key, value, mod_revision FROM kv WHERE key >= ? ORDER BY key').safeIntegers(true),
    scanKeys: db.prepare('SELECT key FROM kv WHERE key >= ? ORDER BY key').safeIntegers(true),
    scanKeyRevisions: db.prepare('SELECT key, mod_revision FROM kv WHERE key >= ? ORDER BY key').safeIntegers(true),
    countRange: db.prepare('SELECT count(*) FROM kv WHERE key >= ? AND key < ?').pluck(),
    /** Pages of rows as arrays (visitRows): the first page of a range, then the pages after a key. */
    firstRowsPage: pageStatement(db, 'key, value, mod_revision', '>='),
    nextRowsPage: pageStatement(db, 'key, value, mod_revision', '>'),
    firstKeysPage: pageStatement(db, 'key, mod_revision', '>='),
    nextKeysPage: pageStatement(db, 'key, mod_revision', '>'),
    firstValuesPage: pageStatement(db, 'key, value', '>='),
    nextValuesPage: pageStatement(db, 'key, value', '>'),
    rev: db.prepare('SELECT mod_revision FROM kv WHERE key = ?').safeIntegers(true).pluck(),
    current: db.prepare("SELECT value FROM meta WHERE name = 'revision'").safeIntegers(true).pluck(),
    put: db.prepare(
      'INSERT INTO kv (key, value, mod_revision) VALUES (?, ?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value, mod_revision = excluded.mod_revision',
    ),
    del: db.prepare('DELETE FROM kv WHERE key = ?'),
    bump: db.prepare("UPDATE meta SET value = ? WHERE name = 'revision'"),
  }
}

/**
 * The rows of a scan statement (`key >= ? ORDER BY key`) whose key has `prefix`, stopping at the first that has
 * not. SQLite compares TEXT bytewise (UTF-8), as etcd does, so no upper bound is computed for non-ASCII prefixes.
 */
function* rowsUnder<R extends {key: string}>(stmt: Database.Statement, prefix: string): Generator<R> {
  for (const row of stmt.iterate(prefix) as Iterable<R>) {
    if (!row.key.startsWith(prefix)) return
    yield row
  }
}

/**
 * Rows per page of visitRows. Whole pages come over in one call (`all`): stepping a statement row by row costs a
 * call into SQLite per row, which on a whole-store scan (`ipam check`: 1,100,000 rows) cost more than a third of
 * the read. A page of 256 records is a few hundred KB at most; larger pages were no faster.
 */
export const VISIT_PAGE = 256

function pageStatement(db: Database.Database, columns: string, from: '>=' | '>'): Database.Statement {
  return db
    .prepare(`SELECT ${columns} FROM kv WHERE key ${from} ? AND key < ? ORDER BY key LIMIT ${VISIT_PAGE}`)
    .safeIntegers(true)
    .raw(true)
}

/**
 * Visit the rows under `prefix` (`each`, `eachAtOnce`), page by page, as arrays through a plain loop (no row
 * object, no generator step). The caller holds a read transaction, so that the pages are one snapshot.
 */
function visitRows(
  st: ReturnType<typeof prepareStatements>,
  prefix: string,
  keysOnly: boolean,
  visit: (kv: KeyValue) => void,
  from = prefix,
  to?: string,
  noRevision = false,
): void {
  // `to` (rangesOutside) is the start of a range left out, inside the prefix, so it ends the visit before the
  // prefix's own end would.
  const end = to ?? prefixEnd(prefix)
  const values = !keysOnly && noRevision
  const [first, next] = keysOnly
    ? [st.firstKeysPage, st.nextKeysPage]
    : values
      ? [st.firstValuesPage, st.nextValuesPage]
      : [st.firstRowsPage, st.nextRowsPage]
  let page = first.all(from, end) as (unknown[] | undefined)[]
  for (;;) {
    const n = page.length
    const last = page[n - 1]?.[0]
    // Each row is let go once visited: a young-generation collection during the page then copies only the rows
    // still to come, not the whole page (256 blocks of ~9 KB each: the copying was a fifth of `ipam show`).
    for (let i = 0; i < n; i++) {
      const r = page[i]!
      page[i] = undefined
      if (keysOnly) visit({key: r[0] as string, value: '', modRevision: r[1] as bigint})
      else visit({key: r[0] as string, value: r[1] as string, modRevision: values ? 0n : (r[2] as bigint)})
    }
    if (n < VISIT_PAGE) return
    page = next.all(last, end) as (unknown[] | undefined)[]
  }
}

/** The scans of `eachAtOnce`, one after the other, in the caller's read transaction. */
function runScans(st: ReturnType<typeof prepareStatements>, all: Iterable<Scan>): void {
  for (const s of all) {
    if ('count' in s) s.count(countUnder(st, s.prefix))
    else
      for (const r of rangesOutside(s.prefix, s.except ?? []))
        visitRows(st, s.prefix, s.keysOnly === true, s.visit, r.from, r.to, s.noRevision === true)
  }
}

/** The number of keys under `prefix`, counted by SQLite itself over the key range: no row reaches JavaScript. */
function countUnder(st: ReturnType<typeof prepareStatements>, prefix: string): number {
  return Number(st.countRange.get(prefix, prefixEnd(prefix)))
}

/** Whether a key under `prefix` has a mod-revision above `rev`. */
function writtenAfter(st: ReturnType<typeof prepareStatements>, prefix: string, rev: bigint): boolean {
  for (const r of rowsUnder<{key: string; mod_revision: bigint}>(st.scanKeyRevisions, prefix))
    if (r.mod_revision > rev) return true
  return false
}

function toKv(r: Row): KeyValue {
  return {key: r.key, value: r.value, modRevision: BigInt(r.mod_revision)}
}

/**
 * SQLite reports a full or read-only file system as "disk I/O error" or "unable to open database file" (WAL mode
 * must create FILE-wal and FILE-shm beside the store, even to read): say which it is.
 */
function storageHint(file: string): string {
  const dir = path.dirname(file)
  try {
    if (fs.statfsSync(dir).bavail === 0) return ` (no space left on the file system of ${dir})`
    fs.accessSync(dir, fs.constants.W_OK)
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'EROFS') return ` (${dir} is on a read-only file system)`
    if (code === 'EACCES' || code === 'EPERM') return ` (${dir} is not writable)`
  }
  return ''
}

function busyError(file: string, cause: unknown): DatastoreUnavailableError {
  return new DatastoreUnavailableError(
    `embedded datastore ${file} is busy: another process held its lock too long; try again`,
    {cause},
  )
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}
