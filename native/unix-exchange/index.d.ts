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
 * `timeoutMs`, and at most `maxReply` bytes. Runs on libuv's thread pool; never rejects for socket errors.
 */
export function exchange(path: string, request: Buffer, timeoutMs: number, maxReply: number): Promise<ExchangeResult>
