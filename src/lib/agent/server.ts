// The agent's HTTP side: routes, body limits and validation, and the mapping of every outcome to a JSON reply.
// Nothing a client sends can crash the agent: malformed HTTP, bodies over the limit, bad JSON, unknown paths
// and wrong types all get a JSON error with a 4xx status; an unexpected exception is a 500 for that request.
import http from 'node:http'
import type {Socket} from 'node:net'
import {assignIp} from '../ipam/assign-ip.js'
import {datastoreLocked} from '../ipam/cluster-info.js'
import type {Ctx} from '../ipam/context.js'
import {releaseIps} from '../ipam/release.js'
import {addAddresses, type Allocator, checkHandleAddresses, releaseHandles} from '../node-ipam/operations.js'
import {putEndpoint, takeEndpoint} from '../node-ipam/endpoint-record.js'
import {
  encodeWorkloadEndpoint,
  decodeWorkloadEndpoint,
  endpointKey,
  type WorkloadEndpoint,
} from '../workload/endpoint.js'
import {ValidationError} from '../errors.js'
import {isKeySegment} from '../store/keys.js'
import type {Batcher} from './batcher.js'
import {freshRead} from './fresh-read.js'
import type {AgentMetrics} from './metrics.js'
import type {Fields, Logger} from '../log/logger.js'
import {type AgentCall, agentCall, type AgentOutcome} from '../agent-client/client.js'
import {type ProcessView, peerDifference, peerView, viewOf} from './peer.js'
import type {PluginIo} from '../cni/skel.js'
import {type HeldOutput, runAgentFirst} from '../node-ipam/agent-first.js'
import {
  type CheckReply,
  type EndpointTakeReply,
  type ErrorBody,
  errorReply,
  MAX_BODY_BYTES,
  parseAssign,
  parseAssignIp,
  parseCheck,
  parseEndpointPut,
  parseEndpointTake,
  type InvokeReply,
  parseInvoke,
  parseRelease,
  type ReleaseReply,
  type Target,
} from '../agent-client/protocol.js'

export interface AgentCore {
  readonly ctx: Ctx
  readonly batcher: Batcher
  readonly metrics: AgentMetrics
  readonly node: string
  readonly datastoreId: string
  /** The socket this agent listens on: an invocation it runs asks it in process rather than through the socket. */
  readonly socket?: string
  /** How each `/v1/invoke` ended: run here, handed over to the plugin's datastore path, or refused (`direct`). */
  invoked?(how: 'run' | 'handed-over' | 'refused'): void
  status(): Record<string, unknown>
  log(line: string): void
  /** Each assignment and release at info, with the plugin's fields (pod, netns, handle). */
  logger?: Logger
}

/** The plugin's fields of an allocation, from its attributes (allocationAttrs) and handle. */
function podFields(handle: string, attrs: Record<string, string>): Fields {
  return {
    handle,
    pod: attrs.namespace && attrs.pod ? `${attrs.namespace}/${attrs.pod}` : undefined,
    netns: attrs['ipamctl.io/netns'],
  }
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: ErrorBody,
  ) {
    super(body.message)
  }
}

function send(res: http.ServerResponse, status: number, body: unknown, contentType = 'application/json'): void {
  if (res.headersSent || res.destroyed) return
  const text = typeof body === 'string' ? body : JSON.stringify(body)
  const headers: http.OutgoingHttpHeaders = {'Content-Type': contentType, 'Content-Length': Buffer.byteLength(text)}
  // An error may leave part of the request unread: never reuse that connection.
  if (status >= 400) headers.Connection = 'close'
  res.writeHead(status, headers)
  res.end(text)
}

function readBody(req: http.IncomingMessage): Promise<unknown> {
  const declared = Number(req.headers['content-length'] ?? 0)
  if (declared > MAX_BODY_BYTES)
    return Promise.reject(
      new HttpError(413, {type: 'ValidationError', message: `request body over ${MAX_BODY_BYTES} bytes`}),
    )
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    req.on('data', (b: Buffer) => {
      size += b.length
      if (size > MAX_BODY_BYTES) {
        reject(new HttpError(413, {type: 'ValidationError', message: `request body over ${MAX_BODY_BYTES} bytes`}))
        return
      }
      chunks.push(b)
    })
    req.on('error', reject)
    req.on('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')))
      } catch (err) {
        reject(
          new HttpError(400, {type: 'ValidationError', message: `request body is not JSON: ${(err as Error).message}`}),
        )
      }
    })
  })
}

