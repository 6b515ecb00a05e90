// AssignIP: one specific address. The block is claimed for the host if nobody has created it yet.
import {ConflictError, ValidationError} from '../errors.js'
import {containsIp, formatCidr, formatIp, maskIp, parseIp} from '../net/cidr.js'
import {keys} from '../store/keys.js'
import {type Block, newBlock, ordinalOf, takeOrdinal, encodeBlock} from './block.js'
import {type AssignedIp, ownerAttribute} from './autoassign.js'
import {type Ctx, listPools, loadBlock, loadConfig, withRetry, WriteBatch} from './context.js'
import {ensureNode} from './node.js'
import type {AllowedUse} from './pool.js'
import {encodeAffinity} from './records.js'
import {releaseIps} from './release.js'
import {nanoTimestamp} from './time.js'

export interface AssignIpArgs {
  ip: string
  host: string
  handle?: string
  attrs?: Record<string, string>
  use?: AllowedUse
}

export async function assignIp(ctx: Ctx, args: AssignIpArgs): Promise<AssignedIp> {
  const ip = parseIp(args.ip)
  const text = formatIp(ip.family, ip.value)
  const [cfg, pools] = await Promise.all([loadConfig(ctx), listPools(ctx)])
  const pool = pools.find((p) => !p.spec.disabled && containsIp(p.cidr, ip))
  if (!pool) throw new ValidationError(`The provided IP address ${text} is not in a configured pool`)
  if (args.use && !pool.spec.allowedUses.includes(args.use)) {
    throw new ValidationError(`IP address ${text} is in IP pool "${pool.name}", which is not allowed for use "${args.use}" (allowedUses: [${pool.spec.allowedUses.join(' ')}])`)
  }
  await ensureNode(ctx.store, args.host, ctx.clock.now())
  const cidr = {family: ip.family, base: maskIp(ip.family, ip.value, pool.spec.blockSize), prefix: pool.spec.blockSize}
  const affinity = `host:${args.host}`
  const attr = ownerAttribute(args.host, args.handle, args.attrs)
  return withRetry(ctx, async () => {
    const loaded = await loadBlock(ctx, cidr, cfg.ipCooldownSeconds)
    const batch = new WriteBatch(ctx)
    let block: Block
    if (loaded) {
      block = loaded.block
      if (cfg.strictAffinity && block.affinity !== affinity) {
        throw new ConflictError(
          block.affinity
            ? `Block host affinity does not match: ${text} is in block ${formatCidr(block.cidr)} owned by ${block.affinity} and strict affinity is enabled`
            : `Attempt to assign from block ${formatCidr(block.cidr)} with no affinity (strict affinity is enabled)`,
        )
      }
    } else {
      // Nobody owns this block yet: claim it for the host in the same transaction (upstream does too).
      const now = ctx.clock.now()
      block = newBlock(cidr, affinity, now, nanoTimestamp(now))
      const affKey = keys.affinity(args.host, cidr)
      batch.put(affKey, encodeAffinity('confirmed'), await ctx.store.get(affKey))
    }
    if (!takeOrdinal(block, ordinalOf(block, ip), attr)) {
      throw new ConflictError(`IP address ${text} is already assigned (Address already assigned in block ${formatCidr(block.cidr)})`)
    }
    if (loaded) batch.putBlock(block, loaded.kv)
    else batch.put(keys.block(cidr), encodeBlock(block), undefined)
    await batch.countHandle(args.handle, cidr, 1).commit()
    return {address: text, family: ip.family, cidr: `${text}/${cidr.prefix}`, block: formatCidr(block.cidr)}
  })
}

/**
 * Assign several specific addresses as one request: every address is validated first, and if any of
 * them cannot be assigned the ones already taken are released again, so the request is all-or-nothing.
 */
export async function assignIps(ctx: Ctx, ips: readonly string[], rest: Omit<AssignIpArgs, 'ip'>): Promise<AssignedIp[]> {
  const parsed = ips.map((t) => parseIp(t))
  const seen = new Set<string>()
  for (const ip of parsed) {
    const t = formatIp(ip.family, ip.value)
    if (seen.has(t)) throw new ValidationError(`IP address ${t} is given twice`)
    seen.add(t)
  }
  const pools = await listPools(ctx)
  for (const ip of parsed) {
    if (!pools.some((p) => !p.spec.disabled && containsIp(p.cidr, ip))) {
      throw new ValidationError(`The provided IP address ${formatIp(ip.family, ip.value)} is not in a configured pool`)
    }
  }
  const done: AssignedIp[] = []
  try {
    for (const ip of ips) done.push(await assignIp(ctx, {...rest, ip}))
  } catch (err) {
    if (done.length > 0) {
      await releaseIps(ctx, done.map((d) => ({ip: d.address, handle: rest.handle})))
    }
    throw err
  }
  return done
}
