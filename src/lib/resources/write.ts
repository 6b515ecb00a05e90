// The resource verbs that write: apply, create and replace a manifest all or nothing, delete by kind and name,
// and edit one stored object (patch, label, `pool update`) through the same path.
import {ConflictError, NotFoundError, RevisionConflict, ValidationError} from '../errors.js'
import {checkpoint, NOTHING_COMMITTED} from '../interrupt.js'
import {type Ctx, withRetry, WriteBatch} from '../ipam/context.js'
import {isObj, type ManifestObject, type Obj} from '../ipam/manifest.js'
import {executeNodeRemoval, planNodeRemoval} from '../ipam/node-removal.js'
import {decodePool, type Pool} from '../ipam/pool.js'
import {poolCapacityWarnings} from '../ipam/capacity-use.js'
import {listPools} from '../ipam/context.js'
import {checkPoolChange, checkPoolPlacement, deletePool} from '../ipam/pool-admin.js'
import {deleteReservation} from '../ipam/reservation.js'
import {keys, parseBlockKey} from '../store/keys.js'
import {type KeyValue, readMany} from '../store/store.js'
import {type KindName, manifestKind, resolveKind} from './kinds.js'
import {API_VERSION, handlerFor, type KindHandler, type Resource} from './model.js'

export type WriteVerb = 'apply' | 'create' | 'replace'
export type OutcomeResult = 'created' | 'configured' | 'unchanged' | 'skipped' | 'deleted'

export interface Outcome {
  kind: KindName
  name: string
  result: OutcomeResult
}

/** etcd refuses transactions of more than 128 operations by default; one manifest is one transaction. */
export const MAX_WRITES = 100

/** The object's resourceVersion is not the stored one: someone changed it since it was read. */
export class StaleResourceError extends ConflictError {}

interface Target {
  handler: KindHandler
  name: string
  obj: Obj
  where: string
  key: string
}

function resolveTargets(objs: readonly ManifestObject[]): Target[] {
  const seen = new Set<string>()
  return objs.map(({obj, where}) => {
    const info = manifestKind(obj.kind, where)
    if (obj.apiVersion !== undefined && obj.apiVersion !== API_VERSION)
      throw new ValidationError(`${where}: apiVersion must be ${API_VERSION} (got ${JSON.stringify(obj.apiVersion)})`)
    if (info.readOnly)
      throw new ValidationError(`${where}: ${info.kind} is read-only; hosts claim and release blocks themselves`)
    const md = obj.metadata
    if (!isObj(md) || typeof md.name !== 'string') throw new ValidationError(`${where}: metadata.name is required`)
    const handler = handlerFor(info.kind)
    let key: string
    try {
      key = handler.keyFor(md.name)
    } catch (err) {
      throw new ValidationError(`${where}: ${(err as Error).message}`)
    }
    const id = `${info.kind}(${md.name})`
    if (seen.has(id)) throw new ValidationError(`${where}: ${id} appears twice in the manifest`)
    seen.add(id)
    return {handler, name: md.name, obj, where, key}
  })
}

/**
 * Write every object of a manifest in ONE guarded transaction, or nothing: each key is guarded by the revision
 * read (or its absence), pools additionally by the ippools prefix (an overlapping pool created meanwhile has
 * another name), and a pool whose CIDR or block size changes by the block prefix (a block claimed meanwhile
 * would be in use). A lost guard re-reads and decides again. Objects that already say what the manifest says are
 * not written, so applying the same manifest twice writes nothing the second time.
 *
 * - apply: create or update; create: refuse an existing object (ConflictError) unless `skipExists`; replace:
 *   refuse a missing one (NotFoundError).
 * - A `metadata.resourceVersion` in the manifest must be the stored object's (apply and replace), else
 *   StaleResourceError (exit 4).
 */
