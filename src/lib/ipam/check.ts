// `ipam check` (reference §4.3): a read-only scan that tells leaked addresses, leaked and missing handles and
// invalid blocks from live state, plus two affinity checks upstream lacks. Nothing here writes; the JSON report
// is what `ipam gc` and `release --from-report` act on.
import fs from 'node:fs'
import {packageVersion} from '../package-root.js'
import {parseJson} from '../codec/gojson.js'
import {ValidationError} from '../errors.js'
import {containsIp, formatCidr, formatIp, parseIp, tryParseIp} from '../net/cidr.js'
import {keys, parseAffinityKey} from '../store/keys.js'
import {decodeWorkloadEndpoint, type WorkloadEndpoint} from '../workload/endpoint.js'
import {type Block, blockProblems, decodeBlock, isCoolingDown, ownerHost, sanitizeHandle, WINDOWS_RESERVED_HANDLE} from './block.js'
import {type Ctx, listPools} from './context.js'
import {decodeAffinity} from './records.js'

export interface CheckAllocation {
  ip: string
  block: string
  handle?: string
  sequenceNumber?: bigint
  attrs: Record<string, string>
  alternateAttrs: Record<string, string>
  /** The `timestamp` attribute (Go time string), when the allocator recorded one. */
  creationTimestamp?: string
  inUse: boolean
  borrowed: boolean
  coolingDown: boolean
  windowsReserved: boolean
  owners: string[]
}

export interface CheckBlock {
  cidr: string
  affinity: string | null
  allocations: CheckAllocation[]
}

export interface InUseIssue {
  ip: string
  owner: string
}

export interface CheckResult {
  blocks: CheckBlock[]
  /** Every allocation, cooling-down ones included (they still occupy their address). */
  allocations: CheckAllocation[]
  activePools: string[]
  /** Address → owners (`Workload(<ns>/<name>)`), from WorkloadEndpoint ipNetworks. */
  owners: Map<string, string[]>
  workloadIps: number
  /** Non-cooling-down allocations per `node` attribute, most first. */
  nodeAllocations: {node: string; count: number}[]
  leaked: CheckAllocation[]
  multipleOwners: string[]
  notInActivePool: InUseIssue[]
  noAllocation: InUseIssue[]
  leakedHandles: {id: string; revision: bigint}[]
  handlesWithMatches: number
  missingHandles: string[]
  invalidBlocks: {cidr: string; reasons: string[]}[]
  /** ipamctl extra: affinity keys whose block does not exist. */
  affinitiesWithoutBlock: {host: string; cidr: string; state: string}[]
  /** ipamctl extra: blocks with a `host:` affinity that has no affinity key. */
  blocksWithoutAffinity: {cidr: string; host: string}[]
  cluster: ClusterInfo
  /** Upstream's N (leaked + in-use issues + leaked handles + invalid blocks) plus the two affinity extras. */
  problems: number
}

export interface ClusterInfo {
  guid: string
  locked: boolean
  /** Mod revision of the ClusterInformation record as a string; "" when it does not exist. */
  revision: string
  clusterType: string
}

export interface CheckOptions {
  /**
   * Whether a workload endpoint's network namespace still exists. Only the caller can know (it must run on the
   * endpoint's node); an endpoint for which it returns false does not own its addresses. Absent: all do.
   */
  nodeNetnsExists?: (wep: WorkloadEndpoint) => boolean
  /** Called while blocks are scanned, for a progress indicator. */
  onProgress?: (phase: string, done: number, total: number) => void
}

const ENDPOINT_PREFIX = keys.resourcePrefix('workloadendpoints')

export const CLUSTER_INFO_KEY = `${keys.resourcePrefix('clusterinformations')}default`

/** Read ClusterInformation `default` directly; the lock commands own writing it. */
async function readClusterInfo(ctx: Ctx): Promise<ClusterInfo> {
  const kv = await ctx.store.get(CLUSTER_INFO_KEY)
  if (!kv) return {guid: '', locked: false, revision: '', clusterType: ''}
  let spec: Record<string, unknown> = {}
  try {
    spec = ((parseJson(kv.value) as {spec?: Record<string, unknown>})?.spec ?? {}) as Record<string, unknown>
  } catch {
    // An unreadable record is reported as "no GUID"; check stays usable on damaged data.
  }
  return {
    guid: typeof spec.clusterGUID === 'string' ? spec.clusterGUID : '',
    locked: spec.datastoreReady === false,
    revision: String(kv.modRevision),
    clusterType: typeof spec.clusterType === 'string' ? spec.clusterType : '',
  }
}

const isWindowsReserved = (h: string | undefined): boolean => h !== undefined && h.toLowerCase() === WINDOWS_RESERVED_HANDLE

/** The address of an ipNetworks entry (`10.65.0.5/32` or a bare address), normalized; undefined if unparseable. */
function networkIp(n: string): string | undefined {
  const ip = tryParseIp(n.split('/')[0]!)
  return ip ? formatIp(ip.family, ip.value) : undefined
}

