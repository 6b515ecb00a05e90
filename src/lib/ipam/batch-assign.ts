// Auto-assign for many requests of one host at once (the per-node agent's batches). Addresses for every
// request that fits come from the host's confirmed affine blocks, ONE guarded transaction per block (the
// block and every handle it serves), instead of one transaction per request racing the others for the same
// block. Whatever a batch cannot serve that way (no affine block yet, blocks full, a pending affinity, another
// pool selection) is finished by plain autoAssign, request by request, so results are those of autoAssign:
// same pools, same blocks in the same order, same claim/borrow rules and messages.
import type {Cidr, Family} from '../net/cidr.js'
import {keys} from '../store/keys.js'
import {type Condition, guardFor, type KeyValue} from '../store/store.js'
import {
  type Affine,
  affineIn,
  assignedIps,
  type AutoAssignArgs,
  autoAssign,
  type FamilyResult,
  familySetup,
  type FamilySetup,
  ownerAttribute,
  rememberSteady,
  type ServedFrom,
  steadyAssign,
  steadySlot,
  validateRequest,
} from './autoassign.js'
import {hasReleasedAt, takeOrdinals} from './block.js'
import {blockFrom, type Ctx, loadBlock, withRetry, WriteBatch} from './context.js'
import {releaseIfEmpty} from './consistent-affinity.js'
import {ensureNode} from './node.js'
import {decodeAffinity} from './records.js'
import {rememberBlocks} from './recent-blocks.js'

/** Handles per block transaction: with the block that is ≤ 100 operations, below etcd's default limit of 128. */
export const MAX_HANDLES_PER_TXN = 99

export type BatchOutcome = {ok: {v4: FamilyResult; v6: FamilyResult}} | {error: unknown}

export interface BatchHooks {
  /** One block transaction committed for `requests` requests. */
  onBlockTxn?: (requests: number) => void
}

interface Item {
  readonly args: AutoAssignArgs
  readonly result: {4: FamilyResult; 6: FamilyResult}
  /** Families autoAssign has had its turn at: whatever is still missing then is a shortfall, not a retry. */
  readonly finished: Set<Family>
  error?: unknown
}

/** The next request still short of family `f` that nothing failed; done ones leave the line. */
function next(items: readonly Item[], f: Family): Item | undefined {
  return items.find((it) => it.error === undefined && remaining(it, f) > 0 && !it.finished.has(f))
}

const want = (it: Item, f: Family): number => (f === 4 ? it.args.num4 : it.args.num6)
const remaining = (it: Item, f: Family): number => it.result[f].requested - it.result[f].ips.length

/** Requests that may share a batch for family `f`: same host and the same pool selection inputs. */
function groupKey(a: AutoAssignArgs, f: Family): string {
  const labels = Object.entries(a.namespaceLabels ?? {}).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0))
  return JSON.stringify([
    a.host,
    f === 4 ? (a.pools4 ?? []) : (a.pools6 ?? []),
    a.pools ?? [],
    a.maxBlocksPerHost ?? 0,
    a.use ?? 'Workload',
    labels,
  ])
}

