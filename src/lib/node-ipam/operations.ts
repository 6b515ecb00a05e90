// The IPAM of the plugins (`ipamctl-ipam`, a drop-in for `calico-ipam`): ADD/DEL as upstream's ipamplugin, plus
// CHECK and GC. These building blocks (ipamAdd, ipamDel, ipamCheck, ipamGc, resolvePools) take an open context,
// so the main plugin runs IPAM in-process instead of exec'ing this plugin; src/plugins/ipam/plugin.ts makes the CNI commands.
import {ExhaustedError, NotFoundError, ValidationError} from '../errors.js'
import {type AssignIpArgs, assignIp} from '../ipam/assign-ip.js'
import {type AssignedIp, type AutoAssignArgs, autoAssign, type FamilyResult, shortfall} from '../ipam/autoassign.js'
import {datastoreLocked} from '../ipam/cluster-info.js'
import {type Ctx, listPools} from '../ipam/context.js'
import {releaseByHandle, type ReleaseOption, releaseIps} from '../ipam/release.js'
import {allocationsByHandle, type HandleAllocation, ipsByHandle} from '../ipam/query.js'
import {sanitizeHandle} from '../ipam/block.js'
import {decodeHandle} from '../ipam/records.js'
import {bitsOf, containsIp, type Family, formatCidr, formatIp, maskIp, tryParseIp} from '../net/cidr.js'
import {keys} from '../store/keys.js'
import {CNI_ERR, CniError, toCniError} from '../cni/errors.js'
import type {Unlock} from './host-lock.js'
import type {WorkloadIds} from './workload-ids.js'
import type {NetConf} from './netconf.js'
import {addressOf, type CniResult, ipamResult, parseResult} from '../cni/result.js'
import {addPlan, type AddPlan, type IpamRequest} from './request.js'

// ---------------------------------------------------------------------------------------------- pools

/**
 * Upstream's ResolvePools: each entry is a CIDR (masked, as Go's net.ParseCIDR does) or the name of an
 * existing pool; the result is pool CIDRs of the given family, in order.
 */
export async function resolvePools(ctx: Ctx, refs: readonly string[], family: Family): Promise<string[]> {
  if (refs.length === 0) return []
  // Pools are listed only to look up names: CIDRs (what netconfs usually give) cost no request.
  const cidrs = refs.map(parseGoCidr)
  const pools = cidrs.every((c) => c !== undefined) ? [] : await listPools(ctx)
  return refs.map((ref, i) => {
    let cidr = cidrs[i]
    if (!cidr) {
      const byName = pools.find((p) => p.name === ref)
      if (!byName) throw new ValidationError(`error parsing pool "${ref}": invalid CIDR address: ${ref}`)
      cidr = byName.cidr
    }
    if (cidr.family !== family)
      throw new ValidationError(`"${formatIp(cidr.family, cidr.base)}" isn't a IPv${family} address`)
    return formatCidr(cidr)
  })
}

function parseGoCidr(text: string): {family: Family; base: bigint; prefix: number} | undefined {
  const slash = text.indexOf('/')
  if (slash <= 0) return undefined
  const ip = tryParseIp(text.slice(0, slash))
  const len = text.slice(slash + 1)
  if (!ip || text.trim() !== text || !/^\d{1,3}$/.test(len) || Number(len) > bitsOf(ip.family)) return undefined
  const prefix = Number(len)
  return {family: ip.family, base: maskIp(ip.family, ip.value, prefix), prefix}
}

// ---------------------------------------------------------------------------------------------- operations

/**
 * The writes of an ADD. The plugin takes the host lock around each allocation (lockedAllocator); the agent
 * queues and batches them instead (src/lib/agent).
 */
export interface Allocator {
  autoAssign(args: AutoAssignArgs): Promise<{v4: FamilyResult; v6: FamilyResult}>
  assignIp(args: AssignIpArgs): Promise<AssignedIp>
  releaseIps(options: ReleaseOption[]): Promise<unknown>
  /**
   * The readiness gate's read (datastoreLocked), when the allocator shares it among requests (the agent); it must
   * read no earlier than it was called.
   */
  datastoreLocked?(): Promise<boolean>
}

export function lockedAllocator(ctx: Ctx, lock: () => Unlock): Allocator {
  const locked = async <T>(fn: () => Promise<T>): Promise<T> => {
    const unlock = lock()
    try {
      return await fn()
    } finally {
      unlock()
    }
  }
  return {
    autoAssign: (args) => locked(() => autoAssign(ctx, args)),
    assignIp: (args) => locked(() => assignIp(ctx, args)),
    releaseIps: (options) => releaseIps(ctx, options),
  }
}

