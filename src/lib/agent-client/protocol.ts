// The agent's wire protocol, shared by the server and the CNI-side client: HTTP/1.1 on a unix socket with
// JSON bodies, so `curl --unix-socket` works for operators. Kept free of anything heavy: the CNI plugins
// import this module on every exec.
//
//   POST /v1/assign     {node, datastore, handle, attrs, num4, num6, ipv4Pools, ipv6Pools, maxBlocksPerHost, namespaceLabels?}
//   POST /v1/assign-ip  {node, datastore, handle, attrs, ip}
//        → 200 {result: <CNI result>, log: [..]}
//   POST /v1/release    {node, datastore, handles?: [..], ips?: [..]}
//        → 200 {released: [..], missing: [..], log: [..]}
//   POST /v1/endpoint-put   {node, datastore, endpoint: <WorkloadEndpoint record as stored>}  → 200 {}
//   POST /v1/endpoint-take  {node, datastore, namespace, name, containerID}
//        → 200 {endpoint: <record> | null, stale}   (the main plugin's WorkloadEndpoint, written / removed)
//   POST /v1/check  {node, datastore, namespace, name, handle?, ips?}
//        → 200 {endpoint: <record> | null}   (CHECK: the handle holds exactly `ips`; the record, read)
//   POST /v1/invoke {env, stdin, pid}   (a plugin process's whole ADD or DEL, run by the agent for a verified peer)
//        → 200 {exit, output: [[1|2, text], ..]}  or  200 {handover: {socket, outcome} | null}
//        (docs/startup.md#the-agent-runs-the-invocation; `direct` here: run the invocation in the plugin process)
//   GET  /v1/status     → 200 {node, datastore, pid, version, startedAt, uptimeSeconds, queued, counters}
//   GET  /metrics       → Prometheus text (the same registry as --metrics-address)
//   errors              → 4xx/5xx {error: {type, message, code?, details?, direct?}}
//
// `direct: true` in an error means the agent did nothing and will not serve this request (wrong node or
// datastore, shutting down, an operation it does not know): the caller should use the datastore itself.
// Any other error is the IPAM answer and must be returned as is.
import path from 'node:path'
import {
  ConflictError,
  DatastoreUnavailableError,
  ExhaustedError,
  IpamError,
  NotFoundError,
  RevisionConflict,
  ValidationError,
} from '../errors.js'
import {CniError} from '../cni/errors.js'
import {isKeySegment} from '../store/keys.js'
import type {DatastoreSettings} from '../store/settings.js'

export const DEFAULT_AGENT_SOCKET = '/run/ipamctl/agent.sock'
export const DEFAULT_METRICS_ADDRESS = '127.0.0.1:9099'
/** Request bodies above this are refused (413) before they are parsed. */
export const MAX_BODY_BYTES = 1024 * 1024
/** sun_path is 108 bytes including the terminating NUL. */
export const MAX_SOCKET_PATH_BYTES = 107

export type AgentOp = 'assign' | 'assign-ip' | 'release' | 'endpoint-put' | 'endpoint-take' | 'check' | 'invoke'

export interface Target {
  /** The node the agent serves; a request for another node is answered with `direct`. */
  node: string
  /** datastoreId() of the caller's datastore; a different one is answered with `direct`. */
  datastore: string
}

export interface AssignRequest extends Target {
  handle: string
  attrs: Record<string, string>
  num4: number
  num6: number
  ipv4Pools: string[]
  ipv6Pools: string[]
  maxBlocksPerHost: number
  /** For pools' namespaceSelector; absent is the empty label set. */
  namespaceLabels?: Record<string, string>
}

export interface AssignIpRequest extends Target {
  handle: string
  attrs: Record<string, string>
  ip: string
}

export interface ReleaseRequest extends Target {
  handles: string[]
  ips: string[]
}

export interface ReleaseReply {
  released: string[]
  /** Handles that did not exist (not an error: DEL is idempotent). */
  missing: string[]
  log: string[]
}

export interface EndpointPutRequest extends Target {
  /** The record's JSON, as the datastore holds it. */
  endpoint: string
}

export interface EndpointTakeRequest extends Target {
  namespace: string
  name: string
  containerID: string
}

export interface CheckRequest extends Target {
  namespace: string
  name: string
  /** With `ips`: the attachment's handle, which must hold exactly those addresses. */
  handle?: string
  ips?: string[]
}

export interface CheckReply {
  endpoint: string | null
}

