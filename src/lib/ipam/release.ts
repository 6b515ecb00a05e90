// Releasing addresses, by address (optionally guarded by handle and sequence number) or by handle.
// Each block's change and the matching handle counts are one transaction.
import {ConflictError, NotFoundError, ValidationError} from '../errors.js'
import {checkpoint, type Committed} from '../interrupt.js'
import {
  type Cidr,
  containsCidr,
  containsIp,
  formatCidr,
  formatIp,
  type Ip,
  maskIp,
  parseCidr,
  parseIp,
} from '../net/cidr.js'
import {keys, parseBlockKey} from '../store/keys.js'
import {type Block, isCoolingDown, isEmpty, markReleased, ordinalOf, sanitizeHandle} from './block.js'
import {affinityHost, type EmptiedBlock, ensureConsistentAffinity} from './consistent-affinity.js'
import {type Ctx, listPools, loadBlock, loadConfig, withRetry, WriteBatch} from './context.js'
import type {Pool} from './pool.js'
import {ipStatus} from './query.js'
import {decodeHandle} from './records.js'

const MAX_IPS_PER_TXN = 100

export interface ReleaseOption {
  ip: string
  /** Release only if the address still belongs to this handle. */
  handle?: string
  /** Release only if the address was allocated at this block sequence number (guards against ABA). */
  sequenceNumber?: bigint
}

export interface ReleaseResult {
  /** Addresses that were allocated and are now released (or cooling down). */
  released: string[]
  /** Addresses that were not allocated (or were already cooling down): nothing to do. */
  unallocated: string[]
}

/** Where an address's block is: from its pool (disabled pools too), else from the blocks that exist. */
async function blockCidrFor(pools: Pool[], ip: Ip, blockKeys: () => Promise<Cidr[]>): Promise<Cidr | undefined> {
  const pool = pools.find((p) => containsIp(p.cidr, ip))
  if (pool)
    return {family: ip.family, base: maskIp(ip.family, ip.value, pool.spec.blockSize), prefix: pool.spec.blockSize}
  // Pool deleted but its blocks remain: find the block that holds the address.
  return (await blockKeys()).find((c) =>
    containsCidr(c, {family: ip.family, base: ip.value, prefix: ip.family === 4 ? 32 : 128}),
  )
}

/** NotFoundError naming the first address that is not currently assigned (free or cooling down). */
export async function assertAllAssigned(ctx: Ctx, ips: readonly string[]): Promise<void> {
  for (const raw of ips) {
    const ip = parseIp(raw)
    const text = formatIp(ip.family, ip.value)
    const st = await ipStatus(ctx, text)
    if (st.state !== 'assigned')
      throw new NotFoundError(
        `IP address ${text} is not assigned${st.state === 'cooldown' ? ' (it is in cooldown)' : ''}`,
      )
  }
}

/**
 * Release addresses. With `requireAllocated`, an address that is not allocated is an error and nothing is
 * released (the CLI's promise that bad input changes nothing); without it, such addresses are reported in
 * `unallocated`, as upstream's ReleaseIPs does.
 */
export async function releaseIps(
  ctx: Ctx,
  options: readonly ReleaseOption[],
  opts: {requireAllocated?: boolean} = {},
): Promise<ReleaseResult> {
  const parsed = options.map((o) => ({...o, parsed: parseIp(o.ip)}))
  if (opts.requireAllocated)
    await assertAllAssigned(
      ctx,
      options.map((o) => o.ip),
    )
  const [cfg, pools] = await Promise.all([loadConfig(ctx), listPools(ctx)])
  let cached: Cidr[] | undefined
  const blockKeys = async () =>
    (cached ??= (await ctx.store.listKeys(keys.blockPrefix())).map(parseBlockKey).filter((c): c is Cidr => !!c))
  const byBlock = new Map<string, {cidr: Cidr; opts: typeof parsed}>()
  const result: ReleaseResult = {released: [], unallocated: []}
  for (const o of parsed) {
    const cidr = await blockCidrFor(pools, o.parsed, blockKeys)
    if (!cidr) {
      result.unallocated.push(formatIp(o.parsed.family, o.parsed.value))
      continue
    }
    const k = formatCidr(cidr)
    const entry = byBlock.get(k) ?? {cidr, opts: []}
    entry.opts.push(o)
    byBlock.set(k, entry)
  }
  const emptied: EmptiedBlock[] = []
  const pending = new Set(parsed.map((o) => formatIp(o.parsed.family, o.parsed.value)))
  const progress = (): Committed => ({
    done: result.released.length === 0 ? '' : `released ${result.released.length} of ${parsed.length} addresses`,
    finish: `ipamctl ipam release ${[...pending].map((ip) => `--ip ${ip}`).join(' ')} --yes`,
  })
  try {
    for (const {cidr, opts} of byBlock.values()) {
      // Each address may carry its own handle, and block + handles go in one transaction: keep a transaction
      // within etcd's default limit of 128 operations by releasing big batches in slices.
      for (let i = 0; i < opts.length; i += MAX_IPS_PER_TXN) {
        const slice = opts.slice(i, i + MAX_IPS_PER_TXN)
        await checkpoint(ctx, progress())
        const r = await withRetry(ctx, () => releaseInBlock(ctx, cfg.ipCooldownSeconds, cidr, slice))
        result.released.push(...r.released)
        result.unallocated.push(...r.unallocated)
        for (const o of slice) pending.delete(formatIp(o.parsed.family, o.parsed.value))
        if (r.emptied) emptied.push(r.emptied)
      }
    }
  } finally {
    // Also when interrupted: the blocks emptied so far get the same follow-up as in a complete run.
    await ensureConsistentAffinity(ctx, emptied)
  }
  return result
}

