// Stopping a multi-transaction operation cleanly on SIGINT/SIGTERM. The CLI turns a signal into a request
// on the operation's Interrupt; the operation honours it only at a checkpoint, which sits between two
// transactions and never inside one, so what is in the datastore is always whole transactions. The
// operation then finishes or undoes its own partial work and throws InterruptedError, whose message says
// what stayed committed and which command undoes (or finishes) it.
import {InterruptedError} from './errors.js'

/** What an operation has committed so far, in words for the one line printed when it is interrupted. */
export interface Committed {
  /** E.g. "assigned 3 addresses to host node-1 under handle pod-a". Empty: nothing committed yet. */
  readonly done: string
  /** The exact command that undoes it, if anything needs undoing. */
  readonly undo?: string
  /** For an operation whose undo makes no sense (a release): the command that completes it. */
  readonly finish?: string
}

export const NOTHING_COMMITTED: Committed = {done: ''}

export class Interrupt {
  private requestedBy?: NodeJS.Signals
  private armedAt?: Committed
  private readonly waiters = new Set<() => void>()

  /** The signal that asked to stop, if one did. */
  get signal(): NodeJS.Signals | undefined {
    return this.requestedBy
  }

  /**
   * Whether an operation has reached its first checkpoint: before that nothing has been written, so a
   * signal may end the process at once; after it, the operation must get to its next checkpoint.
   */
  get armed(): boolean {
    return this.armedAt !== undefined
  }

  /** The progress reported at the latest checkpoint (a transaction may be in flight beyond it). */
  get lastCommitted(): Committed {
    return this.armedAt ?? NOTHING_COMMITTED
  }

  request(signal: NodeJS.Signals): void {
    this.requestedBy ??= signal
    for (const w of this.waiters) w()
    this.waiters.clear()
  }

  /** Between two transactions: record the progress, and throw InterruptedError if a stop was requested. */
  async checkpoint(committed: Committed): Promise<void> {
    this.armedAt = committed
    // The embedded store does its work synchronously, so a run of its calls only ever yields to microtasks
    // and a signal's handler would not run until the whole operation is over.
    await letSignalsIn()
    if (this.requestedBy) throw interrupted(this.requestedBy, committed)
  }

  /** Wait `ms`, but return as soon as a stop is requested (the caller's next checkpoint then throws). */
  async sleep(ms: number): Promise<void> {
    if (this.requestedBy) return
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer)
        this.waiters.delete(done)
        resolve()
      }
      const timer = setTimeout(done, ms)
      this.waiters.add(done)
    })
  }
}

/**
 * Return after the event loop has polled for I/O once, which is when a signal that arrived during synchronous
 * work reaches its handler. One setImmediate is not enough: resumed from an I/O callback (the poll phase), it
 * runs in the check phase that follows before any new poll; the second one runs only after the next poll.
 */
export async function letSignalsIn(): Promise<void> {
  for (let i = 0; i < 2; i++) await new Promise((resolve) => setImmediate(resolve))
}

/** Checkpoint on the context's Interrupt; without one (library use, the agent, CNI) it does nothing. */
export async function checkpoint(ctx: {readonly interrupt?: Interrupt}, committed: Committed): Promise<void> {
  await ctx.interrupt?.checkpoint(committed)
}

export async function interruptibleSleep(ctx: {readonly interrupt?: Interrupt}, ms: number): Promise<void> {
  if (ctx.interrupt) await ctx.interrupt.sleep(ms)
  else await new Promise((r) => setTimeout(r, ms))
}

/** The one line printed for an interrupted operation: what stayed committed and how to undo it. */
export function describeCommitted(c: Committed): string {
  const done = c.done === '' ? 'nothing was changed' : c.done
  if (c.undo) return `${done}; to undo: ${c.undo}`
  if (c.finish) return `${done}; to finish: ${c.finish}`
  return done
}

/** The error an interrupted operation ends with, once it has finished or undone its own partial work. */
export function interrupted(signal: NodeJS.Signals, c: Committed): InterruptedError {
  return new InterruptedError(signal, `interrupted by ${signal}: ${describeCommitted(c)}`)
}

/** An inner operation's InterruptedError restated with the outer operation's progress; other errors as they are. */
export function restated(err: unknown, c: Committed): unknown {
  return err instanceof InterruptedError ? interrupted(err.signal, c) : err
}
