// Creating, reading and deleting pools, with upstream's create-time checks made race-safe.
import {ConflictError, NotFoundError, RevisionConflict, ValidationError} from '../errors.js'
import {containsCidr, overlaps, parseCidr, tryParseIp} from '../net/cidr.js'
import {keys, parseBlockKey} from '../store/keys.js'
import {releasePoolAffinities} from './affinity.js'
import {type Ctx, listPools, withRetry, WriteBatch} from './context.js'
import {decodePool, encodePool, newPool, type Pool, type PoolInput} from './pool.js'
import {findPool} from './pools-select.js'

export {listPools}

const MAX_POOLS_PER_TXN = 100

/**
 * A pool named by the user (`pool get`, `pool delete`). A CIDR with host bits set is refused rather than masked,
 * as `pool create` refuses it, so `pool delete 10.65.0.1/16` cannot delete 10.65.0.0/16 by accident.
 */
export async function getPool(ctx: Ctx, ref: string): Promise<Pool> {
  if (ref.includes('/') && tryParseIp(ref.slice(0, ref.indexOf('/')))) parseCidr(ref, {strict: true})
  const p = findPool(await listPools(ctx), ref)
  if (!p) throw new NotFoundError(`IP pool ${ref} not found`)
  return p
}

function overlapError(p: Pool, other: Pool): ConflictError {
  return new ConflictError(`IPPool(${p.name}) CIDR overlaps with IPPool(${other.name}) CIDR ${other.spec.cidr}`)
}

/**
 * Create pools atomically: all of them or none. Every input is validated before anything is written.
 * Overlap checks cannot be expressed as key guards (the colliding pool may not exist yet when we read),
 * so after writing we look again and undo our write if a concurrent create overlaps ours.
 */
export async function createPools(ctx: Ctx, inputs: readonly PoolInput[]): Promise<Pool[]> {
  if (inputs.length === 0) throw new ValidationError('no pools to create')
  const now = ctx.clock.now()
  const pools = inputs.map((i) => newPool(i, now))
  const existing = await listPools(ctx)
  const blockCidrs = (await ctx.store.listKeys(keys.blockPrefix())).map(parseBlockKey).filter((c) => c !== undefined)
  pools.forEach((p, i) => {
    if (existing.some((e) => e.name === p.name) || pools.slice(0, i).some((q) => q.name === p.name)) {
      throw new ConflictError(`IP pool ${p.name} already exists`)
    }
    const clash = [...existing, ...pools.slice(0, i)].find((e) => overlaps(e.cidr, p.cidr))
    if (clash) throw overlapError(p, clash)
    if (blockCidrs.some((b) => overlaps(b, p.cidr) && b.prefix !== p.spec.blockSize)) {
      throw new ConflictError(`IPPool blocksSize conflicts with existing allocations that use a different blockSize (pool ${p.name})`)
    }
  })
  // One transaction per 100 pools (etcd allows 128 operations per transaction); if a later one fails,
  // the earlier ones are undone, so a manifest is still all-or-nothing.
  for (let i = 0; i < pools.length; i += MAX_POOLS_PER_TXN) {
    const slice = pools.slice(i, i + MAX_POOLS_PER_TXN)
    const batch = new WriteBatch(ctx)
    for (const p of slice) batch.put(keys.pool(p.name), encodePool(p), undefined)
    try {
      await batch.commit()
    } catch (err) {
      await undoCreate(ctx, pools.slice(0, i))
      if (err instanceof RevisionConflict) throw new ConflictError(`IP pool ${slice.map((p) => p.name).join(', ')} was created concurrently`)
      throw err
    }
  }
  const after = await listPools(ctx)
  for (const p of pools) {
    const clash = after.find((e) => !pools.some((q) => q.name === e.name) && overlaps(e.cidr, p.cidr))
    if (clash) {
      await undoCreate(ctx, pools)
      throw overlapError(p, clash)
    }
  }
  return pools
}

async function undoCreate(ctx: Ctx, pools: readonly Pool[]): Promise<void> {
  for (const p of pools) {
    const kv = await ctx.store.get(keys.pool(p.name))
    if (kv && decodePool(kv.value).uid === p.uid) await ctx.store.txn([{key: kv.key, modRevision: kv.modRevision}], [{delete: kv.key}])
  }
}

async function setDisabled(ctx: Ctx, name: string, disabled: boolean): Promise<Pool> {
  return withRetry(ctx, async () => {
    const kv = await ctx.store.get(keys.pool(name))
    if (!kv) throw new NotFoundError(`IP pool ${name} not found`)
    const p = decodePool(kv.value)
    p.spec.disabled = disabled
    await new WriteBatch(ctx).put(kv.key, encodePool(p), kv).commit()
    return p
  })
}

/**
 * Upstream's order: disable (so no new allocation starts in it), wait for in-flight allocations that
 * read it as enabled, release every host's affinity to its blocks, then delete the resource. Allocated
 * addresses stay allocated; their blocks become unowned and disappear when their last address goes.
 */
export async function deletePool(ctx: Ctx, ref: string, opts: {graceMs?: number} = {}): Promise<{pool: Pool; affinitiesReleased: number}> {
  const pool = await getPool(ctx, ref)
  await setDisabled(ctx, pool.name, true)
  const grace = opts.graceMs ?? 500
  if (grace > 0) await new Promise((r) => setTimeout(r, grace))
  const affinitiesReleased = await releasePoolAffinities(ctx, pool.cidr)
  const kv = await ctx.store.get(keys.pool(pool.name))
  if (kv) await ctx.store.txn([{key: kv.key, modRevision: kv.modRevision}], [{delete: kv.key}])
  return {pool, affinitiesReleased}
}

/** Blocks of a pool, for reporting what a delete leaves behind. */
export async function poolBlockCount(ctx: Ctx, pool: Pool): Promise<number> {
  const cidrs = (await ctx.store.listKeys(keys.blockPrefix(pool.cidr.family))).map(parseBlockKey)
  return cidrs.filter((c) => c && containsCidr(pool.cidr, c)).length
}
