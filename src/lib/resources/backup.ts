// `datastore export` and `datastore import`: every v3 resource and all IPAM state in the file format of
// calicoctl's `datastore migrate export` (docs/calico.md#migrate-export-format), so an export restores into either
// store exactly and is also what a Calico migration reads.
import fs from 'node:fs'
import path from 'node:path'
import {compactJson, compareBytes, encodeJson, indentJson, parseJson, rawMembers} from '../codec/gojson.js'
import {loadYaml} from '../codec/yaml.js'
import {ValidationError} from '../errors.js'
import {letSignalsIn} from '../interrupt.js'
import {decodeBlock} from '../ipam/block.js'
import {isObj, type Obj, parseManifest, poolFrom} from '../ipam/manifest.js'
import {validateHostName} from '../ipam/node.js'
import {normalizePool} from '../ipam/pool.js'
import {normalizeReservation} from '../ipam/reservation.js'
import {rfc3339} from '../codec/gotime.js'
import {formatCidr} from '../net/cidr.js'
import {randomUuid} from '../random.js'
import {CALICO_PREFIX} from '../store/admin.js'
import {isKeySegment, keys, parseAffinityKey, parseBlockKey} from '../store/keys.js'
import {MemoryStore} from '../store/memory.js'
import {eachAtOnce, type Scan, type Store, type WriteOp} from '../store/store.js'
import {IPAM_SEPARATOR, ipamEntry, LOCAL_METADATA, PAGE_CHARS, PAGE_ROWS, type Page} from './export-format.js'
import {type ExportSink, textSink, threadSink} from './export-sink.js'

const RESOURCES = '/calico/resources/v3/projectcalico.org/'
const IPAM = '/calico/ipam/v2/'
const SECTION = '===\n'

/** Upstream's export order (resources that name nodes come after nodes), then the ones ipamctl adds. */
const V3_KINDS: readonly [string, string][] = [
  ['ippools', 'IPPool'],
  ['bgppeers', 'BGPPeer'],
  ['tiers', 'Tier'],
  ['globalnetworkpolicies', 'GlobalNetworkPolicy'],
  ['stagedglobalnetworkpolicies', 'StagedGlobalNetworkPolicy'],
  ['globalnetworksets', 'GlobalNetworkSet'],
  ['hostendpoints', 'HostEndpoint'],
  ['kubecontrollersconfigurations', 'KubeControllersConfiguration'],
  ['networkpolicies', 'NetworkPolicy'],
  ['stagednetworkpolicies', 'StagedNetworkPolicy'],
  ['stagedkubernetesnetworkpolicies', 'StagedKubernetesNetworkPolicy'],
  ['networksets', 'NetworkSet'],
  ['nodes', 'Node'],
  ['bgpconfigurations', 'BGPConfiguration'],
  ['felixconfigurations', 'FelixConfiguration'],
  ['ipreservations', 'IPReservation'],
  ['bgpfilters', 'BGPFilter'],
  // Not exported by upstream (a Kubernetes datastore derives them from pods); ipamctl restores them exactly.
  ['workloadendpoints', 'WorkloadEndpoint'],
]
const NAMESPACED = new Set([
  'networkpolicies',
  'networksets',
  'stagednetworkpolicies',
  'stagedkubernetesnetworkpolicies',
  'workloadendpoints',
])
const CLUSTER_INFO = 'clusterinformations'

/** Upstream's plural of a kind: lower case, `y` → `ies`, else `s`. */
function pluralOf(kind: string): string {
  const known = V3_KINDS.find(([, k]) => k === kind)
  if (known) return known[0]
  const l = kind.toLowerCase()
  return l.endsWith('y') ? `${l.slice(0, -1)}ies` : `${l}s`
}

export interface ExportSummary {
  counts: {resources: number; blocks: number; affinities: number; handles: number; config: number}
  /** Keys under /calico/ that the format has no place for (left out, and reported). */
  skipped: string[]
}

