// Where a CNI plugin's datastore work goes: IPAM ADD and DEL (both plugins) and the WorkloadEndpoint record (the
// main plugin). With a per-node agent answering on its socket (and ipamctl's own IPAM), all of it goes through
// the agent, so the plugin opens no datastore at all (on etcd, loading the client alone is ~100 ms). When the agent does not answer, or answers
// that it does not serve this node or datastore, the plugin uses the datastore itself, opened on first need,
// with the same results. What an agent may have done before it went silent is handled as ipamctl-ipam does:
// an ADD is finished idempotently, a release or record removal simply done again.
import {agentCall, type AgentOutcome, agentSocketPresent, replyError} from '../agent-client/client.js'
import {DEFAULT_AGENT_SOCKET, datastoreId, errorFrom} from '../agent-client/protocol.js'
import {type Ctx, makeCtx} from '../ipam/context.js'
import type {Clock} from '../clock.js'
import {StoreMissingError} from '../errors.js'
import type {OpenOptions} from '../store/open.js'
import type {DatastoreSettings} from '../store/settings.js'
import type {Store} from '../store/store.js'
import {
  decodeWorkloadEndpoint,
  encodeWorkloadEndpoint,
  endpointKey,
  type WorkloadEndpoint,
} from '../workload/endpoint.js'
import {putEndpoint, takeEndpoint, type TakenEndpoint} from './endpoint-record.js'
import {
  addPlan,
  checkHandleAddresses,
  ipamAdd,
  ipamAddAfterUnknown,
  ipamAddFixedAfterUnknown,
  ipamDel,
} from './operations.js'
import type {IpamRequest} from './request.js'
import type {NetConf} from './netconf.js'
import type {CniResult} from '../cni/result.js'

/** The agent's socket for this netconf when there is one to ask: a stat, no connect. */
export function agentSocketFor(conf: NetConf): string | undefined {
  const file = conf.ipamctlAgentSocket ?? DEFAULT_AGENT_SOCKET
  return file !== '' && agentSocketPresent(file) ? file : undefined
}

type AgentAnswer = {body: Record<string, unknown>} | {direct: 'unreachable' | 'unknown'}

/** What the agent's reply means for the plugin; an IPAM error it answered with is thrown as the direct path would. */
function agentAnswer(socket: string, o: AgentOutcome, req: Pick<IpamRequest, 'log' | 'logger'>): AgentAnswer {
  if (o.kind !== 'answered') {
    req.logger.warn(`ipamctl agent at ${socket}: ${o.reason}; using the datastore directly`, {fallback: o.kind})
    return {direct: o.kind}
  }
  const e = replyError(o)
  if (e?.direct) {
    req.logger.warn(
      `ipamctl agent at ${socket} does not serve this request (${e.message}); using the datastore directly`,
      {fallback: 'not-served'},
    )
    return {direct: 'unreachable'}
  }
  if (Array.isArray(o.body.log)) for (const line of o.body.log) req.log(String(line))
  if (e) throw errorFrom(e)
  return {body: o.body}
}

/** ADD through the agent: the result, or how to go on directly. */
async function addViaAgent(
  socket: string,
  req: IpamRequest,
  settings: DatastoreSettings,
  now: Date,
): Promise<CniResult | 'unreachable' | 'unknown'> {
  const {ip, ...auto} = addPlan(req, now)
  const target = {node: auto.node, datastore: datastoreId(settings)}
  const o =
    ip === undefined
      ? await agentCall(socket, 'assign', {...auto, ...target})
      : await agentCall(socket, 'assign-ip', {...target, handle: auto.handle, attrs: auto.attrs, ip})
  const r = agentAnswer(socket, o, req)
  if ('direct' in r) return r.direct
  const result = r.body.result as CniResult | undefined
  if (typeof result !== 'object' || result === null || !Array.isArray(result.ips)) {
    req.logger.warn(`ipamctl agent at ${socket} answered without a result; using the datastore directly`, {
      fallback: 'no-result',
    })
    return 'unknown'
  }
  return result
}

