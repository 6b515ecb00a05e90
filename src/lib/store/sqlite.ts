// Embedded datastore: one SQLite file in WAL mode, shared safely by any number of processes.
// Every write is one IMMEDIATE transaction that checks its guards and bumps a single global revision,
// which gives the same compare-and-swap semantics as etcd's Txn.
import fs from 'node:fs'
import path from 'node:path'
import Database from 'better-sqlite3'
import {DatastoreUnavailableError} from '../errors.js'
import {sqliteNativeBinding} from './sqlite-addon.js'
import type {Condition, KeyValue, ReadRequest, ReadResult, Store, TxnResult, WriteOp} from './store.js'

export const DEFAULT_BUSY_TIMEOUT_MS = 10_000

type Row = {key: string; value: string; mod_revision: bigint}

export class SqliteStore implements Store {
  readonly description: string
  private readonly db: Database.Database

  private readonly stmt: ReturnType<typeof prepareStatements>
  // IMMEDIATE takes the write lock up front, so two writers never both read and then deadlock on upgrade.
  private readonly txnImmediate: (conditions: readonly Condition[], ops: readonly WriteOp[]) => TxnResult
  // A deferred (read) transaction: WAL gives it one snapshot without blocking or waiting for writers.
  private readonly readSnapshot: (req: ReadRequest) => ReadResult

  private constructor(readonly file: string, db: Database.Database) {
    this.db = db
    this.description = `embedded (${file})`
    const st = (this.stmt = prepareStatements(db))
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
  }

  static open(file: string, opts: {busyTimeoutMs?: number} = {}): SqliteStore {
    const busy = opts.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS
    let db: Database.Database
    try {
      ensureDir(path.dirname(file))
      if (!fs.existsSync(file)) createDatabase(file)
      db = new Database(file, {timeout: busy, fileMustExist: true, nativeBinding: sqliteNativeBinding()})
      db.pragma(`busy_timeout = ${busy}`)
      db.pragma('synchronous = FULL')
      // WAL is a property of the file, set at creation; only repair it if someone changed it since.
      if (db.pragma('journal_mode', {simple: true}) !== 'wal') db.pragma('journal_mode = WAL')
      // The schema statements are writes: run them only on a file that lacks the tables, so that opening (and
      // every read-only command) neither waits for another process's write lock nor fails on a read-only file.
      if (db.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('kv', 'meta')").pluck().get() !== 2) db.exec(SCHEMA)
    } catch (err) {
      if (((err as {code?: string}).code ?? '').startsWith('SQLITE_BUSY')) throw busyError(file, err)
      throw new DatastoreUnavailableError(`cannot open embedded datastore ${file}: ${describe(err)}${storageHint(file)}`, {cause: err})
    }
    return new SqliteStore(file, db)
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
    const stmt = opts.keysOnly ? this.stmt.scanKeyRevisions : this.stmt.scan
    // One statement, so one read snapshot, as list() has; rows are visited as SQLite produces them.
    this.run(() => {
      for (const r of rowsUnder<Row>(stmt, prefix)) visit({key: r.key, value: r.value ?? '', modRevision: r.mod_revision})
    })
  }

  private scan(columns: 'key' | 'all', prefix: string): unknown[] {
    return [...rowsUnder(columns === 'key' ? this.stmt.scanKeys : this.stmt.scan, prefix)]
  }

  async txn(conditions: readonly Condition[], ops: readonly WriteOp[]): Promise<TxnResult> {
    return this.run(() => this.txnImmediate(conditions, ops))
  }

  async revision(): Promise<bigint> {
    return this.run(() => this.stmt.current.get() as bigint)
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close()
  }
}

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value TEXT NOT NULL, mod_revision INTEGER NOT NULL) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
  INSERT OR IGNORE INTO meta (name, value) VALUES ('revision', 0);
`

/**
 * Build a new store file privately and publish it with link(2), which fails if another process got there
 * first. Several processes opening a brand-new file at once would otherwise all race to switch it to WAL
 * (which needs an exclusive lock) and stall each other for seconds in SQLite's busy handler.
 */
function createDatabase(file: string): void {
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
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
    }
  } finally {
    for (const f of [tmp, `${tmp}-wal`, `${tmp}-shm`]) fs.rmSync(f, {force: true})
  }
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
  for (const m of missing) fs.mkdirSync(m, {mode: 0o700})
}

function prepareStatements(db: Database.Database) {
  return {
    get: db.prepare('SELECT key, value, mod_revision FROM kv WHERE key = ?').safeIntegers(true),
    scan: db.prepare('SELECT key, value, mod_revision FROM kv WHERE key >= ? ORDER BY key').safeIntegers(true),
    scanKeys: db.prepare('SELECT key FROM kv WHERE key >= ? ORDER BY key').safeIntegers(true),
    scanKeyRevisions: db.prepare('SELECT key, mod_revision FROM kv WHERE key >= ? ORDER BY key').safeIntegers(true),
    rev: db.prepare('SELECT mod_revision FROM kv WHERE key = ?').safeIntegers(true).pluck(),
    current: db.prepare("SELECT value FROM meta WHERE name = 'revision'").safeIntegers(true).pluck(),
    put: db.prepare('INSERT INTO kv (key, value, mod_revision) VALUES (?, ?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value, mod_revision = excluded.mod_revision'),
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

/** Whether a key under `prefix` has a mod-revision above `rev`. */
function writtenAfter(st: ReturnType<typeof prepareStatements>, prefix: string, rev: bigint): boolean {
  for (const r of rowsUnder<{key: string; mod_revision: bigint}>(st.scanKeyRevisions, prefix)) if (r.mod_revision > rev) return true
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
  return new DatastoreUnavailableError(`embedded datastore ${file} is busy: another process held its lock too long; try again`, {cause})
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}
