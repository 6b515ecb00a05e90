// `ipamctl cni add|del|check`: the main plugin driven by hand, for setting up pod networking in a test
// network namespace without a container runtime. Same code path as ipamctl-cni, run in-process with the
// CLI's datastore settings.
import fs from 'node:fs'
import path from 'node:path'
import {randomHex} from '../../lib/random.js'
import {
  DatastoreUnavailableError,
  IpamError,
  NotFoundError,
  StoreMissingError,
  ValidationError,
} from '../../lib/errors.js'
import {readTextFile} from '../../lib/files.js'
import {openStore} from '../../lib/store/open.js'
import type {DatastoreSettings} from '../../lib/store/settings.js'
import type {Store} from '../../lib/store/store.js'
import {listWorkloadEndpoints} from '../../lib/workload/endpoint.js'
import {netnsPath} from '../../lib/dataplane/netns.js'
import {NetnsNotFoundError} from '../../lib/dataplane/errors.js'
import {ifNameProblem, PRIMARY_IFNAME, validIfName} from '../../lib/dataplane/names.js'
import {linkNames} from '../../lib/dataplane/links.js'
import {checkNetnsName, createOwnedNetns, type NetnsRemoval, removeOwnedNetns} from '../../lib/dataplane/owned-netns.js'
import {withIgnoreUnknown} from '../../lib/node-ipam/cni-args.js'
import {CNI_ERR, toCniError} from '../../lib/cni/errors.js'
import {mainPlugin} from './plugin.js'
import {determineNodename} from '../../lib/node-ipam/nodename.js'
import {parseNetConf, validateNetworkName} from '../../lib/node-ipam/netconf.js'
import {wepName} from '../../lib/node-ipam/workload-ids.js'
import {ipamRequest} from '../../lib/node-ipam/locked-request.js'
import {PluginDatastore} from '../../lib/node-ipam/plugin-datastore.js'
import {agentSocketFor} from '../../lib/node-ipam/agent-path.js'
import {listPools, makeCtx} from '../../lib/ipam/context.js'
import {tryParseIp} from '../../lib/net/cidr.js'
import {systemClock} from '../../lib/clock.js'
import type {CniResult} from '../../lib/cni/result.js'
import type {CmdArgs} from '../../lib/cni/skel.js'
import {cniLogger, DEFAULT_CNI_LOG_FILE} from '../../lib/log/cni.js'

export type FamilyChoice = 'ipv4' | 'ipv6' | 'dual'

export interface ManualRequest {
  netns: string
  createNetns?: boolean
  /** `cni del`: leave a namespace that --create-netns made in place. */
  keepNetns?: boolean
  pod?: string
  namespace?: string
  containerId?: string
  /** Default: eth0 on the default network; on another network (--network), the first free ethN (add) or the interface its record names (del, check). */
  ifName?: string
  /** Fixed addresses, at most one per family. */
  ips?: string[]
  mtu?: number
  /** Address families; default: the netconf's, or for the built-in netconf the families of the enabled pools. */
  families?: FamilyChoice
  /** The network (netconf `name`) to attach: a second network gets its own handle, record and interface. */
  network?: string
  /** A netconf file; default: ipamctl-cni with in-process ipamctl-ipam, network k8s-pod-network. */
  confFile?: string
  node?: string
  settings: DatastoreSettings
  log?: (line: string) => void
}

export const DEFAULT_NETWORK = 'k8s-pod-network'
const DEFAULT_CONF = {cniVersion: '1.0.0', name: DEFAULT_NETWORK, type: 'ipamctl-cni', ipam: {type: 'ipamctl-ipam'}}
/**
 * The log file of the default netconf (without --conf): the plugins' (docs/logging.md), so that `cni logs` tells
 * a hand-wired pod's story too. IPAMCTL_CNI_LOG_FILE overrides it ('' for none; the tests point it into their
 * sandbox). A --conf logs where it says, as the plugin would.
 */
export const defaultConfLogFile = (): string => process.env.IPAMCTL_CNI_LOG_FILE ?? DEFAULT_CNI_LOG_FILE
/** Where delegated IPAM plugins are looked for when CNI_PATH is unset: the runtime default, then Debian's. */
export const DEFAULT_CNI_PATH = '/opt/cni/bin:/usr/lib/cni'
const MIN_MTU = 68
const MIN_MTU_V6 = 1280

/** The IPAM types the manual path runs in-process (families and fixed addresses are theirs to honour). */
const ownIpamType = (conf: Record<string, unknown>): boolean => {
  const t = (conf.ipam as {type?: unknown} | undefined)?.type
  return t === 'ipamctl-ipam' || t === 'calico-ipam'
}

