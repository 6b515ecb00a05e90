// Creating, reading and deleting pools, with upstream's create-time checks made race-safe.
import {
  ConflictError,
  InterruptedError,
  IpamError,
  NotFoundError,
  RevisionConflict,
  ValidationError,
} from '../errors.js'
import {
  checkpoint,
  type Committed,
  describeCommitted,
  interrupted,
  interruptibleSleep,
  NOTHING_COMMITTED,
} from '../interrupt.js'
import {type Cidr, containsCidr, formatCidr, overlaps, parseCidr, tryParseIp} from '../net/cidr.js'
import {keys, parseAffinityKey, parseBlockKey} from '../store/keys.js'
import {guardFor} from '../store/store.js'
import {type AffinityRelease, releaseBlockAffinity} from './affinity.js'
import {isEmpty} from './block.js'
import {type Ctx, listPools, loadBlock, loadConfig, poolsFrom, withRetry, WriteBatch} from './context.js'
import {decodePool, encodePool, newPool, type Pool, type PoolInput} from './pool.js'
import {findPool} from './pools-select.js'

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
      await checkpoint(
        ctx,
        i === 0 ? NOTHING_COMMITTED : {done: `the first ${i} of the ${pools.length} pools were created`},
      )
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
    // Interrupted between two links (docs/interrupts.md): the ones already written are gone again.
    if (err instanceof InterruptedError)
      throw interrupted(err.signal, {
        done:
          written.length > 0
            ? `nothing was changed (the ${written.length} pools already created were deleted again)`
            : '',
      })
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
  const [kvs, blockKeys] = await Promise.all([
    ctx.store.list(keys.resourcePrefix('ippools')),
    ctx.store.listKeys(keys.blockPrefix()),
  ])
  const ours = new Set(pools.map((p) => p.uid))
  const existing = poolsFrom(kvs).filter((e) => !ours.has(e.uid))
  const blockCidrs = blockKeys.map(parseBlockKey).filter((c) => c !== undefined)
  for (const p of pools) {
    if (existing.some((e) => e.name === p.name)) throw new ConflictError(`IP pool ${p.name} already exists`)
    checkPoolPlacement(p, existing, blockCidrs)
  }
  return kvs.reduce((m, kv) => (kv.modRevision > m ? kv.modRevision : m), 0n)
}

/**
 * Where a new or moved pool may go: it must not overlap another pool (`others`, without itself), and blocks
 * that exist inside it must have its block size (upstream's create-time checks).
 */
export function checkPoolPlacement(p: Pool, others: readonly Pool[], blockCidrs: readonly Cidr[]): void {
  const clash = others.find((e) => e.name !== p.name && overlaps(e.cidr, p.cidr))
  if (clash) throw overlapError(p, clash)
  if (blockCidrs.some((b) => overlaps(b, p.cidr) && b.prefix !== p.spec.blockSize)) {
    throw new ConflictError(
      `IPPool blocksSize conflicts with existing allocations that use a different blockSize (pool ${p.name})`,
    )
  }
}

/**
 * Upstream's update rule: a pool's CIDR and block size define the blocks carved from it, so neither may change
 * while any block exists inside the pool; everything else (disabled, selectors, modes, uses, labels) may.
 */
export function checkPoolChange(old: Pool, next: Pool, blockCidrs: readonly Cidr[]): void {
  const what =
    old.spec.cidr !== next.spec.cidr ? 'CIDR' : old.spec.blockSize !== next.spec.blockSize ? 'blockSize' : undefined
  if (!what) return
  const used = blockCidrs.filter((b) => containsCidr(old.cidr, b)).length
  if (used > 0)
    throw new ConflictError(
      `IPPool(${old.name}) ${what} cannot be changed while the pool is in use (${used} allocation block${used === 1 ? '' : 's'}); create a new pool and delete this one`,
    )
}

async function undoCreate(ctx: Ctx, pools: readonly Pool[]): Promise<void> {
  for (const p of pools) {
    const kv = await ctx.store.get(keys.pool(p.name))
    if (kv && decodePool(kv.value).uid === p.uid)
      await ctx.store.txn([{key: kv.key, modRevision: kv.modRevision}], [{delete: kv.key}])
  }
}

interface DisabledChange {
  pool: Pool
  /** The pool's mod-revision after this change (or as read, when nothing had to change). */
  revision: bigint
  changed: boolean
}

