// Giving up a host's claim on a block. One transaction: the block loses its owner (or is deleted if it
// is empty) and the affinity key goes, so no affinity outlives its block (quirk 3.15.3 fixed).
import {ConflictError} from '../errors.js'
import {type Cidr, formatCidr} from '../net/cidr.js'
import {keys} from '../store/keys.js'
import {isEmpty} from './block.js'
import {type Ctx, loadBlock, loadConfig, withRetry, WriteBatch} from './context.js'
import type {IpamConfig} from './records.js'

export type AffinityRelease = 'released' | 'deleted-block' | 'stale' | 'absent'

/** `cfg`: the IPAM config if the caller has read it already (one read for a whole pool or node). */
export async function releaseBlockAffinity(
  ctx: Ctx,
  host: string,
  cidr: Cidr,
  opts: {requireEmpty: boolean},
  known?: IpamConfig,
): Promise<AffinityRelease> {
  const cfg = known ?? (await loadConfig(ctx))
  const affKey = keys.affinity(host, cidr)
  return withRetry(ctx, async () => {
    const affKv = await ctx.store.get(affKey)
    if (!affKv) return 'absent'
    const loaded = await loadBlock(ctx, cidr, cfg.ipCooldownSeconds)
    const batch = new WriteBatch(ctx).delete(affKey, affKv)
    if (!loaded || loaded.block.affinity !== `host:${host}`) {
      await batch.commit()
      return 'stale'
    }
    const {block, kv} = loaded
    if (isEmpty(block)) {
      await batch.delete(keys.block(cidr), kv).commit()
      return 'deleted-block'
    }
    if (opts.requireEmpty) throw new ConflictError(`block '${formatCidr(cidr)}' is not empty`)
    block.affinity = null
    block.affinityClaimTime = undefined
    await batch.putBlock(block, kv).commit()
    return 'released'
  })
}