export interface EndpointTakeReply {
  endpoint: string | null
  stale: boolean
}

/**
 * A plugin process's ADD or DEL for the agent to run whole: what the invocation reads of its process (its
 * environment, stdin as Latin-1 text so that any bytes survive, its pid for the log lines). Whether the agent may
 * run it is not the request's to say: the agent asks the kernel who connected (src/lib/agent/peer.ts).
 */
export interface InvokeRequest {
  env: Record<string, string>
  stdin: string
  pid: number
}

/** Run: what the plugin process writes (fd and text, in order) and its exit code; or its handover. */
export type InvokeReply =
  | {exit: number; output: [1 | 2, string][]}
  | {handover: {socket: string; outcome: unknown} | null}

export interface ErrorBody {
  type: string
  message: string
  code?: number
  details?: string
  direct?: boolean
}

/**
 * Where a datastore lives, in one comparable string: the agent serves exactly one, and a plugin whose
 * netconf names another must not be served by it.
 */
export function datastoreId(s: Pick<DatastoreSettings, 'type' | 'path' | 'etcdEndpoints'>): string {
  return s.type === 'etcdv3' ? `etcdv3:${[...s.etcdEndpoints].sort().join(',')}` : `embedded:${path.resolve(s.path)}`
}

export function validateSocketPath(p: string, where: string): string {
  if (!path.isAbsolute(p))
    throw new ValidationError(`${where}: the agent socket must be an absolute path, got ${JSON.stringify(p)}`)
  if (p.includes('\0')) throw new ValidationError(`${where}: the agent socket path must not contain NUL`)
  if (Buffer.byteLength(p) > MAX_SOCKET_PATH_BYTES)
    throw new ValidationError(`${where}: the agent socket path is longer than ${MAX_SOCKET_PATH_BYTES} bytes`)
  return p
}

// ---------------------------------------------------------------------------------------------- validation

type Obj = Record<string, unknown>

function field<T>(o: Obj, key: string, ok: (v: unknown) => v is T, want: string, dflt?: T): T {
  const v = o[key]
  if (v === undefined && dflt !== undefined) return dflt
  if (!ok(v)) throw new ValidationError(`agent request: "${key}" must be ${want}`)
  return v
}

const isStr = (v: unknown): v is string => typeof v === 'string'
const isNonEmptyStr = (v: unknown): v is string => typeof v === 'string' && v !== ''
const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 65536
const isStrList = (v: unknown): v is string[] => Array.isArray(v) && v.length <= 10_000 && v.every(isNonEmptyStr)
const isStrMap = (v: unknown): v is Record<string, string> =>
  typeof v === 'object' &&
  v !== null &&
  !Array.isArray(v) &&
  Object.values(v).every(isStr) &&
  Object.keys(v).length <= 100

function asObject(body: unknown): Obj {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new ValidationError('agent request: the body must be a JSON object')
  return body as Obj
}

function target(o: Obj): Target {
  return {
    node: field(o, 'node', isNonEmptyStr, 'a non-empty string'),
    datastore: field(o, 'datastore', isNonEmptyStr, 'a non-empty string'),
  }
}

export function parseAssign(body: unknown): AssignRequest {
  const o = asObject(body)
  return {
    ...target(o),
    handle: field(o, 'handle', isNonEmptyStr, 'a non-empty string'),
    attrs: field(o, 'attrs', isStrMap, 'an object of strings', {}),
    num4: field(o, 'num4', isCount, 'an integer from 0 to 65536'),
    num6: field(o, 'num6', isCount, 'an integer from 0 to 65536'),
    ipv4Pools: field(o, 'ipv4Pools', isStrList, 'a list of strings', []),
    ipv6Pools: field(o, 'ipv6Pools', isStrList, 'a list of strings', []),
    maxBlocksPerHost: field(o, 'maxBlocksPerHost', isCount, 'an integer from 0 to 65536', 0),
    // Present only when sent: an absent set and an empty one select alike (docs/pool-selection.md).
    ...(o.namespaceLabels === undefined
      ? {}
      : {namespaceLabels: field(o, 'namespaceLabels', isStrMap, 'an object of strings')}),
  }
}

export function parseAssignIp(body: unknown): AssignIpRequest {
  const o = asObject(body)
  return {
    ...target(o),
    handle: field(o, 'handle', isNonEmptyStr, 'a non-empty string'),
    attrs: field(o, 'attrs', isStrMap, 'an object of strings', {}),
    ip: field(o, 'ip', isNonEmptyStr, 'a non-empty string'),
  }
}

