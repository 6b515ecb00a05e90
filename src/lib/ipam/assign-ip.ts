// AssignIP: specific addresses. A block nobody has created yet is claimed for the host. Several addresses
// are assigned in ONE transaction, so a request for many is all-or-nothing, blocks claimed on the way included.
import {ConflictError, ValidationError} from '../errors.js'
import {checkpoint, NOTHING_COMMITTED} from '../interrupt.js'
import {type Cidr, containsIp, formatCidr, formatIp, type Ip, maskIp, parseIp} from '../net/cidr.js'
import {keys} from '../store/keys.js'
import {type Block, encodeBlock, newBlock, ordinalOf, takeOrdinal} from './block.js'
import {type AssignedIp, ownerAttribute, validateOwnerAttributes} from './autoassign.js'
import {type Ctx, listPools, loadBlock, loadConfig, withRetry, WriteBatch} from './context.js'
import {ensureNode, validateHandleId, validateHostName} from './node.js'
import type {AllowedUse, Pool} from './pool.js'
import {encodeAffinity} from './records.js'
import {listReservations, reservedMatcher} from './reservation.js'
import {nanoTimestamp} from '../codec/gotime.js'

export interface AssignIpArgs {
  ip: string
  host: string
  handle?: string
  attrs?: Record<string, string>
  use?: AllowedUse
}

export async function assignIp(ctx: Ctx, args: AssignIpArgs): Promise<AssignedIp> {
  const {ip, ...rest} = args
  return (await assignIps(ctx, [ip], rest))[0]!
}

interface Target {
  ip: Ip
  text: string
  pool: Pool
  block: Cidr
}

function resolveTargets(ips: readonly string[], pools: readonly Pool[], use?: AllowedUse): Target[] {
  const seen = new Set<string>()
  return ips.map((raw) => {
    const ip = parseIp(raw)
    const text = formatIp(ip.family, ip.value)
    if (seen.has(text)) throw new ValidationError(`IP address ${text} is given twice`)
    seen.add(text)
    // Upstream: the first enabled pool (in name order) that contains the address.
    const pool = pools.find((p) => !p.spec.disabled && containsIp(p.cidr, ip))
    if (!pool) throw new ValidationError(`The provided IP address ${text} is not in a configured pool`)
    if (use && !pool.spec.allowedUses.includes(use)) {
      throw new ValidationError(
        `IP address ${text} is in IP pool "${pool.name}", which is not allowed for use "${use}" (allowedUses: [${pool.spec.allowedUses.join(' ')}])`,
      )
    }
    const bs = pool.spec.blockSize
    return {ip, text, pool, block: {family: ip.family, base: maskIp(ip.family, ip.value, bs), prefix: bs}}
  })
}

export async function assignIps(
  ctx: Ctx,
  ips: readonly string[],
  rest: Omit<AssignIpArgs, 'ip'>,
): Promise<AssignedIp[]> {
  if (ips.length === 0) throw new ValidationError('no IP address given')
  validateHostName(rest.host)
  validateHandleId(rest.handle)
  validateOwnerAttributes(rest.host, rest.attrs)
  const [cfg, pools, reservations] = await Promise.all([loadConfig(ctx), listPools(ctx), listReservations(ctx)])
  const targets = resolveTargets(ips, pools, rest.use)
  const reserved = reservedMatcher(reservations)
  for (const t of targets) {
    const by = reserved.reservedBy(t.ip)
    if (by !== undefined) throw new ValidationError(`IP address ${t.text} is reserved by IPReservation ${by}`)
  }
  const affinity = `host:${rest.host}`
  const attr = ownerAttribute(rest.host, rest.handle, rest.attrs)
  const byBlock = new Map<string, Target[]>()
  for (const t of targets) byBlock.set(formatCidr(t.block), [...(byBlock.get(formatCidr(t.block)) ?? []), t])
  // One transaction for every address: an interrupt waits for it (and the Node record) to complete.
  await checkpoint(ctx, NOTHING_COMMITTED)
  const done = await withRetry(ctx, async () => {
    const batch = new WriteBatch(ctx)
    const out: AssignedIp[] = []
    for (const group of byBlock.values()) {
      const cidr = group[0]!.block
      const loaded = await loadBlock(ctx, cidr, cfg.ipCooldownSeconds)
      let block: Block
      if (loaded) {
        block = loaded.block
        checkStrict(cfg.strictAffinity, block, affinity, group[0]!.text)
      } else {
        const now = ctx.clock.now()
        block = newBlock(cidr, affinity, now, nanoTimestamp(now))
        const affKey = keys.affinity(rest.host, cidr)
        batch.put(affKey, encodeAffinity('confirmed'), await ctx.store.get(affKey))
      }
      for (const t of group) {
        if (!takeOrdinal(block, ordinalOf(block, t.ip), attr)) {
          throw new ConflictError(
            `IP address ${t.text} is already assigned (Address already assigned in block ${formatCidr(cidr)})`,
          )
        }
        out.push({address: t.text, family: t.ip.family, cidr: `${t.text}/${cidr.prefix}`, block: formatCidr(cidr)})
      }
      if (loaded) batch.putBlock(block, loaded.kv)
      else batch.put(keys.block(cidr), encodeBlock(block), undefined)
      batch.countHandle(rest.handle, cidr, group.length)
    }
    await batch.commit()
    return out
  })
  await ensureNode(ctx.store, rest.host, ctx.clock.now())
  // Report in the order the caller asked for.
  return targets.map((t) => done.find((d) => d.address === t.text)!)
}

function checkStrict(strict: boolean, block: Block, affinity: string, ip: string): void {
  if (!strict || block.affinity === affinity) return
  throw new ConflictError(
    block.affinity
      ? `Block host affinity does not match: ${ip} is in block ${formatCidr(block.cidr)} owned by ${block.affinity} and strict affinity is enabled`
      : `Attempt to assign from block ${formatCidr(block.cidr)} with no affinity (strict affinity is enabled)`,
  )
}
