// Each kind as a v3 resource: where it is stored, how it reads back (`view`: what `get -o yaml|json` prints, which
// re-applies unchanged), and what a manifest object makes of it (`desired`: the value to store, or undefined when
// the stored one already says the same). The encoders are the IPAM core's (pool.ts, reservation.ts, node.ts,
// records.ts): one stored form per kind.
import {encodeJson, type JsonValue, parseJson} from '../codec/gojson.js'
import {ConflictError, ValidationError} from '../errors.js'
import {isObj, type Obj, poolFrom} from '../ipam/manifest.js'
import {decodeNode, encodeNode, newNode, validateHostName, validateLabels, withLabels} from '../ipam/node.js'
import {decodePool, encodePool, isResourceName, newPool, normalizePool, poolResource} from '../ipam/pool.js'
import {
  DEFAULT_IPAM_CONFIG,
  decodeAffinity,
  decodeIpamConfig,
  encodeIpamConfig,
  type IpamConfig,
  validateIpamConfig,
} from '../ipam/records.js'
import {
  decodeReservation,
  encodeReservation,
  newReservation,
  normalizeReservation,
  reservationResource,
} from '../ipam/reservation.js'
import {formatCidr} from '../net/cidr.js'
import {keys, parseAffinityKey} from '../store/keys.js'
import type {KeyValue, Store} from '../store/store.js'
import {KINDS, type KindInfo, type KindName} from './kinds.js'

export const API_VERSION = 'projectcalico.org/v3'

/** A v3 resource as printed and as read from a manifest. */
export interface Resource {
  apiVersion: string
  kind: string
  metadata: Obj & {name: string}
  spec?: Obj
}

export interface KindHandler {
  info: KindInfo
  /** The key of the object named `name`; a name that cannot be one is bad input. */
  keyFor(name: string): string
  /** Every stored object of the kind, in key order. */
  list(store: Store): Promise<KeyValue[]>
  view(kv: KeyValue): Resource
  /** The value to store for manifest object `obj` over `existing`; undefined: nothing to change. */
  desired(obj: Obj, where: string, existing: KeyValue | undefined, now: Date): string | undefined
}

const METADATA = ['name', 'labels', 'annotations', 'uid', 'creationTimestamp', 'resourceVersion']

function checkFields(o: unknown, allowed: readonly string[], what: string, where: string): Obj {
  if (o === undefined || o === null) return {}
  if (!isObj(o)) throw new ValidationError(`${where}: ${what} must be a map`)
  for (const k of Object.keys(o))
    if (!allowed.includes(k)) throw new ValidationError(`${where}: unknown field ${what}.${k}`)
  return o
}

function stringMap(v: unknown, what: string, where: string): Record<string, string> | undefined {
  if (v === undefined || v === null) return undefined
  if (!isObj(v) || !Object.values(v).every((x) => typeof x === 'string'))
    throw new ValidationError(`${where}: ${what} must map strings to strings`)
  return Object.keys(v).length > 0 ? (v as Record<string, string>) : undefined
}

function labelsOf(md: Obj, where: string): Record<string, string> | undefined {
  const labels = stringMap(md.labels, 'metadata.labels', where)
  if (labels) validateLabels(labels)
  return labels
}

/** The stored object as a plain JSON value (Go maps become plain objects) with its resourceVersion. */
function withVersion(resource: unknown, kv: KeyValue): Resource {
  const r = parseJson(encodeJson(resource)) as unknown as Resource
  const md: Obj = {}
  const entries = Object.entries(isObj(r.metadata) ? r.metadata : {})
  const after = entries.some(([k]) => k === 'uid')
    ? 'uid'
    : entries.some(([k]) => k === 'namespace')
      ? 'namespace'
      : 'name'
  for (const [k, v] of entries) {
    if (k === 'resourceVersion') continue
    md[k] = v
    if (k === after) md.resourceVersion = kv.modRevision.toString()
  }
  if (md.resourceVersion === undefined) md.resourceVersion = kv.modRevision.toString()
  return {...r, metadata: md as Resource['metadata']}
}