export async function checkIpam(ctx: Ctx, opts: CheckOptions = {}): Promise<CheckResult> {
  const now = ctx.clock.now()
  const [blockKvs, pools, wepKvs, handleKvs, affinityKvs, cluster] = await Promise.all([
    ctx.store.list(keys.blockPrefix()),
    listPools(ctx),
    ctx.store.list(ENDPOINT_PREFIX),
    ctx.store.list(keys.handlePrefix()),
    ctx.store.list(keys.allHostAffinitiesPrefix()),
    readClusterInfo(ctx),
  ])

  // Owners. Node records here carry no tunnel addresses and there are no Kubernetes Services, so workload
  // endpoints are the only owners besides the Windows reservation. Each endpoint is decoded and dropped at
  // once: holding 100,000 decoded endpoints would double check's peak memory.
  const owners = new Map<string, string[]>()
  let workloadIps = 0
  for (let i = 0; i < wepKvs.length; i++) {
    const w = decodeWorkloadEndpoint(wepKvs[i]!.value)
    if (opts.nodeNetnsExists && !opts.nodeNetnsExists(w)) continue
    for (const n of w.ipNetworks) {
      const ip = networkIp(n)
      if (ip === undefined) continue
      workloadIps++
      owners.set(ip, [...(owners.get(ip) ?? []), `Workload(${w.namespace}/${w.name})`])
    }
  }
  wepKvs.length = 0 // the raw endpoints are not needed any more: let them be collected during the block scan

  const blocks: CheckBlock[] = []
  const allocations: CheckAllocation[] = []
  const invalidBlocks: CheckResult['invalidBlocks'] = []
  const referenced = new Set<string>()
  const blockCidrs = new Set<string>()
  const hostAffine: {cidr: string; host: string}[] = []
  blockKvs.forEach((kv, i) => {
    opts.onProgress?.('Checking blocks', i, blockKvs.length)
    let block: Block
    try {
      block = decodeBlock(kv.value)
    } catch (err) {
      invalidBlocks.push({cidr: kv.key.slice(kv.key.lastIndexOf('/') + 1).replace('-', '/'), reasons: [(err as Error).message]})
      return
    }
    const cidr = formatCidr(block.cidr)
    blockCidrs.add(cidr)
    // Validate the block as stored: an in-memory GC would hide unreferenced attributes.
    const reasons = blockProblems(block, now)
    if (reasons.length > 0) invalidBlocks.push({cidr, reasons})
    const host = ownerHost(block)
    if (host !== undefined) hostAffine.push({cidr, host})
    const cb: CheckBlock = {cidr, affinity: block.affinity, allocations: []}
    block.allocations.forEach((idx, o) => {
      if (idx === null) return
      const a = block.attributes?.[idx]
      // A dangling index is already an invalid-block reason; there is nothing to describe.
      if (!a) return
      const ip = formatIp(block.cidr.family, block.cidr.base + BigInt(o))
      const handle = a.handle_id === undefined ? undefined : sanitizeHandle(a.handle_id)
      const coolingDown = isCoolingDown(a)
      const windowsReserved = isWindowsReserved(handle)
      if (handle !== undefined && !windowsReserved) referenced.add(handle)
      const attrs = a.secondary ?? {}
      const ipOwners = owners.get(ip) ?? []
      const alloc: CheckAllocation = {
        ip,
        block: cidr,
        handle,
        sequenceNumber: block.sequenceNumberForAllocation.get(String(o)),
        attrs,
        alternateAttrs: a.alternateOwnerAttrs ?? {},
        creationTimestamp: attrs.timestamp,
        // Upstream reports Windows reservations as not in use (quirk 3.15.5), inviting their release; we don't.
        inUse: ipOwners.length > 0 || windowsReserved,
        borrowed: host !== undefined && attrs.node !== undefined && attrs.node !== host,
        coolingDown,
        windowsReserved,
        owners: ipOwners,
      }
      cb.allocations.push(alloc)
      allocations.push(alloc)
    })
    blocks.push(cb)
  })
  opts.onProgress?.('Checking blocks', blockKvs.length, blockKvs.length)

  const live = allocations.filter((a) => !a.coolingDown)
  const perNode = new Map<string, number>()
  for (const a of live) if (a.attrs.node !== undefined) perNode.set(a.attrs.node, (perNode.get(a.attrs.node) ?? 0) + 1)
  const nodeAllocations = [...perNode].map(([node, count]) => ({node, count})).sort((x, y) => y.count - x.count || (x.node < y.node ? -1 : 1))

  const leaked = live.filter((a) => !a.inUse)

  const active = pools.filter((p) => !p.spec.disabled)
  const allocated = new Set(live.map((a) => a.ip))
  const multipleOwners: string[] = []
  const notInActivePool: InUseIssue[] = []
  const noAllocation: InUseIssue[] = []
  for (const [ip, list] of owners) {
    if (list.length > 1) multipleOwners.push(ip)
    const parsed = parseIp(ip)
    const owner = list.join(', ')
    if (!active.some((p) => containsIp(p.cidr, parsed))) notInActivePool.push({ip, owner})
    // A cooling-down address was released while its workload still uses it: no allocation either.
    else if (!allocated.has(ip)) noAllocation.push({ip, owner})
  }

  const leakedHandles: CheckResult['leakedHandles'] = []
  const existing = new Set<string>()
  for (const kv of handleKvs) {
    const id = kv.key.slice(keys.handlePrefix().length)
    existing.add(id)
    if (!referenced.has(id)) leakedHandles.push({id, revision: kv.modRevision})
  }
  const missingHandles = [...referenced].filter((h) => !existing.has(h)).sort()

  // Extras. ipamctl writes an affinity and its block in one transaction, so either without the other is
  // damage (or upstream's quirk 3.15.3), except for the instant of an upstream claim in progress.
  const affinitiesWithoutBlock: CheckResult['affinitiesWithoutBlock'] = []
  const affinityKeys = new Set<string>()
  for (const kv of affinityKvs) {
    const a = parseAffinityKey(kv.key)
    if (!a) continue
    const cidr = formatCidr(a.cidr)
    affinityKeys.add(`${a.type}:${a.host} ${cidr}`)
    if (!blockCidrs.has(cidr)) {
      let state: string
      try {
        state = decodeAffinity(kv.value)
      } catch {
        state = 'unknown'
      }
      affinitiesWithoutBlock.push({host: a.host, cidr, state})
    }
  }
  const blocksWithoutAffinity = hostAffine.filter((b) => !affinityKeys.has(`host:${b.host} ${b.cidr}`))

  const problems =
    leaked.length +
    notInActivePool.length +
    noAllocation.length +
    leakedHandles.length +
    invalidBlocks.length +
    affinitiesWithoutBlock.length +
    blocksWithoutAffinity.length
  return {
    blocks,
    allocations,
    activePools: active.map((p) => formatCidr(p.cidr)),
    owners,
    workloadIps,
    nodeAllocations,
    leaked,
    multipleOwners,
    notInActivePool,
    noAllocation,
    leakedHandles,
    handlesWithMatches: existing.size - leakedHandles.length,
    missingHandles,
    invalidBlocks,
    affinitiesWithoutBlock,
    blocksWithoutAffinity,
    cluster,
    problems,
  }
}

