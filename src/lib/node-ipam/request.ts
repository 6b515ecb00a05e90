import type {Clock} from '../clock.js'
import type {DatastoreSettings} from '../store/settings.js'
import type {Store} from '../store/store.js'
import {type CniArgs, parseCniArgs} from './cni-args.js'
import {acquireHostLock, type HostLockOptions, type Unlock} from './host-lock.js'
import {type WorkloadIds, workloadIds} from './workload-ids.js'
import {DEFAULT_IPAM_LOCK_FILE, type NetConf, parseNetConf} from './netconf.js'
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

/** Parse the invocation: netconf, CNI_ARGS, node name and identifiers (no datastore access). */
export function ipamRequest(a: CmdArgs, deps: IpamPluginDeps = {}): IpamRequest {
  const conf = parseNetConf(a.config)
  const args = parseCniArgs(a.args)
  const node = determineNodename(conf, deps)
  const ids = workloadIds(conf, {containerId: a.containerId, ifName: a.ifName, netns: a.netns}, args, node)
  const lockFn = deps.lock === undefined ? acquireHostLock : deps.lock
  const lockFile = conf.ipamLockFile || DEFAULT_IPAM_LOCK_FILE
  return {
    conf,
    args,
    ids,
    log: a.log,
    logger: loggerOf(a),
    lock: lockFn === false ? () => () => {} : () => lockFn(lockFile, {waitMs: deps.lockWaitMs, log: a.log}),
  }
}
