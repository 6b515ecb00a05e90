// The plugins' side of ADD and DEL through the node's agent: the socket to ask, the request, and what its reply
// means. Kept free of the datastore and the IPAM core (src/lib/node-ipam/plugin-datastore.ts adds the direct path),
// so that ipamctl-ipam's agent-first entry (src/plugins/ipam/agent-main.ts) bundles this path alone
// (docs/startup.md#the-agent-first-entry).
import {agentCall, type AgentCall, type AgentOutcome, agentSocketPresent, replyError} from '../agent-client/client.js'
import {DEFAULT_AGENT_SOCKET, datastoreId, errorFrom} from '../agent-client/protocol.js'
import type {CniResult} from '../cni/result.js'
import type {CmdArgs} from '../cni/skel.js'
import type {DatastoreSettings} from '../store/settings.js'
import {datastoreSettingsFor} from './datastore-settings.js'
import type {NetConf} from './netconf.js'
import {addPlan, type IpamPluginDeps, type IpamRequest, type ParsedRequest, parseIpamRequest} from './request.js'

/** The agent's socket for this netconf when there is one to ask: a stat, no connect. */
export function agentSocketFor(conf: NetConf): string | undefined {
  const file = conf.ipamctlAgentSocket ?? DEFAULT_AGENT_SOCKET
  return file !== '' && agentSocketPresent(file) ? file : undefined
}

export type AgentAnswer = {body: Record<string, unknown>} | {direct: 'unreachable' | 'unknown'}

/** What the agent's reply means for the plugin; an IPAM error it answered with is thrown as the direct path would. */
export function agentAnswer(socket: string, o: AgentOutcome, req: Pick<IpamRequest, 'log' | 'logger'>): AgentAnswer {
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

/**
 * The agent's answer to the first request of an invocation, given again instead of asking twice: the
 * agent-first entry asked, then handed the invocation over to the full plugin (src/plugins/ipam/process.ts).
 */
export interface AgentReplay {
  socket: string
  outcome: AgentOutcome
}

/** agentCall, except that the first call is answered with `replay`'s outcome. */
export function replayingCall(replay: AgentReplay | undefined, call: AgentCall = agentCall): AgentCall {
  let first = replay?.outcome
  return (socket, op, payload, opts) => {
    const o = first
    first = undefined
    return o ? Promise.resolve(o) : call(socket, op, payload, opts)
  }
}

/**
 * How every ipamctl-ipam ADD and DEL starts: the request, its datastore settings and the agent's socket when
 * there is one to ask (with a replay, the socket that was asked). No datastore access, and no host lock: the
 * datastore path adds it (locked-request.ts withHostLock).
 */
export async function ipamInvocation(
  a: CmdArgs,
  deps: IpamPluginDeps & {agent?: AgentReplay} = {},
): Promise<{req: ParsedRequest; settings: DatastoreSettings; socket: string | undefined}> {
  const req = parseIpamRequest(a, deps)
  const settings = await datastoreSettingsFor(req.conf, a.getenv)
  return {req, settings, socket: deps.agent ? deps.agent.socket : agentSocketFor(req.conf)}
}

/** ADD through the agent: the result (logged as assigned), or how to go on directly. */
export async function addViaAgent(
  socket: string,
  req: ParsedRequest,
  settings: DatastoreSettings,
  now: Date,
  call: AgentCall = agentCall,
): Promise<CniResult | 'unreachable' | 'unknown'> {
  const {ip, ...auto} = addPlan(req, now)
  const target = {node: auto.node, datastore: datastoreId(settings)}
  const o =
    ip === undefined
      ? await call(socket, 'assign', {...auto, ...target})
      : await call(socket, 'assign-ip', {...target, handle: auto.handle, attrs: auto.attrs, ip})
  const r = agentAnswer(socket, o, req)
  if ('direct' in r) return r.direct
  const result = r.body.result as CniResult | undefined
  if (typeof result !== 'object' || result === null || !Array.isArray(result.ips)) {
    req.logger.warn(`ipamctl agent at ${socket} answered without a result; using the datastore directly`, {
      fallback: 'no-result',
    })
    return 'unknown'
  }
  return logAssigned(req, result, `agent ${socket}`)
}

/**
 * DEL through the agent: true when it answered. DEL is idempotent, so whatever became of an unanswered
 * request, releasing directly is right.
 */
export async function delViaAgent(
  socket: string,
  req: ParsedRequest,
  settings: DatastoreSettings,
  call: AgentCall = agentCall,
): Promise<boolean> {
  const target = {node: req.ids.node, datastore: datastoreId(settings)}
  const o = await call(socket, 'release', {...target, handles: [req.ids.handleId, req.ids.workloadId]})
  const r = agentAnswer(socket, o, req)
  if (!('body' in r)) return false
  const released = Array.isArray(r.body.released) ? r.body.released.map(String) : []
  logReleased(req, released, `agent ${socket}`)
  return true
}

export function logReleased(req: Pick<IpamRequest, 'ids' | 'logger'>, released: readonly string[], via: string): void {
  if (released.length > 0) req.logger.info('released addresses', {ips: released, handle: req.ids.handleId, via})
  else req.logger.info('no addresses to release', {handle: req.ids.handleId, via})
}

/** The log line of an ADD that assigned `r`'s addresses, `via` the agent or the datastore; returns `r`. */
export function logAssigned(req: Pick<IpamRequest, 'ids' | 'logger'>, r: CniResult, via: string): CniResult {
  req.logger.info('assigned addresses', {ips: r.ips.map((i) => i.address), handle: req.ids.handleId, via})
  return r
}
