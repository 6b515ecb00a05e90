// `ipam split` (docs/calico.md#ipam-split): replace one pool by 2^k equal children that carry its spec. Upstream
// does it in three requests (disable, create children, delete); a crash between them leaves overlapping
// or missing pools, so here the whole replacement is one guarded transaction (docs/calico.md#atomic-writes).
import {ConflictError, NotFoundError, ValidationError} from '../errors.js'
import {checkpoint, NOTHING_COMMITTED} from '../interrupt.js'
import {bitsOf, formatCidr, parseCidr, sameCidr, subnet} from '../net/cidr.js'
import {keys} from '../store/keys.js'
import type {KeyValue} from '../store/store.js'
import {clusterInfoKey, getClusterInfo} from './cluster-info.js'
import type {Ctx} from './context.js'
import {listPools} from './context.js'
import {decodePool, encodePool, newPool, type Pool} from './pool.js'

/**
 * etcd refuses a transaction with more than 128 operations (compares and puts are counted separately).
 * A split writes NUMBER children plus one delete and guards NUMBER + 2 keys, so 64 is the largest
 * power of 2 that fits; anything above 100 is refused up front with a message saying how to proceed.
 */
export const MAX_SPLIT = 100

const MAX_NAME = 253

export const NO_POOL_GIVEN = 'no name or CIDR provided. Provide a name or CIDR to denote the IP pool to split'
export const NOT_LOCKED =
  'datastore is not locked. Run the `ipamctl datastore lock` command in order split the IP pools'

export interface SplitRequest {
  name?: string
  cidr?: string
  /** As typed by the user; validated here so the library gives the same message to every caller. */
  number: string | number
}

export interface SplitPlan {
  old: Pool
  children: Pool[]
  /** What the plan was computed from; the commit fails if any of it changed since. */
  readonly seen: {pool: KeyValue; lockRevision: bigint}
}

/** Upstream's child name; the old name is shortened so the result stays a valid resource name. */
export function childName(oldName: string, index: number, count: number): string {
  const full = `split-${oldName}-${index}`
  if (full.length <= MAX_NAME) return full
  // Upstream cuts to 245, which fits only one-digit indices; cutting by the widest index keeps every
  // child of a 16..64-way split within 253 characters too (and equals 245 for up to 10 children).
  const keep = Math.min(245, MAX_NAME - 'split-'.length - 1 - String(count - 1).length)
  return `split-${oldName.slice(0, keep)}-${index}`
}

function parseNumber(n: string | number): number {
  const v = typeof n === 'number' ? n : /^\d+$/.test(n.trim()) ? Number(n.trim()) : NaN
  if (!Number.isSafeInteger(v) || v <= 1 || (v & (v - 1)) !== 0) {
    throw new ValidationError(`number to split CIDR into is not a valid power of 2: ${n}`)
  }
  return v
}

/** Pure: the children of `old`, in address order, with its spec, enabled, and fresh metadata. */
export function splitChildren(old: Pool, number: number, now: Date): Pool[] {
  const parts = Math.log2(number)
  const prefix = old.cidr.prefix + parts
  if (prefix > bitsOf(old.cidr.family)) {
    throw new ValidationError(`the CIDR ${old.spec.cidr} is not large enough to be split into ${number} parts`)
  }
  if (prefix > old.spec.blockSize) {
    throw new ValidationError(
      `cannot split IP pool ${old.name} into ${number} parts: each would be a /${prefix}, smaller than the pool's block size /${old.spec.blockSize}`,
    )
  }
  return Array.from({length: number}, (_, i) =>
    // Labels and other metadata are not copied: upstream builds the children with fresh metadata.
    newPool(
      {
        ...old.spec,
        name: childName(old.name, i, number),
        cidr: formatCidr(subnet(old.cidr, prefix, BigInt(i))),
        disabled: false,
      },
      now,
    ),
  )
}

