// The `ipam check` report (docs/calico.md#ipam-check): the one definition of the document that `ipam check -o`
// writes and `ipam release --from-report` reads, how it is built from a scan, written, and read back.
import {encodeJson, type JsonValue, parseJson} from '../codec/gojson.js'
import {ValidationError} from '../errors.js'
import {packageVersion} from '../package-root.js'
import type {CheckAllocation, CheckResult} from './check.js'

/** One allocation of an address, in Go's field order. Empty strings and false are left out (omitempty). */
export interface ReportEntry {
  ip: string
  handle?: string
  sequenceNumber?: bigint
  pod?: string
  namespace?: string
  node?: string
  type?: string
  creationTimestamp?: string
  inUse: boolean
  borrowed?: boolean
  coolingDown?: boolean
  /** null when there are none, as Go writes a nil slice. */
  owners: string[] | null
}

/** A handle no block refers to. Capitalised: Go writes the struct without JSON tags. */
export interface ReportHandle {
  ID: string
  UID: string | null
  /** The handle record's mod revision, in decimal. */
  Revision: string
}

export interface Report {
  version: string
  clusterGUID: string
  datastoreLocked: boolean
  clusterInformationRevision: string
  clusterType: string
  /** Address → its allocations, addresses in byte order. */
  allocations: Record<string, ReportEntry[]>
  /** Left out when there are none. */
  leakedHandles?: ReportHandle[]
}

/** Empty strings and false are left out, as Go's omitempty does; `owners` is null when empty. Go's field order. */
function reportEntry(a: CheckAllocation): ReportEntry {
  const opt = <T>(k: string, v: T | undefined | '' | false) =>
    v === undefined || v === '' || v === false ? {} : {[k]: v}
  return {
    ip: a.ip,
    ...opt('handle', a.handle),
    ...opt('sequenceNumber', a.sequenceNumber),
    ...opt('pod', a.attrs.pod),
    ...opt('namespace', a.attrs.namespace),
    ...opt('node', a.attrs.node),
    ...opt('type', a.attrs.type),
    ...opt('creationTimestamp', a.creationTimestamp),
    inUse: a.inUse,
    ...opt('borrowed', a.borrowed),
    ...opt('coolingDown', a.coolingDown),
    owners: a.owners.length > 0 ? [...a.owners] : null,
  }
}

export function buildReport(r: CheckResult): Report {
  const allocations: Record<string, ReportEntry[]> = {}
  // Go marshals map keys sorted bytewise.
  const sorted = [...r.allocations].sort((a, b) => (a.ip < b.ip ? -1 : a.ip > b.ip ? 1 : 0))
  for (const a of sorted) {
    const list = allocations[a.ip]
    if (list) list.push(reportEntry(a))
    else allocations[a.ip] = [reportEntry(a)]
  }
  const report: Report = {
    version: packageVersion(),
    clusterGUID: r.cluster.guid,
    datastoreLocked: r.cluster.locked,
    clusterInformationRevision: r.cluster.revision,
    clusterType: r.cluster.clusterType,
    allocations,
  }
  if (r.leakedHandles.length > 0)
    report.leakedHandles = r.leakedHandles.map((h) => ({ID: h.id, UID: null, Revision: String(h.revision)}))
  return report
}

/**
 * 2-space indented JSON with a final newline; sequence numbers exceed 2^53 and are written as exact integers.
 * <, > and & are written as they are, as ipamctl always has.
 */
export function reportJson(report: Report): string {
  return `${encodeJson(report, {indent: '  ', escapeHtml: false})}\n`
}

/** How every report starts (reportJson writes Go's field order): enough to recognise an earlier one. */
const REPORT_HEAD = /^\{\s*"version"\s*:\s*"[^"]*"\s*,\s*"clusterGUID"\s*:/

/** Whether the first bytes of a file are those of a report. */
export function looksLikeReport(head: string): boolean {
  return REPORT_HEAD.test(head)
}

type Obj = {[k: string]: JsonValue}
const isObj = (v: JsonValue | undefined): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v)
const text = (v: JsonValue | undefined): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined)

