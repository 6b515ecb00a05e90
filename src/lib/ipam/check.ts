// `ipam check`: a read-only scan that tells leaked addresses, leaked and missing handles and invalid blocks
// from live state, plus two affinity checks upstream lacks. An address is in use when a workload endpoint
// lists it, a Node record names it as a tunnel address, or it is a Windows reservation. Nothing here writes;
// `ipam gc` acts on the result, and `release --from-report` on the report built from it (check-report.ts).
import fs from 'node:fs'
import {parseJson} from '../codec/gojson.js'
import {type Cidr, containsIp, formatCidr, formatIp, type Ip, parseIp, tryParseIp} from '../net/cidr.js'
import {startThread, threadModule} from '../thread.js'
import {keys, parseAffinityKey} from '../store/keys.js'
import {forEachKv, type KeyValue, type Scan, type Store} from '../store/store.js'
import {
  decodeWorkloadEndpoint,
  type EndpointAddresses,
  netnsLiveness,
  scanEndpointAddresses,
} from '../workload/endpoint.js'
import {
  type Block,
  type BlockSummary,
  blockProblems,
  decodeBlock,
  isCoolingDown,
  ownerHost,
  sanitizeHandle,
  scanBlockSummary,
  summarizeBlock,
  WINDOWS_RESERVED_HANDLE,
} from './block.js'
import {type AddressKey, AddressTable, type AddressTableContents, grown, keyText} from './address-table.js'
import {type Ctx, listPools} from './context.js'
import {NameSet} from './name-set.js'
import {nodeTunnelAddresses} from './node.js'
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
  /** Built from the block's text when first read. */
  readonly allocations: CheckAllocation[]
}

export interface InUseIssue {
  ip: string
  owner: string
}

