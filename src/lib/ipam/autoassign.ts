// AutoAssign: addresses from the host's affine blocks, then newly claimed blocks, then (unless strict
// affinity) borrowed from other blocks. Every write is one guarded transaction of block + affinity +
// handle, so a crash or a lost race never leaves half an allocation behind.
import {ConflictError, InterruptedError, NotFoundError, RevisionConflict, ValidationError} from '../errors.js'
import {checkpoint, type Committed, interrupted, NOTHING_COMMITTED} from '../interrupt.js'
import {
  type Cidr,
  containsCidr,
  type Family,
  formatCidr,
  formatIp,
  sameCidr,
  subnetCount,
  subnetIndex,
} from '../net/cidr.js'
import {keys, parseAffinityKey, parseBlockKey} from '../store/keys.js'
import {type Condition, guardFor, type KeyValue, readMany, type Store} from '../store/store.js'
import {
  type Attribute,
  type Block,
  decodeBlock,
  encodeBlock,
  garbageCollect,
  isEmpty,
  newBlock,
  takeOrdinals,
} from './block.js'
import {blockWalk, startIndex, walkOrder} from './blockgen.js'
import {
  blockFrom,
  configFrom,
  type Ctx,
  lastWritten,
  MAX_RETRIES_MESSAGE,
  poolsFrom,
  withRetry,
  WriteBatch,
} from './context.js'
import {deselectedBlocks, releaseIfEmpty} from './consistent-affinity.js'
import {decodeNode, ensureNode, validateHandleId, validateHostName, validateLabels} from './node.js'
import type {AllowedUse, Pool} from './pool.js'
import {findPool, selectPools} from './pools-select.js'
import {type AffinityState, decodeAffinity, encodeAffinity, type IpamConfig} from './records.js'
import {recentBlocks, rememberBlocks} from './recent-blocks.js'
import {NETNS_ATTRIBUTE} from './ownership.js'
import {decodeReservation, reservedMatcher, type ReservedMatcher} from './reservation.js'
import {nanoTimestamp} from '../codec/gotime.js'

export const DEFAULT_MAX_BLOCKS_PER_HOST = 20
/** Another host's empty block may be taken over once its claim is this old. */
export const EMPTY_BLOCK_MIN_RECLAIM_AGE_MS = 60_000
/** Candidate blocks checked one by one before falling back to listing every block key. */
const CLAIM_PROBES = 4

export interface AssignedIp {
  readonly address: string
  readonly family: Family
  /** The address with its block's prefix length, as the CNI result reports it (e.g. 10.65.79.5/26). */
  readonly cidr: string
  readonly block: string
}

export interface FamilyResult {
  readonly requested: number
  readonly ips: AssignedIp[]
  /** Why fewer than `requested` were assigned (upstream's PartialFulfillmentError parts). */
  readonly messages: string[]
}

export interface AutoAssignArgs {
  host: string
  num4: number
  num6: number
  handle?: string
  attrs?: Record<string, string>
  /** Pool names or CIDRs; empty means "pools whose nodeSelector matches the host". */
  pools4?: string[]
  pools6?: string[]
  /** Pool names or CIDRs of either family, sorted into pools4/pools6 by the pool they name. */
  pools?: string[]
  /** Per-request block cap (upstream's windows_use_single_network path); 0 = use the config. */
  maxBlocksPerHost?: number
  use?: AllowedUse
  /**
   * The labels of the namespace the addresses are for, matched against pools' namespaceSelector (upstream
   * reads them from the Kubernetes Namespace); undefined is the empty set. Not used with requested pools.
   */
  namespaceLabels?: Record<string, string>
  /** Told each block this request claimed for the host (the plugins' log); the agent's batches do not call it. */
  onBlockClaimed?: (block: string, replacedOwner?: string) => void
}

export function shortfall(r: FamilyResult, family: Family): string | undefined {
  if (r.ips.length >= r.requested) return undefined
  return [`Assigned ${r.ips.length} out of ${r.requested} requested IPv${family} addresses`, ...r.messages].join('; ')
}

export function blockCap(cfg: IpamConfig, requestMax = 0): number {
  const global = cfg.maxBlocksPerHost
  let cap = global > 0 && requestMax > 0 && requestMax > global ? global : requestMax === 0 ? global : requestMax
  if (cap === 0) cap = DEFAULT_MAX_BLOCKS_PER_HOST
  return cap
}

/** The addresses of `ordinals` in `block`, as results report them. */
export function assignedIps(block: Block, ordinals: readonly number[]): AssignedIp[] {
  return ordinals.map((o) => {
    const address = formatIp(block.cidr.family, block.cidr.base + BigInt(o))
    return {address, family: block.cidr.family, cidr: `${address}/${block.cidr.prefix}`, block: formatCidr(block.cidr)}
  })
}

