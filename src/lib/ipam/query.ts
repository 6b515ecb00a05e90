// Read-only views: who owns an address, a handle's addresses, blocks, utilization, borrowed addresses.
import {NotFoundError, ValidationError} from '../errors.js'
import {
  type Cidr,
  cidrSize,
  compareCidr,
  containsCidr,
  containsIp,
  formatCidr,
  formatIp,
  maskIp,
  parseCidr,
  parseCidrOrIp,
  parseIp,
} from '../net/cidr.js'
import {keys} from '../store/keys.js'
import {forEachKv, type KeyValue} from '../store/store.js'
import {
  type Block,
  attributeOf,
  type BlockOccupancy,
  blockOccupancy,
  decodeBlock,
  garbageCollect,
  isCoolingDown,
  ownerHost,
  sanitizeHandle,
} from './block.js'
import {type Ctx, listPools, loadBlock, loadConfig} from './context.js'
import type {Pool} from './pool.js'
import {decodeHandle} from './records.js'
import {listReservations, type ReservedMatcher, reservedMatcher} from './reservation.js'

export interface StoredBlock {
  readonly kv: KeyValue
  readonly block: Block
}

/** Every block, garbage-collected in memory (not written back), in key order. */
export async function listBlocks(
  ctx: Ctx,
  opts: {host?: string; cooldownSeconds?: number} = {},
): Promise<StoredBlock[]> {
  const cooldown = opts.cooldownSeconds ?? (await loadConfig(ctx)).ipCooldownSeconds
  const now = ctx.clock.now()
  const out: StoredBlock[] = []
  for (const kv of await ctx.store.list(keys.blockPrefix())) {
    const block = decodeBlock(kv.value)
    garbageCollect(block, cooldown, now)
    if (opts.host === undefined || ownerHost(block) === opts.host) out.push({kv, block})
  }
  return out
}

/** The stored block containing an address or equal to a CIDR, exactly as stored. */
export async function findBlock(ctx: Ctx, ref: string): Promise<KeyValue> {
  const target = parseCidrOrIp(ref)
  const pools = await listPools(ctx)
  const pool = pools.find((p) => containsCidr(p.cidr, target) && target.prefix >= p.spec.blockSize)
  if (pool) {
    const cidr = {
      family: target.family,
      base: maskIp(target.family, target.base, pool.spec.blockSize),
      prefix: pool.spec.blockSize,
    }
    const kv = await ctx.store.get(keys.block(cidr))
    if (kv) return kv
  }
  for (const kv of await ctx.store.list(keys.blockPrefix(target.family))) {
    const block = decodeBlock(kv.value)
    if (containsCidr(block.cidr, target)) return kv
  }
  throw new NotFoundError(`no allocation block contains ${ref}`)
}

export interface IpOwner {
  ip: string
  block: string
  handle?: string
  attrs: Record<string, string>
  alternateAttrs: Record<string, string>
  sequenceNumber?: bigint
}

export type IpStatus = {state: 'assigned'; owner: IpOwner} | {state: 'free'} | {state: 'cooldown'; releasedAt: string}

/** Who holds an address. Unlike upstream, disabled pools are searched too (quirk 3.15.7). */
export async function ipStatus(ctx: Ctx, ipText: string): Promise<IpStatus> {
  const ip = parseIp(ipText)
  const cfg = await loadConfig(ctx)
  const pools = await listPools(ctx)
  const pool = pools.find((p) => containsIp(p.cidr, ip))
  let loaded: StoredBlock | undefined
  if (pool) {
    loaded = await loadBlock(
      ctx,
      {family: ip.family, base: maskIp(ip.family, ip.value, pool.spec.blockSize), prefix: pool.spec.blockSize},
      cfg.ipCooldownSeconds,
    )
  } else {
    try {
      const kv = await findBlock(ctx, ipText)
      loaded = await loadBlock(ctx, decodeBlock(kv.value).cidr, cfg.ipCooldownSeconds)
    } catch (err) {
      if (!(err instanceof NotFoundError)) throw err
    }
  }
  if (!loaded) return {state: 'free'}
  const o = Number(ip.value - loaded.block.cidr.base)
  const attr = attributeOf(loaded.block, o)
  if (!attr) return {state: 'free'}
  if (isCoolingDown(attr)) return {state: 'cooldown', releasedAt: attr.releasedAt!}
  return {
    state: 'assigned',
    owner: {
      ip: formatIp(ip.family, ip.value),
      block: formatCidr(loaded.block.cidr),
      handle: attr.handle_id === undefined ? undefined : sanitizeHandle(attr.handle_id),
      attrs: attr.secondary ?? {},
      alternateAttrs: attr.alternateOwnerAttrs ?? {},
      sequenceNumber: loaded.block.sequenceNumberForAllocation.get(String(o)),
    },
  }
}

/** Addresses held by a handle (cooling-down ones excluded). Unknown handle → NotFoundError. */
export async function ipsByHandle(ctx: Ctx, handleId: string): Promise<string[]> {
  return (await allocationsByHandle(ctx, handleId)).map((a) => a.ip)
}