export async function writeResources(
  ctx: Ctx,
  objs: readonly ManifestObject[],
  verb: WriteVerb,
  opts: {skipExists?: boolean} = {},
): Promise<Outcome[]> {
  const targets = resolveTargets(objs)
  if (targets.length === 0) throw new ValidationError('the manifest holds no resources')
  const hasPools = targets.some((t) => t.handler.info.kind === 'IPPool')
  return withRetry(ctx, async () => {
    const before = hasPools ? await ctx.store.revision() : 0n
    const [read, poolKvs, blockKeys] = await Promise.all([
      readMany(ctx.store, {gets: targets.map((t) => t.key)}),
      hasPools ? ctx.store.list(keys.resourcePrefix('ippools')) : Promise.resolve([] as KeyValue[]),
      hasPools ? ctx.store.listKeys(keys.blockPrefix()) : Promise.resolve([] as string[]),
    ])
    const now = ctx.clock.now()
    const batch = new WriteBatch(ctx)
    const outcomes: Outcome[] = []
    const changedPools: {prev?: Pool; next: Pool}[] = []
    let writes = 0
    for (const [i, t] of targets.entries()) {
      const existing = read.gets[i]
      const id = `${t.handler.info.kind}(${t.name})`
      const out = (result: OutcomeResult) => outcomes.push({kind: t.handler.info.kind, name: t.name, result})
      if (verb === 'create' && existing) {
        if (opts.skipExists) {
          out('skipped')
          continue
        }
        throw new ConflictError(`${t.where}: resource already exists: ${id}`)
      }
      if (verb === 'replace' && !existing) throw new NotFoundError(`${t.where}: resource does not exist: ${id}`)
      const rv = (t.obj.metadata as Obj).resourceVersion
      if (verb !== 'create' && rv !== undefined && rv !== null && rv !== '') {
        if (!existing) throw new StaleResourceError(`${t.where}: ${id} has a resourceVersion but does not exist`)
        if (String(rv) !== existing.modRevision.toString())
          throw new StaleResourceError(
            `${t.where}: update conflict: ${id} was changed since resourceVersion ${rv} (now ${existing.modRevision}); get it again and re-apply your change`,
          )
      }
      const value = t.handler.desired(t.obj, t.where, existing, now)
      if (value === undefined) {
        out('unchanged')
        continue
      }
      batch.put(t.key, value, existing)
      writes++
      if (t.handler.info.kind === 'IPPool')
        changedPools.push({prev: existing && decodePool(existing.value), next: decodePool(value)})
      out(existing ? 'configured' : 'created')
    }
    if (writes > MAX_WRITES)
      throw new ValidationError(
        `the manifest changes ${writes} resources; at most ${MAX_WRITES} can be written in one transaction: split it into several files`,
      )
    if (changedPools.length > 0) {
      const blockCidrs = blockKeys.map(parseBlockKey).filter((c) => c !== undefined)
      const byName = new Map(poolKvs.map((kv) => [decodePool(kv.value).name, decodePool(kv.value)]))
      for (const c of changedPools) byName.set(c.next.name, c.next)
      const all = [...byName.values()]
      let moved = false
      for (const {prev, next} of changedPools) {
        if (prev) checkPoolChange(prev, next, blockCidrs)
        if (!prev || prev.spec.cidr !== next.spec.cidr || prev.spec.blockSize !== next.spec.blockSize) {
          checkPoolPlacement(next, all, blockCidrs)
          moved ||= !!prev
        }
      }
      const newest = poolKvs.reduce((m, kv) => (kv.modRevision > m ? kv.modRevision : m), 0n)
      batch.guardPrefix(keys.resourcePrefix('ippools'), newest)
      if (moved) batch.guardPrefix(keys.blockPrefix(), before)
    }
    if (writes > 0) await batch.commit()
    return outcomes
  })
}

/** A kind and name from the command line, resolved to what is stored (NotFoundError when missing). */
export async function readResource(ctx: Ctx, kindText: string, name: string): Promise<{kv: KeyValue; view: Resource}> {
  const handler = handlerFor(resolveKind(kindText).kind)
  const found = await findStored(ctx, handler, name)
  if (!found) throw new NotFoundError(`resource does not exist: ${handler.info.kind}(${name})`)
  return {kv: found, view: handler.view(found)}
}

async function findStored(ctx: Ctx, handler: KindHandler, name: string): Promise<KeyValue | undefined> {
  if (handler.info.readOnly)
    return (await handler.list(ctx.store)).find((kv) => handler.view(kv).metadata.name === name)
  return ctx.store.get(handler.keyFor(name))
}

/** `get KIND [NAME…]`: the named objects in the order given, or all of the kind in key order. */
export async function getResources(
  ctx: Ctx,
  kindText: string,
  names: readonly string[],
): Promise<{kind: KindName; items: Resource[]; revision: bigint}> {
  const handler = handlerFor(resolveKind(kindText).kind)
  const revision = await ctx.store.revision()
  if (names.length === 0)
    return {kind: handler.info.kind, items: (await handler.list(ctx.store)).map(handler.view), revision}
  const items: Resource[] = []
  for (const name of names) {
    const kv = await findStored(ctx, handler, name)
    if (!kv) throw new NotFoundError(`resource does not exist: ${handler.info.kind}(${name})`)
    items.push(handler.view(kv))
  }
  return {kind: handler.info.kind, items, revision}
}

/**
 * Change one stored object: `edit` gets what `get` prints and returns the object to store, which is then
 * written as `replace` does, guarded by the revision read. Lost to a concurrent change, it reads and edits again.
 */
export async function updateResource(
  ctx: Ctx,
  kindText: string,
  name: string,
  edit: (current: Resource) => Resource,
): Promise<{outcome: Outcome; view: Resource}> {
  const info = resolveKind(kindText)
  if (info.readOnly) throw new ValidationError(`${info.kind} is read-only; hosts claim and release blocks themselves`)
  return withRetry(ctx, async () => {
    const {kv, view} = await readResource(ctx, info.kind, name)
    const edited = edit(structuredClone(view))
    if (!isObj(edited) || edited.kind !== info.kind || !isObj(edited.metadata) || edited.metadata.name !== name)
      throw new ValidationError(`the kind and metadata.name of ${info.kind}(${name}) cannot be changed`)
    edited.metadata.resourceVersion = kv.modRevision.toString()
    try {
      const [outcome] = await writeResources(
        ctx,
        [{obj: edited as unknown as Obj, where: `${info.kind}(${name})`}],
        'replace',
      )
      return {outcome: outcome!, view: edited}
    } catch (err) {
      if (err instanceof StaleResourceError || err instanceof NotFoundError) throw new RevisionConflict(err.message)
      throw err
    }
  })
}

