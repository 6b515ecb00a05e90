// `ipam gc`: repair what `ipam check` finds leaked, safely on a live cluster. Only workload allocations are
// released (isWorkloadAllocation, docs/gc-ownership.md); any other leak is reported for `ipam release`. Every
// release is guarded by the handle and the sequence number seen during the scan, so an address released and
// re-assigned meanwhile is never touched; every handle delete is guarded by the mod revision seen during the scan.
import {ConflictError, ValidationError} from '../errors.js'
import {checkpoint, type Committed, restated} from '../interrupt.js'
import {formatIp, tryParseIp} from '../net/cidr.js'
import {keys} from '../store/keys.js'
import {forEachKv} from '../store/store.js'
import {decodeWorkloadEndpoint, scanEndpointAddresses} from '../workload/endpoint.js'
import {type CheckAllocation, checkIpam, type CheckOptions, type GoneEndpoint} from './check.js'
import type {Ctx} from './context.js'
import {isWorkloadAllocation, workloadNetns} from './ownership.js'
import {releaseIps} from './release.js'

export interface GcCandidate {
  ip: string
  handle?: string
  sequenceNumber: bigint
  creationTimestamp?: string
}

export interface GcPlan {
  /** Leaked workload allocations past the grace period: what a run releases. */
  ips: GcCandidate[]
  /** Leaked, but younger than the grace period: an allocation whose endpoint may still be being written. */
  tooYoung: GcCandidate[]
  /** Leaked, but not workload allocations (whatever their age): reported, never released by GC. */
  notWorkload: GcCandidate[]
  /** Workload allocations of this node whose recorded network namespace still exists: in use, left alone. */
  netnsAlive: GcCandidate[]
  /** Workload allocations whose recorded network namespace only their own node can check: left alone. */
  otherNode: (GcCandidate & {node: string; netns: string})[]
  handles: {id: string; revision: bigint}[]
  /** Endpoint records of pods whose network namespace is gone (only with a liveness check): deleted by a run. */
  endpoints: GoneEndpoint[]
}

export interface GcResult {
  released: string[]
  /** Changed since the scan (re-assigned, released, now owned by an endpoint): left alone. */
  skippedIps: string[]
  deletedHandles: string[]
  skippedHandles: string[]
  /** Endpoint records of pods whose network namespace is gone (only with a liveness check). */
  deletedEndpoints: string[]
}

const UNITS: Record<string, number> = {ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000}

/** A Go duration (`10m`, `1h30m`, `0s`, `0`) in milliseconds. */
export function parseDuration(text: string): number {
  const t = text.trim()
  if (t === '0') return 0
  const re = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/gy
  let ms = 0
  let pos = 0
  for (let m = re.exec(t); m; m = re.exec(t)) {
    ms += Number(m[1]) * UNITS[m[2]!]!
    pos = re.lastIndex
  }
  if (t === '' || pos !== t.length)
    throw new ValidationError(`invalid duration ${JSON.stringify(text)}: use a Go duration such as 10m, 90s or 1h30m`)
  return ms
}

/** Parse Go's `time.Time.String()` form (`2026-01-02 03:04:06.123456789 +0000 UTC`); undefined if it is not one. */
export function parseGoTime(text: string): Date | undefined {
  const m = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)(\.\d+)? ([+-])(\d\d)(\d\d)(?: \S+)?(?: m=[+-][\d.]+)?$/.exec(
    text.trim(),
  )
  if (!m) return undefined
  const frac = m[3] ? m[3].slice(0, 4) : ''
  const d = new Date(`${m[1]}T${m[2]}${frac}${m[4]}${m[5]}:${m[6]}`)
  return Number.isNaN(d.getTime()) ? undefined : d
}

/** The node gc runs on, and how to tell whether a network namespace path exists there. */
export interface NetnsJudge {
  node: string
  exists: (path: string) => boolean
}

const candidate = (a: CheckAllocation): GcCandidate => ({
  ip: a.ip,
  handle: a.handle,
  // Old data may lack the entry; the release compares against 0 then, which still catches a re-assignment.
  sequenceNumber: a.sequenceNumber ?? 0n,
  creationTimestamp: a.creationTimestamp,
})

/**
 * What gc would do: leaked workload allocations older than `graceMs` (by their `timestamp` attribute; an
 * allocation without a readable one counts as old) and leaked handles. Leaked allocations that are not a
 * workload's go to `notWorkload`, never to `ips`. A workload allocation with a recorded network namespace
 * (`workloadNetns`) is released only by gc on its own node (`here`) once that namespace is gone.
 */