// ---- the report (§4.3): what `release --from-report` and other tools read.

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
  owners: string[] | null
}

export interface Report {
  version: string
  clusterGUID: string
  datastoreLocked: boolean
  clusterInformationRevision: string
  clusterType: string
  allocations: Record<string, ReportEntry[]>
  leakedHandles?: {ID: string; UID: null; Revision: string}[]
}

export {packageVersion}

/** Empty strings and false are left out, as Go's omitempty does; `owners` is null when empty. Go's field order. */
function reportEntry(a: CheckAllocation): ReportEntry {
  const opt = <T>(k: string, v: T | undefined | '' | false) => (v === undefined || v === '' || v === false ? {} : {[k]: v})
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
  for (const a of sorted) (allocations[a.ip] ??= []).push(reportEntry(a))
  const report: Report = {
    version: packageVersion(),
    clusterGUID: r.cluster.guid,
    datastoreLocked: r.cluster.locked,
    clusterInformationRevision: r.cluster.revision,
    clusterType: r.cluster.clusterType,
    allocations,
  }
  if (r.leakedHandles.length > 0) report.leakedHandles = r.leakedHandles.map((h) => ({ID: h.id, UID: null, Revision: String(h.revision)}))
  return report
}

const BIG = '@@ipamctl-bigint@@'

/** 2-space indented JSON; sequence numbers exceed 2^53 and are written as exact integers. */
export function reportJson(report: Report): string {
  const text = JSON.stringify(report, (_k, v: unknown) => (typeof v === 'bigint' ? `${BIG}${v}` : v), 2)
  return `${text.replace(new RegExp(`"${BIG}(\\d+)"`, 'g'), '$1')}\n`
}

export interface ReportFile {
  write(report: Report): void
}

/**
 * Create (or truncate) the report file, mode 0600 before any byte is in it: the report names every
 * allocation's owner and handle, so it is readable by its owner only (upstream uses 0777). Opened before the
 * scan so that a bad path fails first, as bad input, without output.
 */
export function openReport(file: string): ReportFile {
  let fd: number
  try {
    fd = fs.openSync(file, 'w', 0o600)
    // An existing file keeps its mode on open; tighten it before writing anything.
    fs.fchmodSync(fd, 0o600)
  } catch (err) {
    throw new ValidationError(`cannot write the report to ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
  }
  return {
    write(report) {
      try {
        fs.writeSync(fd, reportJson(report))
      } finally {
        fs.closeSync(fd)
      }
    },
  }
}

export function writeReport(file: string, report: Report): void {
  openReport(file).write(report)
}