/** Set `spec.disabled`, guarded by the revision read; a pool already in that state is not rewritten. */
async function setDisabled(ctx: Ctx, name: string, disabled: boolean): Promise<DisabledChange> {
  return withRetry(ctx, async () => {
    const kv = await ctx.store.get(keys.pool(name))
    if (!kv) throw new NotFoundError(`IP pool ${name} not found`)
    const p = decodePool(kv.value)
    if (p.spec.disabled === disabled) return {pool: p, revision: kv.modRevision, changed: false}
    p.spec.disabled = disabled
    const r = await ctx.store.txn([guardFor(kv.key, kv)], [{put: kv.key, value: encodePool(p)}])
    if (!r.succeeded) throw new RevisionConflict(`IP pool ${name} changed while updating it; retrying`)
    return {pool: p, revision: r.revision, changed: true}
  })
}

/** `pool update NAME --enable|--disable`: whether anything changed, and the pool as it now is. */
export async function setPoolDisabled(
  ctx: Ctx,
  ref: string,
  disabled: boolean,
): Promise<{pool: Pool; changed: boolean}> {
  const pool = await getPool(ctx, ref)
  const r = await setDisabled(ctx, pool.name, disabled)
  return {pool: r.pool, changed: r.changed}
}

/**
 * Undo our own disable: only if the pool is still exactly as we wrote it (same mod-revision), so a change
 * someone made since (a re-enable, a delete, an edit) is never overridden.
 */
async function undoDisable(ctx: Ctx, name: string, revision: bigint): Promise<boolean> {
  const kv = await ctx.store.get(keys.pool(name))
  if (!kv || kv.modRevision !== revision) return false
  const p = decodePool(kv.value)
  p.spec.disabled = false
  return (await ctx.store.txn([{key: kv.key, modRevision: revision}], [{put: kv.key, value: encodePool(p)}])).succeeded
}

/** One host affinity a pool delete gives up, and what that does to its block. */
export interface AffinityStep {
  host: string
  block: string
  /** released: the block keeps its addresses, unowned; deleted-block: it was empty and goes; stale: no such block of that host, only the key goes. */
  result: Exclude<AffinityRelease, 'absent'>
}

/** What `pool delete` does (dry run) or did: the same shape either way, so the two can be compared. */
export interface PoolDeletion {
  pool: Pool
  /** Whether the pool was enabled, so the delete disables it first. */
  disables: boolean
  /** In key order: host by host, v4 then v6 per host. */
  affinities: AffinityStep[]
  /** Blocks inside the pool that stay after the delete (with addresses), now owned by nobody. */
  blocksLeft: string[]
}

async function poolAffinities(ctx: Ctx, pool: Pool): Promise<{host: string; cidr: Cidr}[]> {
  const out: {host: string; cidr: Cidr}[] = []
  for (const key of await ctx.store.listKeys(keys.allHostAffinitiesPrefix())) {
    const a = parseAffinityKey(key)
    if (a && a.type === 'host' && containsCidr(pool.cidr, a.cidr)) out.push({host: a.host, cidr: a.cidr})
  }
  return out
}

async function blocksLeft(ctx: Ctx, pool: Pool, deleted: ReadonlySet<string>): Promise<string[]> {
  const cidrs = (await ctx.store.listKeys(keys.blockPrefix(pool.cidr.family))).map(parseBlockKey)
  return cidrs
    .filter((c): c is Cidr => !!c && containsCidr(pool.cidr, c))
    .map(formatCidr)
    .filter((c) => !deleted.has(c))
}

/** Read-only: exactly what `deletePool` would do now (releaseBlockAffinity's outcome for each affinity). */
export async function planPoolDelete(ctx: Ctx, ref: string): Promise<PoolDeletion> {
  const pool = await getPool(ctx, ref)
  const cfg = await loadConfig(ctx)
  const affinities: AffinityStep[] = []
  for (const a of await poolAffinities(ctx, pool)) {
    const loaded = await loadBlock(ctx, a.cidr, cfg.ipCooldownSeconds)
    const result =
      !loaded || loaded.block.affinity !== `host:${a.host}`
        ? 'stale'
        : isEmpty(loaded.block)
          ? 'deleted-block'
          : 'released'
    affinities.push({host: a.host, block: formatCidr(a.cidr), result})
  }
  const deleted = new Set(affinities.filter((a) => a.result === 'deleted-block').map((a) => a.block))
  return {pool, disables: !pool.spec.disabled, affinities, blocksLeft: await blocksLeft(ctx, pool, deleted)}
}