/**
 * ADD. With `IP=` in CNI_ARGS: assign exactly that address; the result holds it as /32 or /128 (and, as
 * upstream, no route). Otherwise auto-assign one IPv4 address unless `assign_ipv4` is "false" and one IPv6
 * address if `assign_ipv6` is "true", from `ipv4_pools`/`ipv6_pools` (CIDRs or names) or the node's pools;
 * the result holds block-masked addresses with one route each. If one family comes back short while the
 * other got addresses, those are released again (by address, as upstream) before the error is returned.
 * An error from the allocator itself is returned as is: addresses it assigned stay with the handle until
 * the runtime's DEL, as upstream.
 */
export async function ipamAdd(ctx: Ctx, req: IpamRequest): Promise<CniResult> {
  return addAddresses(ctx, addPlan(req, ctx.clock.now()), lockedAllocator(ctx, req.lock), req.log)
}

/** ipamAdd's logic on a plan, with the writes done by `alloc`. */
export async function addAddresses(
  ctx: Ctx,
  plan: AddPlan,
  alloc: Allocator,
  log: (line: string) => void,
): Promise<CniResult> {
  // Upstream's readiness gate: `datastore lock` (ClusterInformation datastoreReady=false) holds off new pods.
  if (await (alloc.datastoreLocked ? alloc.datastoreLocked() : datastoreLocked(ctx)))
    throw new CniError(CNI_ERR.tryAgainLater, 'Calico is currently not ready to process requests')
  const {attrs, num4, num6} = plan
  if (plan.ip !== undefined) {
    const assigned = await alloc.assignIp({ip: plan.ip, host: plan.node, handle: plan.handle, attrs, use: 'Workload'})
    return {ips: [{address: `${assigned.address}/${bitsOf(assigned.family)}`}], dns: {}}
  }
  const pools4 = await resolvePools(ctx, plan.ipv4Pools, 4)
  const pools6 = await resolvePools(ctx, plan.ipv6Pools, 6)
  const {v4, v6} = await alloc.autoAssign({
    host: plan.node,
    num4,
    num6,
    handle: plan.handle,
    attrs,
    pools4,
    pools6,
    maxBlocksPerHost: plan.maxBlocksPerHost,
    use: 'Workload',
    namespaceLabels: plan.namespaceLabels,
    onBlockClaimed: (block, from) =>
      log(`claimed block ${block} for node ${plan.node}${from ? ` (an empty block of node ${from})` : ''}`),
  })
  const undo = async (ips: readonly {address: string}[], why: string) => {
    log(`${why}: releasing ${ips.map((i) => i.address).join(', ')}`)
    try {
      await alloc.releaseIps(ips.map((i) => ({ip: i.address})))
    } catch (err) {
      log(`error releasing ${ips.map((i) => i.address).join(', ')}: ${(err as Error).message}`)
    }
  }
  if (num4 > 0 && v4.ips.length < num4 && num6 > 0 && v6.ips.length > 0)
    await undo(v6.ips, 'assigned IPv6 addresses but failed to assign IPv4 addresses')
  if (num6 > 0 && v6.ips.length < num6 && num4 > 0 && v4.ips.length > 0)
    await undo(v4.ips, 'assigned IPv4 addresses but failed to assign IPv6 addresses')
  const short4 = num4 > 0 ? shortfall(v4, 4) : undefined
  if (short4) throw new ExhaustedError(`failed to request IPv4 addresses: ${short4}`)
  const short6 = num6 > 0 ? shortfall(v6, 6) : undefined
  if (short6) throw new ExhaustedError(`failed to request IPv6 addresses: ${short6}`)
  return ipamResult([...v4.ips.slice(0, num4), ...v6.ips.slice(0, num6)])
}

/** The addresses a handle holds, with their blocks (as an ADD reports them); none for an unknown handle. */
async function heldByHandle(ctx: Ctx, handle: string): Promise<AssignedIp[]> {
  let ips: string[]
  try {
    ips = await ipsByHandle(ctx, handle)
  } catch (err) {
    if (err instanceof NotFoundError) return []
    throw err
  }
  const kv = await ctx.store.get(keys.handle(sanitizeHandle(handle)))
  const blocks = kv ? [...decodeHandle(kv.value).keys()].flatMap((c) => parseGoCidr(c) ?? []) : []
  return ips.flatMap((address) => {
    const ip = tryParseIp(address)
    const block = ip && blocks.find((b) => containsIp(b, ip))
    return ip && block
      ? [{address, family: ip.family, cidr: `${address}/${block.prefix}`, block: formatCidr(block)}]
      : []
  })
}