export interface HandleAllocation {
  ip: string
  /** The allocation's secondary attributes (node, pod, …); empty when it has none. */
  attrs: Readonly<Record<string, string>>
  coolingDown: boolean
}

/** Every address `handleId` holds, with its attributes, reading each of the handle's blocks once. */
export async function allocationsByHandle(ctx: Ctx, handleId: string): Promise<HandleAllocation[]> {
  const handle = sanitizeHandle(handleId)
  const kv = await ctx.store.get(keys.handle(handle))
  if (!kv) throw new NotFoundError(`handle ${handle} not found`)
  const cfg = await loadConfig(ctx)
  const out: HandleAllocation[] = []
  for (const cidrText of decodeHandle(kv.value).keys()) {
    let cidr: Cidr
    try {
      cidr = parseCidr(cidrText)
    } catch {
      continue
    }
    const loaded = await loadBlock(ctx, cidr, cfg.ipCooldownSeconds)
    loaded?.block.allocations.forEach((idx, o) => {
      const a = idx === null ? undefined : loaded.block.attributes?.[idx]
      if (a?.handle_id !== undefined && sanitizeHandle(a.handle_id) === handle) {
        out.push({
          ip: formatIp(cidr.family, cidr.base + BigInt(o)),
          attrs: a.secondary ?? {},
          coolingDown: isCoolingDown(a),
        })
      }
    })
  }
  return out
}

export interface Usage {
  name: string
  cidr: string
  capacity: bigint
  inUse: bigint
  reserved: bigint
  free: bigint
}

export interface PoolUsage extends Usage {
  blocks: Usage[]
}

export const ORPHANED = 'orphaned allocation blocks'

/**
 * Per-pool and per-block counts, exact for any IPv6 size (upstream clamps and goes negative, quirk 3.15.9).
 * In use counts cooling-down addresses, as upstream does: they cannot be handed out yet.
 */
/**
 * `onProgress`: called as blocks are read, with their total (from a keys-only listing, made only for it). Blocks are
 * streamed and only their counts kept, so a store of 10,000 blocks is never held at once.
 * `onBlock`: called with each block's CIDR, for a caller that needs them too (`ipam show`: which blocks exist).
 */
export async function utilization(
  ctx: Ctx,
  opts: {pools?: string[]; onProgress?: (done: number, total: number) => void; onBlock?: (cidr: Cidr) => void} = {},
): Promise<PoolUsage[]> {
  const [all, reservations, config, total] = await Promise.all([
    listPools(ctx),
    listReservations(ctx),
    loadConfig(ctx),
    opts.onProgress ? ctx.store.listKeys(keys.blockPrefix()).then((k) => k.length) : 0,
  ])
  const reserved = reservedMatcher(reservations)
  let pools: Pool[] = all
  if (opts.pools && opts.pools.length > 0) {
    pools = opts.pools.map((ref) => {
      const p = all.find(
        (x) => x.name === ref || (ref.includes('/') && formatCidr(x.cidr) === formatCidr(parseCidr(ref))),
      )
      if (!p) throw new NotFoundError(`IP pool ${ref} not found`)
      return p
    })
  }
  const now = ctx.clock.now()
  const blocks: BlockUsage[] = []
  let done = 0
  await forEachKv(ctx.store, keys.blockPrefix(), (kv) => {
    opts.onProgress?.(++done, Math.max(done, total))
    let block: BlockOccupancy | undefined = blockOccupancy(kv.value)
    if (!block) {
      const full = decodeBlock(kv.value)
      garbageCollect(full, config.ipCooldownSeconds, now)
      block = occupancy(full)
    }
    opts.onBlock?.(block.cidr)
    blocks.push(blockUsage(block, reserved))
  })
  const out = poolUsage(pools, reserved, blocks, {orphans: !opts.pools?.length})
  // Pools list their blocks in address order (by the CIDRs already parsed); orphaned blocks stay in key order.
  const order = new Map<Usage, Cidr>(blocks.map((b) => [b.usage, b.cidr]))
  for (const g of out) if (g.cidr !== '') g.blocks.sort((a, b) => compareCidr(order.get(a)!, order.get(b)!))
  return out
}

export interface BlockUsage {
  readonly cidr: Cidr
  readonly usage: Usage
}

/** A decoded block's occupancy, as blockOccupancy reads it from the stored text. */
export function occupancy(block: Block): BlockOccupancy {
  return {cidr: block.cidr, size: block.allocations.length, unallocated: block.unallocated}
}

/** One block's counts (the block already garbage-collected): a pure function of its occupancy and the reservations. */
export function blockUsage(block: BlockOccupancy, reserved: ReservedMatcher): BlockUsage {
  const size = BigInt(block.size)
  const skip = reserved.skipFor(block.cidr)
  // Reserved addresses that are allocated anyway (allocated before the reservation) are not free either way.
  const reservedFree = skip ? BigInt(block.unallocated.filter(skip).length) : 0n
  const name = formatCidr(block.cidr)
  return {
    cidr: block.cidr,
    usage: {
      name,
      cidr: name,
      capacity: size,
      inUse: size - BigInt(block.unallocated.length),
      reserved: skip ? reserved.reservedIn(block.cidr) : 0n,
      free: BigInt(block.unallocated.length) - reservedFree,
    },
  }
}

