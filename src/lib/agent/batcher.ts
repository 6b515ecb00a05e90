// The agent's one writer: every datastore write of the node goes through this queue, so the node's requests
// never race each other. Auto-assign requests standing next to each other in the queue are served together
// by autoAssignBatch (one block transaction for many handles); while a batch is in flight the next one
// accumulates. Anything else (assign a given IP, release) runs alone, in queue order: an assign is never moved
// ahead of a release queued before it, which could be the same container's DEL.
import type {AutoAssignArgs, FamilyResult} from '../ipam/autoassign.js'
import {autoAssignBatch} from '../ipam/batch-assign.js'
import type {Ctx} from '../ipam/context.js'
import {IpamError} from '../errors.js'

type AssignResult = {v4: FamilyResult; v6: FamilyResult}

type Entry =
  | {
      kind: 'assign'
      args: AutoAssignArgs
      gone: () => boolean
      resolve: (r: AssignResult) => void
      reject: (e: unknown) => void
    }
  | {kind: 'alone'; run: () => Promise<unknown>; resolve: (r: unknown) => void; reject: (e: unknown) => void}

export interface BatcherOptions {
  /** Most auto-assign requests in one batch. */
  maxBatch?: number
  /** Wait this long before taking a batch, to let more requests join (0: batches form only under load). */
  windowMs?: number
  /** Test hook: hold the replies of each committed batch this long (an agent killed meanwhile has committed but not replied). */
  holdRepliesMs?: number
  /** After each committed batch: its size, how long it took and the datastore conflicts seen meanwhile. */
  onBatch?: (requests: number, detail: {ms: number; conflicts: number}) => void
  /** The datastore's conflict count so far (CountedStore), sampled around each batch for onBatch. */
  conflicts?: () => number
  onBlockTxn?: (requests: number) => void
  /** A request's host claimed a block (autoAssign's onBlockClaimed), for the agent's log. */
  onBlockClaimed?: (block: string, host: string, replacedOwner?: string) => void
}

/** The requester went away before its request was taken into a batch: it was not carried out. */
export class RequestAbandoned extends IpamError {}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export class Batcher {
  private readonly queue: Entry[] = []
  private running: Promise<void> | undefined

  constructor(
    private readonly ctx: Ctx,
    private readonly opts: BatcherOptions = {},
  ) {}

  /** Requests waiting (not counting the batch in flight). */
  get depth(): number {
    return this.queue.length
  }

  /** `gone`: whether the requester has disconnected (checked when the batch is taken, before any write). */
  autoAssign(args: AutoAssignArgs, gone: () => boolean = () => false): Promise<AssignResult> {
    const claimed = this.opts.onBlockClaimed
    if (claimed) args = {...args, onBlockClaimed: (block, from) => claimed(block, args.host, from)}
    return new Promise((resolve, reject) => this.push({kind: 'assign', args, gone, resolve, reject}))
  }

  /** Run `fn` alone, after everything queued before it. */
  alone<T>(fn: () => Promise<T>): Promise<T> {
    return new Promise((resolve, reject) =>
      this.push({kind: 'alone', run: fn, resolve: resolve as (r: unknown) => void, reject}),
    )
  }

  /** Resolves once the queue is empty and nothing is in flight. */
  async drain(): Promise<void> {
    while (this.running) await this.running
  }

  private push(e: Entry): void {
    this.queue.push(e)
    this.running ??= this.pump().finally(() => {
      this.running = undefined
    })
  }

  private async pump(): Promise<void> {
    // Start on a later tick so that requests arriving together form the first batch too.
    await sleep(0)
    while (this.queue.length > 0) {
      const head = this.queue[0]!
      if (head.kind === 'alone') {
        this.queue.shift()
        await head.run().then(head.resolve, head.reject)
        continue
      }
      if (this.opts.windowMs) await sleep(this.opts.windowMs)
      let n = 0
      while (n < this.queue.length && n < (this.opts.maxBatch ?? 500) && this.queue[n]!.kind === 'assign') n++
      const taken = this.queue.splice(0, n) as Extract<Entry, {kind: 'assign'}>[]
      const live = taken.filter((e) => {
        if (!e.gone()) return true
        e.reject(new RequestAbandoned('the requester disconnected before its request was carried out'))
        return false
      })
      if (live.length === 0) continue
      try {
        const t0 = performance.now()
        const c0 = this.opts.conflicts?.() ?? 0
        const outcomes = await autoAssignBatch(
          this.ctx,
          live.map((e) => e.args),
          {onBlockTxn: this.opts.onBlockTxn},
        )
        this.opts.onBatch?.(live.length, {
          ms: performance.now() - t0,
          conflicts: (this.opts.conflicts?.() ?? 0) - c0,
        })
        if (this.opts.holdRepliesMs) await sleep(this.opts.holdRepliesMs)
        for (const [i, o] of outcomes.entries()) {
          if ('ok' in o) live[i]!.resolve(o.ok)
          else live[i]!.reject(o.error)
        }
      } catch (err) {
        for (const e of live) e.reject(err)
      }
    }
  }
}
