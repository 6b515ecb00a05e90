// The datastore path's request: the parsed invocation (request.ts) with the host-wide IPAM lock taken around
// its writes. A module of its own because the lock is an SQLite file (host-lock.ts, better-sqlite3): the agent
// path (agent-path.ts) never takes it, so ipamctl-ipam's agent-first entry is bundled without it
// (docs/startup.md#the-agent-first-entry).
import {acquireHostLock, type Unlock} from './host-lock.js'
import {DEFAULT_IPAM_LOCK_FILE, type NetConf} from './netconf.js'
import {type IpamPluginDeps, type IpamRequest, type ParsedRequest, parseIpamRequest} from './request.js'
import type {CmdArgs} from '../cni/skel.js'

/**
 * How an operation on `conf` takes the host lock: `deps.lock` (false: not at all), else acquireHostLock on
 * `ipam_lock_file` (default /var/run/calico/ipam.lock); its warnings go to `log`.
 */
export function hostLock(conf: NetConf, log: (line: string) => void, deps: IpamPluginDeps = {}): () => Unlock {
  const lockFn = deps.lock === undefined ? acquireHostLock : deps.lock
  const lockFile = conf.ipamLockFile || DEFAULT_IPAM_LOCK_FILE
  return lockFn === false ? () => () => {} : () => lockFn(lockFile, {waitMs: deps.lockWaitMs, log})
}

/** `req` with its host lock. */
export function withHostLock(req: ParsedRequest, deps: IpamPluginDeps = {}): IpamRequest {
  return {...req, lock: hostLock(req.conf, req.log, deps)}
}

/** Parse the invocation (parseIpamRequest) and add its host lock. */
export function ipamRequest(a: CmdArgs, deps: IpamPluginDeps = {}): IpamRequest {
  return withHostLock(parseIpamRequest(a, deps), deps)
}
