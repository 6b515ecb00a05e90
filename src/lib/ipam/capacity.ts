// Capacity planning arithmetic (`ipam plan`): how a pool's blocks go round a cluster under block affinity
// (docs/calico.md#claiming-a-new-block). Pure functions of the pool, the cluster and the IPAM config;
// `simulateCluster` (capacity-sim.ts) runs the real allocator on the same question, and the tests hold the two
// to the same answer.
//
// The model is the allocator's: a node takes addresses from its own blocks, claims a new block when they are
// full, and stops claiming at the block cap (blockCap: the config's maxBlocksPerHost, or 20); a pod the cap
// stops fails even without strict affinity (FamilyJob.run returns there). When the pool has no unclaimed
// block left, a node borrows a free address from another node's block, or fails under strict affinity.
// Nodes are taken to fill up one after another, as they join.
import {ValidationError} from '../errors.js'
import {type Cidr, type Family, formatCidr, subnetCount} from '../net/cidr.js'
import {blockCap} from './autoassign.js'
import {DEFAULT_IPAM_CONFIG, type IpamConfig, validateIpamConfig} from './records.js'

export interface PlanInput {
  readonly pool: Cidr
  readonly blockSize: number
  readonly nodes: number
  readonly podsPerNode: number
  readonly strictAffinity: boolean
  /** The config's maxBlocksPerHost (0 = the default cap). */
  readonly maxBlocksPerHost: number
  /** Fraction of pods deleted and re-created (0 to 1): with a cooldown their old addresses are held meanwhile. */
  readonly churn: number
  readonly ipCooldownSeconds: number
}

export type Outcome = 'fits' | 'borrow' | 'fail'

export interface CapacityPlan {
  readonly pool: string
  readonly blockSize: number
  readonly nodes: number
  readonly podsPerNode: number
  readonly strictAffinity: boolean
  readonly blockCap: number
  /** Addresses in one block. */
  readonly blockAddresses: number
  /** Blocks in the pool. */
  readonly poolBlocks: bigint
  /** Addresses a node holds at once: its pods, plus those of churned pods still cooling down. */
  readonly peakAddressesPerNode: number
  /** Blocks a node needs at that density, and the ones it may claim (at most the cap). */
  readonly blocksPerNode: number
  readonly blocksPerNodeClaimed: number
  /** Nodes that get every block they need; from the next one on, nodes claim fewer or none. */
  readonly nodesWithAllBlocks: bigint
  /** Nodes that can claim at least one block at this density: node number claimLimit + 1 claims none. */
  readonly claimLimit: bigint
  readonly blocksClaimed: bigint
  /** Free addresses left in affine blocks once every pod is placed (borrowing uses some of them). */
  readonly stranded: bigint
  readonly borrowed: bigint
  readonly failed: bigint
  /** Pods that fail because a node reached the block cap (part of `failed`). */
  readonly failedAtCap: bigint
  readonly outcome: Outcome
  readonly recommendation: Recommendation
  /** One line each: why the numbers above are what they are. */
  readonly reasons: {
    blocksPerNode: string
    claimLimit: string
    stranded: string
    outcome: string
    blockSize: string
    poolPrefix: string
  }
}

export interface Recommendation {
  readonly blockSize: number
  readonly blocksPerNode: number
  /** The smallest pool (longest prefix) whose blocks give every node what it needs; undefined if none can. */
  readonly poolPrefix: number | undefined
}

export const BLOCK_SIZE_RANGE: Record<Family, readonly [number, number]> = {4: [20, 32], 6: [116, 128]}
const bits = (f: Family): number => (f === 4 ? 32 : 128)

/** Addresses in one block of prefix `blockSize`. */
export const blockAddresses = (family: Family, blockSize: number): number => 2 ** (bits(family) - blockSize)

const ceilDiv = (a: bigint, b: bigint): bigint => (a + b - 1n) / b
const min = (a: bigint, b: bigint): bigint => (a < b ? a : b)
const fmt = (n: bigint | number): string => n.toLocaleString('en-US')
const plural = (n: bigint | number, one: string, many = `${one}s`): string =>
  `${fmt(n)} ${n === 1 || n === 1n ? one : many}`

/** Addresses a node holds at its peak: with a cooldown, churned pods' old addresses are not free yet. */
export function peakAddresses(podsPerNode: number, churn: number, ipCooldownSeconds: number): number {
  return podsPerNode + (ipCooldownSeconds > 0 ? Math.ceil(churn * podsPerNode) : 0)
}

