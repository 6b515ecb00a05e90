// The main plugin (`ipamctl-cni`, a drop-in for `calico`): IPAM, then pod wiring, then the
// WorkloadEndpoint record. ipamctl's own IPAM runs in this process on the same datastore connection
// (no second Node start), or, with a per-node agent answering, IPAM and the record go through the agent
// (src/lib/node-ipam/plugin-datastore.ts); any other IPAM type is exec'd per the spec. A failure after IPAM undoes
// everything that was done, so a failed ADD leaves no address, link or record behind.
import fs from 'node:fs'
import path from 'node:path'
import type {Ctx} from '../../lib/ipam/context.js'
import {systemClock} from '../../lib/clock.js'
import {addressOf, familyOf, hostCidr, parseResult, type CniResult} from '../../lib/cni/result.js'
import {CheckMismatchError} from '../../lib/errors.js'
import {NetnsNotFoundError, PodCheckError} from '../../lib/dataplane/errors.js'
import {checkPod} from '../../lib/dataplane/check.js'
import type {WireRequest} from '../../lib/dataplane/layout.js'
import {checkHostLinkReplaceable, openPodSide, unwirePod, wirePod} from '../../lib/dataplane/veth.js'
import {hostVethName, interfacePrefix, PRIMARY_IFNAME, validIfName} from '../../lib/dataplane/names.js'
import {openStore as defaultOpenStore} from '../../lib/store/open.js'
import type {Store} from '../../lib/store/store.js'
import {newWorkloadEndpoint} from '../../lib/workload/endpoint.js'
import {parseCniArgs, withIgnoreUnknown} from '../../lib/node-ipam/cni-args.js'
import {execDelegate} from '../../lib/cni/delegate.js'
import {endpointsToCollect, removeCollectedEndpoint} from '../../lib/node-ipam/endpoint-record.js'
import {CNI_ERR, CniError, toCniError} from '../../lib/cni/errors.js'
import {ipamGcFor, ipamPlugin, withPluginStore} from '../ipam/plugin.js'
import {validAttachments} from '../../lib/node-ipam/operations.js'
import type {IpamPluginDeps, IpamRequest} from '../../lib/node-ipam/request.js'
import {ipamRequest} from '../../lib/node-ipam/locked-request.js'
import {PluginDatastore, type PluginVerb} from '../../lib/node-ipam/plugin-datastore.js'
import {agentSocketFor} from '../../lib/node-ipam/agent-path.js'
import {DEFAULT_MTU_FILE, parseNetConf, validateMainPluginConf, type NetConf} from '../../lib/node-ipam/netconf.js'
import {datastoreSettingsFor} from '../../lib/node-ipam/datastore-settings.js'
import {determineNodename} from '../../lib/node-ipam/nodename.js'
import {wepName} from '../../lib/node-ipam/workload-ids.js'
import type {CmdArgs, PluginFuncs} from '../../lib/cni/skel.js'

export interface MainPluginDeps extends IpamPluginDeps {
  /** The name this binary was installed under ('calico' makes 'calico-ipam' ours too). */
  invokedAs?: string
  mtuFile?: string
}

/** IPAM types served in-process. `calico-ipam` counts when we are installed as `calico` (--as-calico). */
function ownIpam(type: string, invokedAs: string | undefined): boolean {
  return type === 'ipamctl-ipam' || (type === 'calico-ipam' && invokedAs === 'calico')
}

/** netconf `mtu`, else the integer in /var/lib/calico/mtu (optional unless require_mtu_file), else kernel default. */
function mtuFor(conf: NetConf, file: string): number {
  if (conf.mtu > 0) return conf.mtu
  try {
    const n = Number.parseInt(fs.readFileSync(file, 'utf8').trim(), 10)
    if (Number.isInteger(n) && n > 0) return n
    throw new Error(`no MTU in ${file}`)
  } catch (err) {
    if (conf.requireMtuFile)
      throw new CniError(CNI_ERR.invalidConfig, `failed to read MTU file ${file}: ${(err as Error).message}`)
    return 0
  }
}