/** Every check of `ipam split` (docs/calico.md#ipam-split), reading but never writing; the result is what `commitSplit` will write. */
export async function planSplit(ctx: Ctx, req: SplitRequest): Promise<SplitPlan> {
  if (!req.name && !req.cidr) throw new ValidationError(NO_POOL_GIVEN)
  // Bad input is reported before anything about the datastore's state.
  const number = parseNumber(req.number)
  if (number > MAX_SPLIT) {
    throw new ValidationError(
      `cannot split into ${number} pools in one step: the datastore takes at most 128 operations per transaction; split into 64 or fewer, then split the children`,
    )
  }
  const wanted = req.cidr ? tryCidr(req.cidr) : undefined
  // Host bits set: refused as `pool create` refuses them, rather than splitting the pool the masked CIDR names.
  if (wanted && req.cidr) parseCidr(req.cidr, {strict: true})
  // Only an explicit datastoreReady=false is a lock (a missing record is unlocked), as upstream reads it.
  const info = await getClusterInfo(ctx)
  if (info?.datastoreReady !== false) throw new ConflictError(NOT_LOCKED)
  const old = (await listPools(ctx)).find(
    (p) =>
      (!req.name || p.name === req.name) &&
      (!req.cidr || p.spec.cidr === req.cidr || (wanted !== undefined && sameCidr(p.cidr, wanted))),
  )
  if (!old)
    throw new NotFoundError(`unable to find IP pool ${req.name ?? ''} covering the specified CIDR ${req.cidr ?? ''}`)
  const children = splitChildren(old, number, ctx.clock.now())
  const pool = await ctx.store.get(keys.pool(old.name))
  if (!pool) throw new NotFoundError(`IP pool ${old.name} not found`)
  for (const c of children) {
    if (await ctx.store.get(keys.pool(c.name)))
      throw new ConflictError(`cannot split IP pool ${old.name}: IP pool ${c.name} already exists`)
  }
  return {old: decodePool(pool.value), children, seen: {pool, lockRevision: BigInt(info.revision)}}
}

/**
 * Upstream's sequence is disable old → create children → delete old (no affinity release: existing
 * blocks and their affinities now fall inside a child). Inside one transaction the intermediate
 * "disabled" state is never visible, so it is not written; the guards make the commit fail, changing
 * nothing, if the pool, the lock or any child name changed since planning.
 */
export async function commitSplit(ctx: Ctx, plan: SplitPlan): Promise<void> {
  const {pool, lockRevision} = plan.seen
  const conditions = [
    {key: pool.key, modRevision: pool.modRevision},
    // An unlock between planning and commit bumps this revision, so the split then changes nothing.
    {key: clusterInfoKey(), modRevision: lockRevision},
    ...plan.children.map((c) => ({key: keys.pool(c.name), absent: true as const})),
  ]
  const ops = [...plan.children.map((c) => ({put: keys.pool(c.name), value: encodePool(c)})), {delete: pool.key}]
  // The whole split is this one transaction: an interrupt waits for it.
  await checkpoint(ctx, NOTHING_COMMITTED)
  const r = await ctx.store.txn(conditions, ops)
  if (!r.succeeded) {
    throw new ConflictError(
      `IP pool ${plan.old.name}, the datastore lock or a child pool changed while splitting; nothing was changed, run the command again`,
    )
  }
}

/** What the split reports: upstream's wording, one line each. Rendered from the plan, for the real run and `--dry-run` alike. */
export function splitLines(plan: SplitPlan): string[] {
  return [
    `IP Pool ${plan.old.name} was successfully split into ${plan.children.length} smaller pools.`,
    ...plan.children.map((c) => `Created ${c.name} with CIDR ${c.spec.cidr}.`),
    'Please refer to the documentation for final steps.',
  ]
}

export async function splitPool(ctx: Ctx, req: SplitRequest): Promise<SplitPlan> {
  const plan = await planSplit(ctx, req)
  await commitSplit(ctx, plan)
  return plan
}

function tryCidr(text: string) {
  try {
    return parseCidr(text)
  } catch {
    return undefined
  }
}
