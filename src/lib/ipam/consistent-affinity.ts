// A node's claim on a block ends once the block's pool no longer selects the node (its labels or the pool's
// nodeSelector changed) and the block is empty: the pool's space then goes to nodes it does select. Upstream
// does this in two places, and so do we: when a node allocates (its deselected empty blocks are released
// first, upstream's prepareAffinityBlocksForHost) and when a release empties an affine block (ensureConsistentAffinity);
// docs/calico.md#deselected-nodes.
// Both are best effort: the allocation or release itself has succeeded, and whatever could not be released
// now (a block that filled up meanwhile, a conflict) is looked at again the next time.
import {type Cidr, containsCidr} from '../net/cidr.js'
import {parseAffinityKey} from '../store/keys.js'
import {releaseBlockAffinity} from './affinity.js'
import {type Ctx, listPools} from './context.js'
import {getNode} from './node.js'
import type {Pool} from './pool.js'
import {parseSelector} from './selector.js'

/** A block some host holds that a release just left empty. */
export interface EmptiedBlock {
  host: string
  cidr: Cidr
}

/** The enabled pool holding `cidr`, if any: a disabled or deleted pool's blocks are left to pool deletion. */
const enabledPoolOf = (pools: readonly Pool[], cidr: Cidr): Pool | undefined =>
  pools.find((p) => !p.spec.disabled && containsCidr(p.cidr, cidr))

const selects = (pool: Pool, labels: Readonly<Record<string, string>>): boolean =>
  parseSelector(pool.spec.nodeSelector).matches(labels)

/**
 * Of a host's affinity keys, the blocks outside the pools this allocation may use whose enabled pool does not
 * select the host. Blocks of pools left out only by use or by an explicit pool request are not among them.
 */
export function deselectedBlocks(
  affinityKeys: readonly string[],
  allowed: readonly Pool[],
  allPools: readonly Pool[],
  labels: Readonly<Record<string, string>>,
): Cidr[] {
  const out: Cidr[] = []
  for (const key of affinityKeys) {
    const a = parseAffinityKey(key)
    if (!a || allowed.some((p) => containsCidr(p.cidr, a.cidr))) continue
    const pool = enabledPoolOf(allPools, a.cidr)
    if (pool && !selects(pool, labels)) out.push(a.cidr)
  }
  return out
}

/** Give up `host`'s claim on each of `blocks` that is empty (a non-empty one stays until it empties). */
export async function releaseIfEmpty(ctx: Ctx, host: string, blocks: readonly Cidr[]): Promise<void> {
  for (const cidr of blocks) {
    try {
      await releaseBlockAffinity(ctx, host, cidr, {requireEmpty: true})
    } catch {
      // Not empty, or changed under us: it is reconsidered on the host's next allocation or release.
    }
  }
}

/** The host of a block affinity value `host:<name>`; other affinity kinds are not ours to release. */
export function affinityHost(affinity: string | null): string | undefined {
  return affinity?.startsWith('host:') ? affinity.slice('host:'.length) : undefined
}

/** After releases: each emptied affine block whose enabled pool no longer selects its (existing) node is let go. */
export async function ensureConsistentAffinity(ctx: Ctx, emptied: readonly EmptiedBlock[]): Promise<void> {
  if (emptied.length === 0) return
  try {
    const pools = await listPools(ctx)
    for (const {host, cidr} of emptied) {
      const pool = enabledPoolOf(pools, cidr)
      if (!pool) continue
      const node = await getNode(ctx.store, host)
      if (node && !selects(pool, node.labels)) await releaseIfEmpty(ctx, host, [cidr])
    }
  } catch {
    // Best effort, as upstream (it logs and goes on): the release has been done.
  }
}