export interface ExportResult extends ExportSummary {
  text: string
}

/** The plural a resource key is filed under (its first segment after the v3 prefix). */
const pluralOfKey = (key: string): string => {
  const rest = key.slice(RESOURCES.length)
  const slash = rest.indexOf('/')
  return slash < 0 ? rest : rest.slice(0, slash)
}

const CLUSTER_INFO_KEY = `${RESOURCES}${CLUSTER_INFO}/default`
const HANDLES = keys.handlePrefix()

/** Where a key under /calico/ belongs in the file; `skipped`: nowhere. */
type Part = 'resource' | 'clusterInfo' | 'block' | 'affinity' | 'handle' | 'config' | 'skipped'

function partOf(key: string): Part {
  if (key.startsWith(RESOURCES)) {
    if (pluralOfKey(key) !== CLUSTER_INFO) return 'resource'
    return key === CLUSTER_INFO_KEY ? 'clusterInfo' : 'skipped'
  }
  // Before the block and affinity patterns, which no key under the handle prefix can match.
  if (key.startsWith(HANDLES)) return 'handle'
  if (parseBlockKey(key)) return 'block'
  if (parseAffinityKey(key)) return 'affinity'
  return key === keys.ipamConfig() ? 'config' : 'skipped'
}

/**
 * The subtrees that hold nearly every key of a large store (one WorkloadEndpoint, one handle per pod; blocks and
 * affinities): their keys are learnt while their values are read for the file, not listed beforehand.
 */
const BULK = [`${RESOURCES}workloadendpoints/`, keys.blockPrefix(), keys.handlePrefix(), `${IPAM}host/`]
const inBulk = (key: string): boolean => BULK.some((p) => key.startsWith(p))

/**
 * Rows of one bulk part, handed on a page (PAGE_ROWS rows, or fewer that hold PAGE_CHARS) at a time: the sink may
 * format it on another thread.
 */
class Pages {
  private keys: string[] = []
  private values: string[] = []
  private chars = 0
  constructor(
    private readonly kind: Page['kind'],
    private readonly emit: (page: Page) => void,
  ) {}
  add(key: string, value: string): void {
    if (this.kind === 'ipam') this.keys.push(key)
    this.values.push(value)
    this.chars += value.length
    if (this.values.length === PAGE_ROWS || this.chars >= PAGE_CHARS) this.flush()
  }
  flush(): void {
    if (this.values.length === 0) return
    const page: Page =
      this.kind === 'ipam'
        ? {kind: 'ipam', keys: this.keys, values: this.values}
        : {kind: 'resources', values: this.values}
    this.keys = []
    this.values = []
    this.chars = 0
    this.emit(page)
  }
}

/**
 * Everything under /calico/, from one snapshot of the store (`eachAtOnce`), handed to `sink` (or to `write` in
 * pieces) as it is read, so that a List of 500,000 WorkloadEndpoints is never held, as objects or as text. First
 * the keys outside the BULK subtrees (which kinds exist, which keys the format has no place for), then each
 * part's values in the file's order; the keys of the BULK subtrees are classified as their values are read. With
 * progress, the BULK subtrees are counted first (cheaply: no key is read), so that the bar has its total. Resolves
 * once the sink has written everything (ExportSink.finish).
 */