export function parseRelease(body: unknown): ReleaseRequest {
  const o = asObject(body)
  const r = {
    ...target(o),
    handles: field(o, 'handles', isStrList, 'a list of strings', []),
    ips: field(o, 'ips', isStrList, 'a list of strings', []),
  }
  if (r.handles.length + r.ips.length === 0)
    throw new ValidationError('agent request: nothing to release: give "handles" or "ips"')
  return r
}

/** A record is a few hundred bytes; this leaves room for many addresses and long names. */
const MAX_ENDPOINT_BYTES = 64 * 1024
// Namespace and name become key segments: no "/" (another key), no control characters.
const isSegment = (v: unknown): v is string => typeof v === 'string' && isKeySegment(v)

export function parseEndpointPut(body: unknown): EndpointPutRequest {
  const o = asObject(body)
  const endpoint = field(o, 'endpoint', isNonEmptyStr, 'a non-empty string')
  if (endpoint.length > MAX_ENDPOINT_BYTES)
    throw new ValidationError(`agent request: "endpoint" is over ${MAX_ENDPOINT_BYTES} bytes`)
  return {...target(o), endpoint}
}

export function parseEndpointTake(body: unknown): EndpointTakeRequest {
  const o = asObject(body)
  const segment = 'a name of 1-253 characters without "/" or control characters'
  return {
    ...target(o),
    namespace: field(o, 'namespace', isSegment, segment),
    name: field(o, 'name', isSegment, segment),
    containerID: field(o, 'containerID', isStr, 'a string'),
  }
}

export function parseCheck(body: unknown): CheckRequest {
  const o = asObject(body)
  const segment = 'a name of 1-253 characters without "/" or control characters'
  const r: CheckRequest = {
    ...target(o),
    namespace: field(o, 'namespace', isSegment, segment),
    name: field(o, 'name', isSegment, segment),
  }
  if (o.handle !== undefined || o.ips !== undefined) {
    r.handle = field(o, 'handle', isNonEmptyStr, 'a non-empty string')
    r.ips = field(o, 'ips', isStrList, 'a list of strings')
  }
  return r
}

/** An environment is passed whole; a runtime's may hold a few hundred variables. */
const MAX_ENV_VARS = 4096
const isEnv = (v: unknown): v is Record<string, string> =>
  typeof v === 'object' &&
  v !== null &&
  !Array.isArray(v) &&
  Object.values(v).every(isStr) &&
  Object.keys(v).length <= MAX_ENV_VARS
const isPid = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v > 0

export function parseInvoke(body: unknown): InvokeRequest {
  const o = asObject(body)
  return {
    env: field(o, 'env', isEnv, `an object of at most ${MAX_ENV_VARS} strings`),
    stdin: field(o, 'stdin', isStr, 'a string'),
    pid: field(o, 'pid', isPid, 'a process id'),
  }
}

// ---------------------------------------------------------------------------------------------- errors

const CLASSES: Record<string, new (m: string) => IpamError> = {
  ValidationError,
  NotFoundError,
  ConflictError,
  DatastoreUnavailableError,
  ExhaustedError,
  RevisionConflict,
  IpamError,
}

const STATUS: Record<string, number> = {
  ValidationError: 400,
  NotFoundError: 404,
  ConflictError: 409,
  RevisionConflict: 409,
  ExhaustedError: 507,
  DatastoreUnavailableError: 503,
}

/** An error as the agent sends it, with its HTTP status. */
export function errorReply(err: unknown): {status: number; body: {error: ErrorBody}} {
  if (err instanceof CniError)
    return {
      status: 500,
      body: {error: {type: 'CniError', message: err.msg, code: err.code, details: err.details || undefined}},
    }
  if (err instanceof IpamError)
    return {
      status: STATUS[err.name] ?? 500,
      body: {error: {type: err.name in CLASSES ? err.name : 'IpamError', message: err.message}},
    }
  const message = err instanceof Error ? err.message || err.name : String(err)
  return {status: 500, body: {error: {type: 'Error', message}}}
}

/** The reply's error as the typed error the direct path would have thrown. */
export function errorFrom(e: ErrorBody): Error {
  if (e.type === 'CniError')
    return new CniError(typeof e.code === 'number' ? e.code : 999, String(e.message), e.details ?? '')
  const Cls = CLASSES[e.type]
  return Cls ? new Cls(String(e.message)) : new Error(String(e.message))
}
