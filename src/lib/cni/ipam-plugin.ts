// The IPAM plugin (`ipamctl-ipam`, a drop-in for `calico-ipam`): ADD/DEL as upstream's ipamplugin, plus
// CHECK, STATUS and GC. The building blocks (ipamAdd, ipamDel, ipamCheck, ipamGc, resolvePools) take an
// open context, so the main plugin can run IPAM in-process instead of exec'ing this plugin.
import {ExhaustedError, NotFoundError, ValidationError} from '../errors.js'
import {assignIp} from '../ipam/assign-ip.js'
import {autoAssign, shortfall} from '../ipam/autoassign.js'
import {datastoreLocked} from '../ipam/cluster-info.js'
import {type Ctx, listPools, makeCtx} from '../ipam/context.js'
import {releaseByHandle, releaseIps} from '../ipam/release.js'
import {ipsByHandle} from '../ipam/query.js'
import {sanitizeHandle} from '../ipam/block.js'
import {type Clock, systemClock} from '../ipam/time.js'
import {bitsOf, type Family, formatCidr, formatIp, maskIp, tryParseIp} from '../net/cidr.js'
import {keys} from '../store/keys.js'
import {openStore as defaultOpenStore} from '../store/open.js'
import type {DatastoreSettings} from '../store/settings.js'
import type {Store} from '../store/store.js'
import {type CniArgs, parseCniArgs} from './args.js'
import {CNI_ERR, CniError, toCniError} from './errors.js'
import {acquireHostLock, type HostLockOptions, type Unlock} from './lock.js'
import {
  allocationAttrs,
  DEFAULT_IPAM_LOCK_FILE,
  datastoreSettingsFor,
  determineNodename,
  type NetConf,
  type NodenameDeps,
  parseNetConf,
  type WorkloadIds,
  workloadIds,
} from './netconf.js'
import {addressOf, type CniResult, ipamResult, parseResult} from './result.js'
import type {CmdArgs, PluginFuncs} from './skel.js'

export interface IpamPluginDeps extends NodenameDeps {
  openStore?: (s: DatastoreSettings) => Promise<Store>
  clock?: Clock
  /**
   * The host lock: false disables it; a function replaces it (tests). Default: acquireHostLock on
   * `ipam_lock_file` (default /var/run/calico/ipam.lock).
   */
  lock?: false | ((file: string, opts: HostLockOptions) => Unlock)
  lockWaitMs?: number
}

/** Everything an IPAM operation needs to know about the invocation. */
export interface IpamRequest {
  conf: NetConf
  args: CniArgs
  ids: WorkloadIds
  log: (line: string) => void
  lock: () => Unlock
}

// ---------------------------------------------------------------------------------------------- pools

/**
 * Upstream's ResolvePools: each entry is a CIDR (masked, as Go's net.ParseCIDR does) or the name of an
 * existing pool; the result is pool CIDRs of the given family, in order.
 */
