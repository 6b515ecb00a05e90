// Where a CNI plugin's datastore work goes: IPAM ADD and DEL (both plugins) and the WorkloadEndpoint record (the
// main plugin). With a per-node agent answering on its socket (and ipamctl's own IPAM), all of it goes through
// the agent, so the plugin opens no datastore at all (on etcd, loading the client alone is ~100 ms). When the agent does not answer, or answers
// that it does not serve this node or datastore, the plugin uses the datastore itself, opened on first need,
// with the same results. What an agent may have done before it went silent is handled as ipamctl-ipam does:
// an ADD is finished idempotently, a release or record removal simply done again.
import {type AgentCall, agentCall} from '../agent-client/client.js'
import {datastoreId} from '../agent-client/protocol.js'
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
import {checkHandleAddresses, ipamAdd, ipamAddAfterUnknown, ipamAddFixedAfterUnknown, ipamDel} from './operations.js'
import {addViaAgent, agentAnswer, delViaAgent, logAssigned, logReleased} from './agent-path.js'
import type {IpamRequest} from './request.js'
import type {CniResult} from '../cni/result.js'

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
    private readonly call: AgentCall = agentCall,
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
    if (socket) {
      const via = await addViaAgent(socket, req, this.settings, this.clock.now(), this.call)
      if (typeof via === 'object') return via
      this.unreachable()
      if (via === 'unknown')
        return logAssigned(
          req,
          ip === undefined
            ? await ipamAddAfterUnknown(await this.ctx(), req)
            : await ipamAddFixedAfterUnknown(await this.ctx(), req),
          'datastore',
        )
    } else req.logger.debug('no ipamctl agent socket: using the datastore directly')
    return logAssigned(req, await ipamAdd(await this.ctx(), req), 'datastore')
  }

  async ipamDel(): Promise<void> {
    if (this.socket && (await delViaAgent(this.socket, this.req, this.settings, this.call))) return
    this.unreachable()
    const ctx = await this.direct()
    if (ctx) logReleased(this.req, await ipamDel(ctx, this.req), 'datastore')
  }

  /** Both endpoint operations are idempotent, so an unanswered request is simply done again directly. */
  async putEndpoint(wep: WorkloadEndpoint): Promise<void> {
    if (this.socket) {
      const o = await this.call(this.socket, 'endpoint-put', {...this.target(), endpoint: encodeWorkloadEndpoint(wep)})
      if ('body' in agentAnswer(this.socket, o, this.req)) return
      this.unreachable()
    }
    await putEndpoint((await this.ctx()).store, wep)
  }

  async takeEndpoint(namespace: string, name: string, containerID: string): Promise<TakenEndpoint> {
    if (this.socket) {
      const o = await this.call(this.socket, 'endpoint-take', {...this.target(), namespace, name, containerID})
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
      const o = await this.call(this.socket, 'check', {
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
    deps: {
      open: (s: DatastoreSettings, opts: OpenOptions) => Promise<Store>
      clock: Clock
      verb: PluginVerb
      /** How the agent is asked (replayingCall after a handover); agentCall by default. */
      call?: AgentCall
    },
    fn: (ds: PluginDatastore) => Promise<T>,
  ): Promise<T> {
    const ds = new PluginDatastore(req, settings, socket, deps.open, deps.clock, deps.verb, deps.call)
    try {
      return await fn(ds)
    } finally {
      await ds.close()
    }
  }
}