/**
 * Attribute keys the CNI plugins write (node-ipam/workload-ids.ts `allocationAttrs`) and that are read back to decide whose
 * an address is: `node` (borrowed views, `node list`, `node remove --release-addresses`), `timestamp` (gc's grace
 * period), `pod` and `namespace` (Calico's own garbage collector, which can share an etcd datastore with us, takes
 * an address carrying both as that pod's and frees it once the pod is gone), and `ipamctl.io/netns` (marks a
 * non-Kubernetes attachment's allocation as a workload's, which `ipam gc` may release: ipam/ownership.ts). A
 * user-given value for one of them would forge that record, so the CLI refuses them (`refuseReservedAttributes`).
 * Other keys, `type` included (tunnel addresses assigned by hand), stay free.
 */
export const RESERVED_ATTRIBUTE_KEYS: readonly string[] = ['node', 'timestamp', 'pod', 'namespace', NETNS_ATTRIBUTE]

/** For attributes typed by a user (`ipam assign --attr`): none may use a reserved key. */
export function refuseReservedAttributes(attrs: Readonly<Record<string, string>>): void {
  for (const k of Object.keys(attrs)) {
    if (RESERVED_ATTRIBUTE_KEYS.includes(k)) {
      throw new ValidationError(
        `attribute key ${JSON.stringify(k)} is reserved (${RESERVED_ATTRIBUTE_KEYS.join(', ')} are set by ipamctl itself); choose another key`,
      )
    }
  }
}

/**
 * For every caller, plugins and the agent included: a `node` attribute, when given, must name the host the
 * address is assigned to; a different value would file the address under a node that does not hold it. The
 * plugins (and the agent, which relays their requests over a socket only its owner and group may open)
 * legitimately send the other reserved keys, taken from the CNI arguments, so those are not refused here.
 */
export function validateOwnerAttributes(host: string, attrs: Readonly<Record<string, string>> | undefined): void {
  const node = attrs?.node
  if (node !== undefined && node !== host) {
    throw new ValidationError(
      `attribute node=${JSON.stringify(node)} does not match the host ${JSON.stringify(host)} the address is assigned to`,
    )
  }
}

export function ownerAttribute(host: string, handle?: string, attrs?: Record<string, string>): Attribute {
  return {handle_id: handle, secondary: {node: host, ...attrs}}
}

/** The request checks autoAssign makes before touching the datastore (shared with batch-assign.ts). */
export function validateRequest(
  args: Pick<AutoAssignArgs, 'num4' | 'num6' | 'host' | 'handle' | 'attrs' | 'namespaceLabels'>,
): void {
  for (const [n, what] of [
    [args.num4, 'IPv4'],
    [args.num6, 'IPv6'],
  ] as const) {
    if (!Number.isInteger(n) || n < 0 || n > 65536)
      throw new ValidationError(`the number of ${what} addresses must be an integer from 0 to 65536`)
  }
  if (args.num4 + args.num6 === 0)
    throw new ValidationError('nothing to assign: ask for at least one IPv4 or IPv6 address')
  validateHostName(args.host)
  validateHandleId(args.handle)
  validateOwnerAttributes(args.host, args.attrs)
  validateLabels(args.namespaceLabels ?? {}, 'namespace label')
}

export async function autoAssign(ctx: Ctx, args: AutoAssignArgs): Promise<{v4: FamilyResult; v6: FamilyResult}> {
  validateRequest(args)
  const v4: FamilyResult = {requested: args.num4, ips: [], messages: []}
  const v6: FamilyResult = {requested: args.num6, ips: [], messages: []}
  const progress = (): Committed => assignedSoFar(args, [...v4.ips, ...v6.ips])
  try {
    await assignFamily(ctx, args, 4, v4, args.pools4, progress)
    await assignFamily(ctx, args, 6, v6, args.pools6, progress)
  } catch (err) {
    if (!(err instanceof InterruptedError)) throw err
    // Stopped between two block transactions: what is committed stays, with the Node record a completed
    // request would have written for it (pools select by the node's labels, so it must not be missing).
    if (v4.ips.length + v6.ips.length > 0) await ensureNode(ctx.store, args.host, ctx.clock.now())
    throw interrupted(err.signal, progress())
  }
  return {v4, v6}
}

