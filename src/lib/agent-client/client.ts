// The CNI side of the agent: one HTTP/1.1 request over the unix socket, written and parsed by hand. A plugin
// is a process per pod operation, so this must cost next to nothing: the exchange itself is done by a small
// native addon (native/unix-exchange: connect, send, read until close, one deadline, on libuv's thread pool or,
// for a plugin process, on its main thread), loaded only when the socket file exists. node:net and its streams
// cost ~4 ms to load and ~2 ms to set up a connection, more than the rest of a warm agent ADD's client side;
// node:http never (its parser and agent machinery are several ms of start-up).
//
// What happened to a request decides what the caller may do next:
// - `unreachable`: nothing was sent (no socket file, connection refused): use the datastore directly.
// - `answered`: the agent replied; its error, if any, is THE answer (retrying directly could allocate twice).
// - `unknown`: the request went out but no complete reply came back (agent killed, timeout): the agent may
//   or may not have committed it. Only an idempotent direct retry is safe (see node-ipam/operations.ts).
import fs from 'node:fs'
import {createRequire} from 'node:module'
import type {ExchangeResult} from 'unix-exchange'
import {loadAddon} from '../native-addon.js'
import type {AgentOp, ErrorBody} from './protocol.js'

type Exchange = (
  path: string,
  request: Buffer,
  timeoutMs: number,
  maxReply: number,
  blocking: boolean,
) => ExchangeResult | Promise<ExchangeResult>

/**
 * require() from this module's place: in the CommonJS plugin bundles the bundle's own (bin/start.cjs makes
 * it for the bundle's file, which import.meta.url names too), without building import.meta.url and parsing it back
 * (~0.3 ms of a plugin's CPU); the tsc output, an ES module, has none and makes one.
 */
const localRequire = (): NodeJS.Require => (typeof require === 'function' ? require : createRequire(import.meta.url))

/** The addon's exports: the exchange, and the agent's check of who connected (src/lib/agent/peer.ts). */
export interface UnixExchange {
  exchange: Exchange
  peerCredentials(fd: number): {pid: number; uid: number; gid: number} | null
}
let addon: UnixExchange | undefined
const ADDON_FILE = 'build/Release/unix_exchange.node'
/**
 * The addon on first use. Not import(): the plugin bundles run in a vm.Script without a dynamic-import hook,
 * and a static import would load it on every exec, agent or not. Its compiled file by name, which exports what
 * the package's index.js re-exports: resolving and compiling index.js as well was ~0.4 ms of a plugin's CPU; and
 * in a bundle by its path, without resolving the package at all (loadAddon).
 */
export const loadUnixExchange = (): UnixExchange =>
  (addon ??= loadAddon<UnixExchange>(
    'unix-exchange',
    ADDON_FILE,
    () => localRequire()(`unix-exchange/${ADDON_FILE}`) as UnixExchange,
  ))
const loadExchange = (): Exchange => loadUnixExchange().exchange

/** ECONNREFUSED for 111; the number when the platform has no name for it. */
function errnoName(errno: number): string {
  try {
    return (localRequire()('node:util') as typeof import('node:util')).getSystemErrorName(-errno)
  } catch {
    return `errno ${errno}`
  }
}

/** Replies are small JSON objects; anything near this is not our agent. */
export const AGENT_MAX_REPLY_BYTES = 4 << 20

export type AgentOutcome =
  | {kind: 'unreachable'; reason: string}
  | {kind: 'unknown'; reason: string}
  | {kind: 'answered'; status: number; body: Record<string, unknown>}

/** Whole-request bound; a connect to a unix socket either succeeds or fails at once. */
export const AGENT_REQUEST_TIMEOUT_MS = 5000

/** Whether something that could be the agent's socket exists (one stat, no connect). */
export function agentSocketPresent(file: string): boolean {
  try {
    return fs.statSync(file, {throwIfNoEntry: false})?.isSocket() === true
  } catch {
    return false
  }
}

/** A chunked body once its last chunk is in; undefined while incomplete. */
function dechunk(buf: Buffer): Buffer | undefined {
  const parts: Buffer[] = []
  for (let at = 0; ; ) {
    const eol = buf.indexOf('\r\n', at)
    if (eol < 0) return undefined
    const size = Number.parseInt(buf.subarray(at, eol).toString('latin1'), 16)
    if (!Number.isFinite(size)) throw new Error('bad chunk size')
    if (size === 0) return Buffer.concat(parts)
    if (buf.length < eol + 2 + size + 2) return undefined
    parts.push(buf.subarray(eol + 2, eol + 2 + size))
    at = eol + 2 + size + 2
  }
}