/**
 * DEL through the agent: true when it answered. DEL is idempotent, so whatever became of an unanswered
 * request, releasing directly is right.
 */
async function delViaAgent(socket: string, req: IpamRequest, settings: DatastoreSettings): Promise<boolean> {
  const target = {node: req.ids.node, datastore: datastoreId(settings)}
  const o = await agentCall(socket, 'release', {...target, handles: [req.ids.handleId, req.ids.workloadId]})
  const r = agentAnswer(socket, o, req)
  if (!('body' in r)) return false
  const released = Array.isArray(r.body.released) ? r.body.released.map(String) : []
  logReleased(req, released, `agent ${socket}`)
  return true
}

function logReleased(req: Pick<IpamRequest, 'ids' | 'logger'>, released: readonly string[], via: string): void {
  if (released.length > 0) req.logger.info('released addresses', {ips: released, handle: req.ids.handleId, via})
  else req.logger.info('no addresses to release', {handle: req.ids.handleId, via})
}

/**
 * What the invocation does to the datastore: ADD adds state and creates a missing embedded store (saying so
 * in the plugin's log); DEL only removes state, so on a missing embedded store there is nothing to remove and
 * it succeeds without creating one (DEL must be idempotent, and a store that never existed holds nothing of
 * this container's). CHECK only reads: a missing store is an error.
 */
export type PluginVerb = 'add' | 'del' | 'check'

export class PluginDatastore {
  private store?: Promise<Store | undefined>

  /** `socket`: the agent's, or undefined to use the datastore directly from the start. */
  constructor(
    private readonly req: IpamRequest,
    private readonly settings: DatastoreSettings,
    private socket: string | undefined,
    private readonly open: (s: DatastoreSettings, opts: OpenOptions) => Promise<Store>,
    private readonly clock: Clock,
    private readonly verb: PluginVerb,
  ) {
    // A password from an ipamctl_config file is known only now: it must never reach the log either.
    req.logger.addSecret(settings.etcdPassword)
  }

  /** The datastore itself, opened once, on first need; undefined for a DEL on an embedded store that does not exist. */
  async direct(): Promise<Ctx | undefined> {
    this.store ??= this.openOnce()
    const store = await this.store
    return store && makeCtx(store, {clock: this.clock})
  }

  private async openOnce(): Promise<Store | undefined> {
    if (this.verb === 'add')
      return this.open(this.settings, {
        mode: 'create',
        onCreated: (file) => this.req.log(`created new datastore at ${file}`),
      })
    if (this.verb === 'check') return this.open(this.settings, {mode: 'read'})
    try {
      return await this.open(this.settings, {mode: 'update'})
    } catch (err) {
      if (!(err instanceof StoreMissingError)) throw err
      this.req.log(`${err.message}: nothing to release`)
      return undefined
    }
  }

  /** For ADD and CHECK, which always have a store. */
  private async ctx(): Promise<Ctx> {
    const ctx = await this.direct()
    if (!ctx) throw new Error(`internal: ${this.verb.toUpperCase()} without a datastore`)
    return ctx
  }

  async close(): Promise<void> {
    const store = this.store && (await this.store.catch(() => undefined))
    if (store) await store.close()
  }

  /** An agent that does not answer is not asked again in this invocation. */
  private unreachable(): void {
    this.socket = undefined
  }