/** What an interrupted request leaves: its addresses, and the release that gives them back. */
function assignedSoFar(args: AutoAssignArgs, ips: readonly AssignedIp[]): Committed {
  if (ips.length === 0) return NOTHING_COMMITTED
  const what = `assigned ${ips.length} of ${args.num4 + args.num6} addresses to host ${args.host}`
  if (args.handle !== undefined)
    return {done: `${what} under handle ${args.handle}`, undo: `ipamctl ipam release --handle ${args.handle} --yes`}
  return {
    done: `${what} (no handle)`,
    undo: `ipamctl ipam release ${ips.map((i) => `--ip ${i.address}`).join(' ')} --yes`,
  }
}

/** The requested pools of one family; asking for addresses of a family none of them has is an error. */
function poolsOfFamily(pools: readonly Pool[], refs: readonly string[], family: Family): string[] {
  const mine = refs.filter((ref) => {
    const p = findPool(pools, ref)
    if (!p) throw new NotFoundError(`the given pool (${ref}) does not exist, or is not enabled`)
    return p.cidr.family === family
  })
  if (mine.length === 0) {
    const [want, got] = family === 4 ? ['IPv4', 'IPv6'] : ['IPv6', 'IPv4']
    throw new ValidationError(
      `IPv${family} addresses were requested but the given pools (${refs.join(', ')}) are all ${got}: add an ${want} pool or drop the ${want} count`,
    )
  }
  return mine
}

export interface Affine {
  readonly key: string
  readonly cidr: Cidr
}

/**
 * Values read ahead, in the first round trip. Each stays usable until this job writes something: the write
 * may have changed it, and a stale value would only make the next guarded write fail and retry.
 */
class ReadAhead {
  private readonly kvs = new Map<string, KeyValue | undefined>()
  /** Prefixes listed in full: a key under one of them that is not in `kvs` was read as absent. */
  private readonly listed: string[] = []

  set(key: string, kv: KeyValue | undefined): void {
    this.kvs.set(key, kv)
  }

  setListed(prefix: string): void {
    this.listed.push(prefix)
  }

  private known(key: string): boolean {
    return this.kvs.has(key) || this.listed.some((p) => key.startsWith(p))
  }

  /** The values of all of `keys` if every one was read ahead, else undefined. */
  get(keys: readonly string[]): (KeyValue | undefined)[] | undefined {
    return keys.every((k) => this.known(k)) ? keys.map((k) => this.kvs.get(k)) : undefined
  }

  clear(): void {
    this.kvs.clear()
    this.listed.length = 0
  }
}

/** What an allocation of one family reads before it starts: one request (one revision on etcd). */
export interface FamilySetup {
  readonly cfg: IpamConfig
  readonly nodeExists: boolean
  readonly pools: Pool[]
  /** This host's affinity keys of the family (all pools, key order). */
  readonly affinityKeys: string[]
  readonly reserved: ReservedMatcher
  /** What that request also read (the handle, the affinities, the blocks guessed from recent use), by key. */
  readonly ahead: ReadonlyMap<string, KeyValue | undefined>
  /** The prefix of this host's affinities of the family, listed in full by that request. */
  readonly affinityPrefix: string
  /** This host's blocks in enabled pools that no longer select it: released first, if empty. */
  readonly deselected: Cidr[]
  /** The highest mod-revision among the listed affinities (0 if none): a claim is guarded on none newer. */
  readonly affinityRevision: bigint
  /**
   * Guards that hold exactly while what this setup read still stands: the IPAM config and Node keys as read,
   * every pool and reservation as read (a deleted one fails its own guard) and nothing newer under their prefixes
   * or the host's affinities (a created or changed one fails the prefix guard). See `steadyAssign`.
   */
  readonly guards: readonly Condition[]
}