/** Drain limit for a refused body; past it the connection is cut. */
const MAX_DRAIN_BYTES = 64 * MAX_BODY_BYTES

/**
 * Read and drop whatever is left of a refused request's body. Replying first and closing with unread data
 * makes the kernel reset the connection, and the client would lose the reply along with it.
 */
function drained(req: http.IncomingMessage): Promise<void> {
  if (req.complete || req.destroyed) return Promise.resolve()
  return new Promise((resolve) => {
    let n = 0
    req.on('data', (b: Buffer) => {
      n += b.length
      if (n > MAX_DRAIN_BYTES) req.socket.destroy()
    })
    req.once('end', resolve)
    req.once('close', resolve)
    req.resume()
  })
}

/** The record a plugin sent, checked before it becomes a key and a value: well-formed, this node's, safe names. */
function endpointFrom(core: AgentCore, text: string): WorkloadEndpoint {
  let wep: WorkloadEndpoint
  try {
    wep = decodeWorkloadEndpoint(text)
  } catch (err) {
    throw new ValidationError(`agent request: "endpoint" is not JSON: ${(err as Error).message}`)
  }
  if (!isKeySegment(wep.namespace) || !isKeySegment(wep.name))
    throw new ValidationError('agent request: "endpoint" needs a metadata.namespace and metadata.name without "/"')
  if (Object.values(wep.labels).some((v) => typeof v !== 'string'))
    throw new ValidationError('agent request: "endpoint" labels must be strings')
  if (wep.node !== core.node)
    throw new HttpError(421, {
      type: 'Misdirected',
      message: `this agent serves node ${core.node}, not ${wep.node}`,
      direct: true,
    })
  return wep
}

/** A request for another node or datastore is not ours: the caller goes to the datastore itself. */
function checkTarget(core: AgentCore, t: Target): void {
  if (t.node !== core.node)
    throw new HttpError(421, {
      type: 'Misdirected',
      message: `this agent serves node ${core.node}, not ${t.node}`,
      direct: true,
    })
  if (t.datastore !== core.datastoreId) {
    throw new HttpError(421, {
      type: 'Misdirected',
      message: `this agent serves datastore ${core.datastoreId}, not ${t.datastore}`,
      direct: true,
    })
  }
}

