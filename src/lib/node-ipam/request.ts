import type {Clock} from '../clock.js'
import type {DatastoreSettings} from '../store/settings.js'
import type {Store} from '../store/store.js'
import {type CniArgs, parseCniArgs} from './cni-args.js'
import type {HostLockOptions, Unlock} from './host-lock.js'
import {allocationAttrs, type WorkloadIds, workloadIds} from './workload-ids.js'
import {type NetConf, parseNetConf} from './netconf.js'
import {determineNodename, type NodenameDeps} from './nodename.js'
import {type CmdArgs, loggerOf} from '../cni/skel.js'
import type {Logger} from '../log/logger.js'
import type {OpenOptions} from '../store/open.js'

export interface IpamPluginDeps extends NodenameDeps {
  openStore?: (s: DatastoreSettings, opts: OpenOptions) => Promise<Store>
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
  /** The invocation's logger (`log` is its info level). */
  logger: Logger
  lock: () => Unlock
}

/** An invocation parsed, without the host lock: all the agent path needs (src/lib/node-ipam/locked-request.ts adds the lock). */
export type ParsedRequest = Omit<IpamRequest, 'lock'>

/** Parse the invocation: netconf, CNI_ARGS, node name and identifiers (no datastore access). */
export function parseIpamRequest(a: CmdArgs, deps: NodenameDeps = {}): ParsedRequest {
  const conf = parseNetConf(a.config)
  const args = parseCniArgs(a.args)
  const node = determineNodename(conf, deps)
  const ids = workloadIds(conf, {containerId: a.containerId, ifName: a.ifName, netns: a.netns}, args, node)
  return {conf, args, ids, log: a.log, logger: loggerOf(a)}
}

/** An ADD as data: what the plugin asks of the allocator, whether in this process or through the agent. */
export interface AddPlan {
  node: string
  handle: string
  attrs: Record<string, string>
  /** CNI_ARGS `IP=`: exactly this address. */
  ip?: string
  num4: number
  num6: number
  /** As in the netconf: CIDRs or pool names, resolved by resolvePools. */
  ipv4Pools: string[]
  ipv6Pools: string[]
  maxBlocksPerHost: number
  /** CNI_ARGS IPAMCTL_NAMESPACE_LABELS, else the netconf's ipam.namespace_labels; absent: the empty set. */
  namespaceLabels?: Record<string, string>
}

export function addPlan(req: Pick<IpamRequest, 'conf' | 'args' | 'ids'>, now: Date): AddPlan {
  const {conf, args, ids} = req
  return {
    node: ids.node,
    handle: ids.handleId,
    attrs: allocationAttrs(ids, now),
    ip: args.ip,
    num4: conf.ipam.assignIpv4 === 'false' ? 0 : 1,
    num6: conf.ipam.assignIpv6 === 'true' ? 1 : 0,
    ipv4Pools: conf.ipam.ipv4Pools,
    ipv6Pools: conf.ipam.ipv6Pools,
    maxBlocksPerHost: conf.windowsUseSingleNetwork ? 1 : 0,
    namespaceLabels: args.namespaceLabels ?? conf.ipam.namespaceLabels,
  }
}