/** Everything a user can get wrong, checked before anything is created or allocated. */
function validate(req: ManualRequest): void {
  if (req.ifName !== undefined) {
    const problem = ifNameProblem(req.ifName)
    if (problem) throw new ValidationError(`--ifname: ${problem}`)
  }
  if (req.network !== undefined) validateNetworkName(req.network)
  const fams = (req.ips ?? []).map((text) => {
    const ip = tryParseIp(text)
    if (!ip) throw new ValidationError(`--ip: ${JSON.stringify(text)} is not an IP address`)
    return ip.family
  })
  if (new Set(fams).size !== fams.length) throw new ValidationError('--ip: give at most one address per family')
  if (fams.length > 0 && req.families !== undefined)
    throw new ValidationError('--ip already chooses the families; leave out --ipv4, --ipv6 and --dual-stack')
  if (req.mtu !== undefined) {
    if (!Number.isInteger(req.mtu) || req.mtu < MIN_MTU || req.mtu > 65535)
      throw new ValidationError(`--mtu: ${req.mtu} is not between ${MIN_MTU} and 65535`)
    if (req.mtu < MIN_MTU_V6 && (fams.includes(6) || req.families === 'ipv6' || req.families === 'dual'))
      throw new ValidationError(`--mtu: IPv6 needs an MTU of at least ${MIN_MTU_V6}`)
  }
  if (req.createNetns && !fs.existsSync(netnsPath(req.netns))) checkNetnsName(req.netns)
}

function loadConf(req: ManualRequest, families: FamilyChoice | undefined): Record<string, unknown> {
  let conf: Record<string, unknown> = {...DEFAULT_CONF, log_file_path: defaultConfLogFile() || undefined}
  if (req.confFile) {
    const text = readTextFile(req.confFile, 'netconf')
    try {
      conf = JSON.parse(text) as Record<string, unknown>
    } catch (err) {
      throw new ValidationError(`netconf ${req.confFile} is not valid JSON: ${(err as Error).message}`)
    }
    if (typeof conf !== 'object' || conf === null || Array.isArray(conf))
      throw new ValidationError(`netconf ${req.confFile} is not a JSON object`)
    // A conflist: the manual path drives our own plugin, the first of the list.
    if (Array.isArray(conf.plugins))
      conf = {cniVersion: conf.cniVersion, name: conf.name, ...(conf.plugins[0] as object)}
  }
  if (req.node) conf.nodename = req.node
  if (req.network !== undefined) conf.name = req.network
  if (req.mtu !== undefined) conf.mtu = req.mtu
  const wantsOwn = families !== undefined || (req.ips ?? []).length > 1
  if (wantsOwn && !ownIpamType(conf))
    throw new ValidationError(
      `--ipv4, --ipv6, --dual-stack and two --ip need ipamctl's IPAM; this netconf's IPAM is ${JSON.stringify((conf.ipam as {type?: unknown} | undefined)?.type)}`,
    )
  if (families !== undefined)
    conf.ipam = {
      ...(conf.ipam as object),
      assign_ipv4: families === 'ipv6' ? 'false' : 'true',
      assign_ipv6: families === 'ipv4' ? 'false' : 'true',
    }
  return conf
}

/**
 * The families of the enabled pools, for the built-in netconf: a datastore with IPv4 and IPv6 pools gives
 * dual-stack pods without a flag. Undefined (the netconf's default: IPv4) when there is no store or no pool.
 */
async function poolFamilies(settings: DatastoreSettings): Promise<FamilyChoice | undefined> {
  let store: Store
  try {
    store = await openStore(settings, {mode: 'read'})
  } catch (err) {
    if (err instanceof StoreMissingError) return undefined
    throw err
  }
  try {
    const pools = (await listPools(makeCtx(store))).filter((p) => !p.spec.disabled)
    const v4 = pools.some((p) => p.cidr.family === 4)
    const v6 = pools.some((p) => p.cidr.family === 6)
    return v4 && v6 ? 'dual' : v6 ? 'ipv6' : v4 ? 'ipv4' : undefined
  } finally {
    await store.close()
  }
}

async function familiesFor(req: ManualRequest): Promise<FamilyChoice | undefined> {
  if (req.families !== undefined) return req.families
  if (req.confFile || (req.ips ?? []).length > 0) return undefined
  return poolFamilies(req.settings)
}

