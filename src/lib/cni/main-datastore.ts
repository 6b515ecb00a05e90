// Where the main plugin's datastore work goes: its IPAM and its WorkloadEndpoint record. With a per-node agent
// answering on its socket (and ipamctl's own IPAM), all of it goes through the agent, so the plugin opens no
// datastore at all (on etcd, loading the client alone is ~100 ms). When the agent does not answer, or answers
// that it does not serve this node or datastore, the plugin uses the datastore itself, opened on first need,
// with the same results. What an agent may have done before it went silent is handled as ipamctl-ipam does:
// an ADD is finished idempotently, a release or record removal simply done again.
import {agentCall} from '../agent/client.js'
import {datastoreId} from '../agent/protocol.js'
import {type Ctx, makeCtx} from '../ipam/context.js'
import type {Clock} from '../ipam/time.js'
import type {DatastoreSettings} from '../store/settings.js'
import type {Store} from '../store/store.js'
import {decodeWorkloadEndpoint, encodeWorkloadEndpoint, type WorkloadEndpoint} from '../workload/endpoint.js'
import {putEndpoint, takeEndpoint, type TakenEndpoint} from './endpoint-record.js'
import {addViaAgent, agentAnswer, delViaAgent, ipamAdd, ipamAddAfterUnknown, ipamDel, type IpamRequest} from './ipam-plugin.js'
import type {CniResult} from './result.js'

export class MainDatastore {
  private store?: Promise<Store>

  /** `socket`: the agent's, or undefined to use the datastore directly from the start. */
  constructor(
    private readonly req: IpamRequest,
    private readonly settings: DatastoreSettings,
    private socket: string | undefined,
    private readonly open: (s: DatastoreSettings) => Promise<Store>,
    private readonly clock: Clock,
  ) {}

  /** The datastore itself, opened once, on first need. */
  async ctx(): Promise<Ctx> {
    this.store ??= this.open(this.settings)
    return makeCtx(await this.store, {clock: this.clock})
  }

  async close(): Promise<void> {
    if (this.store) await (await this.store).close()
  }

  /** An agent that does not answer is not asked again in this invocation. */
  private unreachable(): void {
    this.socket = undefined
  }

  async ipamAdd(): Promise<CniResult> {
    if (this.socket) {
      const via = await addViaAgent(this.socket, this.req, this.settings, this.clock.now())
      if (typeof via === 'object') return via
      this.unreachable()
      if (via === 'unknown') return ipamAddAfterUnknown(await this.ctx(), this.req)
    }
    return ipamAdd(await this.ctx(), this.req)
  }

  async ipamDel(): Promise<void> {
    if (this.socket && (await delViaAgent(this.socket, this.req, this.settings))) return
    this.unreachable()
    await ipamDel(await this.ctx(), this.req)
  }

  /** Both endpoint operations are idempotent, so an unanswered request is simply done again directly. */
  async putEndpoint(wep: WorkloadEndpoint): Promise<void> {
    if (this.socket) {
      const o = await agentCall(this.socket, 'endpoint-put', {...this.target(), endpoint: encodeWorkloadEndpoint(wep)})
      if ('body' in agentAnswer(this.socket, o, this.req.log)) return
      this.unreachable()
    }
    await putEndpoint((await this.ctx()).store, wep)
  }

  async takeEndpoint(namespace: string, name: string, containerID: string): Promise<TakenEndpoint> {
    if (this.socket) {
      const o = await agentCall(this.socket, 'endpoint-take', {...this.target(), namespace, name, containerID})
      const r = agentAnswer(this.socket, o, this.req.log)
      if ('body' in r) {
        const text = r.body.endpoint
        return {wep: typeof text === 'string' ? decodeWorkloadEndpoint(text) : undefined, stale: r.body.stale === true}
      }
      this.unreachable()
    }
    return takeEndpoint((await this.ctx()).store, namespace, name, containerID)
  }

  private target(): {node: string; datastore: string} {
    return {node: this.req.ids.node, datastore: datastoreId(this.settings)}
  }
}