export async function autoAssignBatch(
  ctx: Ctx,
  requests: readonly AutoAssignArgs[],
  hooks: BatchHooks = {},
): Promise<BatchOutcome[]> {
  const items: Item[] = requests.map((args) => ({
    args,
    finished: new Set<Family>(),
    result: {4: {requested: args.num4, ips: [], messages: []}, 6: {requested: args.num6, ips: [], messages: []}},
  }))
  for (const it of items) {
    try {
      validateRequest(it.args)
    } catch (err) {
      it.error = err
    }
  }
  // As autoAssign: all of IPv4 first, then IPv6; a request that failed in IPv4 gets no IPv6.
  for (const f of [4, 6] as const) {
    const groups = new Map<string, Item[]>()
    for (const it of items) {
      if (it.error !== undefined || want(it, f) === 0) continue
      const k = groupKey(it.args, f)
      groups.set(k, [...(groups.get(k) ?? []), it])
    }
    const fill = async () => {
      for (const group of groups.values()) await fillGroup(ctx, group, f, hooks)
    }
    await fill()
    for (let it = next(items, f); it; it = next(items, f)) {
      const before = it.result[f].ips.length
      it.finished.add(f)
      try {
        const r = await autoAssign(ctx, {
          ...it.args,
          num4: f === 4 ? remaining(it, f) : 0,
          num6: f === 6 ? remaining(it, f) : 0,
        })
        it.result[f].ips.push(...r[f === 4 ? 'v4' : 'v6'].ips)
        it.result[f].messages.push(...r[f === 4 ? 'v4' : 'v6'].messages)
      } catch (err) {
        it.error = err
      }
      // It found room (typically a block it just claimed): the others share that in one transaction again.
      // When it found none, the others are left to autoAssign one by one, with its messages.
      if (it.result[f].ips.length > before && next(items, f)) await fill()
    }
  }
  return items.map((it) => (it.error !== undefined ? {error: it.error} : {ok: {v4: it.result[4], v6: it.result[6]}}))
}

/** Serve what the group's confirmed affine blocks can, in affinity key order. */
async function fillGroup(ctx: Ctx, group: Item[], f: Family, hooks: BatchHooks): Promise<void> {
  const args = group[0]!.args
  const requested = f === 4 ? args.pools4 : args.pools6
  // The steady state (docs/design.md#steady-state-allocation): the whole group in one transaction, no read.
  const slot = steadySlot(args, f, requested)
  const waiting = group.filter((it) => it.error === undefined && remaining(it, f) > 0 && !it.finished.has(f))
  if (waiting.length === 0) return
  const reqs = waiting.map((it) => ({handle: it.args.handle, attrs: it.args.attrs, count: remaining(it, f)}))
  try {
    const served = await steadyAssign(ctx, args.host, slot, reqs)
    if (served) {
      for (const [i, it] of waiting.entries()) it.result[f].ips.push(...served[i]!)
      hooks.onBlockTxn?.(waiting.length)
      return
    }
  } catch (err) {
    for (const it of waiting) it.error = err
    return
  }
  let setup: FamilySetup
  try {
    const handles = group.slice(0, MAX_HANDLES_PER_TXN).map((it) => it.args.handle)
    setup = await familySetup(ctx, args, f, requested, handles)
  } catch (err) {
    for (const it of group) it.error = err
    return
  }
  await releaseIfEmpty(ctx, group[0]!.args.host, setup.deselected)
  let allocated = false
  // What the setup request read, usable by the first block attempt only: any write may change it.
  const ahead = new Map(setup.ahead)
  const used: Cidr[] = []
  // The blocks passed over so far, as read (docs/design.md#steady-state-allocation): undefined once one cannot
  // be guarded (written to, or with an address cooling down, which frees itself with no write).
  let passed: Condition[] | undefined = []
  let served: ServedFrom | undefined
  for (const a of affineIn(setup.affinityKeys, setup.pools)) {
    used.push(a.cidr)
    const pending = group.filter((it) => it.error === undefined && remaining(it, f) > 0 && !it.finished.has(f))
    if (pending.length === 0) break
    let gave = false
    let read: BlockRead | undefined
    for (let i = 0; i < pending.length; i += MAX_HANDLES_PER_TXN) {
      const chunk = pending.slice(i, i + MAX_HANDLES_PER_TXN)
      try {
        const r = await fillFromBlock(ctx, setup, a, chunk, f, hooks, ahead)
        gave ||= r.gave
        read = r
      } catch (err) {
        for (const it of chunk) it.error = err
        passed = undefined
      }
    }
    const done = group.every((it) => it.error === undefined && remaining(it, f) === 0)
    if (passed && read && pending.length <= MAX_HANDLES_PER_TXN) {
      if (gave && done) served = {affinity: a, affKv: read.affKv, passed}
      else if (!gave && !read.coolingDown)
        passed.push(guardFor(a.key, read.affKv), guardFor(keys.block(a.cidr), read.blockKv))
      else passed = undefined
    } else passed = undefined
    allocated ||= gave
  }
  rememberBlocks(ctx.store, args.host, f, used)
  rememberSteady(ctx, slot, setup, served)
  // As autoAssign: the Node record is created on first use, once something was allocated for it.
  if (allocated && !setup.nodeExists) await ensureNode(ctx.store, args.host, ctx.clock.now(), {seenAbsent: true})
}