export interface CheckResult {
  blocks: CheckBlock[]
  /**
   * Every allocation, cooling-down ones included (they still occupy their address). Built when first read (as
   * each block's `allocations`): a check that only counts (`allocationCount`) builds the leaked ones alone.
   */
  readonly allocations: CheckAllocation[]
  allocationCount: number
  activePools: string[]
  /**
   * Address → owners: `Node(<name>)` for the tunnel addresses Node records name (first), `Workload(<ns>/<name>)`
   * from WorkloadEndpoint ipNetworks. Built when first read; `ownedIps` is its size.
   */
  readonly owners: Map<string, string[]>
  ownedIps: number
  /** Tunnel addresses named by Node records (calicoctl's "node tunnel IPs"). */
  nodeTunnelIps: number
  /** Endpoint records that own nothing because their network namespace is gone (only with `nodeNetnsExists`). */
  goneEndpoints: GoneEndpoint[]
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

export interface GoneEndpoint {
  key: string
  modRevision: bigint
  /** `<namespace>/<name>`. */
  name: string
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
  nodeNetnsExists?: (wep: EndpointAddresses) => boolean
  /**
   * This machine's node name: its endpoints whose recorded network namespace no longer exists own nothing
   * (`netnsLiveness` with fs.existsSync). The same test as a `nodeNetnsExists`, but one a worker thread can be
   * given; `nodeNetnsExists` wins when both are set.
   */
  netnsNode?: string
  /**
   * Read the Node records and workload endpoints on a worker thread while this one reads the rest: an embedded
   * store file only, and not with `nodeNetnsExists` (a function cannot be sent to a thread). The result is the
   * same; see checkIpam for how it stays one snapshot. For a process that runs one check (the commands), not
   * for one whose store connection is busy with other work.
   */
  endpointThread?: boolean
  /** Called while blocks are scanned, for a progress indicator. */
  onProgress?: (phase: string, done: number, total: number) => void
}

const ENDPOINT_PREFIX = keys.resourcePrefix('workloadendpoints')
const NODE_PREFIX = keys.resourcePrefix('nodes')

export const CLUSTER_INFO_KEY = `${keys.resourcePrefix('clusterinformations')}default`

/** ClusterInformation `default` as read directly (the lock commands own writing it), or its absence. */
function clusterInfo(kv: KeyValue | undefined): ClusterInfo {
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

// The length first: toLowerCase would copy every handle of a whole-store scan.
const isWindowsReserved = (h: string | undefined): boolean =>
  h !== undefined && h.length === WINDOWS_RESERVED_HANDLE.length && h.toLowerCase() === WINDOWS_RESERVED_HANDLE

/**
 * The value of `s` (up to `end`) if it is an IPv4 address exactly as formatIp writes it (no leading zeros, no
 * spaces), else -1. Nearly every endpoint address is; for those the text is already the normalized form.
 */
export function canonicalV4(s: string, end = s.length): number {
  let value = 0
  let octet = 0
  let digits = 0
  let dots = 0
  for (let i = 0; i < end; i++) {
    const c = s.charCodeAt(i)
    if (c === 46) {
      if (digits === 0 || dots === 3) return -1
      value = value * 256 + octet
      octet = 0
      digits = 0
      dots++
    } else if (c >= 48 && c <= 57) {
      if (digits > 0 && octet === 0) return -1 // leading zero
      octet = octet * 10 + (c - 48)
      if (octet > 255) return -1
      digits++
    } else {
      return -1
    }
  }
  return dots === 3 && digits > 0 ? value * 256 + octet : -1
}

const addressKey = (ip: Ip): AddressKey => (ip.family === 4 ? Number(ip.value) : formatIp(6, ip.value))

/** Whether an address is in one of `pools`, with IPv4 tested on numbers. */
function poolMembership(pools: readonly Cidr[]): {v4: (n: number) => boolean; ip: (ip: Ip) => boolean} {
  const v4 = pools
    .filter((p) => p.family === 4)
    .map((p) => ({base: Number(p.base), mask: p.prefix === 0 ? 0 : (0xffffffff << (32 - p.prefix)) >>> 0}))
  return {
    v4: (n) => v4.some((p) => (n & p.mask) >>> 0 === p.base),
    ip: (ip) => pools.some((p) => containsIp(p, ip)),
  }
}

/** Shared by allocations without (alternate) attributes: 100,000 empty objects would be a few MB. */
const NO_ATTRS: Record<string, string> = Object.freeze({}) as Record<string, string>

/** Endpoints per page of WorkloadNames. */
const NAMES_PAGE = 256

/**
 * The `Workload(<ns>/<name>)` owner of each endpoint, as a number (`add`) whose text is built only when asked for
 * (`text`: a problem, the report, --show-all-ips). The namespaces and names are kept as pages of text, each joined
 * from 256 endpoints': not 550,000 owner strings built and kept through the scan, nor a slice of each record,
 * which would keep the whole record's text alive.
 */
export class WorkloadNames {
  private pages: string[] = []
  private pending: string[] = []
  private pendingLength = 0
  /** Per number: its page and where its `<ns>/<name>` starts and ends there. */
  private pageOf = new Uint32Array(1024)
  private starts = new Uint32Array(1024)
  private ends = new Uint32Array(1024)
  private count = 0

  add(namespace: string, name: string): number {
    const ref = this.count++
    if (ref === this.ends.length) {
      this.pageOf = grown(this.pageOf, new Uint32Array(this.pageOf.length * 2))
      this.starts = grown(this.starts, new Uint32Array(this.starts.length * 2))
      this.ends = grown(this.ends, new Uint32Array(this.ends.length * 2))
    }
    this.pageOf[ref] = this.pages.length
    this.starts[ref] = this.pendingLength
    this.pending.push(namespace, '/', name)
    this.pendingLength += namespace.length + 1 + name.length
    this.ends[ref] = this.pendingLength
    if (this.pending.length === 3 * NAMES_PAGE) this.flush()
    return ref
  }

  text(ref: number): string {
    if (this.pageOf[ref] === this.pages.length) this.flush()
    const page = this.pages[this.pageOf[ref]!]!
    return ['Workload(', page.slice(this.starts[ref], this.ends[ref]), ')'].join('')
  }

  private flush(): void {
    this.pages.push(this.pending.join(''))
    this.pending = []
    this.pendingLength = 0
  }

  /** The names as plain data, for another thread (see AddressTable.contents); not to be used afterwards. */
  contents(): WorkloadNamesContents {
    if (this.pending.length > 0) this.flush()
    return {pages: this.pages, pageOf: this.pageOf, starts: this.starts, ends: this.ends, count: this.count}
  }

  static from(c: WorkloadNamesContents): WorkloadNames {
    return Object.assign(new WorkloadNames(), c)
  }
}

export interface WorkloadNamesContents {
  pages: string[]
  pageOf: Uint32Array<ArrayBuffer>
  starts: Uint32Array<ArrayBuffer>
  ends: Uint32Array<ArrayBuffer>
  count: number
}

/**
 * Owners of each address in use: the tunnel addresses of Node records (Calico's node agent writes them on a
 * shared datastore), then workload endpoints, each visited one at a time (check never holds them all). There
 * are no Kubernetes Services, so these are the only owners besides the Windows reservation.
 */
class EndpointOwners implements FoundOwners {
  private readonly workloads = new WorkloadNames()
  /** Address → `Node(<name>)` / `Workload(<ns>/<name>)` of each record naming it. */
  readonly owned = new AddressTable((ref) => this.workloads.text(ref))
  nodeTunnelIps = 0
  workloadIps = 0
  readonly gone: GoneEndpoint[] = []
  private readonly inActivePool: ReturnType<typeof poolMembership>

  constructor(
    active: readonly Cidr[],
    private readonly nodeNetnsExists?: CheckOptions['nodeNetnsExists'],
  ) {
    this.inActivePool = poolMembership(active)
  }

  /**
   * The scans that fill this in, in this order: nodes before endpoints, as calicoctl loads them (an address with
   * both owners lists the node first).
   */
  scans(): {prefix: string; visit: (kv: KeyValue) => void}[] {
    return [
      {prefix: NODE_PREFIX, visit: (kv) => this.visitNode(kv)},
      {prefix: ENDPOINT_PREFIX, visit: (kv) => this.visit(kv)},
    ]
  }

  /** What was found, for another thread; this is not to be used afterwards. */
  contents(): FoundOwnersContents {
    const {nodeTunnelIps, workloadIps, gone} = this
    return {owned: this.owned.contents(), names: this.workloads.contents(), nodeTunnelIps, workloadIps, gone}
  }

  visitNode(kv: KeyValue): void {
    const name = kv.key.slice(NODE_PREFIX.length)
    for (const text of nodeTunnelAddresses(kv.value)) {
      this.nodeTunnelIps++
      const ip = parseIp(text)
      this.owned.add(addressKey(ip), ['Node(', name, ')'].join(''), this.inActivePool.ip(ip))
    }
  }

  visit(kv: KeyValue): void {
    // Only the few members check needs, read off the text; the full decoder when the text is not plain.
    const w = scanEndpointAddresses(kv.value) ?? decodeWorkloadEndpoint(kv.value)
    if (this.nodeNetnsExists && !this.nodeNetnsExists(w)) {
      this.gone.push({key: kv.key, modRevision: kv.modRevision, name: `${w.namespace}/${w.name}`})
      return
    }
    let owner: number | undefined
    for (const n of w.ipNetworks) {
      const slash = n.indexOf('/')
      const end = slash < 0 ? n.length : slash
      const v4 = canonicalV4(n, end)
      let key: AddressKey
      let pooled: boolean
      if (v4 >= 0) {
        key = v4
        pooled = this.inActivePool.v4(v4)
      } else {
        const parsed = tryParseIp(n.slice(0, end))
        if (!parsed) continue
        key = addressKey(parsed)
        pooled = this.inActivePool.ip(parsed)
      }
      this.workloadIps++
      owner ??= this.workloads.add(w.namespace, w.name)
      this.owned.add(key, owner, pooled)
    }
  }
}

/** What check takes from the endpoint scan (EndpointOwners, here or on the endpoint thread). */
interface FoundOwners {
  readonly owned: AddressTable
  readonly nodeTunnelIps: number
  readonly workloadIps: number
  readonly gone: GoneEndpoint[]
}

/** FoundOwners as postMessage copies them. */
export interface FoundOwnersContents {
  owned: AddressTableContents
  names: WorkloadNamesContents
  nodeTunnelIps: number
  workloadIps: number
  gone: GoneEndpoint[]
}

function foundOwners(c: FoundOwnersContents): FoundOwners {
  const names = WorkloadNames.from(c.names)
  return {...c, owned: AddressTable.from(c.owned, (ref) => names.text(ref))}
}

/** What the endpoint thread (check-thread.ts) is given. */
export interface EndpointThreadData {
  file: string
  active: Cidr[]
  netnsNode?: string
  /** Where the thread publishes its snapshot's revision (`RevisionSignal`). */
  signal: SharedArrayBuffer
}

/** The endpoint thread's message: what it found. */
export type EndpointThreadMessage = {found: FoundOwnersContents}

const PENDING = 0n
const PUBLISHED = 1n
const FAILED = 2n

/**
 * The revision of the endpoint thread's snapshot, in memory both threads share: the main thread reads it at the end
 * of its own scans, inside its read transaction, where no message can reach it (the scans run synchronously). Slot
 * 0 is the state (pending, published, failed), slot 1 the revision.
 */
export class RevisionSignal {
  private readonly slots: BigInt64Array

  constructor(readonly buffer = new SharedArrayBuffer(16)) {
    this.slots = new BigInt64Array(buffer)
  }

  publish(revision: bigint): void {
    this.slots[1] = revision
    this.settle(PUBLISHED)
  }

  /** The thread will publish no revision (it failed before it had one). */
  fail(): void {
    this.settle(FAILED)
  }

  private settle(state: bigint): void {
    Atomics.store(this.slots, 0, state)
    Atomics.notify(this.slots, 0)
  }

  /**
   * The published revision, waiting up to `timeoutMs` for it (the calling thread blocks); undefined when the thread
   * failed or had none by then.
   */
  wait(timeoutMs: number): bigint | undefined {
    if (Atomics.load(this.slots, 0) === PENDING) Atomics.wait(this.slots, 0, PENDING, timeoutMs)
    return Atomics.load(this.slots, 0) === PUBLISHED ? this.slots[1] : undefined
  }
}

/**
 * How long the main thread waits, at the end of its scans, for the endpoint thread's revision. The thread publishes
 * it as soon as its snapshot begins, a few tens of ms after it starts, long before a large store's scans end; the
 * wait matters only for a small store (then the thread's start is most of the check), or when the thread died
 * before it could publish (a failure no message can report to a thread that waits): then the endpoints are read in
 * the main thread's snapshot after all.
 */
const REVISION_WAIT_MS = 10_000

/**
 * The endpoint thread's work, on its own connection to the store file (`store`): it publishes the revision of its
 * snapshot first (`data.signal`), then posts the owners it found, their typed arrays moved rather than copied.
 */
export async function scanEndpointsForThread(
  store: Store,
  data: EndpointThreadData,
  post: (m: EndpointThreadMessage, transfer?: ArrayBuffer[]) => void,
): Promise<void> {
  const signal = new RevisionSignal(data.signal)
  let published = false
  try {
    if (!store.eachAtRevision) throw new Error('internal: the endpoint thread needs an embedded store')
    const live = data.netnsNode === undefined ? undefined : netnsLiveness(data.netnsNode, (p) => fs.existsSync(p))
    const owners = new EndpointOwners(data.active, live)
    await store.eachAtRevision((revision) => {
      signal.publish(revision)
      published = true
      return owners.scans()
    })
    postFound(owners, post)
  } finally {
    if (!published) signal.fail()
  }
}

function postFound(owners: EndpointOwners, post: (m: EndpointThreadMessage, transfer?: ArrayBuffer[]) => void): void {
  const found = owners.contents()
  const {owned, names} = found
  post({found}, [
    owned.v4.buffer,
    owned.flags.buffer,
    owned.ownerRefs.buffer,
    owned.slots.buffer,
    names.pageOf.buffer,
    names.starts.buffer,
    names.ends.buffer,
  ])
}

interface EndpointThread {
  /** The revision of the thread's snapshot (waiting for it: see REVISION_WAIT_MS); undefined when it has none. */
  revision(): bigint | undefined
  found: Promise<FoundOwners>
  stop(): void
}

function startEndpointThread(given: Omit<EndpointThreadData, 'signal'>): EndpointThread {
  const signal = new RevisionSignal()
  const data: EndpointThreadData = {...given, signal: signal.buffer}
  let found!: (f: FoundOwners) => void
  let failed!: (e: Error) => void
  const thread: EndpointThread = {
    revision: () => signal.wait(REVISION_WAIT_MS),
    found: new Promise((resolve, reject) => {
      found = resolve
      failed = reject
    }),
    stop: () => void worker.terminate(),
  }
  // Settled whether or not anyone waits for it (a thread not used is stopped): never an unhandled rejection.
  thread.found.catch(() => {})
  // check-thread beside this module (tsc's output or the sources), or tsc's output when this runs bundled.
  const worker = startThread(threadModule(import.meta.url, 'ipam', 'check', 'check-thread'), data)
  worker.on('message', (m: EndpointThreadMessage) => found(foundOwners(m.found)))
  worker.on('error', failed)
  worker.on('exit', (code) =>
    failed(new Error(`internal: the endpoint thread of ipam check ended (exit ${code}) without its result`)),
  )
  return thread
}

const COOLING_DOWN = 1
const WINDOWS_RESERVED = 2
/** The allocation's address is IPv6 (BlockScan keeps its text aside). */
const V6_KEY = 4

/** One block's allocations in full (`CheckBlock.allocations`), and the same indexed by ordinal. */
interface BlockDetail {
  list: CheckAllocation[]
  byOrdinal: (CheckAllocation | undefined)[]
}

/**
 * Blocks visited one at a time: their summaries (read off the text, not decoded), the handles they name and
 * their problems, and per allocation only its address, where it is, and two flags. The full CheckAllocation of
 * an allocation is built only when asked for (a leak, the report, --show-all-ips), from the block's text,
 * which is kept for that: the text costs no work to keep, 550,000 allocation objects did.
 */
class BlockScan {
  readonly blocks: CheckBlock[] = []
  readonly invalidBlocks: CheckResult['invalidBlocks'] = []
  /** Handles the blocks name, Windows reservations aside. */
  readonly referenced = new NameSet()
  readonly blockCidrs = new Set<string>()
  readonly hostAffine: {cidr: string; host: string}[] = []
  /** Non-cooling-down allocations per `node` attribute. */
  readonly perNode = new Map<string, number>()
  /**
   * Allocations counted so far. Per allocation, in block then ordinal order, in typed arrays (550,000 of each on a
   * full-size cluster): its address (IPv4 by number; IPv6 text in `v6Keys`), its block (index in `blocks`), ordinal
   * and flags.
   */
  count = 0
  private v4Keys = new Uint32Array(1024)
  private readonly v6Keys = new Map<number, string>()
  private blockOf = new Uint32Array(1024)
  private ordinalOf = new Uint32Array(1024)
  private flags = new Uint8Array(1024)
  visited = 0
  /** Set when every endpoint has been visited, before any detail is built. */
  owned = new AddressTable()
  private readonly texts: string[] = []
  private readonly details: (BlockDetail | undefined)[] = []
  /** Where each attribute's handle starts in the block's text (scanBlockSummary), one block at a time. */
  private readonly handleAt: number[] = []

  constructor(private readonly now: Date) {}

  visit(kv: KeyValue): void {
    this.visited++
    let block: BlockSummary
    // Read lean, each handle's name is a stretch of the text (`handleAt`), kept as such by `referenced`.
    let lean = false
    try {
      const summary = scanBlockSummary(kv.value, this.handleAt)
      lean = summary !== undefined
      block = summary ?? summarizeBlock(decodeBlock(kv.value))
    } catch (err) {
      this.invalidBlocks.push({
        cidr: kv.key.slice(kv.key.lastIndexOf('/') + 1).replace('-', '/'),
        reasons: [(err as Error).message],
      })
      return
    }
    const cidr = formatCidr(block.cidr)
    this.blockCidrs.add(cidr)
    // Validate the block as stored: an in-memory GC would hide unreferenced attributes.
    const reasons = blockProblems(block, this.now)
    if (reasons.length > 0) this.invalidBlocks.push({cidr, reasons})
    const host = ownerHost(block)
    if (host !== undefined) this.hostAffine.push({cidr, host})
    const index = this.blocks.length
    this.texts.push(kv.value)
    this.blocks.push(this.checkBlock(index, cidr, block.affinity))
    const v4Base = block.cidr.family === 4 ? Number(block.cidr.base) : -1
    // Consecutive allocations nearly always share a node: counted locally, added to perNode once per run.
    let node: string | undefined
    let nodeCount = 0
    let text = -1
    for (let o = 0; o < block.allocations.length; o++) {
      const idx = block.allocations[o]!
      if (idx === null) continue
      const a = block.attributes?.[idx]
      // A dangling index is already an invalid-block reason; there is nothing to describe.
      if (!a) continue
      const handle = a.handle_id === undefined ? undefined : sanitizeHandle(a.handle_id)
      const windowsReserved = isWindowsReserved(handle)
      if (handle !== undefined && !windowsReserved) {
        if (!lean) this.referenced.add(handle)
        else {
          if (text < 0) text = this.referenced.text(kv.value)
          const at = this.handleAt[idx]!
          this.referenced.addFrom(text, at, at + handle.length)
        }
      }
      const coolingDown = isCoolingDown(a)
      if (!coolingDown && a.node !== undefined) {
        if (a.node !== node) {
          this.countNode(node, nodeCount)
          node = a.node
          nodeCount = 0
        }
        nodeCount++
      }
      const n = this.count++
      if (n === this.flags.length) this.grow()
      let flags = (coolingDown ? COOLING_DOWN : 0) | (windowsReserved ? WINDOWS_RESERVED : 0)
      if (v4Base >= 0) this.v4Keys[n] = v4Base + o
      else {
        this.v6Keys.set(n, formatIp(block.cidr.family, block.cidr.base + BigInt(o)))
        flags |= V6_KEY
      }
      this.blockOf[n] = index
      this.ordinalOf[n] = o
      this.flags[n] = flags
    }
    this.countNode(node, nodeCount)
  }

  private grow(): void {
    const size = this.flags.length * 2
    this.v4Keys = grown(this.v4Keys, new Uint32Array(size))
    this.blockOf = grown(this.blockOf, new Uint32Array(size))
    this.ordinalOf = grown(this.ordinalOf, new Uint32Array(size))
    this.flags = grown(this.flags, new Uint8Array(size))
  }

  /** The address of allocation `i` (0…count-1). */
  key(i: number): AddressKey {
    return this.flags[i]! & V6_KEY ? this.v6Keys.get(i)! : this.v4Keys[i]!
  }

  /** COOLING_DOWN and WINDOWS_RESERVED of allocation `i`. */
  flagsOf(i: number): number {
    return this.flags[i]!
  }

  private countNode(node: string | undefined, n: number): void {
    if (node !== undefined) this.perNode.set(node, (this.perNode.get(node) ?? 0) + n)
  }

  private checkBlock(index: number, cidr: string, affinity: string | null): CheckBlock {
    const scan = this
    return {
      cidr,
      affinity,
      get allocations() {
        return scan.detail(index).list
      },
    }
  }

  /** The CheckAllocation of allocation `i` (0…count-1). */
  allocation(i: number): CheckAllocation {
    return this.detail(this.blockOf[i]!).byOrdinal[this.ordinalOf[i]!]!
  }

  /** Block `index`'s allocations in full, decoded from its text the first time they are asked for. */
  private detail(index: number): BlockDetail {
    let d = this.details[index]
    if (!d) {
      d = detailAllocations(decodeBlock(this.texts[index]!), this.blocks[index]!.cidr, this.owned)
      this.details[index] = d
    }
    return d
  }
}

/** A block's allocations as CheckAllocations, with their owners. */
function detailAllocations(block: Block, cidr: string, owned: AddressTable): BlockDetail {
  const list: CheckAllocation[] = []
  const byOrdinal: (CheckAllocation | undefined)[] = []
  const host = ownerHost(block)
  const v4Base = block.cidr.family === 4 ? Number(block.cidr.base) : -1
  for (let o = 0; o < block.allocations.length; o++) {
    const idx = block.allocations[o]!
    if (idx === null) continue
    const a = block.attributes?.[idx]
    if (!a) continue
    const handle = a.handle_id === undefined ? undefined : sanitizeHandle(a.handle_id)
    const windowsReserved = isWindowsReserved(handle)
    const attrs = a.secondary ?? NO_ATTRS
    const key = v4Base >= 0 ? v4Base + o : formatIp(block.cidr.family, block.cidr.base + BigInt(o))
    const e = owned.find(key)
    const owners = e < 0 ? undefined : owned.ownersOf(e)
    const alloc: CheckAllocation = {
      ip: keyText(key),
      block: cidr,
      handle,
      sequenceNumber: block.sequenceNumberForAllocation.get(String(o)),
      attrs,
      alternateAttrs: a.alternateOwnerAttrs ?? NO_ATTRS,
      creationTimestamp: attrs.timestamp,
      // Upstream reports Windows reservations as not in use (quirk 3.15.5), inviting their release; we don't.
      inUse: windowsReserved || owners !== undefined,
      borrowed: host !== undefined && attrs.node !== undefined && attrs.node !== host,
      coolingDown: isCoolingDown(a),
      windowsReserved,
      owners: owners ?? [],
    }
    list.push(alloc)
    byOrdinal[o] = alloc
  }
  return {list, byOrdinal}
}

export async function checkIpam(ctx: Ctx, opts: CheckOptions = {}): Promise<CheckResult> {
  const now = ctx.clock.now()
  const [pools, blockTotal] = await Promise.all([
    // Pools first (a handful of records), so each endpoint address is matched to them while it is at hand.
    listPools(ctx),
    // Blocks are streamed: their number, for the progress indicator only, comes from their keys.
    opts.onProgress ? ctx.store.listKeys(keys.blockPrefix()).then((k) => k.length) : 0,
  ])
  const active = pools.filter((p) => !p.spec.disabled).map((p) => p.cidr)

  // Endpoints, blocks and handles are each streamed, never held decoded (100,000 of each would dominate check's
  // peak memory); only the blocks' text is kept, for the details (BlockScan).
  const nodeNetnsExists =
    opts.nodeNetnsExists ??
    (opts.netnsNode === undefined ? undefined : netnsLiveness(opts.netnsNode, (p) => fs.existsSync(p)))
  const endpoints = new EndpointOwners(active, nodeNetnsExists)
  const scan = new BlockScan(now)
  const leakedHandles: CheckResult['leakedHandles'] = []
  let handlesWithMatches = 0
  const handlePrefix = keys.handlePrefix()
  const progress = (done: number) => opts.onProgress?.('Checking blocks', done, Math.max(done, blockTotal))
  const visitBlock = (kv: KeyValue) => {
    progress(scan.visited)
    scan.visit(kv)
  }
  // Only keys and revisions matter, so handle values are never read. What is left of `referenced` afterwards
  // has no handle record. The name is sliced out of the key only for a leaked handle.
  const visitHandle = (kv: KeyValue) => {
    if (scan.referenced.matchTail(kv.key, handlePrefix.length)) handlesWithMatches++
    else leakedHandles.push({id: kv.key.slice(handlePrefix.length), revision: kv.modRevision})
  }
  let found: FoundOwners = endpoints
  let affinityKvs: KeyValue[] = []
  let cluster: ClusterInfo
  const store = ctx.store
  if (store.eachAtRevision) {
    // The embedded store: everything in one read snapshot. With the endpoint thread, the thread reads the Node
    // records and endpoints on its own connection while this one reads the rest; its work is used only when its
    // snapshot has this one's revision (then both read the same records, see Store.eachAtRevision). This one
    // starts at once (the thread takes a while to start) and takes the thread's revision when its own scans are
    // done, still in its snapshot (RevisionSignal): only a write between the two snapshots' starts makes them
    // differ, and then the endpoints are read here too, in this snapshot, and the thread is stopped.
    const thread =
      opts.endpointThread && !opts.nodeNetnsExists && store.file !== undefined
        ? startEndpointThread({file: store.file, active, netnsNode: opts.netnsNode})
        : undefined
    let here = true
    let clusterKv: KeyValue | undefined
    const affinities: KeyValue[] = []
    const plan = function* (revision: bigint): Generator<Scan> {
      yield {prefix: keys.blockPrefix(), visit: visitBlock}
      progress(scan.visited)
      yield {prefix: handlePrefix, visit: visitHandle, keysOnly: true}
      yield {prefix: keys.allHostAffinitiesPrefix(), visit: (kv) => affinities.push(kv)}
      yield {
        prefix: CLUSTER_INFO_KEY,
        visit: (kv) => {
          if (kv.key === CLUSTER_INFO_KEY) clusterKv = kv
        },
      }
      here = thread?.revision() !== revision
      if (here) yield* endpoints.scans()
    }
    await store.eachAtRevision(plan)
    if (!here) found = await thread!.found
    else thread?.stop()
    affinityKvs = affinities
    cluster = clusterInfo(clusterKv)
  } else {
    // etcd runs the endpoints beside blocks-then-handles.
    ;[, , affinityKvs, cluster] = await Promise.all([
      (async () => {
        for (const s of endpoints.scans()) await forEachKv(store, s.prefix, s.visit)
      })(),
      (async () => {
        await forEachKv(store, keys.blockPrefix(), visitBlock)
        progress(scan.visited)
        await forEachKv(store, handlePrefix, visitHandle, {keysOnly: true})
      })(),
      store.list(keys.allHostAffinitiesPrefix()),
      store.get(CLUSTER_INFO_KEY).then(clusterInfo),
    ])
  }
  const {owned, nodeTunnelIps, workloadIps, gone: goneEndpoints} = found
  const {blocks, invalidBlocks, blockCidrs, hostAffine, perNode} = scan
  scan.owned = owned
  const missingHandles = scan.referenced.unmatched().sort()

  const leaked: CheckAllocation[] = []
  for (let i = 0; i < scan.count; i++) {
    const flags = scan.flagsOf(i)
    if (flags & COOLING_DOWN) continue
    const e = owned.find(scan.key(i))
    if (e >= 0) owned.markAllocated(e)
    else if (!(flags & WINDOWS_RESERVED)) leaked.push(scan.allocation(i))
  }
  const nodeAllocations = [...perNode]
    .map(([node, count]) => ({node, count}))
    .sort((x, y) => y.count - x.count || (x.node < y.node ? -1 : 1))

  const multipleOwners: string[] = []
  const notInActivePool: InUseIssue[] = []
  const noAllocation: InUseIssue[] = []
  for (let e = 0; e < owned.size; e++) {
    if (owned.ownerCount(e) > 1) multipleOwners.push(owned.ip(e))
    if (!owned.pooled(e)) notInActivePool.push({ip: owned.ip(e), owner: owned.ownersOf(e).join(', ')})
    // A cooling-down address was released while its workload still uses it: no allocation either.
    else if (!owned.allocated(e)) noAllocation.push({ip: owned.ip(e), owner: owned.ownersOf(e).join(', ')})
  }

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
  // Every allocation in full, and the owners by address text, are built only when asked for.
  let allocations: CheckAllocation[] | undefined
  let owners: Map<string, string[]> | undefined
  return {
    blocks,
    get allocations() {
      allocations ??= blocks.flatMap((b) => b.allocations)
      return allocations
    },
    allocationCount: scan.count,
    activePools: active.map((p) => formatCidr(p)),
    get owners() {
      owners ??= new Map(Array.from({length: owned.size}, (_, e) => [owned.ip(e), owned.ownersOf(e)]))
      return owners
    },
    ownedIps: owned.size,
    nodeTunnelIps,
    goneEndpoints,
    workloadIps,
    nodeAllocations,
    leaked,
    multipleOwners,
    notInActivePool,
    noAllocation,
    leakedHandles,
    handlesWithMatches,
    missingHandles,
    invalidBlocks,
    affinitiesWithoutBlock,
    blocksWithoutAffinity,
    cluster,
    problems,
  }
}