export async function writeExport(
  store: Store,
  sink: ExportSink | ((chunk: Uint8Array) => void),
  opts: {onProgress?: (phase: string, done: number, total: number) => void} = {},
): Promise<ExportSummary> {
  const out = typeof sink === 'function' ? textSink(sink) : sink
  const counts = {resources: 0, blocks: 0, affinities: 0, handles: 0, config: 0}
  const skipped: string[] = []
  const plurals = new Set<string>()
  let hasClusterInfo = false
  const classify = (key: string, part: Part) => {
    if (part === 'resource') {
      plurals.add(pluralOfKey(key))
      counts.resources++
    } else if (part === 'clusterInfo') hasClusterInfo = true
    else if (part === 'block') counts.blocks++
    else if (part === 'affinity') counts.affinities++
    else if (part === 'handle') counts.handles++
    else if (part === 'config') counts.config = 1
    else skipped.push(key)
  }

  // The IPAM object, laid out as indentJson lays out the whole of it: each entry is indented on its own.
  let ipamMembers = 0
  const member = (name: string) => `${ipamMembers++ === 0 ? '\n' : ',\n'}  ${encodeJson(name)}: `
  function* ipamArray(name: string, prefixes: string[], part: Part): Generator<Scan> {
    let n = 0
    const pages = new Pages('ipam', (page) => {
      out.text(n++ === 0 ? `${member(name)}[\n    ` : IPAM_SEPARATOR)
      out.page(page)
    })
    for (const prefix of prefixes)
      yield {
        prefix,
        noRevision: true,
        visit: (kv) => {
          const p = partOf(kv.key)
          if (inBulk(kv.key)) classify(kv.key, p)
          if (p === part) pages.add(kv.key, kv.value)
        },
      }
    pages.flush()
    if (n > 0) out.text('\n  ]')
  }

  function* scans(): Generator<Scan> {
    if (opts.onProgress) for (const prefix of BULK) yield {prefix, count: () => {}}
    yield {prefix: CALICO_PREFIX, keysOnly: true, except: BULK, visit: (kv) => classify(kv.key, partOf(kv.key))}
    const ordered = [
      ...V3_KINDS.map(([p]) => p),
      ...[...plurals].filter((p) => !V3_KINDS.some(([q]) => q === p)).sort(),
    ]
    for (const plural of ordered) {
      out.text('apiVersion: projectcalico.org/v3\n')
      let first: string | undefined
      const pages = new Pages('resources', (page) => out.page(page))
      const base = `${RESOURCES}${plural}`
      const bulk = inBulk(`${base}/`)
      if (plurals.has(plural) || bulk)
        yield {
          prefix: base,
          noRevision: true,
          visit: (kv) => {
            // pluralOfKey(kv.key) === plural, without slicing the key (500,000 of them: WorkloadEndpoints).
            if (kv.key.length !== base.length && kv.key.charCodeAt(base.length) !== 47) return
            // inBulk(kv.key): the key itself is under the bulk subtree (not the one equal to `base`).
            if (bulk && kv.key.length !== base.length) {
              plurals.add(plural)
              counts.resources++
            }
            if (first === undefined) {
              out.text('items:\n')
              first = kv.value
            }
            pages.add(kv.key, kv.value)
          },
        }
      pages.flush()
      if (first === undefined) out.text('items: []\n')
      const known = V3_KINDS.find(([p]) => p === plural)?.[1]
      // The List wrapper's keys sorted, as upstream's YAML printer writes them.
      out.text(
        known
          ? `kind: ${known}List\nmetadata: {}\n`
          : loadYaml().stringify(
              {
                kind: `${String((first === undefined ? undefined : (parseJson(first) as Obj).kind) ?? plural)}List`,
                metadata: {},
              },
              {lineWidth: 0},
            ),
      )
      out.text('---\n')
    }
    let info = 'null'
    if (hasClusterInfo)
      yield {
        prefix: CLUSTER_INFO_KEY,
        noRevision: true,
        visit: (kv) => {
          if (kv.key === CLUSTER_INFO_KEY) info = indentJson(compactJson(kv.value))
        },
      }
    out.text(`${SECTION}${info}\n${SECTION}{`)
    yield* ipamArray('block_affinities', [`${IPAM}host/`, `${IPAM}virtual/`], 'affinity')
    yield* ipamArray('blocks', [keys.blockPrefix()], 'block')
    yield* ipamArray('handles', [HANDLES], 'handle')
    if (counts.config)
      yield {
        prefix: keys.ipamConfig(),
        noRevision: true,
        visit: (kv) => {
          if (kv.key === keys.ipamConfig())
            out.text(member('config') + indentJson(ipamEntry(kv.key, kv.value), '  ', '  '))
        },
      }
    out.text(ipamMembers > 0 ? '\n}\n' : '}\n')
  }
  await eachAtOnce(store, opts.onProgress ? withProgress(scans(), opts.onProgress) : scans())
  await out.finish()
  // In key order, as one listing of /calico/ would give them (those of the BULK subtrees were found later).
  return {counts, skipped: skipped.sort(compareBytes)}
}

