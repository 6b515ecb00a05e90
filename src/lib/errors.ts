// One class per kind of failure. Commands map `exitCode` to the process exit status and print `message`
// as one line; the CNI entry maps the same classes to CNI error codes. Messages must tell a human what to do.

export class IpamError extends Error {
  readonly exitCode: number = 1
  constructor(message: string, options?: {cause?: unknown}) {
    super(message, options)
    this.name = new.target.name
  }

  // oclif reads `oclif.exit` when it handles an error thrown out of a command.
  get oclif(): {exit: number} {
    return {exit: this.exitCode}
  }
}

/** Bad input: malformed CIDR, out-of-range value, invalid manifest. Nothing was changed. */
export class ValidationError extends IpamError {
  override readonly exitCode = 2
}

/** The named object (pool, block, handle, IP allocation) does not exist. */
export class NotFoundError extends IpamError {
  override readonly exitCode = 3
}

/** The change collides with existing state: overlapping pool, address already assigned. */
export class ConflictError extends IpamError {
  override readonly exitCode = 4
}

/** The datastore could not be opened or answered with an error. */
export class DatastoreUnavailableError extends IpamError {
  override readonly exitCode = 5
}

/** No address or block could be found for the request (pool full, block cap, strict affinity). */
export class ExhaustedError extends IpamError {
  override readonly exitCode = 6
}

/** Which part of a wired pod differs from what ADD left: its netns, the host end, or the datastore's records. */
export type MismatchSide = 'pod' | 'host' | 'datastore'

/**
 * CHECK found a wired pod different from what ADD left (`cni check`, `cni list --check`). The message names the
 * side that is wrong and the first difference found; CNI callers get `CHECK failed: <difference>` (toCniError).
 */
export class CheckMismatchError extends IpamError {
  override readonly exitCode = 7
  constructor(
    readonly side: MismatchSide,
    readonly difference: string,
  ) {
    super(`CHECK failed: the ${side} side is wrong: ${difference}`)
  }
}

/** `cni connectivity`: a pair of parties (pods, the host) that should reach each other does not. */
export class ConnectivityError extends IpamError {
  override readonly exitCode = 7
}

/**
 * SIGINT or SIGTERM stopped a multi-transaction operation at a checkpoint between two transactions. The
 * message says what stayed committed and how to undo it. Exit status 130 for either signal: one code tells a
 * script "interrupted, read the line", and the line names the signal.
 */
export class InterruptedError extends IpamError {
  override readonly exitCode = 130
  constructor(
    readonly signal: NodeJS.Signals,
    message: string,
  ) {
    super(message)
  }
}

/**
 * A guarded write lost a race. Internal: the retry helper consumes it; if retries run out it becomes a
 * ConflictError with upstream's "Max retries hit" text.
 */
export class RevisionConflict extends IpamError {
  override readonly exitCode = 4
}

export const EXIT_CODES = {
  ok: 0,
  internal: 1,
  validation: 2,
  notFound: 3,
  conflict: 4,
  unavailable: 5,
  exhausted: 6,
  mismatch: 7,
  interrupted: 130,
} as const

/**
 * The embedded store file does not exist and the command only reads or changes existing state, so none was
 * created (a mistyped path must not become a new, empty store).
 */
export class StoreMissingError extends NotFoundError {}