/** `handles`: more handles to read in the same request (a batch's other requests). */
export async function familySetup(
  ctx: Ctx,
  args: AutoAssignArgs,
  family: Family,
  requested?: string[],
  handles: readonly (string | undefined)[] = [],
): Promise<FamilySetup> {
  const use = args.use ?? 'Workload'
  validateHostName(args.host)
  // One request for everything the allocation depends on (one revision on etcd), including the handle it
  // will update and the blocks this host allocated from last time, so that the common case, allocating
  // from a block this process used before, needs no other read before its write.
  const guessed = recentBlocks(ctx.store, args.host, family).map((c) => keys.block(c))
  const handleKeys = [...new Set([args.handle, ...handles])].flatMap((h) => (h === undefined ? [] : [keys.handle(h)]))
  const read = await readMany(ctx.store, {
    gets: [keys.ipamConfig(), keys.node(args.host), ...handleKeys, ...guessed],
    lists: [
      keys.resourcePrefix('ippools'),
      keys.hostAffinityPrefix(args.host, family),
      keys.resourcePrefix('ipreservations'),
    ],
  })
  const [cfgKv, nodeKv, ...extra] = read.gets
  const [poolKvs, affinityKvs, reservationKvs] = read.lists as [KeyValue[], KeyValue[], KeyValue[]]
  const cfg = configFrom(cfgKv)
  const node = nodeKv && decodeNode(nodeKv.value)
  const allPools = poolsFrom(poolKvs)
  if (args.pools?.length) requested = [...(requested ?? []), ...poolsOfFamily(allPools, args.pools, family)]
  const pools = selectPools({
    pools: allPools,
    family,
    requested,
    nodeLabels: node?.labels ?? {},
    namespaceLabels: args.namespaceLabels,
    host: args.host,
    use,
  })
  const reserved = reservedMatcher(reservationKvs.map((kv) => decodeReservation(kv.value)))
  const ahead = new Map<string, KeyValue | undefined>()
  for (const [i, key] of [...handleKeys, ...guessed].entries()) ahead.set(key, extra[i])
  for (const kv of affinityKvs) ahead.set(kv.key, kv)
  const affinityPrefix = keys.hostAffinityPrefix(args.host, family)
  const affinityKeys = affinityKvs.map((kv) => kv.key)
  const deselected = node ? deselectedBlocks(affinityKeys, pools, allPools, node.labels) : []
  const affinityRevision = newest(affinityKvs)
  const guards: Condition[] = [
    guardFor(keys.ipamConfig(), cfgKv),
    guardFor(keys.node(args.host), nodeKv),
    ...[...poolKvs, ...reservationKvs].map((kv) => guardFor(kv.key, kv)),
    {prefix: keys.resourcePrefix('ippools'), notAfter: newest(poolKvs)},
    {prefix: keys.resourcePrefix('ipreservations'), notAfter: newest(reservationKvs)},
    {prefix: affinityPrefix, notAfter: affinityRevision},
  ]
  return {
    cfg,
    nodeExists: node !== undefined,
    pools,
    affinityKeys,
    reserved,
    ahead,
    affinityPrefix,
    deselected,
    affinityRevision,
    guards,
  }
}

const newest = (kvs: readonly KeyValue[]): bigint =>
  kvs.reduce((m, kv) => (kv.modRevision > m ? kv.modRevision : m), 0n)

/** This host's affinities inside the allowed pools, in key order (as upstream tries them). */
export function affineIn(affinityKeys: readonly string[], pools: readonly Pool[]): Affine[] {
  const out: Affine[] = []
  for (const key of affinityKeys) {
    const parsed = parseAffinityKey(key)
    if (parsed && pools.some((p) => containsCidr(p.cidr, parsed.cidr))) out.push({key, cidr: parsed.cidr})
  }
  return out
}

async function assignFamily(
  ctx: Ctx,
  args: AutoAssignArgs,
  family: Family,
  result: FamilyResult,
  requested: string[] | undefined,
  progress: () => Committed,
): Promise<FamilyResult> {
  if (result.requested === 0) return result
  const now = ctx.clock.now()
  const slot = steadySlot(args, family, requested)
  const steady = await steadyAssign(
    ctx,
    args.host,
    slot,
    [{handle: args.handle, attrs: args.attrs, count: result.requested}],
    progress,
  )
  if (steady) {
    result.ips.push(...steady[0]!)
    return result
  }
  const setup = await familySetup(ctx, args, family, requested)
  await checkpoint(ctx, progress())
  await releaseIfEmpty(ctx, args.host, setup.deselected)
  const job = new FamilyJob(ctx, setup.cfg, args, family, setup.pools, result, setup.reserved, progress)
  for (const [key, kv] of setup.ahead) job.ahead.set(key, kv)
  job.ahead.setListed(setup.affinityPrefix)
  await job.run(setup.affinityKeys, setup.affinityRevision)
  rememberBlocks(ctx.store, args.host, family, job.blocksRead)
  const first = firstAffine(setup)
  const fromFirstOnly =
    result.ips.length === result.requested &&
    job.blocksRead.length === 1 &&
    first !== undefined &&
    sameCidr(job.blocksRead[0]!, first.cidr)
  rememberSteady(
    ctx,
    slot,
    setup,
    fromFirstOnly ? {affinity: first, affKv: setup.ahead.get(first.key), passed: []} : undefined,
  )
  // The Node record is created on first use, but only once something was actually allocated for it.
  if (!setup.nodeExists && result.ips.length > 0) await ensureNode(ctx.store, args.host, now, {seenAbsent: true})
  return result
}

/**
 * The steady state of a long-running allocator (docs/design.md#steady-state-allocation): what the previous
 * request of the same shape (host, family, pools asked for, namespace labels, use, cap) read and decided, kept
 * when it was the plain case: the Node record existed, no block to give up, and every address came from the
 * host's first affine block. The next such request (or the agent's next batch) then makes one guarded
 * transaction and no read.
 */