/** JSON with object keys sorted at every level: equal meaning, equal text. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`
  if (isObj(v))
    return `{${Object.keys(v)
      .sort()
      .filter((k) => v[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(v[k])}`)
      .join(',')}}`
  return typeof v === 'bigint' ? v.toString() : JSON.stringify(v ?? null)
}

function checkName(kind: KindName, name: unknown, where: string): string {
  if (!isResourceName(name))
    throw new ValidationError(
      `${where}: invalid ${kind} name ${JSON.stringify(name)}: use lower-case letters, digits, "-" and "." (at most 253 characters)`,
    )
  return name
}

const info = (k: KindName): KindInfo => KINDS.find((x) => x.kind === k)!

const pools: KindHandler = {
  info: info('IPPool'),
  keyFor: (name) => keys.pool(checkName('IPPool', name, 'IPPool')),
  list: (store) => store.list(keys.resourcePrefix('ippools')),
  view: (kv) => withVersion(poolResource(decodePool(kv.value)), kv),
  desired(obj, where, existing, now) {
    const input = poolFrom(obj, where)
    input.labels = labelsOf(obj.metadata as Obj, where)
    if (!existing) return encodePool(newPool(input, now))
    const prev = decodePool(existing.value)
    prev.labels = prev.labels && Object.keys(prev.labels).length > 0 ? prev.labels : undefined
    const next = {...normalizePool(input), uid: prev.uid, creationTimestamp: prev.creationTimestamp}
    const value = encodePool(next)
    return value === encodePool(prev) ? undefined : value
  },
}

const reservations: KindHandler = {
  info: info('IPReservation'),
  keyFor: (name) => keys.resource('ipreservations', checkName('IPReservation', name, 'IPReservation')),
  list: (store) => store.list(keys.resourcePrefix('ipreservations')),
  view: (kv) => withVersion(reservationResource(decodeReservation(kv.value)), kv),
  desired(obj, where, existing, now) {
    const md = checkFields(obj.metadata, METADATA, 'metadata', where)
    const spec = checkFields(obj.spec, ['reservedCIDRs'], 'spec', where)
    if (!Array.isArray(spec.reservedCIDRs) || !spec.reservedCIDRs.every((c) => typeof c === 'string'))
      throw new ValidationError(`${where}: spec.reservedCIDRs must be a list of CIDRs`)
    const input = {name: String(md.name), reservedCIDRs: spec.reservedCIDRs as string[], labels: labelsOf(md, where)}
    if (!existing) return encodeReservation(newReservation(input, now))
    const prev = decodeReservation(existing.value)
    const value = encodeReservation({...prev, ...normalizeReservation(input)})
    return value === encodeReservation(prev) ? undefined : value
  },
}

const CONFIG_NAME = 'default'
const CONFIG_SPEC: Record<keyof IpamConfig, string> = {
  strictAffinity: 'boolean',
  autoAllocateBlocks: 'boolean',
  maxBlocksPerHost: 'number',
  kubeVirtVMAddressPersistence: 'string',
  ipCooldownSeconds: 'number',
}

const ipamConfig: KindHandler = {
  info: info('IPAMConfiguration'),
  keyFor(name) {
    if (name !== CONFIG_NAME)
      throw new ValidationError(`IPAMConfiguration ${JSON.stringify(name)}: the only IPAMConfiguration is "default"`)
    return keys.ipamConfig()
  },
  list: async (store) => {
    const kv = await store.get(keys.ipamConfig())
    return kv ? [kv] : []
  },
  view(kv) {
    const c = decodeIpamConfig(kv.value)
    return {
      apiVersion: API_VERSION,
      kind: 'IPAMConfiguration',
      metadata: {name: CONFIG_NAME, resourceVersion: kv.modRevision.toString()},
      spec: {...c},
    }
  },
  desired(obj, where, existing) {
    const md = checkFields(obj.metadata, METADATA, 'metadata', where)
    if (md.name !== CONFIG_NAME) throw new ValidationError(`${where}: the only IPAMConfiguration is "default"`)
    if (stringMap(md.labels, 'metadata.labels', where) || stringMap(md.annotations, 'metadata.annotations', where))
      throw new ValidationError(`${where}: the IPAM configuration has no labels or annotations in the datastore`)
    const spec = checkFields(obj.spec, Object.keys(CONFIG_SPEC), 'spec', where)
    for (const [k, t] of Object.entries(CONFIG_SPEC))
      if (spec[k] !== undefined && typeof spec[k] !== t) throw new ValidationError(`${where}: spec.${k} must be a ${t}`)
    if (
      spec.kubeVirtVMAddressPersistence !== undefined &&
      !['Enabled', 'Disabled'].includes(String(spec.kubeVirtVMAddressPersistence))
    )
      throw new ValidationError(`${where}: spec.kubeVirtVMAddressPersistence must be Enabled or Disabled`)
    const cfg = {...DEFAULT_IPAM_CONFIG, ...(spec as Partial<IpamConfig>)}
    try {
      validateIpamConfig(cfg)
    } catch (err) {
      throw new ValidationError(`${where}: ${(err as Error).message}`)
    }
    const value = encodeIpamConfig(cfg)
    return existing && encodeIpamConfig(decodeIpamConfig(existing.value)) === value ? undefined : value
  },
}

const nodes: KindHandler = {
  info: info('Node'),
  keyFor(name) {
    validateHostName(name)
    return keys.node(name)
  },
  list: (store) => store.list(keys.resourcePrefix('nodes')),
  view: (kv) => withVersion(parseJson(kv.value), kv),
  desired(obj, where, existing, now) {
    const md = checkFields(obj.metadata, METADATA, 'metadata', where)
    const name = String(md.name)
    validateHostName(name)
    if (obj.spec !== undefined && obj.spec !== null && !isObj(obj.spec))
      throw new ValidationError(`${where}: spec must be a map`)
    const spec = (obj.spec ?? {}) as Obj
    const labels = labelsOf(md, where) ?? {}
    const annotations = stringMap(md.annotations, 'metadata.annotations', where)
    if (!existing) return encodeNode(newNode(name, labels, now), {spec, annotations})
    // A stored Node is shared with Calico (BGP settings, tunnel addresses, orchestrator references): ipamctl
    // changes its labels only, field by field (docs/write-paths.md#the-ownership-rule).
    const raw = parseJson(existing.value) as {metadata?: Obj; spec?: JsonValue}
    const stored = raw?.metadata ?? {}
    for (const [what, given, had] of [
      ['spec', spec, raw?.spec ?? {}],
      ['metadata.annotations', annotations ?? {}, stored.annotations ?? {}],
    ] as const) {
      if (canonicalJson(given) !== canonicalJson(had))
        throw new ConflictError(
          `${where}: Node(${name}) ${what} differs from the stored one; ipamctl changes only the labels of an existing Node`,
        )
    }
    if (canonicalJson(labels) === canonicalJson(decodeNode(existing.value).labels)) return undefined
    return withLabels(existing.value, labels)
  },
}

/** BlockAffinity `<host>-<cidr>` as upstream names it: the CIDR with `.`, `:` and `/` turned into `-`. */
function affinityName(host: string, cidr: string): string {
  return `${host}-${cidr.replace(/[.:/]/g, '-')}`
}

const affinities: KindHandler = {
  info: info('BlockAffinity'),
  keyFor: (name) => name,
  list: async (store) =>
    (await store.list(keys.allHostAffinitiesPrefix())).filter((kv) => parseAffinityKey(kv.key)?.type === 'host'),
  view(kv) {
    const a = parseAffinityKey(kv.key)!
    const cidr = formatCidr(a.cidr)
    let state: string
    try {
      state = decodeAffinity(kv.value)
    } catch {
      state = 'unknown'
    }
    return {
      apiVersion: API_VERSION,
      kind: 'BlockAffinity',
      metadata: {name: affinityName(a.host, cidr), resourceVersion: kv.modRevision.toString()},
      spec: {state, node: a.host, type: a.type, cidr, deleted: 'false'},
    }
  },
  desired(_obj, where) {
    throw new ValidationError(`${where}: BlockAffinity is read-only; hosts claim and release blocks themselves`)
  },
}

const HANDLERS: Record<KindName, KindHandler> = {
  IPPool: pools,
  IPReservation: reservations,
  IPAMConfiguration: ipamConfig,
  Node: nodes,
  BlockAffinity: affinities,
}

export const handlerFor = (kind: KindName): KindHandler => HANDLERS[kind]