/**
 * One count summed over blocks: in float64 while that is exact (a block's counts are at most a few thousand, so
 * 10,000 blocks sum far below 2^53), in bigint beyond: 40,000 bigint additions per `ipam show` made as many objects.
 */
function total(list: readonly Usage[], field: 'capacity' | 'inUse' | 'free' | 'reserved'): bigint {
  let small = 0
  let big = 0n
  for (const b of list) {
    const v = b[field]
    if (v <= 0xffffffffn && v >= 0n && small < 2 ** 52) small += Number(v)
    else big += v
  }
  return big + BigInt(small)
}

/**
 * Per-pool totals from per-block counts, in `pools` order: a block counts for the first pool that contains it or
 * that it contains; with `orphans`, blocks of no pool are grouped last as ORPHANED. Pure, so `ipam show` and the
 * agent's metrics (which keeps block counts between scrapes) add up the same way. Blocks are not sorted.
 */
export function poolUsage(
  pools: readonly Pool[],
  reserved: ReservedMatcher,
  blocks: Iterable<BlockUsage>,
  opts: {orphans: boolean},
): PoolUsage[] {
  const groups: (PoolUsage & {cidrObj: Cidr})[] = pools.map((p) => ({
    name: p.name,
    cidr: p.spec.cidr,
    cidrObj: p.cidr,
    capacity: cidrSize(p.cidr),
    inUse: 0n,
    reserved: reserved.reservedIn(p.cidr),
    free: 0n,
    blocks: [],
  }))
  const orphans: Usage[] = []
  for (const {cidr, usage: u} of blocks) {
    const g = groups.find((x) => containsCidr(x.cidrObj, cidr) || containsCidr(cidr, x.cidrObj))
    if (g) g.blocks.push(u)
    else if (opts.orphans) orphans.push(u)
  }
  const out: PoolUsage[] = groups.map(({cidrObj: _c, ...g}) => {
    const inBlocks = total(g.blocks, 'capacity')
    const inUse = total(g.blocks, 'inUse')
    const freeInBlocks = total(g.blocks, 'free')
    // Addresses outside every block are unallocated; the reserved ones among them are not free.
    const reservedOutside = g.reserved - total(g.blocks, 'reserved')
    const outside = (g.capacity > inBlocks ? g.capacity - inBlocks : 0n) - (reservedOutside > 0n ? reservedOutside : 0n)
    return {...g, inUse, free: freeInBlocks + (outside > 0n ? outside : 0n)}
  })
  if (orphans.length > 0) {
    out.push({
      name: ORPHANED,
      cidr: '',
      capacity: total(orphans, 'capacity'),
      inUse: total(orphans, 'inUse'),
      reserved: total(orphans, 'reserved'),
      free: total(orphans, 'free'),
      blocks: orphans,
    })
  }
  return out
}

export interface Borrowed {
  ip: string
  borrowingNode: string
  block: string
  blockOwner: string
  type: string
  allocatedTo: string
}

/** Addresses whose `node` attribute differs from their block's owner (calicoctl --show-borrowed). */
export async function borrowedIps(ctx: Ctx): Promise<{borrowed: Borrowed[]; withoutNode: number}> {
  const borrowed: Borrowed[] = []
  let withoutNode = 0
  for (const {block} of await listBlocks(ctx)) {
    const b = blockBorrowed(block)
    for (const x of b.borrowed) borrowed.push(x)
    withoutNode += b.withoutNode
  }
  return {borrowed, withoutNode}
}

/** One block's borrowed addresses (see borrowedIps), and how many of its allocations name no node. */
export function blockBorrowed(block: Block): {borrowed: Borrowed[]; withoutNode: number} {
  const borrowed: Borrowed[] = []
  let withoutNode = 0
  const owner = block.affinity ? block.affinity.slice(block.affinity.indexOf(':') + 1) : ''
  block.allocations.forEach((idx, o) => {
    if (idx === null) return
    const a = block.attributes?.[idx]
    const node = a?.secondary?.node
    if (node === undefined) {
      withoutNode++
      return
    }
    if (node === owner) return
    const s = a!.secondary!
    const type = s['vmi-name'] ? 'vmi' : s.pod ? 'pod' : (s.type ?? '')
    const who = s['vmi-name'] ?? s.pod
    borrowed.push({
      ip: formatIp(block.cidr.family, block.cidr.base + BigInt(o)),
      borrowingNode: node,
      block: formatCidr(block.cidr),
      blockOwner: owner,
      type,
      allocatedTo: who ? `${s.namespace ?? ''}/${who}` : '',
    })
  })
  return {borrowed, withoutNode}
}

export function assertValidIpText(text: string): void {
  if (text.includes('/'))
    throw new ValidationError(`invalid IP address specified: ${text} (give an address without a prefix length)`)
  parseIp(text)
}