interface Steady {
  /** What the setup read that the allocation itself uses (not what it read ahead: only the block is needed). */
  readonly cooldownSeconds: number
  readonly reserved: ReservedMatcher
  /** The setup's guards and that of the affinity of the block. */
  readonly guards: readonly Condition[]
  readonly blockKey: string
}

/** A setup with more guards (five plus one per pool and reservation) is not kept: a long transaction. */
const MAX_STEADY_GUARDS = 40
/** Requests served by one steady transaction at most (their handles are guarded too, within etcd's 128). */
export const MAX_STEADY_REQUESTS = 64
/** Request shapes remembered per store; the oldest is forgotten first. */
const MAX_STEADY = 256
const steadyByStore = new WeakMap<Store, Map<string, Steady>>()

/** What identifies a request's shape: everything its pool selection and block choice depend on. */
export function steadySlot(args: AutoAssignArgs, family: Family, requested: readonly string[] | undefined): string {
  const labels = Object.entries(args.namespaceLabels ?? {}).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0))
  const shape = [requested ?? [], args.pools ?? [], labels, args.use ?? 'Workload', args.maxBlocksPerHost ?? 0]
  return `${family} ${args.host} ${JSON.stringify(shape)}`
}

/**
 * Where a full-path allocation took every address it was asked for: one affine block (`affinity`, read at
 * `affKv`), after `passed`, the guards of the host's affine blocks tried before it that gave nothing (their
 * affinity and block as read: while both are unchanged, a full read would pass them over again).
 */
export interface ServedFrom {
  readonly affinity: Affine
  readonly affKv: KeyValue | undefined
  readonly passed: readonly Condition[]
}

/**
 * After a full-path allocation: keep `setup` for the next request of this shape when every address came from one
 * block (`served`), the only block written, the Node existed and no block was to be given up; otherwise forget
 * the shape.
 */
export function rememberSteady(ctx: Ctx, slot: string, setup: FamilySetup, served: ServedFrom | undefined): void {
  const mine = steadyByStore.get(ctx.store) ?? new Map<string, Steady>()
  steadyByStore.set(ctx.store, mine)
  mine.delete(slot)
  if (!served || !setup.nodeExists || setup.deselected.length > 0) return
  const guards = [...setup.guards, ...served.passed, guardFor(served.affinity.key, served.affKv)]
  if (guards.length > MAX_STEADY_GUARDS) return
  const blockKey = keys.block(served.affinity.cidr)
  if (!lastWritten(ctx.store, blockKey)) return
  mine.set(slot, {cooldownSeconds: setup.cfg.ipCooldownSeconds, reserved: setup.reserved, blockKey, guards})
  if (mine.size > MAX_STEADY) mine.delete(mine.keys().next().value!)
}

/** The host's first affine block in the allowed pools: the one every request tries first. */
export const firstAffine = (setup: FamilySetup): Affine | undefined => affineIn(setup.affinityKeys, setup.pools)[0]

/** One request of a steady-state transaction: `count` addresses for `handle`, with `attrs`. */
export interface SteadyRequest {
  readonly handle?: string
  readonly attrs?: Record<string, string>
  readonly count: number
}

/**
 * Serve `requests` of host `host` as the previous request of this shape was served, without reading: from the
 * block as this process last wrote it, in one transaction guarded on everything that request read
 * (`FamilySetup.guards`), on the block's revision and on each handle (absent, or as this process last wrote it).
 * All or nothing: undefined when there is no steady state, the block cannot hold every request in full, or a
 * guard was lost (something changed); the caller then takes the full path, which reads everything again. So a
 * commit here decides exactly what the full path would have decided.
 */
