// `datastore export` and `datastore import`: every v3 resource and all IPAM state in the file format of
// calicoctl's `datastore migrate export` (docs/calico.md#migrate-export-format), so an export restores into either
// store exactly and is also what a Calico migration reads.
import fs from 'node:fs'
import {compactJson, encodeJson, indentJson, parseJson, rawMembers} from '../codec/gojson.js'
import {loadYaml} from '../codec/yaml.js'
import {ValidationError} from '../errors.js'
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
import type {KeyValue, WriteOp} from '../store/store.js'

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

/** Metadata that only means something inside one datastore: stripped on export, as upstream does. */
const LOCAL_METADATA = ['uid', 'resourceVersion', 'creationTimestamp']

export interface ExportResult {
  text: string
  counts: {resources: number; blocks: number; affinities: number; handles: number; config: number}
  /** Keys under /calico/ that the format has no place for (left out, and reported). */
  skipped: string[]
}

function ipamEntry(kv: KeyValue): string {
  // Very old affinities have an empty value, which upstream reads as confirmed.
  const value = kv.value.trim() === '' ? '{"state":"confirmed","deleted":false}' : compactJson(kv.value)
  return `{"Key":${encodeJson(kv.key)},"Value":${value},"TTL":0}`
}

/** Everything under /calico/ of one consistent read, as the export file's text. */
export function exportText(kvs: readonly KeyValue[]): ExportResult {
  const byPlural = new Map<string, KeyValue[]>()
  const blocks: KeyValue[] = []
  const affinities: KeyValue[] = []
  const handles: KeyValue[] = []
  let config: KeyValue | undefined
  let clusterInfo: KeyValue | undefined
  const skipped: string[] = []
  for (const kv of kvs) {
    if (kv.key.startsWith(RESOURCES)) {
      const [plural, ...rest] = kv.key.slice(RESOURCES.length).split('/')
      if (plural === CLUSTER_INFO) {
        if (rest.join('/') === 'default') clusterInfo = kv
        else skipped.push(kv.key)
        continue
      }
      const list = byPlural.get(plural!) ?? []
      list.push(kv)
      byPlural.set(plural!, list)
    } else if (parseBlockKey(kv.key)) blocks.push(kv)
    else if (parseAffinityKey(kv.key)) affinities.push(kv)
    else if (kv.key.startsWith(keys.handlePrefix())) handles.push(kv)
    else if (kv.key === keys.ipamConfig()) config = kv
    else skipped.push(kv.key)
  }
  const plurals = [
    ...V3_KINDS.map(([p]) => p),
    ...[...byPlural.keys()].filter((p) => !V3_KINDS.some(([q]) => q === p)).sort(),
  ]
  const yaml = loadYaml()
  const docs = plurals.map((plural) => {
    const items = (byPlural.get(plural) ?? []).map((kv) => {
      const obj = parseJson(kv.value) as Obj
      if (isObj(obj.metadata)) for (const k of LOCAL_METADATA) delete obj.metadata[k]
      return obj
    })
    const kind = V3_KINDS.find(([p]) => p === plural)?.[1] ?? String(items[0]?.kind ?? plural)
    // The List wrapper's keys sorted, as upstream's YAML printer writes them.
    return yaml.stringify(
      {apiVersion: 'projectcalico.org/v3', items, kind: `${kind}List`, metadata: {}},
      {lineWidth: 0},
    )
  })
  const info = clusterInfo ? indentJson(compactJson(clusterInfo.value)) : 'null'
  const parts: string[] = []
  if (affinities.length > 0) parts.push(`"block_affinities":[${affinities.map(ipamEntry).join(',')}]`)
  if (blocks.length > 0) parts.push(`"blocks":[${blocks.map(ipamEntry).join(',')}]`)
  if (handles.length > 0) parts.push(`"handles":[${handles.map(ipamEntry).join(',')}]`)
  if (config) parts.push(`"config":${ipamEntry(config)}`)
  const ipam = indentJson(`{${parts.join(',')}}`)
  return {
    text: `${docs.map((d) => `${d}---\n`).join('')}${SECTION}${info}\n${SECTION}${ipam}\n`,
    counts: {
      resources: [...byPlural.values()].reduce((n, l) => n + l.length, 0),
      blocks: blocks.length,
      affinities: affinities.length,
      handles: handles.length,
      config: config ? 1 : 0,
    },
    skipped,
  }
}

/**
 * Write the export to a file the operator names: created 0600 (it holds the whole cluster's state); an existing
 * file is replaced only if it is an earlier export, so a mistyped `-o` (the datastore file, say) is refused.
 */
export function writeExportFile(file: string, text: string): void {
  let existing: string | undefined
  try {
    const fd = fs.openSync(file, 'r')
    try {
      const buf = Buffer.alloc(1 << 16)
      existing = buf.subarray(0, fs.readSync(fd, buf, 0, buf.length, 0)).toString('utf8')
    } finally {
      fs.closeSync(fd)
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
      throw new ValidationError(
        `cannot write ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      )
  }
  if (existing !== undefined && existing !== '' && !/^apiVersion: projectcalico\.org\/v3\n/.test(existing))
    throw new ValidationError(`${file} exists and is not an earlier datastore export; refusing to overwrite it`)
  try {
    fs.writeFileSync(file, text, {mode: 0o600})
    fs.chmodSync(file, 0o600)
  } catch (err) {
    throw new ValidationError(`cannot write ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
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
