// `ipam release --from-report`: release what `ipam check` reports found leaked, with upstream's safety rules
// (docs/calico.md#ipam-release-from-a-report). A report is a snapshot; everything here is about never acting on a stale one: the cluster
// GUID must match, one report must be as new as the ClusterInformation revision (taken under the lock), only
// leaks every report agrees on are touched, each address is released only if its sequence number is still the
// one in the report, and each handle is deleted only if its revision is still the reported one.
import {readTextFile, REPORT_MAX_BYTES} from '../files.js'
import {ConflictError, InterruptedError, IpamError, ValidationError} from '../errors.js'
import {checkpoint, type Committed, restated} from '../interrupt.js'
import {keys} from '../store/keys.js'
import {decodeReport, type Report, type ReportEntry} from './check-report.js'
import {getClusterInfo} from './cluster-info.js'
import type {Ctx} from './context.js'
import {ipStatus} from './query.js'
import {releaseIps, type ReleaseOption} from './release.js'

/** An allocation a report lists, as release acts on it. */
export type ReportAllocation = Pick<ReportEntry, 'ip' | 'handle' | 'sequenceNumber' | 'inUse'> & {coolingDown: boolean}

/** A leaked handle a report lists (check-report.ts ReportHandle), as release acts on it. */
export interface LeakedHandle {
  id: string
  uid: string | null
  revision: string
}

/** A report (check-report.ts Report) as release acts on it: its allocations in one list, and the file it came from. */
export interface LoadedReport extends Pick<Report, 'version' | 'clusterGUID' | 'clusterInformationRevision'> {
  file: string
  allocations: ReportAllocation[]
  leakedHandles: LeakedHandle[]
}

/** Read a report, checked against Report by decodeReport, and take from it what release acts on. */
export function parseReport(text: string, file: string): LoadedReport {
  const r = decodeReport(text, file)
  const allocations: ReportAllocation[] = []
  for (const list of Object.values(r.allocations)) {
    for (const a of list) {
      allocations.push({
        ip: a.ip,
        handle: a.handle,
        sequenceNumber: a.sequenceNumber,
        inUse: a.inUse,
        coolingDown: a.coolingDown === true,
      })
    }
  }
  return {
    file,
    version: r.version,
    clusterGUID: r.clusterGUID,
    clusterInformationRevision: r.clusterInformationRevision,
    allocations,
    leakedHandles: (r.leakedHandles ?? []).map((h) => ({id: h.ID, uid: h.UID, revision: h.Revision})),
  }
}

export async function readReports(files: readonly string[]): Promise<LoadedReport[]> {
  return Promise.all(
    files.map(async (f) => {
      return parseReport(readTextFile(f, 'the provided report', REPORT_MAX_BYTES), f)
    }),
  )
}

export interface ReleasePlan {
  ips: ReleaseOption[]
  handles: LeakedHandle[]
  /** Upstream's WARNING lines for checks that --force overrode. */
  warnings: string[]
}

const allocKey = (a: ReportAllocation) => `${a.ip}|${a.handle ?? ''}|${a.sequenceNumber ?? ''}`
const handleKey = (h: LeakedHandle) => `${h.id}|${h.revision}`

/** Keep the items present in every list (by key), in the first list's order. */
function intersect<T>(lists: readonly T[][], key: (t: T) => string): T[] {
  const [first = [], ...rest] = lists
  const sets = rest.map((l) => new Set(l.map(key)))
  const seen = new Set<string>()
  return first.filter((t) => {
    const k = key(t)
    if (seen.has(k) || !sets.every((s) => s.has(k))) return false
    seen.add(k)
    return true
  })
}

/** The steps that produce a report `--from-report` accepts. */
export const REPORT_STEPS =
  'lock the datastore (`ipamctl datastore lock`), run `ipamctl ipam check -o report.json`, then `ipamctl ipam release --from-report report.json`'

/**
 * Why a report's GUID does not match. `ipam check` writes an empty GUID when the datastore has no
 * ClusterInformation, which only `datastore lock` creates: such a report was taken without the lock, and the
 * fix is to take it again under the lock. A non-empty GUID that differs names another cluster (or a datastore
 * whose ClusterInformation was re-created); that keeps upstream's wording.
 */
function guidMismatch(r: LoadedReport): ValidationError {
  if (r.clusterGUID === '') {
    return new ValidationError(
      `the provided report (${r.file}) was taken while the datastore was not locked (it has no cluster GUID); ${REPORT_STEPS}. Refusing to release`,
    )
  }
  return new ValidationError(
    `cluster does not match the provided report (${r.file}): mismatched cluster GUID. Refusing to release`,
  )
}

/**
 * Validate the reports against the cluster and work out what to release. Throws (changing nothing) when a
 * rule refuses; `force` overrides the version and lock checks only, never the GUID or staleness.
 */