/**
 * One transaction: block + the handles of `chunk`. Only a confirmed affinity whose block exists and is still
 * ours is used here; the repairs autoAssign makes for the other cases are left to it.
 */
async function fillFromBlock(
  ctx: Ctx,
  setup: FamilySetup,
  a: Affine,
  chunk: Item[],
  f: Family,
  hooks: BatchHooks,
  ahead: Map<string, KeyValue | undefined>,
): Promise<BlockRead & {gave: boolean}> {
  const host = chunk[0]!.args.host
  return withRetry(ctx, async () => {
    const batch = new WriteBatch(ctx)
    // The setup request's values when it read everything this attempt needs (the block was guessed from the
    // host's recent use); else read them now. Either way the commit is guarded on what was read.
    const blockKey = keys.block(a.cidr)
    const handleKeys = chunk.map((it) => it.args.handle).flatMap((h) => (h === undefined ? [] : [keys.handle(h)]))
    const fromAhead = ahead.has(a.key) && ahead.has(blockKey) && handleKeys.every((k) => ahead.has(k))
    let affKv: KeyValue | undefined
    let loaded: ReturnType<typeof blockFrom>
    if (fromAhead) {
      affKv = ahead.get(a.key)
      loaded = blockFrom(ctx, ahead.get(blockKey), setup.cfg.ipCooldownSeconds)
      for (const it of chunk)
        if (it.args.handle !== undefined) batch.knownHandle(it.args.handle, ahead.get(keys.handle(it.args.handle)))
    } else {
      for (const it of chunk) batch.prefetchHandle(it.args.handle)
      ;[affKv, loaded] = await Promise.all([ctx.store.get(a.key), loadBlock(ctx, a.cidr, setup.cfg.ipCooldownSeconds)])
    }
    ahead.clear()
    const read = {affKv, blockKv: loaded?.kv, coolingDown: loaded?.kv !== undefined && hasReleasedAt(loaded.kv.value)}
    if (!affKv || !loaded || decodeAffinity(affKv.value) !== 'confirmed' || loaded.block.affinity !== `host:${host}`)
      return {...read, gave: false}
    const block = loaded.block
    const skip = setup.reserved.skipFor(block.cidr)
    const taken = chunk.map((it) =>
      takeOrdinals(block, remaining(it, f), ownerAttribute(host, it.args.handle, it.args.attrs), skip),
    )
    if (taken.every((t) => t.length === 0)) return {...read, gave: false}
    batch.putBlock(block, loaded.kv)
    for (const [i, it] of chunk.entries()) batch.countHandle(it.args.handle, block.cidr, taken[i]!.length)
    await batch.commit()
    hooks.onBlockTxn?.(taken.filter((t) => t.length > 0).length)
    for (const [i, it] of chunk.entries()) it.result[f].ips.push(...assignedIps(block, taken[i]!))
    return {...read, gave: true}
  })
}

/** What fillFromBlock read of a block and its affinity (undefined: absent). */
interface BlockRead {
  readonly affKv: KeyValue | undefined
  readonly blockKv: KeyValue | undefined
  /** The block holds an address cooling down: it frees itself with time, no write marks it. */
  readonly coolingDown: boolean
}