/** The container ID defaults to one derived from the netns name, so add and del need no bookkeeping. */
function containerIdFor(req: ManualRequest): string {
  if (req.containerId) return req.containerId
  const base = path.basename(req.netns).replace(/[^A-Za-z0-9_.-]/g, '-')
  return /^[A-Za-z0-9]/.test(base) ? `ipamctl-${base}` : `ipamctl-${randomHex(6)}`
}

/** The interface of this attachment: given, eth0 on the default network, else see ManualRequest.ifName. */
async function ifNameFor(req: ManualRequest, command: 'ADD' | 'DEL' | 'CHECK', conf: Record<string, unknown>) {
  if (req.ifName !== undefined) return req.ifName
  if (req.network === undefined || req.network === DEFAULT_NETWORK) return PRIMARY_IFNAME
  if (command === 'ADD') return firstFreeEth(req.netns)
  const parsed = parseNetConf(conf)
  const node = determineNodename(parsed)
  const cid = containerIdFor(req)
  const store = await openStore(req.settings, {mode: 'read'}).catch((err: unknown) => {
    if (err instanceof StoreMissingError) return undefined
    throw err
  })
  let found: string | undefined
  if (store)
    try {
      found = (await listWorkloadEndpoints(store, node)).find(
        (w) => w.containerID === cid && w.network === req.network,
      )?.endpoint
    } finally {
      await store.close()
    }
  if (found && validIfName(found)) return found
  // Guessing would risk deleting the interface of another network.
  throw new ValidationError(
    `no endpoint record of network ${req.network} for container ${cid} on node ${node}; pass --ifname`,
  )
}

/** The first ethN (N from 0) not present in the namespace; eth0 when the namespace does not exist (ADD fails there). */
async function firstFreeEth(netns: string): Promise<string> {
  let taken: Set<string>
  try {
    taken = new Set(await linkNames(netns))
  } catch (err) {
    if (err instanceof NetnsNotFoundError) return PRIMARY_IFNAME
    throw err
  }
  for (let n = 0; ; n++) if (!taken.has(`eth${n}`)) return `eth${n}`
}

function cmdArgs(
  req: ManualRequest,
  command: 'ADD' | 'DEL' | 'CHECK',
  config: Record<string, unknown>,
  ifName: string,
): CmdArgs {
  const ips = req.ips ?? []
  const args = [
    ...(req.pod || req.namespace
      ? [`K8S_POD_NAMESPACE=${req.namespace ?? 'default'}`, `K8S_POD_NAME=${req.pod ?? ''}`]
      : []),
    ...(ips.length === 1 ? [`IP=${ips[0]}`] : ips.length > 1 ? [`IPAMCTL_IPS=${ips.join(',')}`] : []),
  ].join(';')
  const containerId = containerIdFor(req)
  const netns = netnsPath(req.netns)
  const cniPath = process.env.CNI_PATH || DEFAULT_CNI_PATH
  // What a runtime would set: a delegated IPAM (host-local…) reads these from its environment.
  const env: Record<string, string | undefined> = {
    ...process.env,
    ETCD_USERNAME: req.settings.etcdUsername,
    ETCD_PASSWORD: req.settings.etcdPassword,
    CNI_COMMAND: command,
    CNI_CONTAINERID: containerId,
    CNI_NETNS: netns,
    CNI_IFNAME: ifName,
    CNI_ARGS: args,
    CNI_PATH: cniPath,
  }
  const data = JSON.stringify(config)
  // The plugin's log file and level (its netconf's log_* keys). The command's stderr keeps plain lines: the
  // plugin's `log` lines as before, and the logger's warnings as `warning: …` (errors: the command prints its own).
  const {logger} = cniLogger({
    config,
    getenv: (n) => env[n],
    plugin: 'ipamctl', // `ipamctl ADD …`: by hand, not by a runtime
    stderr: {
      write: (line) => {
        if (/^\S+ \[WARNING\]/.test(line)) req.log?.(`warning: ${line.slice(line.indexOf(': ') + 2, -1)}`)
      },
    },
    env,
  })
  return {
    command,
    containerId,
    netns,
    ifName,
    args,
    path: cniPath,
    stdinData: Buffer.from(data),
    config,
    cniVersion: typeof config.cniVersion === 'string' ? config.cniVersion : '0.2.0',
    getenv: (n) => env[n],
    log: (line) => {
      req.log?.(line)
      logger.info(line)
    },
    logger,
  }
}

/**
 * Run one operation, turning CNI errors into the CLI's typed errors' shape (message kept). The error goes into
 * the plugin's log first, as the plugin's own does (docs/logging.md).
 */