export async function steadyAssign(
  ctx: Ctx,
  host: string,
  slot: string,
  requests: readonly SteadyRequest[],
  /** What is committed so far, for a stop between transactions; undefined: no stop point here (the agent's batch). */
  progress?: () => Committed,
): Promise<AssignedIp[][] | undefined> {
  const mine = steadyByStore.get(ctx.store)
  const steady = mine?.get(slot)
  if (!mine || !steady || requests.length > MAX_STEADY_REQUESTS) return undefined
  mine.delete(slot) // kept again only by a success
  const loaded = blockFrom(ctx, lastWritten(ctx.store, steady.blockKey), steady.cooldownSeconds)
  if (!loaded || loaded.block.affinity !== `host:${host}`) return undefined
  const block = loaded.block
  const skip = steady.reserved.skipFor(block.cidr)
  const taken: number[][] = []
  for (const r of requests) {
    const got = takeOrdinals(block, r.count, ownerAttribute(host, r.handle, r.attrs), skip)
    // A block that cannot hold every request: the full path decides (the next block, or a claim).
    if (got.length < r.count) return undefined
    taken.push(got)
  }
  const batch = new WriteBatch(ctx)
  for (const g of steady.guards) batch.require(g)
  batch.putBlock(block, loaded.kv)
  for (const [i, r] of requests.entries()) {
    // A handle this process wrote last (e.g. the other family of the same request) is guarded at that write;
    // any other on being absent, as a new pod's handle is.
    if (r.handle !== undefined) batch.knownHandle(r.handle, lastWritten(ctx.store, keys.handle(r.handle)))
    batch.countHandle(r.handle, block.cidr, taken[i]!.length)
  }
  if (progress) await checkpoint(ctx, progress())
  try {
    await batch.commit()
  } catch (err) {
    if (err instanceof RevisionConflict) return undefined
    throw err
  }
  mine.set(slot, steady)
  return taken.map((t) => assignedIps(block, t))
}

class FamilyJob {
  private readonly affinity: string
  private readonly attr: Attribute
  private readonly tried = new Set<string>()
  private owned = 0
  private affinityRevision = 0n
  readonly ahead = new ReadAhead()
  /** Blocks this job read or created, in order: the ones its host's next request will probably read. */
  readonly blocksRead: Cidr[] = []

  constructor(
    private readonly ctx: Ctx,
    private readonly cfg: IpamConfig,
    private readonly args: AutoAssignArgs,
    private readonly family: Family,
    private readonly pools: Pool[],
    private readonly result: FamilyResult,
    private readonly reserved: ReservedMatcher,
    private readonly progress: () => Committed = () => NOTHING_COMMITTED,
  ) {
    this.affinity = `host:${args.host}`
    this.attr = ownerAttribute(args.host, args.handle, args.attrs)
  }

  private get remaining(): number {
    return this.result.requested - this.result.ips.length
  }

  private record(block: Block, ordinals: number[]): void {
    this.result.ips.push(...assignedIps(block, ordinals))
  }

  /** The host's affinities (as listed in the setup request, or listed now), counted against its block cap. */
  private async affine(listed?: {keys: string[]; revision: bigint}): Promise<Affine[]> {
    if (listed) {
      this.affinityRevision = listed.revision
      return affineIn(listed.keys, this.pools)
    }
    const kvs = await this.ctx.store.list(keys.hostAffinityPrefix(this.args.host, this.family))
    this.affinityRevision = newest(kvs)
    return affineIn(
      kvs.map((kv) => kv.key),
      this.pools,
    )
  }

  async run(affinityKeys: string[], affinityRevision: bigint): Promise<void> {
    const cap = blockCap(this.cfg, this.args.maxBlocksPerHost)
    let affine = await this.affine({keys: affinityKeys, revision: affinityRevision})
    this.owned = affine.length
    let noFreeBlocks = false
    let blockLimit = false
    for (let round = 0; this.remaining > 0; round++) {
      for (const a of affine) {
        if (this.remaining === 0) break
        if (this.tried.has(a.key)) continue
        this.tried.add(a.key)
        await this.assignAffine(a)
      }
      if (this.remaining === 0) break
      if (this.owned >= cap) {
        blockLimit = true
        break
      }
      if (!this.cfg.autoAllocateBlocks) {
        this.result.messages.push('automatic block allocation is disabled (autoAllocateBlocks is false)')
        break
      }
      const claim = await this.claimNewBlock()
      if (claim === 'none') {
        noFreeBlocks = true
        break
      }
      if (claim === 'claimed') this.owned++
      // On a lost race another process (perhaps on this very host) may have claimed the block for us.
      if (claim === 'raced' && round >= this.ctx.maxAttempts) throw new ConflictError(MAX_RETRIES_MESSAGE)
      if (this.remaining === 0) break
      affine = await this.affine()
      // Concurrent requests of this host may have claimed blocks meanwhile; they count against the cap.
      this.owned = affine.length
    }
    if (blockLimit) {
      this.result.messages.push(
        `Need to allocate an IPAM block but could not - limit of ${cap} blocks reached for this node`,
      )
      return
    }
    if (this.remaining === 0) return
    if (this.cfg.strictAffinity) {
      if (noFreeBlocks) this.result.messages.push('No more free affine blocks and strict affinity enabled')
      return
    }
    await this.borrow()
  }