async function releaseInBlock(
  ctx: Ctx,
  cooldown: number,
  cidr: Cidr,
  opts: readonly (ReleaseOption & {parsed: Ip})[],
): Promise<ReleaseResult & {emptied?: EmptiedBlock}> {
  const out: ReleaseResult = {released: [], unallocated: []}
  const loaded = await loadBlock(ctx, cidr, cooldown)
  if (!loaded) {
    out.unallocated.push(...opts.map((o) => formatIp(o.parsed.family, o.parsed.value)))
    return out
  }
  const {block} = loaded
  const ordinals = new Set<number>()
  const perHandle = new Map<string, number>()
  for (const o of opts) {
    const text = formatIp(o.parsed.family, o.parsed.value)
    const ord = ordinalOf(block, o.parsed)
    if (ordinals.has(ord)) continue
    if (o.sequenceNumber !== undefined) {
      const stored = block.sequenceNumberForAllocation.get(String(ord)) ?? 0n
      if (stored !== o.sequenceNumber) {
        throw new ConflictError(
          `update conflict: ${text}: the given sequence number (${o.sequenceNumber}) does not match (${stored}) when attempting to release IP`,
        )
      }
    }
    const idx = block.allocations[ord]
    const attr = idx === null || idx === undefined ? undefined : block.attributes?.[idx]
    if (!attr || isCoolingDown(attr)) {
      out.unallocated.push(text)
      continue
    }
    const owner = attr.handle_id === undefined ? undefined : sanitizeHandle(attr.handle_id)
    if (o.handle !== undefined && sanitizeHandle(o.handle) !== owner) {
      throw new ConflictError(
        `update conflict: ${text}: the given handle (${o.handle}) does not match (${owner ?? ''}) when attempting to release IP`,
      )
    }
    ordinals.add(ord)
    out.released.push(text)
    if (owner !== undefined) perHandle.set(owner, (perHandle.get(owner) ?? 0) + 1)
  }
  if (ordinals.size === 0) return out
  markReleased(
    block,
    [...ordinals].sort((a, b) => a - b),
    ctx.clock.now(),
    cooldown,
    {recordSeq: true},
  )
  const batch = new WriteBatch(ctx)
  writeReleasedBlock(batch, block, loaded.kv)
  for (const [h, n] of perHandle) batch.countHandle(h, cidr, -n)
  await batch.commit()
  return {...out, emptied: emptiedBy(block)}
}

/** The block and its host when a release left it empty but still held (writeReleasedBlock kept it). */
function emptiedBy(block: Block): EmptiedBlock | undefined {
  const host = affinityHost(block.affinity)
  return host !== undefined && isEmpty(block) ? {host, cidr: block.cidr} : undefined
}

/** An empty block nobody owns is deleted; anything else is kept (an affine empty block is reused). */
function writeReleasedBlock(
  batch: WriteBatch,
  block: Block,
  seen: Parameters<WriteBatch['putBlock']>[1] & object,
): void {
  if (block.affinity === null && isEmpty(block)) batch.delete(keys.block(block.cidr), seen)
  else batch.putBlock(block, seen)
}

/** Release every address of a handle. Returns the released addresses; unknown handle → NotFoundError. */
export async function releaseByHandle(ctx: Ctx, handleId: string): Promise<string[]> {
  const handle = sanitizeHandle(handleId)
  if (handle === '') throw new ValidationError('a handle ID must not be empty')
  const cfg = await loadConfig(ctx)
  const first = await ctx.store.get(keys.handle(handle))
  if (!first) throw new NotFoundError(`handle ${handle} not found`)
  const released: string[] = []
  const emptied: EmptiedBlock[] = []
  const progress = (): Committed => ({
    done: released.length === 0 ? '' : `released ${released.length} addresses of handle ${handle}`,
    finish: `ipamctl ipam release --handle ${handle} --yes`,
  })
  try {
    for (const cidrText of decodeHandle(first.value).keys()) {
      const cidr = parseHandleBlock(cidrText)
      await checkpoint(ctx, progress())
      const got = await withRetry(ctx, async () => {
        const loaded = await loadBlock(ctx, cidr, cfg.ipCooldownSeconds)
        const batch = new WriteBatch(ctx)
        const mine: number[] = []
        loaded?.block.allocations.forEach((idx, o) => {
          const a = idx === null ? undefined : loaded.block.attributes?.[idx]
          if (a?.handle_id !== undefined && sanitizeHandle(a.handle_id) === handle) mine.push(o)
        })
        let nowEmpty: EmptiedBlock | undefined
        if (loaded && mine.length > 0) {
          markReleased(loaded.block, mine, ctx.clock.now(), cfg.ipCooldownSeconds, {recordSeq: false})
          writeReleasedBlock(batch, loaded.block, loaded.kv)
          nowEmpty = emptiedBy(loaded.block)
        } else {
          // Dropping the handle's entry is only right if the block still holds none of its addresses.
          batch.guard(keys.block(cidr), loaded?.kv)
        }
        // Drop the block from the handle whatever its recorded count was: nothing of the handle is left there.
        batch.countHandle(handle, cidr, Number.NEGATIVE_INFINITY)
        await batch.commit()
        if (nowEmpty) emptied.push(nowEmpty)
        return mine.map((o) => formatIp(cidr.family, cidr.base + BigInt(o)))
      })
      released.push(...got)
    }
  } finally {
    // Also when interrupted: the blocks emptied so far get the same follow-up as in a complete run.
    await ensureConsistentAffinity(ctx, emptied)
  }
  return released
}

function parseHandleBlock(text: string): Cidr {
  try {
    return parseCidr(text)
  } catch {
    throw new ValidationError(`malformed handle: bad block CIDR ${JSON.stringify(text)}`)
  }
}