async function run<T>(a: CmdArgs, fn: (a: CmdArgs) => Promise<T>): Promise<T> {
  try {
    return await fn(a)
  } catch (err) {
    const c = toCniError(err)
    a.logger?.error(c.details ? `${c.msg}: ${c.details}` : c.msg, {code: c.code})
    if (err instanceof Error && 'exitCode' in err) throw err
    const text = `CNI error ${c.code}: ${c.msg}${c.details ? ` (${c.details})` : ''}`
    if (c.code === CNI_ERR.tryAgainLater) throw new DatastoreUnavailableError(text)
    if (
      [
        CNI_ERR.invalidEnv,
        CNI_ERR.decoding,
        CNI_ERR.invalidConfig,
        CNI_ERR.unsupportedField,
        CNI_ERR.incompatibleVersion,
      ].includes(c.code as 4)
    )
      throw new ValidationError(text)
    throw new IpamError(text)
  }
}

const plugin = (req: ManualRequest) =>
  mainPlugin({openStore: (_s, opts) => openStore(req.settings, opts), invokedAs: 'ipamctl-cni'})

export interface ManualAddResult {
  containerId: string
  ifName: string
  result: CniResult
  /** Whether this call created (and recorded) the namespace. */
  createdNetns: boolean
}

export async function manualAdd(req: ManualRequest): Promise<ManualAddResult> {
  validate(req)
  const ns = netnsPath(req.netns)
  if (req.createNetns && !fs.existsSync(ns) && req.netns.includes('/'))
    throw new ValidationError('--create-netns needs a netns NAME, not a path')
  const createdNetns = req.createNetns ? createOwnedNetns(req.netns) : false
  try {
    const conf = loadConf(req, await familiesFor(req))
    const ifName = await ifNameFor(req, 'ADD', conf)
    const a = cmdArgs(req, 'ADD', conf, ifName)
    return {containerId: a.containerId, ifName, result: await run(a, (x) => plugin(req).add(x)), createdNetns}
  } catch (err) {
    // The namespace is this call's: a failed ADD must not leave it behind (the plugin has undone its own part).
    if (createdNetns)
      await removeOwnedNetns(req.netns, {force: true}).catch((e: unknown) =>
        req.log?.(`removing netns ${req.netns} after the failed ADD: ${(e as Error).message}`),
      )
    throw err
  }
}

export interface ManualDelResult {
  containerId: string
  ifName: string
  /** What became of the namespace: removed (ipamctl made it), kept (--keep-netns), busy, not-ours or absent. */
  netns: NetnsRemoval | 'kept'
}

export async function manualDel(req: ManualRequest): Promise<ManualDelResult> {
  validate({...req, createNetns: false})
  const conf = loadConf(req, undefined)
  const ifName = await ifNameFor(req, 'DEL', conf)
  const a = cmdArgs(req, 'DEL', conf, ifName)
  await run(a, (x) => plugin(req).del(x))
  const netns = req.keepNetns ? 'kept' : await removeOwnedNetns(req.netns)
  return {containerId: a.containerId, ifName, netns}
}

/**
 * CHECK needs the ADD result: rebuilt from the WorkloadEndpoint record, which holds the addresses (read through
 * the agent when one answers, as the plugin's own CHECK does).
 */
export async function manualCheck(req: ManualRequest): Promise<void> {
  validate({...req, createNetns: false})
  const conf = loadConf(req, undefined)
  const ifName = await ifNameFor(req, 'CHECK', conf)
  const a = cmdArgs(req, 'CHECK', conf, ifName)
  const ipamReq = ipamRequest({...a, args: withIgnoreUnknown(a.args)}, {lock: false})
  const name = wepName(ipamReq.ids)
  const wep = await PluginDatastore.using(
    ipamReq,
    req.settings,
    agentSocketFor(ipamReq.conf),
    {open: (_s, opts) => openStore(req.settings, opts), clock: systemClock, verb: 'check'},
    (ds) => ds.check(ipamReq.ids.namespace, name),
  )
  if (!wep)
    throw new NotFoundError(
      `no workload endpoint for ${ipamReq.ids.orchestrator === 'k8s' ? `${ipamReq.ids.namespace}/${ipamReq.ids.pod}` : a.containerId} (interface ${ifName}) on node ${ipamReq.ids.node}`,
    )
  const withPrev = {
    ...conf,
    cniVersion: conf.cniVersion ?? '1.0.0',
    prevResult: {cniVersion: '1.0.0', ips: wep.ipNetworks.map((address) => ({address}))},
  }
  await run(cmdArgs(req, 'CHECK', withPrev, ifName), (x) => plugin(req).check!(x))
}