function wireRequest(
  a: CmdArgs,
  req: IpamRequest,
  ips: readonly string[],
  mtu: number,
  podRoutes: readonly string[] = [],
): WireRequest {
  const ids = req.ids
  const k8s = ids.orchestrator === 'k8s' && ids.namespace !== '' && ids.pod !== ''
  const secondary = a.ifName !== PRIMARY_IFNAME
  return {
    netns: a.netns,
    ifName: a.ifName,
    hostIfName: hostVethName({
      namespace: k8s ? ids.namespace : undefined,
      pod: k8s ? ids.pod : undefined,
      containerId: ids.containerId,
      ifName: a.ifName,
      prefix: interfacePrefix(a.getenv('FELIX_INTERFACEPREFIX')),
    }),
    secondary,
    podRoutes: secondary ? [...podRoutes] : [],
    ipv4: ips.map(addressOf).find((x) => familyOf(x) === 4),
    ipv6: ips.map(addressOf).find((x) => familyOf(x) === 6),
    mtu,
    allowIpForwarding: req.conf.containerSettings.allowIpForwarding,
    owner: ids.containerId,
    // A Kubernetes name is the pod's: a new sandbox of the pod replaces the old sandbox's veth, as upstream does
    // (the kubelet runs one sandbox per pod). A name derived from the container ID belongs to that container alone.
    replaceOtherOwner: k8s,
  }
}