export async function planRelease(
  ctx: Ctx,
  reports: readonly LoadedReport[],
  opts: {version: string; force?: boolean},
): Promise<ReleasePlan> {
  if (reports.length === 0) throw new ValidationError('give at least one report')
  const info = await getClusterInfo(ctx)
  const warnings: string[] = []
  for (const r of reports) {
    // A missing ClusterInformation matches no report: whatever cluster produced it, it was not this one.
    if (r.clusterGUID !== info?.clusterGUID) throw guidMismatch(r)
    if (r.version !== opts.version) {
      if (!opts.force)
        throw new ValidationError(
          `the provided report (${r.file}) was produced using a different version (${r.version}) of calicoctl. Refusing to release`,
        )
      warnings.push(
        'WARNING: Report was produced using a different version of calicoctl. Ignoring due to --force option',
      )
    }
  }
  if (!reports.some((r) => r.clusterInformationRevision === info!.revision)) {
    throw new ConflictError(
      'the provided reports are all stale - at least one should be up-to-date. Please generate a new report while the data store is locked and try again',
    )
  }
  if (info!.datastoreReady !== false) {
    if (!opts.force)
      throw new ConflictError('data store is not locked. Either lock the data store, or re-run with --force')
    warnings.push('WARNING: Data store is not locked. Ignoring due to --force option')
  }
  const leaked = intersect(
    reports.map((r) => r.allocations.filter((a) => !a.inUse && !a.coolingDown)),
    allocKey,
  )
  return {
    ips: leaked.map((a) => ({ip: a.ip, handle: a.handle, sequenceNumber: a.sequenceNumber})),
    handles: intersect(
      reports.map((r) => r.leakedHandles),
      handleKey,
    ),
    warnings,
  }
}

export interface ReleaseSummary {
  /** The lines upstream prints, in order (without trailing newlines). */
  lines: string[]
  released: string[]
  /** Reported addresses that were no longer allocated. */
  alreadyGone: string[]
  /** Addresses not released because they changed since the report (or the release failed). */
  failed: {ip: string; error: string}[]
  handlesDeleted: number
  handlesSkipped: number
  handleErrors: number
}

/** Carry out a plan. `onLine` sees each line as soon as it is known (for long runs). */
export async function executeRelease(
  ctx: Ctx,
  plan: ReleasePlan,
  onLine: (line: string) => void = () => {},
): Promise<ReleaseSummary> {
  const s: ReleaseSummary = {
    lines: [],
    released: [],
    alreadyGone: [],
    failed: [],
    handlesDeleted: 0,
    handlesSkipped: 0,
    handleErrors: 0,
  }
  const say = (line: string) => {
    s.lines.push(line)
    onLine(line)
  }
  if (plan.ips.length === 0) say("Report didn't contain any leaked IPs to clean up.")
  else {
    say(`Releasing ${plan.ips.length} old IPs...`)
    // One address at a time: a guarded release fails its whole block, so batching would let one address
    // that changed since the report keep every other leak in its block from being released.
    for (const o of plan.ips) {
      await checkpoint(ctx, reportSoFar(s))
      try {
        const r = await releaseIps(ctx, [o])
        s.released.push(...r.released)
        s.alreadyGone.push(...r.unallocated)
      } catch (err) {
        if (!(err instanceof IpamError) || err instanceof InterruptedError) throw restated(err, reportSoFar(s))
        // The sequence guard fires before the allocation check: an address freed since the report is
        // "already cleaned up", not an error; one re-assigned since is an error and stays assigned.
        if (err instanceof ConflictError && (await ipStatus(ctx, o.ip)).state !== 'assigned') s.alreadyGone.push(o.ip)
        else s.failed.push({ip: o.ip, error: err.message})
      }
    }
    if (s.failed.length > 0) {
      say(
        `An error occurred while releasing some IPs: ${s.failed.map((f) => f.error).join('; ')}.  Problems are often caused by an out-of-date IPAM report.  Try regenerating the IPAM report and retry.`,
      )
    }
    say(`Released ${s.released.length} IPs successfully`)
    if (s.alreadyGone.length > 0)
      say(`${s.alreadyGone.length} addresses marked as leaked in the report had already been cleaned up.`)
  }

  if (plan.handles.length === 0) say("Report didn't contain any handles to clean up.")
  else {
    say(`Deleting ${plan.handles.length} handles...`)
    say("Key: '.' = Deleted OK; 'x' = skip, handle missing/changed.")
    let progress = ''
    const errors: string[] = []
    for (const h of plan.handles) {
      await checkpoint(ctx, reportSoFar(s))
      try {
        if (await deleteHandleAt(ctx, h)) {
          progress += '.'
          s.handlesDeleted++
        } else {
          progress += 'x'
          s.handlesSkipped++
        }
      } catch (err) {
        s.handleErrors++
        errors.push(`Deleting handle ${h.id} failed: ${(err as Error).message}.`)
      }
    }
    say(progress)
    for (const e of errors) say(e)
    say(`Released ${s.handlesDeleted} handles; ${s.handlesSkipped} skipped; ${s.handleErrors} errors.`)
  }
  say('You may now unlock the data store.')
  return s
}

/** Get → compare revision → guarded delete. False if the handle is gone or changed since the report. */
async function deleteHandleAt(ctx: Ctx, h: LeakedHandle): Promise<boolean> {
  const key = keys.handle(h.id)
  const kv = await ctx.store.get(key)
  // Our handle records carry no UID (as on upstream's etcd backend), so the revision is the whole check.
  if (!kv || kv.modRevision.toString() !== h.revision) return false
  const r = await ctx.store.txn([{key, modRevision: kv.modRevision}], [{delete: key}])
  return r.succeeded
}

/** Everything done so far is a guarded release of a reported leak: running the same command again finishes it. */
function reportSoFar(s: ReleaseSummary): Committed {
  const n = s.released.length + s.handlesDeleted
  return {
    done:
      n === 0 ? '' : `released ${s.released.length} leaked addresses and deleted ${s.handlesDeleted} leaked handles`,
    finish: 'run the same ipamctl ipam release --from-report command again',
  }
}