/**
 * The export's scans, counting: the counted subtrees and the listed keys make the total, then the others read
 * the values the file holds. A prefix can also hold keys of a longer kind name that its visit skips, so the count
 * may pass the total: the total grows with it.
 */
function* withProgress(
  scans: Iterable<Scan>,
  onProgress: (phase: string, done: number, total: number) => void,
): Generator<Scan> {
  let counted = 0
  let listed = 0
  let read = 0
  for (const s of scans) {
    if ('count' in s) {
      const count = s.count
      yield {
        ...s,
        count: (n) => {
          count(n)
          counted += n
        },
      }
      continue
    }
    const visit = s.visit
    if (s.keysOnly)
      yield {
        ...s,
        visit: (kv) => {
          visit(kv)
          onProgress('Listing keys', ++listed, 0)
        },
      }
    else
      yield {
        ...s,
        visit: (kv) => {
          visit(kv)
          onProgress('Exporting', ++read, Math.max(read, counted + listed))
        },
      }
  }
}

/** Everything under /calico/ of one consistent read, as the export file's text (writeExport, held whole). */
export async function exportText(store: Store): Promise<ExportResult> {
  const parts: Uint8Array[] = []
  const r = await writeExport(store, (chunk) => parts.push(chunk))
  return {...r, text: Buffer.concat(parts).toString('utf8')}
}

/**
 * Write the export to a file the operator names: created 0600 (it holds the whole cluster's state); an existing
 * file is replaced only if it is an earlier export, so a mistyped `-o` (the datastore file, say) is refused. The
 * text is streamed by `fill` into a new file beside it (`.<name>.<pid>.tmp`, 0600, created exclusively) that is
 * renamed over `file` once complete, so an export that fails midway (a store that stops answering) leaves an
 * earlier export as it was, and the partial file is removed. A device, pipe or terminal named as the file is
 * written through instead (below). An interrupt ends the process from its signal
 * handler (BaseCommand, docs/interrupts.md), where no `finally` runs: an exit hook removes the partial file then,
 * and the rename waits for the signal handlers (letSignalsIn), so a signal that came during a synchronous scan
 * (the embedded store's) is handled before an earlier export is replaced. The text goes through a writer thread
 * (threadSink), or, with `thread: false`, is written on this one.
 */