export function mainPlugin(deps: MainPluginDeps = {}): PluginFuncs {
  const open = deps.openStore ?? defaultOpenStore
  const invokedAs = deps.invokedAs ?? path.basename(process.argv[1] ?? '').replace(/\.js$/, '')
  const withStore = <T>(
    a: CmdArgs,
    conf: NetConf,
    mode: 'read' | 'update',
    fn: (ctx: Ctx, store: Store) => Promise<T>,
  ) => withPluginStore(open, a, conf, mode, deps.clock ?? systemClock, fn)
  // ADD and DEL: through the node's agent when it answers and the IPAM is ours (see src/lib/node-ipam/plugin-datastore.ts).
  const withDatastore = async <T>(
    a: CmdArgs,
    req: IpamRequest,
    verb: PluginVerb,
    fn: (ds: PluginDatastore) => Promise<T>,
  ): Promise<T> => {
    const socket = ownIpam(req.conf.ipam.type, invokedAs) ? agentSocketFor(req.conf) : undefined
    return PluginDatastore.using(
      req,
      await datastoreSettingsFor(req.conf, a.getenv),
      socket,
      {open, clock: deps.clock ?? systemClock, verb},
      async (ds) => {
        // Without an agent, open the datastore before anything else: if it is unusable, a delegated IPAM must
        // not have allocated yet.
        if (socket === undefined) await ds.direct()
        return fn(ds)
      },
    )
  }
  // The calico plugin always lets IPAM ignore CNI_ARGS keys it does not know.
  const request = (a: CmdArgs) => ipamRequest({...a, args: withIgnoreUnknown(a.args)}, deps)
  // Fix: the plugin itself reads CNI_ARGS strictly, as upstream's GetIdentifiers does (types.LoadArgs into
  // K8sArgs: an unknown key without IgnoreUnknown=1 is "ARGS: unknown args [...]", code 999). Only the IPAM
  // call gets IgnoreUnknown=1 prepended. Before, `request` alone was used, so ADD accepted any key. Applied to
  // ADD and CHECK; DEL stays lenient so that the DEL a runtime sends after such a failed ADD succeeds (spec).
  const strictArgs = (a: CmdArgs) => void parseCniArgs(a.args)
  // Fix: an exec'd IPAM delegate (host-local…) gets the same IgnoreUnknown=1-prefixed CNI_ARGS that the in-process
  // IPAM gets (upstream's AddIgnoreUnknownArgs before ipam.ExecAdd/ExecDel). Before, it got CNI_ARGS unchanged and
  // host-local refused kubelet-style args without IgnoreUnknown ("ARGS: unknown args [K8S_POD_NAMESPACE=…]").
  const forDelegate = (a: CmdArgs): CmdArgs => {
    const args = withIgnoreUnknown(a.args)
    return {...a, args, getenv: (n) => (n === 'CNI_ARGS' ? args : a.getenv(n))}
  }
  // IPAMCTL_IPS: one fixed assignment per address, all under the attachment's handle (DEL releases them together).
  // A failure part-way is undone by the caller's DEL of the handle, as any failed ADD.
  const ownIpamAdd = async (ds: PluginDatastore, req: IpamRequest): Promise<CniResult> => {
    if (!req.args.ips || req.args.ips.length === 0) return ds.ipamAdd()
    const out: CniResult = {ips: [], dns: {}}
    for (const ip of req.args.ips) out.ips.push(...(await ds.ipamAdd(ip)).ips)
    return out
  }
  const ipamDelFor = async (a: CmdArgs, ds: PluginDatastore, req: IpamRequest) => {
    if (ownIpam(req.conf.ipam.type, invokedAs)) await ds.ipamDel()
    else await execDelegate(forDelegate(a), req.conf.ipam.type, 'DEL')
  }

  return {
    async add(a) {
      strictArgs(a)
      const req = request(a)
      validateMainPluginConf(req.conf)
      const mtu = mtuFor(req.conf, deps.mtuFile ?? DEFAULT_MTU_FILE)
      // Before IPAM: a bad netns or a taken interface name must leave the datastore untouched. Allocating first
      // and undoing it would still leave a claimed block, its affinity and a node record behind, and a repeated
      // ADD for a wired pod would release the addresses it uses. wirePod reuses (and closes) what this opened.
      const side = await openPodSide(a.netns, a.ifName)
      try {
        // Likewise a host veth name held by another attachment (wirePod checks again, for a race).
        await checkHostLinkReplaceable(wireRequest(a, req, [], mtu))
        const own = ownIpam(req.conf.ipam.type, invokedAs)
        if (req.args.ips && !own)
          throw new CniError(CNI_ERR.invalidConfig, `IPAMCTL_IPS needs ipamctl's own IPAM, not ${req.conf.ipam.type}`)
        return await withDatastore(a, req, 'add', async (ds) => {
          const ipam = own
            ? await ownIpamAdd(ds, req)
            : (await execDelegate(forDelegate(a), req.conf.ipam.type, 'ADD'))!
          const addresses = ipam.ips.map((i) => i.address)
          if (!own) req.logger.info('delegated IPAM assigned addresses', {ipam: req.conf.ipam.type, ips: addresses})
          const wreq = wireRequest(
            a,
            req,
            addresses,
            mtu,
            (ipam.routes ?? []).map((r) => r.dst),
          )
          let wired = false
          let wepWritten = false
          try {
            if (addresses.length === 0)
              throw new CniError(CNI_ERR.internal, `IPAM plugin ${req.conf.ipam.type} returned no addresses`)
            const w = await wirePod(wreq, side)
            wired = true
            for (const warning of w.warnings) req.logger.warn(warning)
            req.logger.info('created interface and routes', {
              host_if: w.hostIfName,
              pod_if: a.ifName,
              pod_mac: w.podMac,
              mtu: w.mtu,
              routes: addresses.map((x) => `${addressOf(hostCidr(x))} dev ${w.hostIfName}`),
            })
            const ids = req.ids
            const wep = newWorkloadEndpoint(
              {
                name: wepName(ids),
                namespace: ids.namespace,
                orchestrator: ids.orchestrator,
                node: ids.node,
                containerID: ids.containerId,
                pod: ids.orchestrator === 'k8s' ? ids.pod : undefined,
                endpoint: ids.endpoint,
                ipNetworks: addresses.map(hostCidr),
                interfaceName: w.hostIfName,
                mac: w.podMac,
                netns: a.netns,
                network: req.conf.name,
              },
              (deps.clock ?? systemClock).now(),
            )
            await ds.putEndpoint(wep)
            wepWritten = true
            req.logger.info('wrote WorkloadEndpoint', {endpoint: `${ids.namespace}/${wep.name}`})
            const result: CniResult = {
              interfaces: [
                {name: w.hostIfName, mac: w.hostMac},
                {name: a.ifName, mac: w.podMac, mtu: w.mtu, sandbox: a.netns},
              ],
              ips: addresses.map((address) => ({address: hostCidr(address), interface: 1})),
              routes: ipam.routes,
              dns: ipam.dns ?? {},
            }
            return result
          } catch (err) {
            // Undo in reverse order; report the original error, not a cleanup problem.
            req.logger.warn(`ADD failed after IPAM, rolling back: ${toCniError(err).msg}`, {
              endpoint_written: wepWritten,
              interface_created: wired,
              ips: addresses,
            })
            const cleanup: Promise<unknown>[] = []
            if (wepWritten) cleanup.push(ds.takeEndpoint(req.ids.namespace, wepName(req.ids), req.ids.containerId))
            if (wired)
              cleanup.push(
                unwirePod({
                  netns: a.netns,
                  ifName: a.ifName,
                  hostIfName: wreq.hostIfName,
                  ipv4: wreq.ipv4,
                  ipv6: wreq.ipv6,
                  owner: req.ids.containerId,
                  claimUnmarked: false,
                }),
              )
            for (const r of await Promise.allSettled(cleanup))
              if (r.status === 'rejected') req.logger.error(`cleanup after failed ADD: ${(r.reason as Error).message}`)
            try {
              await ipamDelFor(a, ds, req)
            } catch (e) {
              req.logger.error(`releasing addresses after failed ADD: ${(e as Error).message}`)
            }
            req.logger.info('rolled back the failed ADD')
            throw err
          }
        })
      } finally {
        side.close() // idempotent: wirePod has closed it if it ran
      }
    },

    async del(a) {
      const req = request(a)
      await withDatastore(a, req, 'del', async (ds) => {
        const ids = req.ids
        // A WEP of another container means this DEL is for a stale sandbox: leave the live pod's record and
        // host veth (same name) alone, but still release this attachment's addresses.
        const {wep, stale} = await ds.takeEndpoint(ids.namespace, wepName(ids), ids.containerId)
        if (!stale) {
          const ips = wep?.ipNetworks ?? []
          const wreq = wireRequest(a, req, ips, 0)
          // The record names the interface this attachment was given (an older ipamctl named non-Kubernetes
          // veths differently), and naming it makes an unmarked link of that name this attachment's. Without a
          // record, only a Kubernetes name (the pod's, as upstream) or a link marked for this container is.
          const hostIfName = wep?.interfaceName || wreq.hostIfName
          const claimUnmarked = wep?.interfaceName ? true : wreq.replaceOtherOwner === true
          const outcome = await unwirePod({
            netns: a.netns || undefined,
            ifName: a.ifName,
            hostIfName,
            ipv4: wreq.ipv4,
            ipv6: wreq.ipv6,
            owner: ids.containerId,
            claimUnmarked,
          })
          if (outcome === 'not-ours') a.log(`host interface ${hostIfName} belongs to another attachment; left in place`)
          else req.logger.info('removed interface', {host_if: hostIfName, outcome})
        } else req.logger.info('WorkloadEndpoint belongs to another container: this DEL is for a stale sandbox')
        await ipamDelFor(a, ds, req)
      })
    },

    // The datastore half (addresses of the handle, the record) through the agent when it answers; the wiring is
    // this host's and checked here. A difference is a CheckMismatchError naming the side that is wrong.
    async check(a) {
      strictArgs(a)
      const req = request(a)
      const own = ownIpam(req.conf.ipam.type, invokedAs)
      if (own && req.conf.prevResult === undefined)
        throw new CniError(CNI_ERR.invalidConfig, 'CHECK needs a prevResult in the network configuration')
      if (!own) await execDelegate(forDelegate(a), req.conf.ipam.type, 'CHECK')
      const prevIps = own ? parseResult(req.conf.prevResult, req.conf.cniVersion).ips.map((i) => i.address) : undefined
      const name = wepName(req.ids)
      const wep = await withDatastore(a, req, 'check', async (ds) => {
        try {
          return await ds.check(req.ids.namespace, name, prevIps)
        } catch (err) {
          if (err instanceof CniError && err.msg.startsWith('IPAM CHECK failed: '))
            throw new CheckMismatchError('datastore', err.msg.slice('IPAM CHECK failed: '.length))
          throw err
        }
      })
      if (!wep)
        throw new CheckMismatchError('datastore', `WorkloadEndpoint ${req.ids.namespace}/${name} does not exist`)
      const mtu = mtuFor(req.conf, deps.mtuFile ?? DEFAULT_MTU_FILE)
      // The interface the record names: pods wired by an older ipamctl have non-Kubernetes names of another form.
      const wreq = wireRequest(a, req, wep.ipNetworks, mtu)
      try {
        await checkPod({...wreq, hostIfName: wep.interfaceName || wreq.hostIfName})
      } catch (err) {
        if (err instanceof PodCheckError)
          throw new CheckMismatchError(err.mismatch.startsWith('host-') ? 'host' : 'pod', err.message)
        if (err instanceof NetnsNotFoundError) throw new CheckMismatchError('pod', err.message)
        throw new CniError(CNI_ERR.internal, `CHECK failed: ${(err as Error).message}`)
      }
    },

    // STATUS (spec 1.1): the datastore (the endpoint records live there whatever the IPAM), and a delegated IPAM's
    // own STATUS, whose failure is the plugin's.
    async status(a) {
      await ipamPlugin(deps).status!(a)
      const conf = parseNetConf(a.config)
      if (!ownIpam(conf.ipam.type, invokedAs)) await execDelegate(a, conf.ipam.type, 'STATUS')
    },

    // GC (spec 1.1): IPAM releases the attachments not listed (ipamctl's own: ipamGc; any other IPAM gets the GC
    // forwarded, as the spec requires of a delegating plugin); then each such attachment's WorkloadEndpoint record
    // on this node goes too, with its host veth if that is still marked as the attachment's (a link of another
    // attachment or an unmarked one stays). Errors do not stop the sweep.
    async gc(a) {
      const conf = parseNetConf(a.config)
      const valid = new Set(validAttachments(conf.raw).map((x) => x.containerID))
      const node = determineNodename(conf, deps)
      const own = ownIpam(conf.ipam.type, invokedAs)
      const failures: string[] = []
      // A delegated IPAM is collected whatever ipamctl's datastore holds (even when it does not exist).
      if (!own) await execDelegate(a, conf.ipam.type, 'GC').catch((err: unknown) => failures.push(toCniError(err).msg))
      await withStore(a, conf, 'update', async (ctx, store) => {
        let released: string[] = []
        try {
          if (own) released = await ipamGcFor(ctx, a, conf, deps)
        } catch (err) {
          failures.push(toCniError(err).msg)
        }
        for (const wep of await endpointsToCollect(store, {
          node,
          network: conf.name,
          valid,
          released: new Set(released),
        })) {
          const what = `WorkloadEndpoint ${wep.namespace}/${wep.name} (container ${wep.containerID})`
          try {
            if (wep.interfaceName && validIfName(wep.interfaceName)) {
              const ips = wep.ipNetworks.map(addressOf)
              const outcome = await unwirePod({
                ifName: validIfName(wep.endpoint) ? wep.endpoint : 'eth0',
                hostIfName: wep.interfaceName,
                ipv4: ips.find((x) => familyOf(x) === 4),
                ipv6: ips.find((x) => familyOf(x) === 6),
                owner: wep.containerID,
                claimUnmarked: false,
              })
              if (outcome === 'not-ours')
                a.log(
                  `GC: host interface ${wep.interfaceName} is not marked as container ${wep.containerID}'s; left in place`,
                )
              else if (outcome === 'deleted')
                a.log(`GC: deleted host interface ${wep.interfaceName} of container ${wep.containerID}`)
            }
            if (await removeCollectedEndpoint(store, wep)) a.log(`GC: deleted ${what}`)
            else a.log(`GC: ${what} changed while being collected; left in place`)
          } catch (err) {
            failures.push(`${what}: ${toCniError(err).msg}`)
          }
        }
      })
      if (failures.length > 0)
        throw new CniError(CNI_ERR.internal, `GC failed for ${failures.length} item(s)`, failures.join('; '))
    },
  }
}