  /**
   * `wanted` and the request's handle (which goes straight into `batch`) in one request, or from what was
   * read ahead when `useAhead` and all of them were.
   */
  private async read(batch: WriteBatch, wanted: string[], useAhead = false): Promise<(KeyValue | undefined)[]> {
    const handle = this.args.handle
    const all = handle === undefined ? wanted : [...wanted, keys.handle(handle)]
    const got = (useAhead && this.ahead.get(all)) || (await readMany(this.ctx.store, {gets: all})).gets
    batch.knownHandle(handle, got[wanted.length])
    return got.slice(0, wanted.length)
  }

  /** Every write of this job goes through here: after it, what was read ahead may be stale. */
  private async commit(batch: WriteBatch): Promise<void> {
    // Between two of this request's transactions: a requested stop happens here, never inside one.
    await checkpoint(this.ctx, this.progress())
    this.ahead.clear()
    await batch.commit()
  }

  /** Allocate from one of our blocks; re-drives a pending affinity and recreates a block lost mid-claim. */
  private async assignAffine(a: Affine): Promise<void> {
    this.blocksRead.push(a.cidr)
    await withRetry(this.ctx, async (attempt) => {
      const batch = new WriteBatch(this.ctx)
      // A retry follows a lost race, which means the values read ahead are stale.
      const [affKv, blockKv] = await this.read(batch, [a.key, keys.block(a.cidr)], attempt === 0)
      const loaded = blockFrom(this.ctx, blockKv, this.cfg.ipCooldownSeconds)
      if (!affKv) return
      const state = decodeAffinity(affKv.value)
      if (state === 'pendingDeletion') return
      let block: Block
      if (!loaded) {
        block = newBlock(a.cidr, this.affinity, this.ctx.clock.now(), nanoTimestamp(this.ctx.clock.now()))
      } else if (loaded.block.affinity !== this.affinity) {
        // The affinity outlived its block's ownership: drop it so it stops counting against our cap.
        await this.commit(batch.delete(a.key, affKv))
        this.owned--
        return
      } else {
        block = loaded.block
      }
      const taken = takeOrdinals(block, this.remaining, this.attr, this.reserved.skipFor(block.cidr))
      if (taken.length === 0 && loaded && state === 'confirmed') return
      batch.putBlock(block, loaded?.kv).countHandle(this.args.handle, block.cidr, taken.length)
      if (state !== 'confirmed') batch.put(a.key, encodeAffinity('confirmed'), affKv)
      await this.commit(batch)
      this.record(block, taken)
    })
  }

  /**
   * Find a block CIDR nobody has created yet (keys only: values are never read on this path,
   * docs/calico.md#claiming-a-new-block),
   * or failing that an empty block of another host claimed long enough ago, and claim it together with
   * the first allocations in one transaction.
   */
  private async claimNewBlock(): Promise<'claimed' | 'raced' | 'none'> {
    // In a sparsely used pool the host's first candidates are almost always free: probe a few directly so
    // the common claim costs O(1) round trips, and list keys only when the pools are dense.
    for (const pool of this.pools) {
      let probes = 0
      for (const cidr of blockWalk(pool.cidr, pool.spec.blockSize, this.args.host)) {
        if (++probes > CLAIM_PROBES) break
        // A wholly reserved block could never hand out an address, so it is never claimed.
        if (this.reserved.blockWhollyReserved(cidr)) continue
        if (!(await this.ctx.store.get(keys.block(cidr)))) return this.claim(cidr, undefined)
      }
    }
    const existing = new Set(await this.ctx.store.listKeys(keys.blockPrefix(this.family)))
    for (const pool of this.pools) {
      for (const cidr of blockWalk(pool.cidr, pool.spec.blockSize, this.args.host)) {
        if (!existing.has(keys.block(cidr)) && !this.reserved.blockWhollyReserved(cidr))
          return this.claim(cidr, undefined)
      }
    }
    return this.reclaimEmptyBlock()
  }