/**
 * ADD after an agent request whose outcome is unknown (the agent died or timed out after it had the request):
 * it may have committed. So, under the host lock, look at the handle first: if it holds exactly what was asked
 * (the IP= address, or num4 IPv4 and num6 IPv6 addresses) that is the result, as calico's idempotent ADD by
 * handle; anything else it holds is released, then the ADD runs as usual. Never a second allocation for the
 * same attachment, never a leak.
 */
export async function ipamAddAfterUnknown(ctx: Ctx, req: IpamRequest): Promise<CniResult> {
  const plan = addPlan(req, ctx.clock.now())
  const unlock = req.lock()
  try {
    const held = await heldByHandle(ctx, plan.handle)
    if (held.length > 0) {
      const want = plan.ip === undefined ? undefined : tryParseIp(plan.ip)
      const count = (f: Family) => held.filter((h) => h.family === f).length
      const exact =
        plan.ip === undefined
          ? count(4) === plan.num4 && count(6) === plan.num6
          : held.length === 1 && want !== undefined && held[0]!.address === formatIp(want.family, want.value)
      if (exact) {
        req.log(
          `handle ${plan.handle} already holds ${held.map((h) => h.address).join(', ')} from the interrupted agent request; returning them`,
        )
        if (plan.ip !== undefined) return {ips: [{address: `${held[0]!.address}/${bitsOf(held[0]!.family)}`}], dns: {}}
        return ipamResult([...held.filter((h) => h.family === 4), ...held.filter((h) => h.family === 6)])
      }
      req.log(
        `handle ${plan.handle} holds ${held.map((h) => h.address).join(', ')}, not what this ADD asks for: releasing them first`,
      )
      await releaseByHandle(ctx, plan.handle)
    }
  } finally {
    unlock()
  }
  return ipamAdd(ctx, req)
}

/**
 * One of several fixed addresses (IPAMCTL_IPS) after an agent request whose outcome is unknown: the handle
 * already holds the others of this ADD, so only this address is looked for; held, it is the result, else it is
 * assigned as usual (ipamAddAfterUnknown would release the others).
 */
export async function ipamAddFixedAfterUnknown(ctx: Ctx, req: IpamRequest): Promise<CniResult> {
  const plan = addPlan(req, ctx.clock.now())
  const want = plan.ip === undefined ? undefined : tryParseIp(plan.ip)
  if (!want) return ipamAddAfterUnknown(ctx, req)
  const text = formatIp(want.family, want.value)
  const unlock = req.lock()
  let held: AssignedIp[]
  try {
    held = await heldByHandle(ctx, plan.handle)
  } finally {
    unlock()
  }
  if (held.some((h) => h.address === text)) return {ips: [{address: `${text}/${bitsOf(want.family)}`}], dns: {}}
  return ipamAdd(ctx, req)
}

/**
 * DEL, idempotent: release the handle `<network>.<containerID>`, then the legacy workload handle; a
 * missing handle is not an error. `IP=` is ignored.
 */
export async function ipamDel(
  ctx: Ctx,
  req: {ids: Pick<WorkloadIds, 'handleId' | 'workloadId'>; lock: () => Unlock; log: (line: string) => void},
): Promise<string[]> {
  const unlock = req.lock()
  try {
    return (await releaseHandles(ctx, [req.ids.handleId, req.ids.workloadId], req.log)).released
  } finally {
    unlock()
  }
}

/** Release handles in order; missing ones are skipped (only the first, the attachment's own, is worth a log line). */
export async function releaseHandles(
  ctx: Ctx,
  handles: readonly string[],
  log: (line: string) => void,
): Promise<{released: string[]; missing: string[]}> {
  const released: string[] = []
  const missing: string[] = []
  for (const [i, handle] of handles.entries()) {
    try {
      released.push(...(await releaseByHandle(ctx, handle)))
    } catch (err) {
      if (!(err instanceof NotFoundError)) throw err
      missing.push(handle)
      if (i === 0) log(`asked to release handle ${handle} but it does not exist; ignoring`)
    }
  }
  return {released, missing}
}

/**
 * CHECK: the addresses held by this attachment's handle must be exactly the addresses of the prevResult
 * (compared without prefix lengths: the main plugin narrows them to /32 and /128).
 */
export async function ipamCheck(ctx: Ctx, req: IpamRequest): Promise<void> {
  if (req.conf.prevResult === undefined)
    throw new CniError(CNI_ERR.invalidConfig, 'CHECK needs a prevResult in the network configuration')
  const prev = parseResult(req.conf.prevResult, req.conf.cniVersion)
  await checkHandleAddresses(
    ctx,
    req.ids.handleId,
    prev.ips.map((i) => i.address),
  )
}

