// What the capacity plan needs from a datastore: pools, the IPAM config, Node records and which blocks exist.
// Keys only (block and affinity keys name their CIDR and host), so these reads cost no block decoding. Used by
// `ipam plan --pool`, the line `ipam show` adds, and the warning of `pool create` (and `apply`) when a pool
// cannot give every known node one block.
import {NotFoundError, ValidationError} from '../errors.js'
import {type Cidr, containsCidr, parseCidr, subnetCount} from '../net/cidr.js'
import {keys, parseAffinityKey, parseBlockKey} from '../store/keys.js'
import {type Ctx, listPools, loadConfig} from './context.js'
import {decodeNode} from './node.js'
import type {PlanInput} from './capacity.js'
import {defaultBlockSize, type Pool} from './pool.js'
import {DEFAULT_IPAM_CONFIG, type IpamConfig} from './records.js'
import {parseSelector} from './selector.js'

export interface PoolBlocks {
  readonly name: string
  readonly cidr: string
  readonly blockSize: number
  readonly disabled: boolean
  /** Blocks the pool holds, and how many of them exist (have been claimed). */
  readonly blocks: bigint
  readonly claimed: bigint
  /** Blocks nobody has claimed yet: each can be a new node's first block. */
  readonly unclaimed: bigint
}

/**
 * A whole number with thousands separators, as toLocaleString('en-US') writes it, without that call's first-use
 * cost (loading the locale data is ~10 ms of `ipam show`).
 */
const fmt = (n: bigint | number): string => String(n).replace(/\B(?=(\d{3})+$)/g, ',')

/**
 * Every pool's block count and how many of its blocks exist, from the block keys; or from `blocks`, the CIDR of
 * every block, when the caller has just read them all (`ipam show`, from utilization) and need not list them again.
 */
export async function poolBlocks(ctx: Ctx, pools?: readonly Pool[], blocks?: readonly Cidr[]): Promise<PoolBlocks[]> {
  const all = pools ?? (await listPools(ctx))
  const blockCidrs = blocks ?? (await ctx.store.listKeys(keys.blockPrefix())).flatMap((k) => parseBlockKey(k) ?? [])
  return all.map((p) => {
    const blocks = subnetCount(p.cidr, p.spec.blockSize)
    const claimed = BigInt(blockCidrs.filter((c) => c.prefix === p.spec.blockSize && containsCidr(p.cidr, c)).length)
    return {
      name: p.name,
      cidr: p.spec.cidr,
      blockSize: p.spec.blockSize,
      disabled: p.spec.disabled,
      blocks,
      claimed,
      unclaimed: claimed < blocks ? blocks - claimed : 0n,
    }
  })
}

/** `ipam show`'s extra line: how many more nodes can claim a block in each pool. */
export function claimableLine(pools: readonly PoolBlocks[]): string {
  const parts = pools.map((p) =>
    p.disabled ? `${p.name} none (disabled)` : `${p.name} ${fmt(p.unclaimed)} of ${fmt(p.blocks)}`,
  )
  return `Nodes that can still claim a block (unclaimed blocks): ${parts.length > 0 ? parts.join(', ') : 'no pools'}`
}

/**
 * One warning line per enabled pool that has fewer blocks than the known nodes (Node records) it selects: the
 * nodes beyond that many cannot claim a block of it and will borrow, or fail under strict affinity. For
 * `pool create` and `apply`, after the pools are written; the caller prints the lines on stderr.
 */
export async function poolCapacityWarnings(ctx: Ctx, pools: readonly Pool[]): Promise<string[]> {
  const out: string[] = []
  let labels: Record<string, string>[] | undefined
  for (const pool of pools) {
    if (pool.spec.disabled) continue
    const blocks = subnetCount(pool.cidr, pool.spec.blockSize)
    labels ??= (await ctx.store.list(keys.resourcePrefix('nodes'))).map((kv) => decodeNode(kv.value).labels)
    const selector = parseSelector(pool.spec.nodeSelector)
    const nodes = BigInt(labels.filter((l) => selector.matches(l)).length)
    if (nodes <= blocks) continue
    out.push(
      `Warning: pool ${pool.name} (${pool.spec.cidr}) has ${fmt(blocks)} /${pool.spec.blockSize} block${blocks === 1n ? '' : 's'} for ${fmt(nodes)} known nodes: ${fmt(nodes - blocks)} of them cannot claim a block of it (see ipamctl ipam plan --pool ${pool.name})`,
    )
  }
  return out
}

