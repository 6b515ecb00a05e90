// Background GC: `ipam gc`'s plan and run (src/lib/ipam/gc.ts) on a timer, made more careful for an
// unattended loop. Like `ipam gc` it releases only workload allocations (isWorkloadAllocation in
// src/lib/ipam/ownership.ts): a manual assignment or a tunnel address is counted, never released. An address
// is released only once it has looked leaked, past the grace period, on two consecutive passes with the same
// handle and allocation sequence number (so a re-assignment in between is never mistaken for the same leak),
// and a handle is deleted only if its revision did not change between the passes. runGc then guards each
// release by that handle and sequence number once more. Endpoints are not judged by their network namespace
// here (that needs `ipam gc --node` on the node itself): an address a workload endpoint lists is never a
// candidate.
import type {Ctx} from '../ipam/context.js'
import {type GcCandidate, type GcPlan, type GcResult, type NetnsJudge, planGc, runGc} from '../ipam/gc.js'

export interface GcPass {
  /** Leaked addresses past the grace period, and younger ones. */
  candidates: number
  tooYoung: number
  /** Leaked, but not workload allocations: never released by GC (left for `ipam release`). */
  notWorkload: number
  /** Workload allocations whose recorded network namespace exists here, or that belong to another node. */
  netnsHeld: number
  leakedHandles: number
  /** Seen for the first time (or changed since the last pass): released on the next pass if still leaked. */
  deferred: number
  result?: GcResult
}

export interface GcLoopOptions {
  intervalMs: number
  graceMs: number
  /** This agent's node: its attachments with a recorded network namespace are judged by it (planGc). */
  here?: NetnsJudge
  /** Runs the writes; the agent passes its queue so GC never races an allocation. */
  exclusive: <T>(fn: () => Promise<T>) => Promise<T>
  onPass?: (p: GcPass) => void
  onError?: (err: unknown) => void
}

const identity = (c: GcCandidate): string => `${c.handle ?? ''}|${c.sequenceNumber}`

export class GcLoop {
  private lastIps = new Map<string, string>()
  private lastHandles = new Map<string, bigint>()
  private timer: NodeJS.Timeout | undefined
  private current: Promise<unknown> | undefined
  private stopped = false

  constructor(
    private readonly ctx: Ctx,
    private readonly opts: GcLoopOptions,
  ) {}

  /** One pass: scan, then release what the previous pass saw leaked too. */
  async pass(): Promise<GcPass> {
    const plan = await planGc(this.ctx, {graceMs: this.opts.graceMs, here: this.opts.here})
    // plan.ips holds workload allocations only (planGc's isWorkloadAllocation); plan.notWorkload is counted, never run.
    const confirmed: GcPlan = {
      ips: plan.ips.filter((c) => this.lastIps.get(c.ip) === identity(c)),
      tooYoung: [],
      notWorkload: [],
      netnsAlive: [],
      otherNode: [],
      handles: plan.handles.filter((h) => this.lastHandles.get(h.id) === h.revision),
      endpoints: [],
    }
    this.lastIps = new Map(plan.ips.map((c) => [c.ip, identity(c)]))
    this.lastHandles = new Map(plan.handles.map((h) => [h.id, h.revision]))
    const p: GcPass = {
      candidates: plan.ips.length,
      tooYoung: plan.tooYoung.length,
      notWorkload: plan.notWorkload.length,
      netnsHeld: plan.netnsAlive.length + plan.otherNode.length,
      leakedHandles: plan.handles.length,
      deferred: plan.ips.length - confirmed.ips.length + plan.handles.length - confirmed.handles.length,
    }
    if (confirmed.ips.length + confirmed.handles.length > 0) {
      p.result = await this.opts.exclusive(() => runGc(this.ctx, confirmed))
      // Released now: not candidates of the next pass's comparison.
      for (const ip of p.result.released) this.lastIps.delete(ip)
      for (const h of p.result.deletedHandles) this.lastHandles.delete(h)
    }
    this.opts.onPass?.(p)
    return p
  }

  start(): void {
    const schedule = () => {
      if (this.stopped) return
      this.timer = setTimeout(() => {
        this.current = this.pass()
          .catch((err) => this.opts.onError?.(err))
          .finally(() => {
            this.current = undefined
            schedule()
          })
      }, this.opts.intervalMs)
    }
    schedule()
  }

  /** No new pass; waits for a running one. */
  async stop(): Promise<void> {
    this.stopped = true
    clearTimeout(this.timer)
    await this.current
  }
}
