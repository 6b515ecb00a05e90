// CNI error results: the well-known codes of the spec, the error object runtimes parse from stdout, and the
// mapping from ipamctl's typed errors to those codes.
import {
  CheckMismatchError,
  ConflictError,
  DatastoreUnavailableError,
  ExhaustedError,
  IpamError,
  NotFoundError,
  RevisionConflict,
  ValidationError,
} from '../errors.js'
import {goIndent} from '../codec/gojson.js'

/** Well-known error codes (CNI spec "Error"); 100+ are plugin specific, the Go library uses 999. */
export const CNI_ERR = {
  incompatibleVersion: 1,
  unsupportedField: 2,
  unknownContainer: 3,
  invalidEnv: 4,
  io: 5,
  decoding: 6,
  invalidConfig: 7,
  tryAgainLater: 11,
  notAvailable: 50,
  limitedConnectivity: 51,
  internal: 999,
} as const

/** An error with a CNI code. `msg` is what runtimes show; `details` is optional extra text. */
export class CniError extends Error {
  constructor(
    readonly code: number,
    readonly msg: string,
    readonly details = '',
  ) {
    // Error() reads like libcni's: "msg; details".
    super(details ? `${msg}; ${details}` : msg)
    this.name = 'CniError'
  }
}

/**
 * ipamctl's typed errors → CNI codes:
 *
 * | error | code | why |
 * |---|---|---|
 * | CniError | its own | |
 * | CheckMismatchError | 999, `CHECK failed: <difference>`, details naming the side | |
 * | ValidationError | 7 invalid network config | bad netconf values, pools, IP= outside every pool |
 * | DatastoreUnavailableError, RevisionConflict | 11 try again later | transient: etcd down, SQLite busy, a lost race |
 * | ExhaustedError | 999 | a full pool or the block cap is not transient in general (addresses in cooldown aside), so no "retry" hint; upstream calico-ipam reports it as a plain error (999) too |
 * | NotFoundError, ConflictError, other errors | 999 with the message | what the Go skel does with a plain error |
 */
export function toCniError(err: unknown): CniError {
  if (err instanceof CniError) return err
  // A runtime shows `msg`: the difference itself, as before sides were named; the side goes into `details`.
  if (err instanceof CheckMismatchError)
    return new CniError(CNI_ERR.internal, `CHECK failed: ${err.difference}`, `the ${err.side} side is wrong`)
  if (err instanceof ValidationError) return new CniError(CNI_ERR.invalidConfig, err.message)
  if (err instanceof DatastoreUnavailableError || err instanceof RevisionConflict)
    return new CniError(CNI_ERR.tryAgainLater, err.message)
  if (
    err instanceof ExhaustedError ||
    err instanceof NotFoundError ||
    err instanceof ConflictError ||
    err instanceof IpamError
  ) {
    return new CniError(CNI_ERR.internal, err.message)
  }
  if (err instanceof Error) return new CniError(CNI_ERR.internal, err.message || err.name)
  return new CniError(CNI_ERR.internal, String(err))
}

/**
 * The error object as printed on stdout: `{cniVersion, code, msg, details}` with 4-space indentation and no
 * trailing newline (Go's types.Error.Print); `details` is left out when empty, as Go's omitempty does.
 */
export function formatCniError(e: CniError, cniVersion: string): string {
  const obj: Record<string, unknown> = {cniVersion, code: e.code, msg: e.msg}
  if (e.details) obj.details = e.details
  return goIndent(obj)
}