/** ipamCheck's comparison: `handle` holds exactly `addresses` (prefix lengths ignored); the agent runs it too. */
export async function checkHandleAddresses(ctx: Ctx, handle: string, addresses: readonly string[]): Promise<void> {
  const canon = (a: string) => {
    const ip = tryParseIp(addressOf(a))
    return ip ? formatIp(ip.family, ip.value) : a
  }
  const want = [...new Set(addresses.map(canon))].sort()
  let have: string[]
  try {
    have = (await ipsByHandle(ctx, handle)).map(canon).sort()
  } catch (err) {
    if (!(err instanceof NotFoundError)) throw err
    have = []
  }
  if (have.length === 0) {
    throw new CniError(
      CNI_ERR.internal,
      `IPAM CHECK failed: no addresses are allocated to handle ${handle}`,
      `prevResult lists [${want.join(' ')}]`,
    )
  }
  if (have.join(' ') !== want.join(' ')) {
    throw new CniError(
      CNI_ERR.internal,
      `IPAM CHECK failed: handle ${handle} holds [${have.join(' ')}] but prevResult lists [${want.join(' ')}]`,
    )
  }
}

export interface Attachment {
  containerID: string
  ifname: string
}

/** `cni.dev/valid-attachments` (or its older spelling `cni.dev/attachments`) from a GC config. */
export function validAttachments(raw: Record<string, unknown>): Attachment[] {
  const v = raw['cni.dev/valid-attachments'] ?? raw['cni.dev/attachments']
  if (v === undefined || v === null) {
    throw new CniError(CNI_ERR.invalidConfig, 'GC needs cni.dev/valid-attachments in the network configuration')
  }
  if (!Array.isArray(v)) throw new CniError(CNI_ERR.invalidConfig, 'cni.dev/valid-attachments must be a list')
  return v.map((a, i) => {
    if (typeof a !== 'object' || a === null || typeof (a as Attachment).containerID !== 'string') {
      throw new CniError(CNI_ERR.invalidConfig, `cni.dev/valid-attachments[${i}] must be an object with a containerID`)
    }
    return {containerID: (a as Attachment).containerID, ifname: String((a as Attachment).ifname ?? '')}
  })
}

/**
 * GC (spec 1.1): release every handle of this network (`<network>.<containerID>`) whose container is not
 * among the valid attachments and whose addresses were all allocated to `node`. Handles are per container, not
 * per interface, so a container counts as valid if any of its attachments is listed. The list comes from this
 * node's runtime, so another node's attachments are never in it: a handle with an address of another node (or of
 * none recorded) is not this GC's to release. Handles whose suffix contains a dot (legacy workload handles, VM
 * handles) are not sandbox handles and are left alone, as upstream's ParsePodHandleID does. Errors do not stop
 * the sweep; they are reported together at the end.
 */
export async function ipamGc(
  ctx: Ctx,
  conf: NetConf,
  attachments: readonly Attachment[],
  req: Pick<IpamRequest, 'log' | 'lock'> & {node: string},
): Promise<string[]> {
  const valid = new Set(attachments.map((a) => a.containerID))
  const prefix = `${keys.handlePrefix()}${conf.name}.`
  const candidates: string[] = []
  for (const key of await ctx.store.listKeys(prefix)) {
    const handle = sanitizeHandle(key.slice(keys.handlePrefix().length))
    const containerId = handle.slice(conf.name.length + 1)
    if (containerId === '' || containerId.includes('.') || valid.has(containerId)) continue
    candidates.push(key.slice(keys.handlePrefix().length))
  }
  const stale: string[] = []
  for (const handle of candidates) {
    if (await allocatedOnlyTo(ctx, handle, req.node)) stale.push(handle)
  }
  const released: string[] = []
  const failures: string[] = []
  if (stale.length === 0) return released
  const unlock = req.lock()
  try {
    for (const handle of stale) {
      try {
        const ips = await releaseByHandle(ctx, handle)
        released.push(...ips)
        req.log(`GC: released ${handle} (${ips.join(', ') || 'no addresses'})`)
      } catch (err) {
        if (err instanceof NotFoundError) continue
        failures.push(`${handle}: ${toCniError(err).msg}`)
      }
    }
  } finally {
    unlock()
  }
  if (failures.length > 0)
    throw new CniError(
      CNI_ERR.internal,
      `GC failed to release ${failures.length} of ${stale.length} stale handles`,
      failures.join('; '),
    )
  return released
}

/** Whether every address `handle` holds is recorded as allocated to `node` (and there is at least one, none cooling down). */
async function allocatedOnlyTo(ctx: Ctx, handle: string, node: string): Promise<boolean> {
  let held: HandleAllocation[]
  try {
    held = await allocationsByHandle(ctx, handle)
  } catch (err) {
    if (err instanceof NotFoundError) return false
    throw err
  }
  return held.length > 0 && held.every((a) => !a.coolingDown && a.attrs.node === node)
}