export async function resolvePools(ctx: Ctx, refs: readonly string[], family: Family): Promise<string[]> {
  if (refs.length === 0) return []
  const pools = await listPools(ctx)
  return refs.map((ref) => {
    let cidr = parseGoCidr(ref)
    if (!cidr) {
      const byName = pools.find((p) => p.name === ref)
      if (!byName) throw new ValidationError(`error parsing pool "${ref}": invalid CIDR address: ${ref}`)
      cidr = byName.cidr
    }
    if (cidr.family !== family) throw new ValidationError(`"${formatIp(cidr.family, cidr.base)}" isn't a IPv${family} address`)
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
 * ADD. With `IP=` in CNI_ARGS: assign exactly that address; the result holds it as /32 or /128 (and, as
 * upstream, no route). Otherwise auto-assign one IPv4 address unless `assign_ipv4` is "false" and one IPv6
 * address if `assign_ipv6` is "true", from `ipv4_pools`/`ipv6_pools` (CIDRs or names) or the node's pools;
 * the result holds block-masked addresses with one route each. If one family comes back short while the
 * other got addresses, those are released again (by address, as upstream) before the error is returned.
 * An error from the allocator itself is returned as is: addresses it assigned stay with the handle until
 * the runtime's DEL, as upstream.
 */
export async function ipamAdd(ctx: Ctx, req: IpamRequest): Promise<CniResult> {
  const {conf, args, ids} = req
  // Upstream's readiness gate: `datastore lock` (ClusterInformation datastoreReady=false) holds off new pods.
  if (await datastoreLocked(ctx)) throw new CniError(CNI_ERR.tryAgainLater, 'Calico is currently not ready to process requests')
  const attrs = allocationAttrs(ids, ctx.clock.now())
  if (args.ip !== undefined) {
    const unlock = req.lock()
    let assigned
    try {
      assigned = await assignIp(ctx, {ip: args.ip, host: ids.node, handle: ids.handleId, attrs, use: 'Workload'})
    } finally {
      unlock()
    }
    return {ips: [{address: `${assigned.address}/${bitsOf(assigned.family)}`}], dns: {}}
  }
  const num4 = conf.ipam.assignIpv4 === 'false' ? 0 : 1
  const num6 = conf.ipam.assignIpv6 === 'true' ? 1 : 0
  const pools4 = await resolvePools(ctx, conf.ipam.ipv4Pools, 4)
  const pools6 = await resolvePools(ctx, conf.ipam.ipv6Pools, 6)
  const unlock = req.lock()
  let r
  try {
    r = await autoAssign(ctx, {
      host: ids.node,
      num4,
      num6,
      handle: ids.handleId,
      attrs,
      pools4,
      pools6,
      maxBlocksPerHost: conf.windowsUseSingleNetwork ? 1 : 0,
      use: 'Workload',
    })
  } finally {
    unlock()
  }
  const {v4, v6} = r
  const undo = async (ips: readonly {address: string}[], why: string) => {
    req.log(`${why}: releasing ${ips.map((i) => i.address).join(', ')}`)
    try {
      await releaseIps(ctx, ips.map((i) => ({ip: i.address})))
    } catch (err) {
      req.log(`error releasing ${ips.map((i) => i.address).join(', ')}: ${(err as Error).message}`)
    }
  }
  if (num4 > 0 && v4.ips.length < num4 && num6 > 0 && v6.ips.length > 0) await undo(v6.ips, 'assigned IPv6 addresses but failed to assign IPv4 addresses')
  if (num6 > 0 && v6.ips.length < num6 && num4 > 0 && v4.ips.length > 0) await undo(v4.ips, 'assigned IPv4 addresses but failed to assign IPv6 addresses')
  const short4 = num4 > 0 ? shortfall(v4, 4) : undefined
  if (short4) throw new ExhaustedError(`failed to request IPv4 addresses: ${short4}`)
  const short6 = num6 > 0 ? shortfall(v6, 6) : undefined
  if (short6) throw new ExhaustedError(`failed to request IPv6 addresses: ${short6}`)
  return ipamResult([...v4.ips.slice(0, num4), ...v6.ips.slice(0, num6)])
}

/**
 * DEL, idempotent: release the handle `<network>.<containerID>`, then the legacy workload handle; a
 * missing handle is not an error. `IP=` is ignored.
 */
export async function ipamDel(ctx: Ctx, req: IpamRequest): Promise<string[]> {
  const unlock = req.lock()
  const released: string[] = []
  try {
    for (const handle of [req.ids.handleId, req.ids.workloadId]) {
      try {
        released.push(...(await releaseByHandle(ctx, handle)))
      } catch (err) {
        if (!(err instanceof NotFoundError)) throw err
        if (handle === req.ids.handleId) req.log(`asked to release handle ${handle} but it does not exist; ignoring`)
      }
    }
  } finally {
    unlock()
  }
  return released
}

/**
 * CHECK: the addresses held by this attachment's handle must be exactly the addresses of the prevResult
 * (compared without prefix lengths: the main plugin narrows them to /32 and /128).
 */
export async function ipamCheck(ctx: Ctx, req: IpamRequest): Promise<void> {
  if (req.conf.prevResult === undefined) throw new CniError(CNI_ERR.invalidConfig, 'CHECK needs a prevResult in the network configuration')
  const prev = parseResult(req.conf.prevResult, req.conf.cniVersion)
  const canon = (a: string) => {
    const ip = tryParseIp(addressOf(a))
    return ip ? formatIp(ip.family, ip.value) : a
  }
  const want = [...new Set(prev.ips.map((i) => canon(i.address)))].sort()
  let have: string[]
  try {
    have = (await ipsByHandle(ctx, req.ids.handleId)).map(canon).sort()
  } catch (err) {
    if (!(err instanceof NotFoundError)) throw err
    have = []
  }
  if (have.length === 0) {
    throw new CniError(CNI_ERR.internal, `IPAM CHECK failed: no addresses are allocated to handle ${req.ids.handleId}`, `prevResult lists [${want.join(' ')}]`)
  }
  if (have.join(' ') !== want.join(' ')) {
    throw new CniError(
      CNI_ERR.internal,
      `IPAM CHECK failed: handle ${req.ids.handleId} holds [${have.join(' ')}] but prevResult lists [${want.join(' ')}]`,
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
 * among the valid attachments. Handles are per container, not per interface, so a container counts as
 * valid if any of its attachments is listed. Handles whose suffix contains a dot (legacy workload handles,
 * VM handles) are not sandbox handles and are left alone, as upstream's ParsePodHandleID does. Errors do not
 * stop the sweep; they are reported together at the end.
 */
export async function ipamGc(ctx: Ctx, conf: NetConf, attachments: readonly Attachment[], req: Pick<IpamRequest, 'log' | 'lock'>): Promise<string[]> {
  const valid = new Set(attachments.map((a) => a.containerID))
  const prefix = keys.handlePrefix() + conf.name + '.'
  const stale: string[] = []
  for (const key of await ctx.store.listKeys(prefix)) {
    const handle = sanitizeHandle(key.slice(keys.handlePrefix().length))
    const containerId = handle.slice(conf.name.length + 1)
    if (containerId === '' || containerId.includes('.') || valid.has(containerId)) continue
    stale.push(key.slice(keys.handlePrefix().length))
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
  if (failures.length > 0) throw new CniError(CNI_ERR.internal, `GC failed to release ${failures.length} of ${stale.length} stale handles`, failures.join('; '))
  return released
}

// ---------------------------------------------------------------------------------------------- the plugin

/** Parse the invocation: netconf, CNI_ARGS, node name and identifiers (no datastore access). */
export function ipamRequest(a: CmdArgs, deps: IpamPluginDeps = {}): IpamRequest {
  const conf = parseNetConf(a.config)
  const args = parseCniArgs(a.args)
  const node = determineNodename(conf, deps)
  const ids = workloadIds(conf, {containerId: a.containerId, ifName: a.ifName}, args, node)
  const lockFn = deps.lock === undefined ? acquireHostLock : deps.lock
  const lockFile = conf.ipamLockFile || DEFAULT_IPAM_LOCK_FILE
  return {
    conf,
    args,
    ids,
    log: a.log,
    lock: lockFn === false ? () => () => {} : () => lockFn(lockFile, {waitMs: deps.lockWaitMs, log: a.log}),
  }
}

export function ipamPlugin(deps: IpamPluginDeps = {}): PluginFuncs {
  const open = deps.openStore ?? defaultOpenStore
  const withCtx = async <T>(a: CmdArgs, conf: NetConf, fn: (ctx: Ctx) => Promise<T>): Promise<T> => {
    const store = await open(await datastoreSettingsFor(conf, a.getenv))
    try {
      return await fn(makeCtx(store, {clock: deps.clock ?? systemClock}))
    } finally {
      await store.close()
    }
  }
  return {
    async add(a) {
      const req = ipamRequest(a, deps)
      return withCtx(a, req.conf, (ctx) => ipamAdd(ctx, req))
    },
    async del(a) {
      const req = ipamRequest(a, deps)
      await withCtx(a, req.conf, (ctx) => ipamDel(ctx, req))
    },
    async check(a) {
      const req = ipamRequest(a, deps)
      await withCtx(a, req.conf, (ctx) => ipamCheck(ctx, req))
    },
    async status(a) {
      const conf = parseNetConf(a.config)
      const settings = await datastoreSettingsFor(conf, a.getenv)
      let store: Store | undefined
      try {
        store = await open(settings)
        await store.revision()
      } catch (err) {
        throw new CniError(CNI_ERR.notAvailable, 'plugin not available', toCniError(err).msg)
      } finally {
        await store?.close().catch(() => {})
      }
    },
    async gc(a) {
      const conf = parseNetConf(a.config)
      const attachments = validAttachments(conf.raw)
      const lockFn = deps.lock === undefined ? acquireHostLock : deps.lock
      const lockFile = conf.ipamLockFile || DEFAULT_IPAM_LOCK_FILE
      const lock = lockFn === false ? () => () => {} : () => lockFn(lockFile, {waitMs: deps.lockWaitMs, log: a.log})
      await withCtx(a, conf, (ctx) => ipamGc(ctx, conf, attachments, {log: a.log, lock}))
    },
  }
}