export function validatePlanInput(input: PlanInput): void {
  const [lo, hi] = BLOCK_SIZE_RANGE[input.pool.family]
  if (!Number.isInteger(input.blockSize) || input.blockSize < lo || input.blockSize > hi)
    throw new ValidationError(`block size must be ${lo}-${hi} for an IPv${input.pool.family} pool`)
  if (input.pool.prefix > input.blockSize)
    throw new ValidationError(
      `the pool /${input.pool.prefix} is smaller than one /${input.blockSize} block; use a larger pool or a larger --block-size number`,
    )
  if (!Number.isInteger(input.nodes) || input.nodes < 1 || input.nodes > 1_000_000)
    throw new ValidationError('the number of nodes must be an integer from 1 to 1,000,000')
  if (!Number.isInteger(input.podsPerNode) || input.podsPerNode < 1 || input.podsPerNode > 65536)
    throw new ValidationError('pods per node must be an integer from 1 to 65536')
  if (!(input.churn >= 0 && input.churn <= 1)) throw new ValidationError('churn must be a fraction from 0 to 1')
  // The same rules as `ipam configure`: a cap needs strict affinity.
  validateIpamConfig({
    ...DEFAULT_IPAM_CONFIG,
    strictAffinity: input.strictAffinity,
    maxBlocksPerHost: input.maxBlocksPerHost,
    ipCooldownSeconds: input.ipCooldownSeconds,
  })
}

/**
 * Where the pool's blocks go when `nodes` nodes join one after another, each holding `peak` addresses at its
 * busiest (which decides how many blocks it claims) and `pods` once churn is over.
 */
export function placement(poolBlocks: bigint, nodes: number, pods: number, peak: number, size: number, cap: number) {
  const need = Math.ceil(peak / size)
  const claimed = Math.min(need, cap)
  const n = BigInt(nodes)
  const perNode = BigInt(claimed)
  const S = BigInt(size)
  const P = BigInt(pods)
  const whole = poolBlocks / perNode
  const fullNodes = min(n, whole)
  // The node after the last full one gets the blocks left over, if any; the ones after it get none.
  const rest = n > whole ? poolBlocks - whole * perNode : 0n
  const partial = rest > 0n ? 1n : 0n
  const zeroNodes = n - fullNodes - partial
  const inOwnFull = min(P, perNode * S)
  const inOwnPartial = min(P, rest * S)
  const blocksClaimed = fullNodes * perNode + rest
  const placed = fullNodes * inOwnFull + partial * inOwnPartial
  return {
    need,
    claimed,
    whole,
    blocksClaimed,
    /** Free addresses in claimed blocks once every node's own blocks are used. */
    supply: blocksClaimed * S - placed,
    /** Pods that find no room in their own blocks and no block to claim: they borrow or fail. */
    demand: partial * (P - inOwnPartial) + zeroNodes * P,
    /** Pods of nodes at the block cap that their blocks cannot hold: these fail, borrowing or not. */
    failedAtCap: fullNodes * (P - inOwnFull),
  }
}

/**
 * The block size for `peak` addresses per node: the smallest block that holds them all, so a node claims one
 * block (one claim, one affinity record, one route) and strands less than half of it. When no block is that
 * large, the largest, so a node needs as few as possible.
 */
export function recommendBlockSize(family: Family, peak: number): number {
  const [lo, hi] = BLOCK_SIZE_RANGE[family]
  for (let bs = hi; bs > lo; bs--) if (blockAddresses(family, bs) >= peak) return bs
  return lo
}

/** The longest pool prefix with at least `nodes × perNode` blocks of `blockSize`; undefined when none has. */
export function recommendPoolPrefix(blockSize: number, nodes: number, perNode: number): number | undefined {
  const blocks = BigInt(nodes) * BigInt(perNode)
  let k = 0
  while (1n << BigInt(k) < blocks) k++
  return blockSize - k >= 0 ? blockSize - k : undefined
}

export function planCapacity(input: PlanInput): CapacityPlan {
  validatePlanInput(input)
  const family = input.pool.family
  const cap = blockCap({maxBlocksPerHost: input.maxBlocksPerHost} as IpamConfig)
  const size = blockAddresses(family, input.blockSize)
  const poolBlocks = subnetCount(input.pool, input.blockSize)
  const peak = peakAddresses(input.podsPerNode, input.churn, input.ipCooldownSeconds)
  const p = placement(poolBlocks, input.nodes, input.podsPerNode, peak, size, cap)
  const borrowed = input.strictAffinity ? 0n : min(p.demand, p.supply)
  const failed = p.failedAtCap + p.demand - borrowed
  const outcome: Outcome = failed > 0n ? 'fail' : borrowed > 0n ? 'borrow' : 'fits'
  const recBlock = recommendBlockSize(family, peak)
  const recPerNode = Math.ceil(peak / blockAddresses(family, recBlock))
  const plan: Omit<CapacityPlan, 'reasons'> = {
    pool: formatCidr(input.pool),
    blockSize: input.blockSize,
    nodes: input.nodes,
    podsPerNode: input.podsPerNode,
    strictAffinity: input.strictAffinity,
    blockCap: cap,
    blockAddresses: size,
    poolBlocks,
    peakAddressesPerNode: peak,
    blocksPerNode: p.need,
    blocksPerNodeClaimed: p.claimed,
    nodesWithAllBlocks: p.whole,
    claimLimit: ceilDiv(poolBlocks, BigInt(p.claimed)),
    blocksClaimed: p.blocksClaimed,
    stranded: p.supply - borrowed,
    borrowed,
    failed,
    failedAtCap: p.failedAtCap,
    outcome,
    recommendation: {
      blockSize: recBlock,
      blocksPerNode: recPerNode,
      poolPrefix: recommendPoolPrefix(recBlock, input.nodes, recPerNode),
    },
  }
  return {...plan, reasons: reasons(plan, input)}
}