/** JSON merge patch (RFC 7386): objects merge key by key, `null` removes a key, anything else replaces. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObj(patch)) return patch
  const out: Obj = isObj(target) ? {...target} : {}
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k]
    else out[k] = mergePatch(out[k], v)
  }
  return out
}

/** `key=value` sets, `key-` removes; an existing different value needs `overwrite` (kubectl's rule). */
export function applyLabelChanges(
  labels: Record<string, string>,
  changes: readonly string[],
  overwrite: boolean,
): Record<string, string> {
  const out = {...labels}
  for (const c of changes) {
    if (c.endsWith('-') && !c.includes('=')) {
      delete out[c.slice(0, -1)]
      continue
    }
    const eq = c.indexOf('=')
    if (eq <= 0) throw new ValidationError(`invalid label change ${JSON.stringify(c)}: expected KEY=VALUE or KEY-`)
    const [k, v] = [c.slice(0, eq), c.slice(eq + 1)]
    if (out[k] !== undefined && out[k] !== v && !overwrite)
      throw new ConflictError(
        `label ${k} already has the value ${JSON.stringify(out[k])}; pass --overwrite to change it`,
      )
    out[k] = v
  }
  return out
}

export interface DeleteRef {
  kind: string
  name: string
}

/**
 * Delete objects by kind and name. All are looked up first, so a missing one (without `skipNotExists`) fails
 * before anything is deleted. Each kind is deleted the way its topic command does it: a pool as `pool delete`
 * (disable, release the hosts' affinities, delete), a node as `node remove` (its affinities go, its addresses
 * stay), a reservation or the IPAM configuration guarded by the revision read.
 */
export async function deleteResources(
  ctx: Ctx,
  refs: readonly DeleteRef[],
  opts: {skipNotExists?: boolean} = {},
): Promise<Outcome[]> {
  const found: {handler: KindHandler; name: string; kv: KeyValue}[] = []
  const outcomes: Outcome[] = []
  for (const r of refs) {
    const info = resolveKind(r.kind)
    if (info.readOnly) throw new ValidationError(`${info.kind} is read-only; hosts claim and release blocks themselves`)
    const handler = handlerFor(info.kind)
    const kv = await findStored(ctx, handler, r.name)
    if (kv) found.push({handler, name: r.name, kv})
    else if (opts.skipNotExists) outcomes.push({kind: info.kind, name: r.name, result: 'skipped'})
    else throw new NotFoundError(`resource does not exist: ${info.kind}(${r.name})`)
  }
  let done = 0
  for (const f of found) {
    await checkpoint(ctx, done === 0 ? NOTHING_COMMITTED : {done: `${done} of ${found.length} resources were deleted`})
    switch (f.handler.info.kind) {
      case 'IPPool':
        await deletePool(ctx, f.name)
        break
      case 'IPReservation':
        await deleteReservation(ctx, f.name)
        break
      case 'Node':
        await executeNodeRemoval(ctx, await planNodeRemoval(ctx, f.name, {releaseAddresses: false}))
        break
      default: {
        const r = await ctx.store.txn([{key: f.kv.key, modRevision: f.kv.modRevision}], [{delete: f.kv.key}])
        if (!r.succeeded)
          throw new ConflictError(
            `${f.handler.info.kind}(${f.name}) was changed concurrently; nothing deleted, try again`,
          )
      }
    }
    done++
    outcomes.push({kind: f.handler.info.kind, name: f.name, result: 'deleted'})
  }
  return outcomes
}

/** The kind and name of each manifest object, for `delete -f`. */
export function refsOf(objs: readonly ManifestObject[]): DeleteRef[] {
  return objs.map(({obj, where}) => {
    const info = manifestKind(obj.kind, where)
    const md = obj.metadata
    if (!isObj(md) || typeof md.name !== 'string') throw new ValidationError(`${where}: metadata.name is required`)
    return {kind: info.kind, name: md.name}
  })
}

/**
 * poolCapacityWarnings for the IPPools a write created or changed (apply, create, replace print them on stderr,
 * as `pool create` does); pools the write left unchanged are not warned about again.
 */
export async function writtenPoolWarnings(ctx: Ctx, outcomes: readonly Outcome[]): Promise<string[]> {
  const names = new Set(
    outcomes
      .filter((o) => o.kind === 'IPPool' && (o.result === 'created' || o.result === 'configured'))
      .map((o) => o.name),
  )
  if (names.size === 0) return []
  return poolCapacityWarnings(
    ctx,
    (await listPools(ctx)).filter((p) => names.has(p.name)),
  )
}