/** A decimal string from a JSON string or integer (revisions are strings upstream, but be lenient). */
function decimal(v: JsonValue | undefined): string | undefined {
  if (typeof v === 'string') return v
  if (typeof v === 'bigint' || (typeof v === 'number' && Number.isInteger(v))) return v.toString()
  return undefined
}

function seqOf(v: JsonValue | undefined, where: string): bigint | undefined {
  if (v === undefined || v === null) return undefined
  if (typeof v === 'bigint') return v
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return BigInt(v)
  if (typeof v === 'string' && /^\d+$/.test(v)) return BigInt(v)
  throw new ValidationError(`${where}: sequenceNumber must be a non-negative integer`)
}

/** Members in Go's field order, the empty ones left out, as reportEntry writes them. */
function decodeEntry(a: Obj, key: string, file: string): ReportEntry {
  const ip = typeof a.ip === 'string' ? a.ip : key
  const opt = <T>(k: string, v: T | undefined) => (v === undefined ? {} : {[k]: v})
  return {
    ip,
    ...opt('handle', text(a.handle)),
    ...opt('sequenceNumber', seqOf(a.sequenceNumber, `the provided report (${file}), allocation ${ip}`)),
    ...opt('pod', text(a.pod)),
    ...opt('namespace', text(a.namespace)),
    ...opt('node', text(a.node)),
    ...opt('type', text(a.type)),
    ...opt('creationTimestamp', text(a.creationTimestamp)),
    inUse: a.inUse === true,
    ...opt('borrowed', a.borrowed === true ? true : undefined),
    ...opt('coolingDown', a.coolingDown === true ? true : undefined),
    owners: Array.isArray(a.owners) ? a.owners.filter((o): o is string => typeof o === 'string') : null,
  }
}

/**
 * Read a report back, losslessly (sequence numbers are nanosecond timestamps above 2^53), checking it against
 * Report. What release relies on must be there and well-formed (a one-line ValidationError otherwise); the
 * members it does not use are taken when they have the right type and left out when not.
 */
export function decodeReport(json: string, file: string): Report {
  let raw: JsonValue
  try {
    raw = parseJson(json)
  } catch (err) {
    throw new ValidationError(`the provided report (${file}) is not valid JSON: ${(err as Error).message}`)
  }
  const bad = (why: string) => new ValidationError(`the provided report (${file}) is malformed: ${why}`)
  if (!isObj(raw)) throw bad('not a JSON object')
  if (typeof raw.clusterGUID !== 'string') throw bad('clusterGUID is missing')
  const revision = decimal(raw.clusterInformationRevision)
  if (revision === undefined) throw bad('clusterInformationRevision is missing')
  const allocations: Record<string, ReportEntry[]> = {}
  const allocs = raw.allocations ?? {}
  if (!isObj(allocs)) throw bad('allocations must be an object')
  for (const [key, list] of Object.entries(allocs)) {
    if (list === null) continue
    if (!Array.isArray(list)) throw bad(`allocations[${key}] must be a list`)
    const entries: ReportEntry[] = []
    for (const a of list) {
      if (!isObj(a)) throw bad(`allocations[${key}] holds a non-object`)
      entries.push(decodeEntry(a, key, file))
    }
    allocations[key] = entries
  }
  const leakedHandles: ReportHandle[] = []
  const handles = raw.leakedHandles ?? []
  if (!Array.isArray(handles)) throw bad('leakedHandles must be a list')
  for (const h of handles) {
    if (!isObj(h) || typeof h.ID !== 'string') throw bad('a leaked handle has no ID')
    const rev = decimal(h.Revision)
    if (rev === undefined) throw bad(`leaked handle ${h.ID} has no Revision`)
    leakedHandles.push({ID: h.ID, UID: typeof h.UID === 'string' ? h.UID : null, Revision: rev})
  }
  const report: Report = {
    version: typeof raw.version === 'string' ? raw.version : '',
    clusterGUID: raw.clusterGUID,
    datastoreLocked: raw.datastoreLocked === true,
    clusterInformationRevision: revision,
    clusterType: typeof raw.clusterType === 'string' ? raw.clusterType : '',
    allocations,
  }
  if (leakedHandles.length > 0) report.leakedHandles = leakedHandles
  return report
}