export async function writeExportFile<T>(
  file: string,
  fill: (sink: ExportSink) => Promise<T>,
  opts: {thread?: boolean} = {},
): Promise<T> {
  const cannot = (err: unknown) =>
    new ValidationError(`cannot write ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
  // A device, pipe or terminal (`-o /dev/stdout`, /dev/null) is written through as it is: there is nothing to
  // replace atomically and the node is not ours. No read of what it holds (a terminal would wait for a key), no
  // partial file beside it, no rename over it (a regular file in /dev/null's place) and no mode change.
  let target: fs.Stats | undefined
  try {
    target = fs.statSync(file, {throwIfNoEntry: false})
  } catch (err) {
    throw cannot(err)
  }
  const through = target !== undefined && !target.isFile()
  let existing: string | undefined
  if (!through) {
    try {
      const fd = fs.openSync(file, 'r')
      try {
        const buf = Buffer.alloc(1 << 16)
        existing = buf.subarray(0, fs.readSync(fd, buf, 0, buf.length, 0)).toString('utf8')
      } finally {
        fs.closeSync(fd)
      }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw cannot(err)
    }
  }
  if (existing !== undefined && existing !== '' && !/^apiVersion: projectcalico\.org\/v3\n/.test(existing))
    throw new ValidationError(`${file} exists and is not an earlier datastore export; refusing to overwrite it`)
  const tmp = through ? file : path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`)
  let fd: number
  try {
    fd = fs.openSync(tmp, through ? 'w' : 'wx', 0o600)
  } catch (err) {
    throw cannot(err)
  }
  let done = false
  const removePartial = () => {
    if (!through) fs.rmSync(tmp, {force: true})
  }
  process.on('exit', removePartial)
  let sink: ExportSink | undefined
  try {
    sink =
      opts.thread === false
        ? textSink((chunk) => {
            try {
              fs.writeSync(fd, chunk)
            } catch (err) {
              throw cannot(err)
            }
          })
        : threadSink(fd, cannot)
    const result = await fill(sink)
    await sink.finish()
    await letSignalsIn()
    try {
      if (!through) fs.fchmodSync(fd, 0o600)
      fs.closeSync(fd)
      fd = -1
      if (!through) fs.renameSync(tmp, file)
    } catch (err) {
      throw cannot(err)
    }
    done = true
    return result
  } finally {
    // Before the file is closed: a writer thread must not write to whatever reuses its descriptor.
    if (!done) await sink?.abort()
    process.off('exit', removePartial)
    if (fd >= 0) fs.closeSync(fd)
    if (!done) removePartial()
  }
}

/** A v3 object of the export, as it is stored: local metadata (uid, creation time) made afresh. */
function storedResource(obj: Obj, where: string, now: Date): {key: string; value: string} {
  if (typeof obj.kind !== 'string' || !/^[A-Z][A-Za-z0-9]*$/.test(obj.kind))
    throw new ValidationError(`${where}: kind is missing or invalid`)
  if (obj.apiVersion !== 'projectcalico.org/v3')
    throw new ValidationError(`${where}: apiVersion must be projectcalico.org/v3`)
  const md = obj.metadata
  if (!isObj(md) || typeof md.name !== 'string' || !isKeySegment(md.name))
    throw new ValidationError(`${where}: metadata.name is missing or invalid`)
  const plural = pluralOf(obj.kind)
  let path = md.name
  if (NAMESPACED.has(plural)) {
    if (typeof md.namespace !== 'string' || !isKeySegment(md.namespace))
      throw new ValidationError(`${where}: a ${obj.kind} needs metadata.namespace`)
    path = `${md.namespace}/${md.name}`
  }
  // The kinds ipamctl acts on are validated as apply validates them.
  if (obj.kind === 'IPPool') normalizePool(poolFrom(obj, where))
  if (obj.kind === 'IPReservation') {
    const spec = isObj(obj.spec) ? obj.spec : {}
    normalizeReservation({name: md.name, reservedCIDRs: spec.reservedCIDRs as string[]})
  }
  if (obj.kind === 'Node') validateHostName(md.name)
  const meta: Obj = {}
  for (const [k, v] of Object.entries(md)) {
    if (LOCAL_METADATA.includes(k)) continue
    meta[k] = v
    if (k === (NAMESPACED.has(plural) ? 'namespace' : 'name')) {
      meta.uid = randomUuid()
      meta.creationTimestamp = rfc3339(now)
    }
  }
  return {key: keys.resource(plural, path), value: encodeJson({...obj, metadata: meta})}
}

function ipamEntries(text: string, what: string): {key: string; value: string}[] {
  return rawMembers(text).map((m, i) => {
    const fields = new Map(rawMembers(m.text).map((f) => [f.key, f.text]))
    const key = fields.get('Key')
    const value = fields.get('Value')
    if (key === undefined || value === undefined) throw new ValidationError(`${what} ${i + 1}: needs Key and Value`)
    return {key: JSON.parse(key) as string, value: compactJson(value)}
  })
}