  private async claim(cidr: Cidr, replacing: {kv: KeyValue; owner?: string} | undefined): Promise<'claimed' | 'raced'> {
    const now = this.ctx.clock.now()
    const affKey = keys.affinity(this.args.host, cidr)
    const ownerKey = replacing?.owner ? keys.affinity(replacing.owner, cidr) : undefined
    const batch = new WriteBatch(this.ctx)
    // The host's own affinity (and the handle) are usually known from the first request, which listed all of
    // this host's affinities: a new claim then needs no read before its write.
    const [affKv, ownerKv] = await this.read(batch, ownerKey ? [affKey, ownerKey] : [affKey], true)
    const block = newBlock(cidr, this.affinity, now, nanoTimestamp(now))
    const taken = takeOrdinals(block, this.remaining, this.attr, this.reserved.skipFor(cidr))
    // A new (or replacing) block starts its own sequence, so it is put as is rather than via putBlock.
    batch.put(keys.block(cidr), encodeBlock(block), replacing?.kv)
    batch.put(affKey, encodeAffinity('confirmed' satisfies AffinityState), affKv)
    if (ownerKey && ownerKv) batch.delete(ownerKey, ownerKv)
    batch.countHandle(this.args.handle, cidr, taken.length)
    // The block cap was checked against the affinities listed at `affinityRevision`: if this host has claimed
    // a block since (another process of the same node), this claim could go past the cap, so it loses the race
    // and the host's affinities are counted again.
    batch.guardPrefix(keys.hostAffinityPrefix(this.args.host, this.family), this.affinityRevision)
    try {
      await this.commit(batch)
    } catch (err) {
      if (err instanceof RevisionConflict) return 'raced'
      throw err
    }
    this.tried.add(affKey)
    this.blocksRead.push(cidr)
    this.record(block, taken)
    this.args.onBlockClaimed?.(formatCidr(cidr), replacing?.owner)
    return 'claimed'
  }

  private async reclaimEmptyBlock(): Promise<'claimed' | 'raced' | 'none'> {
    // Only reached when every block CIDR of every pool exists, so reading values here is bounded by the
    // pools' sizes, not by the cluster.
    const kvs = await this.ctx.store.list(keys.blockPrefix(this.family))
    const now = this.ctx.clock.now().getTime()
    for (const pool of this.pools) {
      for (const kv of inWalkOrder(kvs, pool, this.args.host)) {
        const block = decodeBlock(kv.value)
        if (this.reserved.blockWhollyReserved(block.cidr)) continue
        garbageCollect(block, this.cfg.ipCooldownSeconds, this.ctx.clock.now())
        if (block.affinity === this.affinity || !block.affinity?.startsWith('host:') || !isEmpty(block)) continue
        const claimed = block.affinityClaimTime ? Date.parse(block.affinityClaimTime) : 0
        if (now - claimed < EMPTY_BLOCK_MIN_RECLAIM_AGE_MS) continue
        return this.claim(block.cidr, {kv, owner: block.affinity.slice(5)})
      }
    }
    return 'none'
  }

  /** Borrow from existing blocks (any owner) in walk order; strict affinity never gets here. */
  private async borrow(): Promise<void> {
    const blockKeys = await this.ctx.store.listKeys(keys.blockPrefix(this.family))
    const exhausted: string[] = []
    for (const pool of this.pools) {
      for (const key of inWalkOrder(
        blockKeys.map((k) => ({key: k})),
        pool,
        this.args.host,
      )) {
        if (this.remaining === 0) break
        const cidr = parseBlockKey(key.key)!
        if (this.reserved.blockWhollyReserved(cidr)) continue
        await withRetry(this.ctx, async () => {
          const batch = new WriteBatch(this.ctx)
          const [blockKv] = await this.read(batch, [key.key])
          const loaded = blockFrom(this.ctx, blockKv, this.cfg.ipCooldownSeconds)
          if (!loaded || loaded.block.affinity === this.affinity) return
          const taken = takeOrdinals(loaded.block, this.remaining, this.attr, this.reserved.skipFor(cidr))
          if (taken.length === 0) return
          await this.commit(batch.putBlock(loaded.block, loaded.kv).countHandle(this.args.handle, cidr, taken.length))
          this.record(loaded.block, taken)
        })
      }
      if (this.remaining === 0) return
      exhausted.push(pool.spec.cidr)
    }
    if (exhausted.length > 0) this.result.messages.push(`No IPs available in pools: [${exhausted.join(' ')}]`)
  }
}

/** Existing blocks of `pool` in the order the host's walk visits them. */
function inWalkOrder<T extends {key: string}>(items: readonly T[], pool: Pool, host: string): T[] {
  const n = subnetCount(pool.cidr, pool.spec.blockSize)
  const start = startIndex(host, n)
  const byIndex = new Map<bigint, T>()
  for (const it of items) {
    const c = parseBlockKey(it.key)
    if (c && c.prefix === pool.spec.blockSize && containsCidr(pool.cidr, c))
      byIndex.set(subnetIndex(pool.cidr, pool.spec.blockSize, c), it)
  }
  if (BigInt(byIndex.size) * 4n < n) {
    const idx = [...byIndex.keys()].sort((a, b) => {
      const da = (a - start + n) % n
      const db = (b - start + n) % n
      return da < db ? -1 : da > db ? 1 : 0
    })
    return idx.map((i) => byIndex.get(i)!)
  }
  const out: T[] = []
  for (const i of walkOrder(n, start)) {
    const it = byIndex.get(i)
    if (it) out.push(it)
  }
  return out
}
