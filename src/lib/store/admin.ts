// Datastore-level operations: health and contents summary, and copying everything between two stores.
import {ConflictError, DatastoreUnavailableError, NotFoundError, StoreMissingError} from '../errors.js'
import {type Committed, checkpoint, type Interrupt} from '../interrupt.js'
import type {DatastoreSettings} from './settings.js'
import type {KeyValue, Store, StoreMember, WriteOp} from './store.js'

export const CALICO_PREFIX = '/calico/'

export interface StoreStatus {
  type: DatastoreSettings['type']
  location: string
  sources: Record<string, string>
  configFile: string | null
  healthy: boolean
  /** The embedded store file does not exist (and was not created). */
  missing?: boolean
  error?: string
  revision?: bigint
  latencyMs?: number
  keys?: {pools: number; blocks: number; affinities: number; handles: number; nodes: number; total: number}
  /** etcd: every endpoint's member, asked separately (also when the datastore as a whole does not answer). */
  members?: StoreMember[]
}

export async function storeStatus(
  store: Store | undefined,
  s: DatastoreSettings,
  openError?: unknown,
): Promise<StoreStatus> {
  const base: StoreStatus = {
    type: s.type,
    location: s.type === 'etcdv3' ? s.etcdEndpoints.join(',') : s.path,
    sources: s.sources,
    configFile: s.configFile ?? null,
    healthy: false,
  }
  if (!store)
    return {
      ...base,
      ...(openError instanceof StoreMissingError ? {missing: true} : {}),
      error: (openError as Error | undefined)?.message ?? 'not opened',
    }
  // Asked beside the revision: a member that does not answer costs one timeout, not one per question.
  const members = store.members?.()
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
      ...(members ? {members: await members} : {}),
    }
  } catch (err) {
    if (err instanceof DatastoreUnavailableError)
      return {...base, error: err.message, ...(members ? {members: await members} : {})}
    throw err
  }
}

/** What `datastore migrate` will do, computed before anything is written; a dry run prints it and stops. */
export interface MigrationPlan {
  source: string
  target: string
  /** Every key under /calico/ of the source, written to the target as is. */
  copy: readonly KeyValue[]
  /** Of `copy`: keys the target does not hold yet, holds with another value, holds with the same value. */
  created: number
  overwritten: readonly string[]
  unchanged: number
  /** Target keys under /calico/ that the source does not have: deleted (only with force). */
  remove: readonly string[]
  /** Keys under /calico/ in the target when the plan was made (0 for an embedded target that does not exist). */
  targetKeys: number
  sourceRevision: bigint
  /** The target's revision read before its keys: writing is refused if anything was written there since. */
  targetRevision: bigint
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
 * Plan copying every key under /calico/ from `from` to `to` (undefined: an embedded target that does not exist
 * yet, so empty). Refused: a source without any key under /calico/ (a wrong path or endpoint must not wipe a
 * target), and a target that already holds keys unless `force`, which makes it an exact mirror of the source.
 */
export async function planMigration(
  from: Store,
  to: Store | undefined,
  opts: {force: boolean; target: string},
): Promise<MigrationPlan> {
  const sourceRevision = await from.revision()
  const copy = await from.list(CALICO_PREFIX)
  if (copy.length === 0) {
    throw new NotFoundError(
      `the source ${from.description} holds no keys under ${CALICO_PREFIX}: nothing to migrate (is it the right store?); the target was not touched`,
    )
  }
  const targetRevision = to ? await to.revision() : 0n
  const existing = to ? await to.list(CALICO_PREFIX) : []
  if (existing.length > 0 && !opts.force) {
    throw new ConflictError(
      `the target ${opts.target} already holds ${existing.length} keys under ${CALICO_PREFIX}; refusing to overwrite them (use --force to replace its contents with the source's)`,
    )
  }
  const inTarget = new Map(existing.map((kv) => [kv.key, kv.value]))
  const inSource = new Set(copy.map((kv) => kv.key))
  const overwritten: string[] = []
  let unchanged = 0
  for (const kv of copy) {
    const v = inTarget.get(kv.key)
    if (v === undefined) continue
    if (v === kv.value) unchanged++
    else overwritten.push(kv.key)
  }
  return {
    source: from.description,
    target: opts.target,
    copy,
    created: copy.length - overwritten.length - unchanged,
    overwritten,
    unchanged,
    remove: existing.filter((kv) => !inSource.has(kv.key)).map((kv) => kv.key),
    targetKeys: existing.length,
    sourceRevision,
    targetRevision,
  }
}

/**
 * Carry out `plan`: first every source key is written, then the target's extra keys are deleted, so an
 * interrupted run leaves a target holding at least everything the source has. Each transaction (at most
 * BATCH operations, etcd's limit) is guarded: nothing under /calico/ of the target may have been written
 * since the plan (or since our previous transaction); if something was, the migration stops with a
 * ConflictError instead of overwriting or deleting what another writer just did.
 */
export async function applyMigration(
  from: Store,
  to: Store,
  plan: MigrationPlan,
  opts: {interrupt?: Interrupt; rerun?: string; onProgress?: (written: number, total: number) => void} = {},
): Promise<MigrateResult> {
  let notAfter = plan.targetRevision
  const ops: WriteOp[] = [
    ...plan.copy.map((kv) => ({put: kv.key, value: kv.value})),
    ...plan.remove.map((k) => ({delete: k})),
  ]
  let written = 0
  // Interrupted between two transactions (docs/interrupts.md), the target holds part of the source: running
  // the migration again with --force makes it whole.
  const progress = (): Committed => ({
    done:
      written === 0
        ? ''
        : `the target ${to.description} is a partial copy: ${written} of ${ops.length} writes done (copies first, then removals)`,
    finish: opts.rerun ?? 'run the same datastore migrate command again with --force',
  })
  for (let i = 0; i < ops.length; i += BATCH) {
    await checkpoint({interrupt: opts.interrupt}, progress())
    const r = await to.txn([{prefix: CALICO_PREFIX, notAfter}], ops.slice(i, i + BATCH))
    if (!r.succeeded) {
      throw new ConflictError(
        `the target ${to.description} was written to by someone else during the migration (after ${i} of ${ops.length} writes); stop all writers and run it again`,
      )
    }
    notAfter = r.revision
    written = Math.min(ops.length, i + BATCH)
    opts.onProgress?.(written, ops.length)
  }
  return {
    copied: plan.copy.length,
    removed: plan.remove.length,
    sourceChanged: (await from.revision()) !== plan.sourceRevision,
  }
}

/**
 * Keys summarised for a person: grouped under their parent path, made coarser (fewer path segments) until at
 * most `limit` groups remain, so 100k keys still fit on a screen. A group of up to 3 keys lists them.
 */
export function keyGroups(keys: readonly string[], limit = 20): {prefix: string; count: number; keys: string[]}[] {
  const segments = (k: string) => k.split('/').length - 1
  let depth = keys.reduce((d, k) => Math.max(d, segments(k)), 1)
  for (;;) {
    const groups = new Map<string, string[]>()
    for (const k of keys) {
      const parts = k.split('/')
      const prefix = `${parts.slice(0, Math.min(depth, parts.length - 1)).join('/')}/`
      const g = groups.get(prefix)
      if (g) g.push(k)
      else groups.set(prefix, [k])
    }
    if (groups.size <= limit || depth <= 1) {
      return [...groups.entries()]
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([prefix, ks]) => ({prefix, count: ks.length, keys: ks.length <= 3 ? ks : []}))
    }
    depth--
  }
}