/**
 * The keys and values an export file stands for. Every part is checked before anything is written: keys must be
 * where the format says, blocks must parse and match their keys, pools and reservations must validate.
 */
export function parseExport(text: string, source: string, now: Date): {key: string; value: string}[] {
  const sections = text.split(SECTION)
  if (sections.length !== 3)
    throw new ValidationError(
      `${source} is not a datastore export: expected three sections separated by "===" lines, found ${sections.length}`,
    )
  const out: {key: string; value: string}[] = []
  for (const m of parseManifest(sections[0]!, source)) out.push(storedResource(m.obj, m.where, now))
  const infoText = sections[1]!.trim()
  if (infoText !== '' && infoText !== 'null') {
    const info = parseJson(infoText) as Obj
    if (!isObj(info) || info.kind !== 'ClusterInformation')
      throw new ValidationError(`${source}: the second section must be the ClusterInformation object`)
    if (isObj(info.metadata)) delete info.metadata.resourceVersion
    out.push({key: keys.resource(CLUSTER_INFO, 'default'), value: encodeJson(info)})
  }
  const ipamText = sections[2]!.trim() === '' ? '{}' : sections[2]!
  const ipam = new Map(rawMembers(ipamText).map((m) => [m.key, m.text]))
  for (const k of ipam.keys())
    if (!['block_affinities', 'blocks', 'handles', 'config'].includes(k))
      throw new ValidationError(`${source}: unknown IPAM section ${JSON.stringify(k)}`)
  for (const e of ipamEntries(ipam.get('block_affinities') ?? '[]', 'block affinity')) {
    if (!parseAffinityKey(e.key)) throw new ValidationError(`${source}: ${e.key} is not a block affinity key`)
    out.push(e)
  }
  for (const e of ipamEntries(ipam.get('blocks') ?? '[]', 'block')) {
    const cidr = parseBlockKey(e.key)
    if (!cidr) throw new ValidationError(`${source}: ${e.key} is not a block key`)
    if (formatCidr(decodeBlock(e.value).cidr) !== formatCidr(cidr))
      throw new ValidationError(`${source}: the block stored at ${e.key} is another CIDR`)
    out.push(e)
  }
  for (const e of ipamEntries(ipam.get('handles') ?? '[]', 'handle')) {
    const id = e.key.slice(keys.handlePrefix().length)
    if (!e.key.startsWith(keys.handlePrefix()) || !isKeySegment(id))
      throw new ValidationError(`${source}: ${e.key} is not a handle key`)
    out.push(e)
  }
  const config = ipam.get('config')
  if (config !== undefined) {
    const value = rawMembers(config).find((f) => f.key === 'Value')
    if (!value) throw new ValidationError(`${source}: the IPAM config needs a Value`)
    out.push({key: keys.ipamConfig(), value: compactJson(value.text)})
  }
  const seen = new Set<string>()
  for (const e of out) {
    if (!e.key.startsWith(CALICO_PREFIX) || (!e.key.startsWith(RESOURCES) && !e.key.startsWith(IPAM)))
      throw new ValidationError(`${source}: key ${e.key} is outside the Calico layout`)
    if (seen.has(e.key)) throw new ValidationError(`${source}: ${e.key} appears twice`)
    seen.add(e.key)
  }
  return out
}

/** The export as a store of its own: the source `planMigration`/`applyMigration` copy from. */
export async function exportStore(entries: readonly {key: string; value: string}[]): Promise<MemoryStore> {
  const store = new MemoryStore()
  const ops: WriteOp[] = entries.map((e) => ({put: e.key, value: e.value}))
  if (ops.length > 0) await store.txn([], ops)
  return store
}
