// Datastore-level operations: health and contents summary, and copying everything between two stores.
import {ConflictError, DatastoreUnavailableError} from '../errors.js'
import {checkpoint, type Committed, type Interrupt} from '../interrupt.js'
import type {DatastoreSettings} from './settings.js'
import type {Store} from './store.js'

export const CALICO_PREFIX = '/calico/'

export interface StoreStatus {
  type: DatastoreSettings['type']
  location: string
  sources: Record<string, string>
  configFile: string | null
  healthy: boolean
  error?: string
  revision?: bigint
  latencyMs?: number
  keys?: {pools: number; blocks: number; affinities: number; handles: number; nodes: number; total: number}
}

export async function storeStatus(store: Store | undefined, s: DatastoreSettings, openError?: unknown): Promise<StoreStatus> {
  const base: StoreStatus = {
    type: s.type,
    location: s.type === 'etcdv3' ? s.etcdEndpoints.join(',') : s.path,
    sources: s.sources,
    configFile: s.configFile ?? null,
    healthy: false,
  }
  if (!store) return {...base, error: (openError as Error | undefined)?.message ?? 'not opened'}
  try {
    const t = process.hrtime.bigint()
    const revision = await store.revision()
    const latencyMs = Number(process.hrtime.bigint() - t) / 1e6
    const all = await store.listKeys(CALICO_PREFIX)
    const count = (re: RegExp) => all.filter((k) => re.test(k)).length
    return {
      ...base,
      healthy: true,
      revision,
      latencyMs: Math.round(latencyMs * 100) / 100,
      keys: {
        pools: count(/^\/calico\/resources\/v3\/projectcalico\.org\/ippools\//),
        blocks: count(/^\/calico\/ipam\/v2\/assignment\//),
        affinities: count(/^\/calico\/ipam\/v2\/host\/[^/]+\/ipv.\/block\//),
        handles: count(/^\/calico\/ipam\/v2\/handle\//),
        nodes: count(/^\/calico\/resources\/v3\/projectcalico\.org\/nodes\//),
        total: all.length,
      },
    }
  } catch (err) {
    if (err instanceof DatastoreUnavailableError) return {...base, error: err.message}
    throw err
  }
}

export interface MigrateResult {
  copied: number
  removed: number
  /** The source was written to while copying: the target may be behind; stop writers and re-run. */
  sourceChanged: boolean
}

/** etcd refuses transactions with more than 128 operations by default (--max-txn-ops). */
const BATCH = 100

/**
 * Copy every key under /calico/ from `from` to `to`, values and key names byte for byte. A target that
 * already holds keys is refused unless `force`, in which case it is made an exact mirror of the source.
 * `interrupt`: stop between two batches on request; the target then holds part of the source (deletions
 * first, then copies), and `rerun` (with --force) makes it a whole copy again.
 */
export async function migrate(from: Store, to: Store, opts: {force: boolean; interrupt?: Interrupt; rerun?: string}): Promise<MigrateResult> {
  const startRev = await from.revision()
  const source = await from.list(CALICO_PREFIX)
  const existing = await to.listKeys(CALICO_PREFIX)
  if (existing.length > 0 && !opts.force) {
    throw new ConflictError(`the target ${to.description} already holds ${existing.length} keys under ${CALICO_PREFIX}; refusing to overwrite them (use --force to replace its contents with the source's)`)
  }
  const keep = new Set(source.map((kv) => kv.key))
  const stale = existing.filter((k) => !keep.has(k))
  let removed = 0
  let copied = 0
  const progress = (): Committed => ({
    done: removed + copied === 0 ? '' : `the target ${to.description} is a partial copy: ${removed} of ${stale.length} stale keys removed, ${copied} of ${source.length} keys copied`,
    finish: opts.rerun ?? 'run the same datastore migrate command again with --force',
  })
  for (let i = 0; i < stale.length; i += BATCH) {
    await checkpoint({interrupt: opts.interrupt}, progress())
    await to.txn([], stale.slice(i, i + BATCH).map((k) => ({delete: k})))
    removed = Math.min(stale.length, i + BATCH)
  }
  for (let i = 0; i < source.length; i += BATCH) {
    await checkpoint({interrupt: opts.interrupt}, progress())
    await to.txn([], source.slice(i, i + BATCH).map((kv) => ({put: kv.key, value: kv.value})))
    copied = Math.min(source.length, i + BATCH)
  }
  return {copied: source.length, removed: stale.length, sourceChanged: (await from.revision()) !== startRev}
}