export async function planGc(
  ctx: Ctx,
  opts: {graceMs: number; here?: NetnsJudge} & Pick<
    CheckOptions,
    'nodeNetnsExists' | 'netnsNode' | 'endpointThread' | 'onProgress'
  >,
): Promise<GcPlan> {
  const r = await checkIpam(ctx, opts)
  const cutoff = ctx.clock.now().getTime() - opts.graceMs
  const plan: GcPlan = {
    ips: [],
    tooYoung: [],
    notWorkload: [],
    netnsAlive: [],
    otherNode: [],
    handles: r.leakedHandles.map((h) => ({...h})),
    endpoints: r.goneEndpoints,
  }
  for (const a of r.leaked) {
    if (!isWorkloadAllocation(a.attrs, a.handle)) {
      plan.notWorkload.push(candidate(a))
      continue
    }
    const netns = workloadNetns(a.attrs)
    if (netns !== undefined) {
      const node = a.attrs.node ?? ''
      if (opts.here === undefined || node !== opts.here.node) {
        plan.otherNode.push({...candidate(a), node, netns})
        continue
      }
      if (opts.here.exists(netns)) {
        plan.netnsAlive.push(candidate(a))
        continue
      }
    }
    const at = a.creationTimestamp === undefined ? undefined : parseGoTime(a.creationTimestamp)
    if (at !== undefined && at.getTime() > cutoff) plan.tooYoung.push(candidate(a))
    else plan.ips.push(candidate(a))
  }
  return plan
}

/**
 * Carry out a plan, and nothing outside it (so a dry run's listing of the plan is exactly what a run does, less
 * what changed meanwhile). Anything that changed since the scan is skipped, never forced. `rerun`: the command
 * that, run again, finishes an interrupted gc (it scans afresh).
 */
export async function runGc(
  ctx: Ctx,
  plan: GcPlan,
  opts: Pick<CheckOptions, 'nodeNetnsExists'> & {rerun?: string} = {},
): Promise<GcResult> {
  const out: GcResult = {released: [], skippedIps: [], deletedHandles: [], skippedHandles: [], deletedEndpoints: []}
  // An endpoint written since the scan (a re-ADD of the same container keeps handle and sequence number)
  // makes its address live again: look once more right before releasing.
  // Streamed and read lean, as the scan reads them: a store of 100,000s of endpoints is never held decoded.
  const owned = new Set<string>()
  await forEachKv(ctx.store, keys.resourcePrefix('workloadendpoints'), (kv) => {
    const w = scanEndpointAddresses(kv.value) ?? decodeWorkloadEndpoint(kv.value)
    if (opts.nodeNetnsExists && !opts.nodeNetnsExists(w)) return
    for (const n of w.ipNetworks) {
      const ip = tryParseIp(n.split('/')[0]!)
      if (ip) owned.add(formatIp(ip.family, ip.value))
    }
  })
  for (const c of plan.ips) {
    if (owned.has(c.ip)) {
      out.skippedIps.push(c.ip)
      continue
    }
    await checkpoint(ctx, gcSoFar(out, opts.rerun))
    try {
      // One address per call: a guard failing on one must not hold back the others.
      const r = await releaseIps(ctx, [{ip: c.ip, handle: c.handle, sequenceNumber: c.sequenceNumber}])
      if (r.released.length > 0) out.released.push(c.ip)
      else out.skippedIps.push(c.ip)
    } catch (err) {
      if (!(err instanceof ConflictError)) throw restated(err, gcSoFar(out, opts.rerun))
      out.skippedIps.push(c.ip)
    }
  }
  for (const h of plan.handles) {
    const key = keys.handle(h.id)
    await checkpoint(ctx, gcSoFar(out, opts.rerun))
    const r = await ctx.store.txn([{key, modRevision: h.revision}], [{delete: key}])
    if (r.succeeded) out.deletedHandles.push(h.id)
    else out.skippedHandles.push(h.id)
  }
  // The pods are gone: their records would otherwise claim nothing forever. Guarded by the scan's revision, so
  // a record rewritten since (a new ADD under the same name) stays.
  for (const d of plan.endpoints) {
    await checkpoint(ctx, gcSoFar(out, opts.rerun))
    const r = await ctx.store.txn([{key: d.key, modRevision: d.modRevision}], [{delete: d.key}])
    if (r.succeeded) out.deletedEndpoints.push(d.name)
  }
  return out
}

/** What an interrupted gc has done; everything it does is a release of a leak, so the way on is to run it again. */
function gcSoFar(r: GcResult, rerun = 'ipamctl ipam gc --yes'): Committed {
  const n = r.released.length + r.deletedHandles.length + r.deletedEndpoints.length
  return {
    done:
      n === 0
        ? ''
        : `released ${r.released.length} leaked addresses, deleted ${r.deletedHandles.length} leaked handles and ${r.deletedEndpoints.length} dead endpoint records`,
    finish: rerun,
  }
}
