export interface ExchangeResult {
  /** The connection was made, so the request may have been (partly) delivered. */
  connected: boolean
  /** errno of the step that failed (connect, send or receive), 0 when none did. */
  errno: number
  /** The deadline passed before the peer closed the connection. */
  timedOut: boolean
  /** The reply bytes received before the peer closed (or before the failure / the deadline). */
  reply: Buffer
}

/**
 * Connect to the unix stream socket `path`, send all of `request`, then read until the peer closes, all within
 * `timeoutMs` from the call, and at most `maxReply` bytes. Runs on libuv's thread pool; never rejects for
 * socket errors.
 */
export function exchange(
  path: string,
  request: Buffer,
  timeoutMs: number,
  maxReply: number,
  blocking?: false,
): Promise<ExchangeResult>
/**
 * `blocking`: the same exchange on the calling thread, its result returned directly (the thread waits up to
 * `timeoutMs`, and libuv's thread pool is not started), except when the peer listening on `path` is this process
 * or its backlog is full: then on the thread pool as above, a promise.
 */
export function exchange(
  path: string,
  request: Buffer,
  timeoutMs: number,
  maxReply: number,
  blocking: boolean,
): ExchangeResult | Promise<ExchangeResult>

/** The peer of connected unix socket `fd` as the kernel recorded it (SO_PEERCRED); null for any other fd. */
export function peerCredentials(fd: number): {pid: number; uid: number; gid: number} | null
