// ClusterInformation `default`: the cluster's GUID (reports carry it so they are never applied to another
// cluster) and `datastoreReady`, which is upstream's datastore lock (false = locked). Its revision is what
// `ipam check` reports record, so a report made while the lock was held can be told from a stale one.
import {randomHex, randomUuid} from '../random.js'
import {encodeJson, type JsonValue, parseJson} from '../codec/gojson.js'
import {RevisionConflict, ValidationError} from '../errors.js'
import {keys} from '../store/keys.js'
import type {KeyValue} from '../store/store.js'
import {type Ctx, withRetry} from './context.js'
import {rfc3339} from '../codec/gotime.js'

export interface ClusterInfo {
  clusterGUID: string
  clusterType: string
  /** Upstream's readiness flag; undefined when the record does not set it (which counts as unlocked). */
  datastoreReady: boolean | undefined
  /** The record's revision as upstream's resourceVersion: the decimal mod-revision. */
  revision: string
}

export const clusterInfoKey = (): string => keys.resource('clusterinformations', 'default')

type Raw = {[k: string]: JsonValue}

function decodeRaw(kv: KeyValue): Raw {
  const raw = parseJson(kv.value)
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    throw new ValidationError('malformed ClusterInformation: not a JSON object')
  return raw
}

function toInfo(kv: KeyValue): ClusterInfo {
  const raw = decodeRaw(kv)
  const spec = (raw.spec && typeof raw.spec === 'object' && !Array.isArray(raw.spec) ? raw.spec : {}) as Raw
  return {
    clusterGUID: typeof spec.clusterGUID === 'string' ? spec.clusterGUID : '',
    clusterType: typeof spec.clusterType === 'string' ? spec.clusterType : '',
    datastoreReady: typeof spec.datastoreReady === 'boolean' ? spec.datastoreReady : undefined,
    revision: kv.modRevision.toString(),
  }
}

/** The record, or undefined if nothing has created it yet. Never writes. */
export async function getClusterInfo(ctx: Ctx): Promise<ClusterInfo | undefined> {
  const kv = await ctx.store.get(clusterInfoKey())
  return kv && toInfo(kv)
}

function newRecord(now: Date, ready: boolean): string {
  return encodeJson({
    kind: 'ClusterInformation',
    apiVersion: 'projectcalico.org/v3',
    metadata: {name: 'default', uid: randomUuid(), creationTimestamp: rfc3339(now)},
    // Upstream's GUID is a UUID without dashes: 32 lower-case hex digits.
    spec: {clusterGUID: randomHex(16), clusterType: 'ipamctl', datastoreReady: ready},
  })
}

/** The record, created (unlocked, with a fresh GUID) if missing. */
export async function ensureClusterInfo(ctx: Ctx): Promise<ClusterInfo> {
  return withRetry(ctx, async () => {
    const key = clusterInfoKey()
    const kv = await ctx.store.get(key)
    if (kv) return toInfo(kv)
    const r = await ctx.store.txn([{key, absent: true}], [{put: key, value: newRecord(ctx.clock.now(), true)}])
    if (!r.succeeded) throw new RevisionConflict('ClusterInformation was created concurrently; re-reading')
    return toInfo((await ctx.store.get(key))!)
  })
}

/** Only an explicit `datastoreReady: false` is a lock, as upstream reads it; a missing record is unlocked. */
export async function datastoreLocked(ctx: Ctx): Promise<boolean> {
  return (await getClusterInfo(ctx))?.datastoreReady === false
}

/** Set datastoreReady, keeping every other field; guarded by the revision read. Returns the new state. */
async function setReady(ctx: Ctx, ready: boolean): Promise<ClusterInfo> {
  return withRetry(ctx, async () => {
    const key = clusterInfoKey()
    const kv = await ctx.store.get(key)
    if (!kv) {
      const r = await ctx.store.txn([{key, absent: true}], [{put: key, value: newRecord(ctx.clock.now(), ready)}])
      if (!r.succeeded) throw new RevisionConflict('ClusterInformation was created concurrently; re-reading')
    } else {
      const raw = decodeRaw(kv)
      const spec = (raw.spec && typeof raw.spec === 'object' && !Array.isArray(raw.spec) ? raw.spec : {}) as Raw
      // Already in the wanted state: no write, so a report made under this lock stays current.
      if (spec.datastoreReady === ready) return toInfo(kv)
      raw.spec = {...spec, datastoreReady: ready}
      const r = await ctx.store.txn([{key, modRevision: kv.modRevision}], [{put: key, value: encodeJson(raw)}])
      if (!r.succeeded) throw new RevisionConflict('ClusterInformation changed while writing; retrying')
    }
    return toInfo((await ctx.store.get(key))!)
  })
}

export const lockDatastore = (ctx: Ctx): Promise<ClusterInfo> => setReady(ctx, false)
export const unlockDatastore = (ctx: Ctx): Promise<ClusterInfo> => setReady(ctx, true)
