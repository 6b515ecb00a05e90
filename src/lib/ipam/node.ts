// Node records: pools' nodeSelectors match against their labels. Created on first use of a host name.
import {randomUuid} from '../random.js'
import {encodeJson, goMap, type JsonValue, parseJson} from '../codec/gojson.js'
import {ValidationError} from '../errors.js'
import {formatIp, tryParseIp} from '../net/cidr.js'
import {isValidHandleId, isValidHostName, keys} from '../store/keys.js'
import type {Store} from '../store/store.js'
import {rfc3339} from '../codec/gotime.js'

export interface NodeRecord {
  name: string
  uid: string
  creationTimestamp: string
  labels: Record<string, string>
}

const LABEL_KEY =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/
const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/

export function validateHostName(host: string): void {
  if (!isValidHostName(host))
    throw new ValidationError(
      `invalid host name ${JSON.stringify(host)}: it must be 1-253 characters with no "/" or whitespace`,
    )
}

/** Checked where a handle is created; lookups by handle stay lenient, so upstream's own handles can still be released. */
export function validateHandleId(handle: string | undefined): void {
  if (handle !== undefined && !isValidHandleId(handle)) {
    throw new ValidationError(
      `invalid handle ${JSON.stringify(handle)}: it must be 1-253 characters with no "/" or control characters`,
    )
  }
}

/** Kubernetes label rules: `prefix/name=value`, name and value at most 63 characters. */
export function validateLabels(labels: Readonly<Record<string, string>>, what = 'label'): void {
  for (const [k, v] of Object.entries(labels)) {
    const name = k.includes('/') ? k.slice(k.indexOf('/') + 1) : k
    if (!LABEL_KEY.test(k) || name.length > 63) throw new ValidationError(`invalid ${what} key ${JSON.stringify(k)}`)
    if (!LABEL_VALUE.test(v) || v.length > 63)
      throw new ValidationError(`invalid value ${JSON.stringify(v)} for ${what} ${k}`)
  }
}

/** `extra`: a spec and annotations given in a manifest (Calico's own fields, stored as given). */
export function encodeNode(n: NodeRecord, extra: {spec?: unknown; annotations?: Record<string, string>} = {}): string {
  return encodeJson({
    kind: 'Node',
    apiVersion: 'projectcalico.org/v3',
    metadata: {
      name: n.name,
      uid: n.uid,
      creationTimestamp: n.creationTimestamp,
      labels: Object.keys(n.labels).length ? goMap(n.labels) : undefined,
      annotations: extra.annotations && Object.keys(extra.annotations).length ? goMap(extra.annotations) : undefined,
    },
    spec: extra.spec ?? {},
  })
}

export function decodeNode(text: string): NodeRecord {
  const raw = parseJson(text) as {metadata?: Record<string, JsonValue>}
  const md = raw?.metadata ?? {}
  const labels = (md.labels && typeof md.labels === 'object' ? md.labels : {}) as Record<string, string>
  return {
    name: String(md.name),
    uid: String(md.uid ?? ''),
    creationTimestamp: String(md.creationTimestamp ?? ''),
    labels,
  }
}

export function newNode(name: string, labels: Record<string, string>, now: Date): NodeRecord {
  return {name, uid: randomUuid(), creationTimestamp: rfc3339(now), labels}
}

export async function getNode(store: Store, host: string): Promise<NodeRecord | undefined> {
  const kv = await store.get(keys.node(host))
  return kv && decodeNode(kv.value)
}

/** The node's record, creating an unlabelled one if this is the first time the host is seen. */
/** `seenAbsent`: the caller just read the node as missing, so try creating it before reading again. */
export async function ensureNode(
  store: Store,
  host: string,
  now: Date,
  opts: {seenAbsent?: boolean} = {},
): Promise<NodeRecord> {
  validateHostName(host)
  const key = keys.node(host)
  for (let first = true; ; first = false) {
    const kv = first && opts.seenAbsent ? undefined : await store.get(key)
    if (kv) return decodeNode(kv.value)
    const node = newNode(host, {}, now)
    const r = await store.txn([{key, absent: true}], [{put: key, value: encodeNode(node)}])
    if (r.succeeded) return node
    // Someone else created it between our read and write: read theirs.
  }
}

