// An embedded store that does not exist yet, opened by a command that adds state. Until the first write it
// behaves as an empty store (revision 0, no keys) and creates nothing; the first transaction that writes
// creates the file (SqliteStore.open in 'create' mode: private, race-safe). So a command that fails before
// writing (bad input, nothing to do) leaves no store behind, and "created new datastore" is said only by the
// process whose write created it. If another process creates the file meanwhile, it is opened and used.
import {embeddedDescription, SqliteStore, storeFileExists} from './sqlite.js'
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

export class CreateOnWriteStore implements Store {
  readonly description: string
  private inner?: SqliteStore

  constructor(
    private readonly storeFile: string,
    private readonly opts: {busyTimeoutMs?: number; onCreated?: (file: string) => void},
  ) {
    this.description = embeddedDescription(storeFile)
  }

  /** The real store once the file exists (made by us or by anyone else), else undefined. */
  private existing(): SqliteStore | undefined {
    if (!this.inner && storeFileExists(this.storeFile))
      this.inner = SqliteStore.open(this.storeFile, {...this.opts, mode: 'update'})
    return this.inner
  }

  async get(key: string): Promise<KeyValue | undefined> {
    return this.existing()?.get(key)
  }

  async list(prefix: string): Promise<KeyValue[]> {
    return this.existing()?.list(prefix) ?? []
  }

  async listKeys(prefix: string): Promise<string[]> {
    return this.existing()?.listKeys(prefix) ?? []
  }

  async read(req: ReadRequest): Promise<ReadResult> {
    const s = this.existing()
    if (s) return s.read(req)
    return {gets: (req.gets ?? []).map(() => undefined), lists: (req.lists ?? []).map(() => [])}
  }

  async each(prefix: string, visit: (kv: KeyValue) => void, opts?: {keysOnly?: boolean}): Promise<void> {
    await this.existing()?.each(prefix, visit, opts)
  }

  async eachAtOnce(scans: Iterable<Scan>): Promise<void> {
    await this.existing()?.eachAtOnce(scans)
  }

  /** Empty (a reset with no keys) until the file exists, then the file's own feed, which starts with a reset. */
  watch(prefixes: readonly string[]): ChangeFeed {
    let inner: ChangeFeed | undefined
    return {
      next: async (h) => {
        const s = this.existing()
        if (!s) {
          h.reset()
          return 0n
        }
        inner ??= s.watch(prefixes)
        return inner.next(h)
      },
      close: async () => inner?.close(),
    }
  }

  async revision(): Promise<bigint> {
    return this.existing()?.revision() ?? 0n
  }

  async txn(conditions: readonly Condition[], ops: readonly WriteOp[]): Promise<TxnResult> {
    if (ops.length > 0) this.inner ??= SqliteStore.open(this.storeFile, {...this.opts, mode: 'create'})
    const s = this.existing()
    if (s) return s.txn(conditions, ops)
    // Guards against the empty store: no key exists and nothing was ever written.
    const succeeded = conditions.every((c) => 'prefix' in c || 'absent' in c)
    return {succeeded, revision: 0n}
  }

  async close(): Promise<void> {
    await this.inner?.close()
  }
}