  /** `ip`: this fixed address instead of the request's `IP=` (the main plugin's IPAMCTL_IPS, one call each). */
  async ipamAdd(ip?: string): Promise<CniResult> {
    const req = ip === undefined ? this.req : {...this.req, args: {...this.req.args, ip}}
    const socket = this.socket
    const assigned = (r: CniResult, via: string): CniResult => {
      req.logger.info('assigned addresses', {ips: r.ips.map((i) => i.address), handle: req.ids.handleId, via})
      return r
    }
    if (socket) {
      const via = await addViaAgent(socket, req, this.settings, this.clock.now())
      if (typeof via === 'object') return assigned(via, `agent ${socket}`)
      this.unreachable()
      if (via === 'unknown')
        return assigned(
          ip === undefined
            ? await ipamAddAfterUnknown(await this.ctx(), req)
            : await ipamAddFixedAfterUnknown(await this.ctx(), req),
          'datastore',
        )
    } else req.logger.debug('no ipamctl agent socket: using the datastore directly')
    return assigned(await ipamAdd(await this.ctx(), req), 'datastore')
  }

  async ipamDel(): Promise<void> {
    if (this.socket && (await delViaAgent(this.socket, this.req, this.settings))) return
    this.unreachable()
    const ctx = await this.direct()
    if (ctx) logReleased(this.req, await ipamDel(ctx, this.req), 'datastore')
  }

  /** Both endpoint operations are idempotent, so an unanswered request is simply done again directly. */
  async putEndpoint(wep: WorkloadEndpoint): Promise<void> {
    if (this.socket) {
      const o = await agentCall(this.socket, 'endpoint-put', {...this.target(), endpoint: encodeWorkloadEndpoint(wep)})
      if ('body' in agentAnswer(this.socket, o, this.req)) return
      this.unreachable()
    }
    await putEndpoint((await this.ctx()).store, wep)
  }

  async takeEndpoint(namespace: string, name: string, containerID: string): Promise<TakenEndpoint> {
    if (this.socket) {
      const o = await agentCall(this.socket, 'endpoint-take', {...this.target(), namespace, name, containerID})
      const r = agentAnswer(this.socket, o, this.req)
      if ('body' in r) {
        const text = r.body.endpoint
        return {wep: typeof text === 'string' ? decodeWorkloadEndpoint(text) : undefined, stale: r.body.stale === true}
      }
      this.unreachable()
    }
    const ctx = await this.direct()
    return ctx ? takeEndpoint(ctx.store, namespace, name, containerID) : {wep: undefined, stale: false}
  }

  /**
   * CHECK's datastore half: with `ips`, the attachment's handle must hold exactly them (checkHandleAddresses);
   * then its WorkloadEndpoint record, undefined when there is none. Through the agent when it answers.
   */
  async check(namespace: string, name: string, ips?: readonly string[]): Promise<WorkloadEndpoint | undefined> {
    if (this.socket) {
      const o = await agentCall(this.socket, 'check', {
        ...this.target(),
        namespace,
        name,
        ...(ips === undefined ? {} : {handle: this.req.ids.handleId, ips}),
      })
      const r = agentAnswer(this.socket, o, this.req)
      if ('body' in r) {
        const text = r.body.endpoint
        return typeof text === 'string' ? decodeWorkloadEndpoint(text) : undefined
      }
      this.unreachable()
    }
    const ctx = await this.ctx()
    if (ips !== undefined) await checkHandleAddresses(ctx, this.req.ids.handleId, ips)
    const kv = await ctx.store.get(endpointKey(namespace, name))
    return kv ? decodeWorkloadEndpoint(kv.value) : undefined
  }

  private target(): {node: string; datastore: string} {
    return {node: this.req.ids.node, datastore: datastoreId(this.settings)}
  }

  /** `fn` with a PluginDatastore for `req`, closed afterwards. */
  static async using<T>(
    req: IpamRequest,
    settings: DatastoreSettings,
    socket: string | undefined,
    deps: {open: (s: DatastoreSettings, opts: OpenOptions) => Promise<Store>; clock: Clock; verb: PluginVerb},
    fn: (ds: PluginDatastore) => Promise<T>,
  ): Promise<T> {
    const ds = new PluginDatastore(req, settings, socket, deps.open, deps.clock, deps.verb)
    try {
      return await fn(ds)
    } finally {
      await ds.close()
    }
  }
}