function reasons(p: Omit<CapacityPlan, 'reasons'>, input: PlanInput): CapacityPlan['reasons'] {
  const family = input.pool.family
  const P = p.podsPerNode
  const peak = p.peakAddressesPerNode
  const S = p.blockAddresses
  const h = p.blocksPerNodeClaimed
  const atPeak =
    peak > P
      ? ` (${fmt(peak)} addresses at peak: churned pods' old addresses cool down for ${input.ipCooldownSeconds} s)`
      : ''
  const capNote =
    p.blocksPerNode > h ? `, but a node may claim only ${h} (the block cap: maxBlocksPerHost, or 20 when it is 0)` : ''
  const rest = p.poolBlocks - p.nodesWithAllBlocks * BigInt(h)
  const partial = rest > 0n ? ` and node ${fmt(p.nodesWithAllBlocks + 1n)} gets the last ${plural(rest, 'block')}` : ''
  const perNodeStranded = h * S - Math.min(P, h * S)
  const demand = p.borrowed + p.failed - p.failedAtCap
  const outcome: string[] = []
  if (p.failed === 0n && p.borrowed === 0n)
    outcome.push(
      `every pod gets an address from its own node's blocks (${fmt(p.blocksClaimed)} of ${fmt(p.poolBlocks)} blocks claimed)`,
    )
  if (demand > 0n) {
    outcome.push(
      `${plural(demand, 'pod')} find no room in their node's blocks and no block left to claim` +
        (input.strictAffinity
          ? ': strict affinity forbids borrowing, so they fail'
          : `: ${fmt(p.borrowed)} borrow from other nodes' blocks${p.failed - p.failedAtCap > 0n ? `, ${fmt(p.failed - p.failedAtCap)} fail (nothing left to borrow)` : ''}`),
    )
  }
  if (p.failedAtCap > 0n)
    outcome.push(`${plural(p.failedAtCap, 'pod')} fail at the block cap of ${h} (a capped node does not borrow)`)
  const rb = p.recommendation.blockSize
  const rS = blockAddresses(family, rb)
  const rk = p.recommendation.blocksPerNode
  const pp = p.recommendation.poolPrefix
  const recBlocks = pp === undefined ? 0n : 1n << BigInt(rb - pp)
  return {
    blocksPerNode: `${plural(P, 'pod')} per node${atPeak} need ${plural(p.blocksPerNode, 'block')} of ${fmt(S)} addresses${capNote}`,
    claimLimit: `the pool has ${plural(p.poolBlocks, 'block')}: at ${h} per node ${plural(p.nodesWithAllBlocks, 'node')} get all they need${partial}; node ${fmt(p.claimLimit + 1n)} and later claim none`,
    stranded: `${plural(p.stranded, 'free address', 'free addresses')} sit in partly used affine blocks (${fmt(perNodeStranded)} per node with all its blocks${p.borrowed > 0n ? ', fewer where others borrowed' : ''})${input.strictAffinity ? '; strict affinity keeps other nodes out of them' : '; other nodes borrow them only once no block is left to claim'}`,
    outcome: outcome.join('; '),
    blockSize:
      rk === 1
        ? `/${rb}: the smallest block that holds a node's ${fmt(peak)} addresses in one (${fmt(rS)}, ${fmt(rS - peak)} spare): one claim and one affinity record per node; smaller blocks mean more of both, larger ones strand more`
        : `/${rb}: the largest block (${fmt(rS)} addresses); a node needs ${rk} of them${rk > p.blockCap ? `, more than the block cap of ${p.blockCap}` : ''}`,
    poolPrefix:
      pp === undefined
        ? `no IPv${family} pool holds ${fmt(input.nodes)} nodes × ${plural(rk, 'block')} of /${rb}`
        : `/${pp}: ${plural(recBlocks, 'block')} of /${rb} for ${fmt(input.nodes)} nodes × ${plural(rk, 'block')}: room for ${plural(recBlocks / BigInt(rk) - BigInt(input.nodes), 'more node', 'more nodes')}`,
  }
}
