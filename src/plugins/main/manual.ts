// `ipamctl cni add|del|check`: the main plugin driven by hand, for setting up pod networking in a test
// network namespace without a container runtime. Same code path as ipamctl-cni, run in-process with the
// CLI's datastore settings.
import {execFileSync} from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import {packageRoot} from '../../lib/package-root.js'
import {randomHex} from '../../lib/random.js'
import {DatastoreUnavailableError, IpamError, ValidationError} from '../../lib/errors.js'
import {readTextFile} from '../../lib/files.js'
import {openStore} from '../../lib/store/open.js'
import type {DatastoreSettings} from '../../lib/store/settings.js'
import {decodeWorkloadEndpoint, endpointKey} from '../../lib/workload/endpoint.js'
import {netnsPath} from '../../lib/dataplane/netns.js'
import {parseCniArgs} from '../../lib/node-ipam/cni-args.js'
import {CNI_ERR, toCniError} from '../../lib/cni/errors.js'
import {mainPlugin} from './plugin.js'
import {determineNodename} from '../../lib/node-ipam/nodename.js'
import {parseNetConf} from '../../lib/node-ipam/netconf.js'
import {wepName, workloadIds} from '../../lib/node-ipam/workload-ids.js'
import type {CniResult} from '../../lib/cni/result.js'
import type {CmdArgs} from '../../lib/cni/skel.js'

export interface ManualRequest {
  netns: string
  createNetns?: boolean
  pod?: string
  namespace?: string
  containerId?: string
  ifName?: string
  ip?: string
  /** A netconf file; default: ipamctl-cni with in-process ipamctl-ipam, network k8s-pod-network. */
  confFile?: string
  node?: string
  settings: DatastoreSettings
  log?: (line: string) => void
}

const DEFAULT_CONF = {cniVersion: '1.0.0', name: 'k8s-pod-network', type: 'ipamctl-cni', ipam: {type: 'ipamctl-ipam'}}

function loadConf(req: ManualRequest): Record<string, unknown> {
  let conf: Record<string, unknown> = {...DEFAULT_CONF}
  if (req.confFile) {
    const text = readTextFile(req.confFile, 'netconf')
    try {
      conf = JSON.parse(text) as Record<string, unknown>
    } catch (err) {
      throw new ValidationError(`netconf ${req.confFile} is not valid JSON: ${(err as Error).message}`)
    }
    // A conflist: the manual path drives our own plugin, the first of the list.
    if (Array.isArray(conf.plugins))
      conf = {cniVersion: conf.cniVersion, name: conf.name, ...(conf.plugins[0] as object)}
  }
  if (req.node) conf.nodename = req.node
  return conf
}

/** The container ID defaults to one derived from the netns name, so add and del need no bookkeeping. */
function containerIdFor(req: ManualRequest): string {
  if (req.containerId) return req.containerId
  const base = path.basename(req.netns).replace(/[^A-Za-z0-9_.-]/g, '-')
  return /^[A-Za-z0-9]/.test(base) ? `ipamctl-${base}` : `ipamctl-${randomHex(6)}`
}

function cmdArgs(req: ManualRequest, command: 'ADD' | 'DEL' | 'CHECK', config: Record<string, unknown>): CmdArgs {
  const args = [
    ...(req.pod || req.namespace
      ? [`K8S_POD_NAMESPACE=${req.namespace ?? 'default'}`, `K8S_POD_NAME=${req.pod ?? ''}`]
      : []),
    ...(req.ip ? [`IP=${req.ip}`] : []),
  ].join(';')
  const env: Record<string, string | undefined> = {
    ...process.env,
    ETCD_USERNAME: req.settings.etcdUsername,
    ETCD_PASSWORD: req.settings.etcdPassword,
  }
  const data = JSON.stringify(config)
  return {
    command,
    containerId: containerIdFor(req),
    netns: netnsPath(req.netns),
    ifName: req.ifName ?? 'eth0',
    args,
    path: process.env.CNI_PATH ?? '/opt/cni/bin',
    stdinData: Buffer.from(data),
    config,
    cniVersion: typeof config.cniVersion === 'string' ? config.cniVersion : '0.2.0',
    getenv: (n) => env[n],
    log: req.log ?? (() => {}),
  }
}