export interface PoolUse {
  readonly pool: Pool
  readonly config: IpamConfig
  readonly blocks: PoolBlocks
  /** Node records in the datastore, and the nodes holding a block of this pool. */
  readonly knownNodes: number
  readonly nodesWithBlocks: number
}

/** An existing pool as `ipam plan --pool` plans against it. */
export async function poolUse(ctx: Ctx, name: string): Promise<PoolUse> {
  const pools = await listPools(ctx)
  const pool = pools.find((p) => p.name === name)
  if (!pool) throw new NotFoundError(`IP pool ${name} not found`)
  const [config, [blocks], nodeKeys, affinityKeys] = await Promise.all([
    loadConfig(ctx),
    poolBlocks(ctx, [pool]),
    ctx.store.listKeys(keys.resourcePrefix('nodes')),
    ctx.store.listKeys(keys.allHostAffinitiesPrefix()),
  ])
  const hosts = new Set<string>()
  for (const k of affinityKeys) {
    const a = parseAffinityKey(k)
    if (a && containsCidr(pool.cidr, a.cidr)) hosts.add(a.host)
  }
  return {pool, config, blocks: blocks!, knownNodes: nodeKeys.length, nodesWithBlocks: hosts.size}
}

/** One line on a pool's current use, for the plan. */
export function currentUseLine(use: PoolUse, blocksPerNode: number): string {
  const b = use.blocks
  return `${fmt(b.claimed)} of ${fmt(b.blocks)} blocks claimed by ${fmt(use.nodesWithBlocks)} nodes (${fmt(use.knownNodes)} known): ${fmt(b.unclaimed)} more nodes can claim a block, ${fmt(b.unclaimed / BigInt(blocksPerNode))} at ${blocksPerNode} block${blocksPerNode === 1 ? '' : 's'} each`
}

export interface PlanOptions {
  readonly cidr?: string
  readonly pool?: PoolUse
  readonly blockSize?: number
  readonly nodes?: number
  readonly podsPerNode?: number
  readonly strictAffinity?: boolean
  readonly maxBlocksPerHost?: number
  readonly churn?: string
  readonly ipCooldownSeconds?: number
}

/** Default pods per node: the kubelet's default maximum. */
export const DEFAULT_PODS_PER_NODE = 110

/**
 * The plan's input from the command's options: a CIDR with the config defaults, or an existing pool with the
 * stored config; any option given overrides what the pool or config says.
 */
export function planInput(o: PlanOptions): PlanInput {
  if ((o.cidr === undefined) === (o.pool === undefined)) throw new ValidationError('give either --cidr or --pool')
  const pool = o.pool ? o.pool.pool.cidr : parseCidr(o.cidr!, {strict: true})
  const cfg = o.pool?.config ?? DEFAULT_IPAM_CONFIG
  const maxBlocksPerHost = o.maxBlocksPerHost ?? cfg.maxBlocksPerHost
  return {
    pool,
    blockSize: o.blockSize ?? o.pool?.pool.spec.blockSize ?? defaultBlockSize(pool),
    nodes: o.nodes ?? Math.max(1, o.pool?.knownNodes ?? 0),
    podsPerNode: o.podsPerNode ?? DEFAULT_PODS_PER_NODE,
    // A cap is only valid with strict affinity: asking for one implies it.
    strictAffinity: o.strictAffinity ?? (cfg.strictAffinity || (o.maxBlocksPerHost ?? 0) > 0),
    maxBlocksPerHost,
    churn: o.churn === undefined ? 0 : parseFraction(o.churn, 'churn'),
    ipCooldownSeconds: o.ipCooldownSeconds ?? cfg.ipCooldownSeconds,
  }
}

export function parseFraction(text: string, what: string): number {
  const n = /^(0(\.\d+)?|1(\.0+)?|\.\d+)$/.test(text.trim()) ? Number(text) : Number.NaN
  if (Number.isNaN(n))
    throw new ValidationError(`${what} must be a fraction from 0 to 1, e.g. 0.1 (got ${JSON.stringify(text)})`)
  return n
}