/**
 * Parse `HTTP/1.1 <status> …` with its body: undefined while incomplete. A body with neither a length nor
 * chunks is complete at the end of the stream (`atEnd`).
 */
function parseReply(buf: Buffer, atEnd: boolean): {status: number; body: Buffer} | undefined {
  const end = buf.indexOf('\r\n\r\n')
  if (end < 0) return undefined
  const head = buf.subarray(0, end).toString('latin1').split('\r\n')
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(head[0] ?? '')
  if (!m) throw new Error(`not an HTTP reply: ${JSON.stringify(head[0]?.slice(0, 40))}`)
  const header = (name: string) => {
    const line = head.find((h) => h.toLowerCase().startsWith(`${name}:`))
    return line?.slice(name.length + 1).trim()
  }
  const rest = buf.subarray(end + 4)
  const status = Number(m[1])
  if (header('transfer-encoding')?.toLowerCase() === 'chunked') {
    const body = dechunk(rest)
    return body && {status, body}
  }
  const len = header('content-length')
  if (len !== undefined) return rest.length >= Number(len) ? {status, body: rest.subarray(0, Number(len))} : undefined
  return atEnd ? {status, body: rest} : undefined
}

/**
 * `blocking`: wait for the reply on this thread (no thread pool to start: ~0.7 ms of a plugin's CPU), for a
 * process that has nothing else to do meanwhile; the addon still uses the thread pool when the agent listens in
 * this very process (tests), which could not answer otherwise.
 */
export interface AgentRequestOptions {
  timeoutMs?: number
  blocking?: boolean
}

export async function agentRequest(
  socket: string,
  method: 'GET' | 'POST',
  urlPath: string,
  payload?: unknown,
  opts: AgentRequestOptions = {},
): Promise<AgentOutcome> {
  const timeoutMs = opts.timeoutMs ?? AGENT_REQUEST_TIMEOUT_MS
  const body = payload === undefined ? '' : JSON.stringify(payload)
  // Connection: close, and the request is not half-closed: the server replies and then closes, which is where
  // the reply ends when it carries neither a length nor chunks.
  const head = `${method} ${urlPath} HTTP/1.1\r\nHost: ipamctl-agent\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`
  let r: ExchangeResult
  try {
    r = await loadExchange()(socket, Buffer.from(head + body), timeoutMs, AGENT_MAX_REPLY_BYTES, opts.blocking === true)
  } catch (err) {
    // The addon missing (not built) or refusing the path: nothing was sent.
    return {kind: 'unreachable', reason: (err as Error).message}
  }
  if (!r.connected) return {kind: 'unreachable', reason: r.timedOut ? 'connect timed out' : errnoName(r.errno)}
  // A reply complete by its length or chunks counts even if the connection then failed or stayed open; one
  // with neither ends only where the peer closed.
  let reply: ReturnType<typeof parseReply>
  try {
    reply = parseReply(r.reply, r.errno === 0 && !r.timedOut)
    if (!reply) throw new Error('the connection closed before a complete reply')
  } catch (err) {
    if (r.timedOut) return {kind: 'unknown', reason: `no reply within ${timeoutMs / 1000} s`}
    if (r.errno) return {kind: 'unknown', reason: `the connection failed: ${errnoName(r.errno)}`}
    return {kind: 'unknown', reason: (err as Error).message}
  }
  try {
    const parsed = JSON.parse(reply.body.toString('utf8')) as unknown
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
      throw new Error('the reply is not a JSON object')
    return {kind: 'answered', status: reply.status, body: parsed as Record<string, unknown>}
  } catch (err) {
    return {kind: 'unknown', reason: `unreadable reply: ${(err as Error).message}`}
  }
}

/** POST /v1/<op>. */
export type AgentCall = (
  socket: string,
  op: AgentOp,
  payload: unknown,
  opts?: AgentRequestOptions,
) => Promise<AgentOutcome>
export const agentCall: AgentCall = (socket, op, payload, opts) =>
  agentRequest(socket, 'POST', `/v1/${op}`, payload, opts)

/** The error of an answered request, if it is one. */
export function replyError(o: Extract<AgentOutcome, {kind: 'answered'}>): ErrorBody | undefined {
  const e = o.body.error
  if (o.status >= 200 && o.status < 300 && e === undefined) return undefined
  if (typeof e === 'object' && e !== null && typeof (e as ErrorBody).message === 'string') return e as ErrorBody
  return {type: 'Error', message: `agent replied with HTTP ${o.status}`}
}
