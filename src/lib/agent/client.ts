// The CNI side of the agent: one HTTP/1.1 request over the unix socket, written and parsed by hand. A plugin
// is a process per pod operation, so this must cost next to nothing: node:net is loaded only when the socket
// file exists, and node:http never (its parser and agent machinery are several ms of start-up).
//
// What happened to a request decides what the caller may do next:
// - `unreachable`: nothing was sent (no socket file, connection refused): use the datastore directly.
// - `answered`: the agent replied; its error, if any, is THE answer (retrying directly could allocate twice).
// - `unknown`: the request went out but no complete reply came back (agent killed, timeout): the agent may
//   or may not have committed it. Only an idempotent direct retry is safe (see ipam-plugin.ts).
import fs from 'node:fs'
import {createRequire} from 'node:module'
import type {AgentOp, ErrorBody} from './protocol.js'

type Net = typeof import('node:net')

/**
 * node:net on first use. Not import(): the plugin bundles run in a vm.Script without a dynamic-import hook,
 * and a static import would load the socket machinery on every exec, agent or not.
 */
const loadNet = (): Net => (process.getBuiltinModule?.('node:net') as Net | undefined) ?? (createRequire(import.meta.url)('node:net') as Net)

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

export async function agentRequest(
  socket: string,
  method: 'GET' | 'POST',
  urlPath: string,
  payload?: unknown,
  opts: {timeoutMs?: number} = {},
): Promise<AgentOutcome> {
  const net = loadNet()
  const body = payload === undefined ? '' : JSON.stringify(payload)
  const head = `${method} ${urlPath} HTTP/1.1\r\nHost: ipamctl-agent\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`
  return new Promise<AgentOutcome>((resolve) => {
    let sent = false
    let done = false
    const chunks: Buffer[] = []
    const conn = net.createConnection(socket)
    const finish = (o: AgentOutcome) => {
      if (done) return
      done = true
      clearTimeout(timer)
      conn.destroy()
      resolve(o)
    }
    const timer = setTimeout(() => finish(sent ? {kind: 'unknown', reason: `no reply within ${(opts.timeoutMs ?? AGENT_REQUEST_TIMEOUT_MS) / 1000} s`} : {kind: 'unreachable', reason: 'connect timed out'}), opts.timeoutMs ?? AGENT_REQUEST_TIMEOUT_MS)
    const tryParse = (atEnd: boolean) => {
      try {
        const reply = parseReply(Buffer.concat(chunks), atEnd)
        if (!reply) {
          if (atEnd) finish({kind: 'unknown', reason: 'the connection closed before a complete reply'})
          return
        }
        const parsed = JSON.parse(reply.body.toString('utf8')) as unknown
        if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('the reply is not a JSON object')
        finish({kind: 'answered', status: reply.status, body: parsed as Record<string, unknown>})
      } catch (err) {
        finish({kind: 'unknown', reason: `unreadable reply: ${(err as Error).message}`})
      }
    }
    conn.on('connect', () => {
      sent = true
      // Not end(): the server closes once it has replied (Connection: close); a half-closed socket before
      // that would only add a case to reason about.
      conn.write(head + body)
    })
    conn.on('data', (b: Buffer) => {
      chunks.push(b)
      tryParse(false)
    })
    conn.on('end', () => tryParse(true))
    conn.on('error', (err: NodeJS.ErrnoException) => {
      if (!sent) finish({kind: 'unreachable', reason: err.code ?? err.message})
      else finish({kind: 'unknown', reason: `the connection failed: ${err.code ?? err.message}`})
    })
    conn.on('close', () => {
      if (!done) tryParse(true)
    })
  })
}

/** POST /v1/<op>. */
export const agentCall = (socket: string, op: AgentOp, payload: unknown, opts?: {timeoutMs?: number}): Promise<AgentOutcome> =>
  agentRequest(socket, 'POST', `/v1/${op}`, payload, opts)

/** The error of an answered request, if it is one. */
export function replyError(o: Extract<AgentOutcome, {kind: 'answered'}>): ErrorBody | undefined {
  const e = o.body.error
  if (o.status >= 200 && o.status < 300 && e === undefined) return undefined
  if (typeof e === 'object' && e !== null && typeof (e as ErrorBody).message === 'string') return e as ErrorBody
  return {type: 'Error', message: `agent replied with HTTP ${o.status}`}
}