/** Run one operation, turning CNI errors into the CLI's typed errors' shape (message kept). */
async function run<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn()
  } catch (err) {
    if (err instanceof Error && 'exitCode' in err) throw err
    const c = toCniError(err)
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

export async function manualAdd(req: ManualRequest): Promise<{containerId: string; result: CniResult}> {
  const ns = netnsPath(req.netns)
  if (req.createNetns && !fs.existsSync(ns)) {
    if (req.netns.includes('/')) throw new ValidationError('--create-netns needs a netns NAME, not a path')
    // The name goes to ip(8) as an argument: one that starts with "-" would be read as an option.
    if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,254}$/.test(req.netns))
      throw new ValidationError(
        `invalid netns name ${JSON.stringify(req.netns)}: use letters, digits, "_", "." and "-"`,
      )
    execFileSync('ip', ['netns', 'add', req.netns], {stdio: 'pipe'})
  }
  const conf = loadConf(req)
  const a = cmdArgs(req, 'ADD', conf)
  return {containerId: a.containerId, result: await run(() => plugin(req).add(a))}
}

export async function manualDel(req: ManualRequest): Promise<string> {
  const a = cmdArgs(req, 'DEL', loadConf(req))
  await run(() => plugin(req).del(a))
  return a.containerId
}

/** CHECK needs the ADD result: rebuilt from the WorkloadEndpoint record, which holds the addresses. */
export async function manualCheck(req: ManualRequest): Promise<void> {
  const conf = loadConf(req)
  const a = cmdArgs(req, 'CHECK', conf)
  const parsed = parseNetConf(conf)
  const ids = workloadIds(
    parsed,
    {containerId: a.containerId, ifName: a.ifName},
    parseCniArgs(`IgnoreUnknown=1;${a.args}`),
    determineNodename(parsed),
  )
  const store = await openStore(req.settings, {mode: 'read'})
  let ips: string[]
  try {
    const kv = await store.get(endpointKey(ids.namespace, wepName(ids)))
    if (!kv)
      throw new ValidationError(
        `no workload endpoint for ${ids.orchestrator === 'k8s' ? `${ids.namespace}/${ids.pod}` : a.containerId} on this node`,
      )
    ips = decodeWorkloadEndpoint(kv.value).ipNetworks
  } finally {
    await store.close()
  }
  const withPrev = {
    ...conf,
    cniVersion: conf.cniVersion ?? '1.0.0',
    prevResult: {cniVersion: '1.0.0', ips: ips.map((address) => ({address}))},
  }
  await run(() => plugin(req).check!({...cmdArgs(req, 'CHECK', withPrev)}))
}

/** Install the plugin executables into a CNI bin directory as symlinks to this installation. */
export function installPlugins(
  dir: string,
  opts: {asCalico: boolean; force: boolean},
): {name: string; target: string}[] {
  const binDir = path.join(packageRoot(), 'bin')
  const plan = [
    {name: opts.asCalico ? 'calico' : 'ipamctl-cni', target: path.join(binDir, 'ipamctl-cni.cjs')},
    {name: opts.asCalico ? 'calico-ipam' : 'ipamctl-ipam', target: path.join(binDir, 'ipamctl-ipam.cjs')},
  ]
  // Every destination is checked before anything is written: a refusal must not leave one plugin installed.
  const present = plan.map((p) => path.join(dir, p.name)).filter((dest) => fs.existsSync(dest) || isSymlink(dest))
  if (present.length > 0 && !opts.force)
    throw new ValidationError(
      `${present.join(' and ')} already exist${present.length === 1 ? 's' : ''}; pass --force to replace ${present.length === 1 ? 'it' : 'them'}`,
    )
  fs.mkdirSync(dir, {recursive: true})
  for (const p of plan) {
    const dest = path.join(dir, p.name)
    if (present.includes(dest)) fs.rmSync(dest)
    fs.symlinkSync(p.target, dest)
  }
  return plan
}

function isSymlink(p: string): boolean {
  try {
    return fs.lstatSync(p).isSymbolicLink()
  } catch {
    return false
  }
}