export async function listNodes(store: Store): Promise<NodeRecord[]> {
  return (await store.list(keys.resourcePrefix('nodes'))).map((kv) => decodeNode(kv.value))
}

/**
 * Create a node, or replace the labels of an existing one. An existing record is rewritten with only its labels
 * changed: on a datastore shared with Calico the record also holds the node's BGP settings and tunnel addresses
 * (which `ipam check` counts as in use), annotations and fields ipamctl does not know, and none of that is ours.
 */
export async function upsertNode(
  store: Store,
  name: string,
  labels: Record<string, string>,
  now: Date,
): Promise<{node: NodeRecord; created: boolean}> {
  validateHostName(name)
  validateLabels(labels)
  const key = keys.node(name)
  for (;;) {
    const kv = await store.get(key)
    const node = kv ? {...decodeNode(kv.value), labels} : newNode(name, labels, now)
    const value = kv ? withLabels(kv.value, labels) : encodeNode(node)
    const guard = kv ? {key, modRevision: kv.modRevision} : {key, absent: true as const}
    const r = await store.txn([guard], [{put: key, value}])
    if (r.succeeded) return {node, created: !kv}
  }
}

/** ObjectMeta fields that Go writes after `labels`: a new `labels` goes before the first of them. */
const AFTER_LABELS = new Set(['annotations', 'ownerReferences', 'finalizers', 'managedFields'])

/** The stored record with its labels replaced and every other field kept as it was, in its order. */
export function withLabels(text: string, labels: Record<string, string>): string {
  const raw = parseJson(text)
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new ValidationError('the stored Node record is not a JSON object; fix or delete it first')
  const md = raw.metadata
  const meta = typeof md === 'object' && md !== null && !Array.isArray(md) ? md : {}
  const out = new Map<string, unknown>()
  const value = Object.keys(labels).length > 0 ? goMap(labels) : undefined
  let placed = false
  for (const [k, v] of Object.entries(meta)) {
    if (!placed && (k === 'labels' || AFTER_LABELS.has(k))) {
      out.set('labels', value)
      placed = true
    }
    if (k !== 'labels') out.set(k, v)
  }
  if (!placed) out.set('labels', value)
  const record = new Map<string, unknown>(Object.entries(raw))
  record.set('metadata', out)
  return encodeJson(record)
}

/**
 * The tunnel addresses a Node record names (written by Calico's node agent on a shared datastore): these
 * addresses are in use by the node, never leaked. Every address field Calico has is read, IPv6 ones too, so
 * none is ever mistaken for a leak. Values are normalized as formatIp writes them; an unreadable record or
 * field names nothing (check stays usable on damaged data).
 */
export function nodeTunnelAddresses(text: string): string[] {
  let spec: Record<string, unknown>
  try {
    spec = ((parseJson(text) as {spec?: unknown})?.spec ?? {}) as Record<string, unknown>
  } catch {
    return []
  }
  if (typeof spec !== 'object' || spec === null) return []
  const sub = (v: unknown): Record<string, unknown> =>
    typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : {}
  const bgp = sub(spec.bgp)
  const wg = sub(spec.wireguard)
  const out: string[] = []
  for (const v of [
    bgp.ipv4IPIPTunnelAddr,
    spec.ipv4VXLANTunnelAddr,
    spec.ipv6VXLANTunnelAddr,
    wg.interfaceIPv4Address,
    wg.interfaceIPv6Address,
  ]) {
    if (typeof v !== 'string' || v === '') continue
    const ip = tryParseIp(v.split('/')[0]!.trim())
    if (ip) out.push(formatIp(ip.family, ip.value))
  }
  return out
}
