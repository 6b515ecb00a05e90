// The `ipamctl-ipam` plugin's CNI commands (accepts what calico-ipam accepts): ADD and DEL through the node's
// agent when it answers, else on the datastore (src/lib/node-ipam/plugin-datastore.ts); CHECK, STATUS and GC on the datastore.
// The IPAM building blocks they use are in src/lib/node-ipam/operations.ts.
import {StoreMissingError} from '../../lib/errors.js'
import {type Ctx, makeCtx} from '../../lib/ipam/context.js'
import {type Clock, systemClock} from '../../lib/clock.js'
import {openStore as defaultOpenStore} from '../../lib/store/open.js'
import type {Store} from '../../lib/store/store.js'
import {CNI_ERR, CniError, toCniError} from '../../lib/cni/errors.js'
import {ipamCheck, ipamGc, validAttachments} from '../../lib/node-ipam/operations.js'
import type {IpamPluginDeps} from '../../lib/node-ipam/request.js'
import {hostLock, ipamRequest, withHostLock} from '../../lib/node-ipam/locked-request.js'
import {datastoreSettingsFor} from '../../lib/node-ipam/datastore-settings.js'
import {type NetConf, parseNetConf} from '../../lib/node-ipam/netconf.js'
import {determineNodename} from '../../lib/node-ipam/nodename.js'
import {PluginDatastore, type PluginVerb} from '../../lib/node-ipam/plugin-datastore.js'
import {type AgentReplay, ipamInvocation, replayingCall} from '../../lib/node-ipam/agent-path.js'
import type {CmdArgs, PluginFuncs} from '../../lib/cni/skel.js'

/** IPAM's part of CNI GC on an open context, under the host lock: the addresses released. */
export function ipamGcFor(ctx: Ctx, a: CmdArgs, conf: NetConf, deps: IpamPluginDeps): Promise<string[]> {
  const attachments = validAttachments(conf.raw)
  return ipamGc(ctx, conf, attachments, {
    log: a.log,
    lock: hostLock(conf, a.log, deps),
    node: determineNodename(conf, deps),
  })
}

/**
 * CHECK and GC (both plugins') on the datastore itself. They never create a store: with mode
 * `read` (CHECK) a missing one fails, since the container's addresses cannot be in it; with `update` (GC) a
 * missing one has nothing to collect, so `fn` is skipped and the verb succeeds.
 */
export async function withPluginStore<T>(
  open: NonNullable<IpamPluginDeps['openStore']>,
  a: CmdArgs,
  conf: NetConf,
  mode: 'read' | 'update',
  clock: Clock,
  fn: (ctx: Ctx, store: Store) => Promise<T>,
): Promise<T | undefined> {
  let store: Store
  try {
    store = await open(await datastoreSettingsFor(conf, a.getenv), {mode})
  } catch (err) {
    if (mode === 'update' && err instanceof StoreMissingError) {
      a.log(`${err.message}: nothing to collect`)
      return undefined
    }
    throw err
  }
  try {
    return await fn(makeCtx(store, {clock}), store)
  } finally {
    await store.close()
  }
}

/** `agent`: the agent's answer to the invocation's first request, asked before a handover (agent-main.ts). */
export function ipamPlugin(deps: IpamPluginDeps & {agent?: AgentReplay} = {}): PluginFuncs {
  const open = deps.openStore ?? defaultOpenStore
  const clock = deps.clock ?? systemClock
  const call = replayingCall(deps.agent)
  const withCtx = <T>(a: CmdArgs, conf: NetConf, mode: 'read' | 'update', fn: (ctx: Ctx) => Promise<T>) =>
    withPluginStore(open, a, conf, mode, clock, fn)
  const viaDatastore = async <T>(a: CmdArgs, verb: PluginVerb, fn: (ds: PluginDatastore) => Promise<T>) => {
    const {req, settings, socket} = await ipamInvocation(a, deps)
    return PluginDatastore.using(withHostLock(req, deps), settings, socket, {open, clock, verb, call}, fn)
  }
  return {
    // With a per-node agent (ipamctl agent run) ADD and DEL go through it: no datastore client in this
    // process (etcd3 alone costs ~100 ms to load) and no race with the node's other ADDs. Without one, or when
    // it does not answer, the datastore is used directly with the same results (src/lib/node-ipam/plugin-datastore.ts).
    add: (a) => viaDatastore(a, 'add', (ds) => ds.ipamAdd()),
    async del(a) {
      await viaDatastore(a, 'del', (ds) => ds.ipamDel())
    },
    async check(a) {
      const req = ipamRequest(a, deps)
      await withCtx(a, req.conf, 'read', (ctx) => ipamCheck(ctx, req))
    },
    async status(a) {
      const conf = parseNetConf(a.config)
      const settings = await datastoreSettingsFor(conf, a.getenv)
      let store: Store | undefined
      try {
        // A missing embedded store is ready: the first ADD creates it. STATUS itself creates nothing.
        store = await open(settings, {mode: 'read'})
        await store.revision()
      } catch (err) {
        if (err instanceof StoreMissingError) return
        throw new CniError(CNI_ERR.notAvailable, 'plugin not available', toCniError(err).msg)
      } finally {
        await store?.close().catch(() => {})
      }
    },
    async gc(a) {
      const conf = parseNetConf(a.config)
      validAttachments(conf.raw) // refuse a GC without the list before opening the datastore
      await withCtx(a, conf, 'update', (ctx) => ipamGcFor(ctx, a, conf, deps))
    },
  }
}
