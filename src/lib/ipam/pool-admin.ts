// Creating, reading and deleting pools, with upstream's create-time checks made race-safe.
import {ConflictError, NotFoundError, RevisionConflict, ValidationError} from '../errors.js'
import {containsCidr, overlaps, parseCidr, tryParseIp} from '../net/cidr.js'
import {keys, parseBlockKey} from '../store/keys.js'
import {releasePoolAffinities} from './affinity.js'
import {type Ctx, listPools, poolsFrom, withRetry, WriteBatch} from './context.js'
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
 * Create pools: all of them or none, and never one that overlaps a pool created concurrently.
 *
 * Overlap cannot be a key guard (the colliding pool has another name), so every write is guarded on the whole
 * pool prefix instead: it commits only if no pool was written after the pools it was checked against
 * (`{prefix, notAfter}`). Of several overlapping creates exactly one commits; the others re-read, see it, and
 * fail naming it. A manifest of more than MAX_POOLS_PER_TXN pools is written in several transactions that form
 * an unbroken chain: each is guarded at the revision of the previous one, so no other pool can appear between
 * them unseen. When a link fails, everything is checked again against what is stored now; if a pool written
 * in between collides with any of ours, the ones already written are deleted again (only if still exactly as
 * we wrote them) and the create fails. Each check covers the whole manifest, so two overlapping manifests can
 * never both lose.
 */
export async function createPools(ctx: Ctx, inputs: readonly PoolInput[]): Promise<Pool[]> {
  if (inputs.length === 0) throw new ValidationError('no pools to create')
  const now = ctx.clock.now()
  const pools = inputs.map((i) => newPool(i, now))
  pools.forEach((p, i) => {
    if (pools.slice(0, i).some((q) => q.name === p.name)) throw new ConflictError(`IP pool ${p.name} already exists`)
    const clash = pools.slice(0, i).find((e) => overlaps(e.cidr, p.cidr))
    if (clash) throw overlapError(p, clash)
  })
  const written: Pool[] = []
  // The revision the next write is guarded at; undefined: check against the store first.
  let checkedAt: bigint | undefined
  try {
    for (let i = 0; i < pools.length; i += MAX_POOLS_PER_TXN) {
      const slice = pools.slice(i, i + MAX_POOLS_PER_TXN)
      await withRetry(ctx, async () => {
        checkedAt ??= await checkAgainstStore(ctx, pools)
        const batch = new WriteBatch(ctx).guardPrefix(keys.resourcePrefix('ippools'), checkedAt)
        for (const p of slice) batch.put(keys.pool(p.name), encodePool(p), undefined)
        try {
          checkedAt = (await batch.commit())!
        } catch (err) {
          if (err instanceof RevisionConflict) checkedAt = undefined
          throw err
        }
      })
      written.push(...slice)
    }
  } catch (err) {
    await undoCreate(ctx, written)
    throw err
  }
  return pools
}

/**
 * Check `pools` (some possibly written by us already, recognised by uid) against the stored pools and blocks;
 * returns the revision the check is valid at: the newest mod-revision among the pools read. The pools come from
 * one consistent read, so every pool written later has a higher mod-revision, and every pool with a mod-revision
 * up to it (that still exists) was among them.
 */
async function checkAgainstStore(ctx: Ctx, pools: readonly Pool[]): Promise<bigint> {
  const [kvs, blockKeys] = await Promise.all([ctx.store.list(keys.resourcePrefix('ippools')), ctx.store.listKeys(keys.blockPrefix())])
  const ours = new Set(pools.map((p) => p.uid))
  const existing = poolsFrom(kvs).filter((e) => !ours.has(e.uid))
  const blockCidrs = blockKeys.map(parseBlockKey).filter((c) => c !== undefined)
  for (const p of pools) {
    if (existing.some((e) => e.name === p.name)) throw new ConflictError(`IP pool ${p.name} already exists`)
    const clash = existing.find((e) => overlaps(e.cidr, p.cidr))
    if (clash) throw overlapError(p, clash)
    if (blockCidrs.some((b) => overlaps(b, p.cidr) && b.prefix !== p.spec.blockSize)) {
      throw new ConflictError(`IPPool blocksSize conflicts with existing allocations that use a different blockSize (pool ${p.name})`)
    }
  }
  return kvs.reduce((m, kv) => (kv.modRevision > m ? kv.modRevision : m), 0n)
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