/**
 * Upstream's order: disable (so no new allocation starts in it), wait for in-flight allocations that
 * read it as enabled, release every host's affinity to its blocks, then delete the resource. Allocated
 * addresses stay allocated; their blocks become unowned and disappear when their last address goes.
 *
 * Interrupted (or failing) before the resource is deleted, it re-enables the pool if it was the one that
 * disabled it, and says so; the resource itself is deleted only if nobody changed it since the disable. Affinities released by then stay released: that only leaves blocks unowned,
 * which hosts cope with by claiming new blocks, as they do for any block that lost its owner.
 */
export async function deletePool(
  ctx: Ctx,
  ref: string,
  opts: {graceMs?: number} = {},
): Promise<PoolDeletion & {affinitiesReleased: number}> {
  const pool = await getPool(ctx, ref)
  await checkpoint(ctx, NOTHING_COMMITTED)
  const disabled = await setDisabled(ctx, pool.name, true)
  const affinities: AffinityStep[] = []
  const progress = (): Committed => ({
    done: `IP pool ${pool.name} was disabled and not deleted${releasedSoFar(affinities)}`,
    undo: disabled.changed ? `ipamctl pool update ${pool.name} --enable` : undefined,
  })
  try {
    await checkpoint(ctx, progress())
    const grace = opts.graceMs ?? 500
    if (grace > 0) await interruptibleSleep(ctx, grace)
    const cfg = await loadConfig(ctx)
    for (const a of await poolAffinities(ctx, pool)) {
      await checkpoint(ctx, progress())
      const r = await releaseBlockAffinity(ctx, a.host, a.cidr, {requireEmpty: false}, cfg)
      if (r !== 'absent') affinities.push({host: a.host, block: formatCidr(a.cidr), result: r})
    }
    await checkpoint(ctx, progress())
    // Deleted only as this run left it: a pool someone re-enabled or edited meanwhile is theirs now.
    const kv = await ctx.store.get(keys.pool(pool.name))
    if (kv && !(await ctx.store.txn([{key: kv.key, modRevision: disabled.revision}], [{delete: kv.key}])).succeeded) {
      throw new ConflictError(`IP pool ${pool.name} was changed by someone else while it was being deleted`)
    }
  } catch (err) {
    if (!(err instanceof IpamError)) throw err
    const reEnabled = disabled.changed && (await undoDisable(ctx, pool.name, disabled.revision).catch(() => false))
    const state = !disabled.changed
      ? `IP pool ${pool.name} was not deleted (it was already disabled, and stays so)`
      : reEnabled
        ? `IP pool ${pool.name} was not deleted and is enabled again`
        : `IP pool ${pool.name} was not deleted and was left as it is now (it was changed by someone else meanwhile, or could not be re-enabled)`
    const c: Committed = {
      done: state + releasedSoFar(affinities),
      undo: disabled.changed && !reEnabled ? `ipamctl pool update ${pool.name} --enable` : undefined,
    }
    if (err instanceof InterruptedError) throw interrupted(err.signal, c)
    err.message = `${err.message}; ${describeCommitted(c)}`
    throw err
  }
  const deleted = new Set(affinities.filter((a) => a.result === 'deleted-block').map((a) => a.block))
  return {
    pool,
    disables: disabled.changed,
    affinities,
    blocksLeft: await blocksLeft(ctx, pool, deleted),
    affinitiesReleased: affinities.length,
  }
}

function releasedSoFar(affinities: readonly AffinityStep[]): string {
  if (affinities.length === 0) return ''
  return `; ${affinities.length} block affinit${affinities.length === 1 ? 'y was' : 'ies were'} already released (harmless: those blocks are just unowned now, their addresses stay allocated and hosts claim new blocks as needed)`
}

/** Blocks of a pool, for reporting what a delete leaves behind. */
export async function poolBlockCount(ctx: Ctx, pool: Pool): Promise<number> {
  const cidrs = (await ctx.store.listKeys(keys.blockPrefix(pool.cidr.family))).map(parseBlockKey)
  return cidrs.filter((c) => c && containsCidr(pool.cidr, c)).length
}