export function createAgentServer(core: AgentCore): {server: http.Server; draining: () => Promise<void>} {
  let closing = false
  let inFlight = 0
  let idle: (() => void) | undefined
  const {ctx, batcher, metrics} = core
  // The requests of a burst arrive together: one ClusterInformation read serves all that wait for it.
  const locked = freshRead(() => datastoreLocked(ctx))

  const ops: Record<string, true> = {
    '/v1/assign': true,
    '/v1/assign-ip': true,
    '/v1/release': true,
    '/v1/endpoint-put': true,
    '/v1/endpoint-take': true,
    '/v1/check': true,
    '/v1/invoke': true,
  }
  // Read once: a plugin process whose view differs is not run here (peer.ts).
  let ownView: ProcessView | undefined | null = null

  /** The metrics of one operation, however it came (HTTP, or an invocation run here). */
  const observe = (op: string, outcome: string, t0: number) => {
    if (op === 'assign' || op === 'assign-ip')
      metrics.allocationSeconds.observe({op, outcome}, (performance.now() - t0) / 1000)
    if (op === 'release') metrics.releaseSeconds.observe({outcome}, (performance.now() - t0) / 1000)
    if (op === 'assign' || op === 'assign-ip' || op === 'release') metrics.requests.inc({op, outcome})
  }

  /** An error as its reply: the status and body a client gets. */
  const replyOf = (err: unknown): {status: number; body: {error: ErrorBody}} =>
    err instanceof HttpError ? {status: err.status, body: {error: err.body}} : errorReply(err)

  /**
   * A plugin process's ADD or DEL, run here as its agent-first entry would run it (src/lib/node-ipam/agent-first.ts),
   * its requests to this agent answered in process; what it would have written comes back in the reply.
   */
  const invoke = async (
    body: unknown,
    gone: () => boolean,
    peer: () => ProcessView | undefined,
  ): Promise<InvokeReply> => {
    const r = parseInvoke(body)
    if (ownView === null) ownView = process.getuid ? viewOf('self', process.getuid()) : undefined
    const differs = peerDifference(ownView, peer())
    if (differs) {
      core.invoked?.('refused')
      throw new HttpError(421, {type: 'Misdirected', message: `not run by the agent: ${differs}`, direct: true})
    }
    const call: AgentCall = async (socket, op, payload, opts) => {
      // The invocation's netconf names another agent: ask that one, as the plugin process would.
      if (socket !== core.socket) return agentCall(socket, op, payload, {...opts, blocking: false})
      const t0 = performance.now()
      try {
        // Through JSON as over the socket, so that the invocation reads exactly what a plugin process would.
        const reply = JSON.parse(JSON.stringify(await operate(`/v1/${op}`, payload, gone))) as Record<string, unknown>
        observe(op, 'ok', t0)
        return {kind: 'answered', status: 200, body: reply} satisfies AgentOutcome
      } catch (err) {
        observe(op, err instanceof HttpError ? 'rejected' : 'error', t0)
        const {status, body: e} = replyOf(err)
        // Logged as the same request over the socket would be.
        if (status >= 500 && !(err instanceof HttpError)) core.log(`POST /v1/${op} (invoke): ${e.error.message}`)
        return {kind: 'answered', status, body: e}
      }
    }
    const output: HeldOutput = []
    const env = r.env
    const io: PluginIo = {
      getenv: (n) => (Object.hasOwn(env, n) ? env[n] : undefined),
      env,
      pid: r.pid,
      readStdin: async () => Buffer.from(r.stdin, 'latin1'),
      stdout: {write: (chunk: string) => output.push([1, chunk])},
      stderr: {write: (chunk: string) => output.push([2, chunk])},
    }
    // A plugin process that has gone (killed, timed out) hands the invocation to its full plugin, which logs its
    // own lines: this one's are dropped, as the agent-first entry drops them at a handover.
    const res = await runAgentFirst(io, {call, commit: () => !gone()})
    if (typeof res === 'number') {
      core.invoked?.('run')
      return {exit: res, output}
    }
    core.invoked?.('handed-over')
    return {handover: res.agent ?? null}
  }

  /** Operation `url` with its parsed body; `gone`: whether the client has gone before its request is batched. */
  const operate = async (url: string, body: unknown, gone: () => boolean): Promise<unknown> => {
    if (closing) throw new HttpError(503, {type: 'ShuttingDown', message: 'the agent is shutting down', direct: true})
    const log: string[] = []
    const alloc: Allocator = {
      autoAssign: (args) => batcher.autoAssign(args, gone),
      assignIp: (args) => batcher.alone(() => assignIp(ctx, args)),
      releaseIps: (options) => batcher.alone(() => releaseIps(ctx, options)),
      datastoreLocked: locked,
    }
    if (url === '/v1/assign') {
      const r = parseAssign(body)
      checkTarget(core, r)
      const result = await addAddresses(ctx, {...r, ip: undefined}, alloc, (l) => log.push(l))
      core.logger?.info('assigned addresses', {ips: result.ips.map((i) => i.address), ...podFields(r.handle, r.attrs)})
      return {result, log}
    }
    if (url === '/v1/assign-ip') {
      const r = parseAssignIp(body)
      checkTarget(core, r)
      const result = await addAddresses(
        ctx,
        {...r, num4: 0, num6: 0, ipv4Pools: [], ipv6Pools: [], maxBlocksPerHost: 0},
        alloc,
        (l) => log.push(l),
      )
      core.logger?.info('assigned addresses', {ips: result.ips.map((i) => i.address), ...podFields(r.handle, r.attrs)})
      return {result, log}
    }
    // The main plugin's WorkloadEndpoint: guarded writes of their own key, so no need to queue behind IPAM.
    if (url === '/v1/endpoint-put') {
      const r = parseEndpointPut(body)
      checkTarget(core, r)
      await putEndpoint(ctx.store, endpointFrom(core, r.endpoint))
      return {}
    }
    if (url === '/v1/endpoint-take') {
      const r = parseEndpointTake(body)
      checkTarget(core, r)
      const t = await takeEndpoint(ctx.store, r.namespace, r.name, r.containerID)
      return {endpoint: t.wep ? encodeWorkloadEndpoint(t.wep) : null, stale: t.stale} satisfies EndpointTakeReply
    }
    // CHECK only reads: no queue.
    if (url === '/v1/check') {
      const r = parseCheck(body)
      checkTarget(core, r)
      if (r.handle !== undefined) await checkHandleAddresses(ctx, r.handle, r.ips ?? [])
      const kv = await ctx.store.get(endpointKey(r.namespace, r.name))
      return {endpoint: kv ? kv.value : null} satisfies CheckReply
    }
    const r = parseRelease(body)
    checkTarget(core, r)
    return batcher.alone(async (): Promise<ReleaseReply> => {
      const h =
        r.handles.length > 0 ? await releaseHandles(ctx, r.handles, (l) => log.push(l)) : {released: [], missing: []}
      const ips =
        r.ips.length > 0
          ? await releaseIps(
              ctx,
              r.ips.map((ip) => ({ip})),
            )
          : {released: [], unallocated: []}
      const released = [...h.released, ...ips.released]
      core.logger?.info(released.length > 0 ? 'released addresses' : 'no addresses to release', {
        ips: released,
        handles: r.handles,
      })
      return {released, missing: [...h.missing, ...ips.unallocated], log}
    })
  }

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<unknown> => {
    const url = (req.url ?? '/').split('?')[0]
    const route = `${req.method} ${url}`
    if (route === 'GET /v1/status') return core.status()
    if (route === 'GET /metrics') {
      send(res, 200, await metrics.render(), metrics.contentType)
      return undefined
    }
    // `direct`: an operation this agent does not know (a plugin newer than its agent, during an upgrade) is one it
    // did not do, so the plugin does it on the datastore itself instead of failing the pod.
    if (!ops[url!]) {
      throw new HttpError(url === '/v1/status' || url === '/metrics' ? 405 : 404, {
        type: 'ValidationError',
        message: `unknown operation ${req.method} ${url}`,
        direct: true,
      })
    }
    if (req.method !== 'POST') throw new HttpError(405, {type: 'ValidationError', message: `${url} takes POST`})
    const body = await readBody(req)
    // Whether the client has gone (killed, timed out) before its request is taken into a batch.
    let gone = false
    res.on('close', () => {
      gone = !res.writableFinished
    })
    if (url === '/v1/invoke') {
      if (closing) throw new HttpError(503, {type: 'ShuttingDown', message: 'the agent is shutting down', direct: true})
      return invoke(
        body,
        () => gone,
        () => peerView(req.socket),
      )
    }
    return operate(url!, body, () => gone)
  }

  const server = http.createServer({requestTimeout: 60_000, headersTimeout: 10_000}, (req, res) => {
    const t0 = performance.now()
    inFlight++
    const op = (req.url ?? '').split('?')[0]!.replace(/^\/v1\//, '')
    handle(req, res)
      .then((reply) => {
        if (reply !== undefined) send(res, 200, reply)
        return 'ok'
      })
      .catch(async (err: unknown) => {
        const {status, body} = replyOf(err)
        if (status >= 500 && !(err instanceof HttpError)) core.log(`${req.method} ${req.url}: ${body.error.message}`)
        await drained(req)
        send(res, status, body)
        return err instanceof HttpError ? 'rejected' : 'error'
      })
      .then((outcome) => {
        observe(op, outcome, t0)
        if (--inFlight === 0) idle?.()
      })
  })
  // Bytes that are not HTTP at all: a JSON reply, then close (the default would answer without a body).
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    if (!socket.writable) return socket.destroy()
    const text = JSON.stringify({
      error: {type: 'ValidationError', message: `malformed HTTP request: ${err.code ?? err.message}`},
    })
    socket.end(
      `HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
    )
  })
  return {
    server,
    /** Stop taking work; resolves when every request in flight has been answered. */
    async draining() {
      closing = true
      if (inFlight > 0) await new Promise<void>((r) => (idle = r))
    },
  }
}
