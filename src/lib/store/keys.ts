// Calico's etcd v3 key layout (libcalico-go KeyToDefaultPath). Both backends use it, so a datastore can be
// moved between them, and Calico tooling can read what ipamctl writes.
import {type Cidr, type Family, formatCidr, parseCidr} from '../net/cidr.js'

const IPAM = '/calico/ipam/v2'
const RESOURCES = '/calico/resources/v3/projectcalico.org'

const ipv = (f: Family): string => `ipv${f}`

/** `10.65.79.0/26` → `10.65.79.0-26`: only the first `/` is replaced, as upstream does. */
export const cidrSegment = (c: Cidr): string => formatCidr(c).replace('/', '-')

export function cidrFromSegment(segment: string): Cidr {
  return parseCidr(segment.replace('-', '/'))
}

export const keys = {
  blockPrefix: (f?: Family) => (f ? `${IPAM}/assignment/${ipv(f)}/block/` : `${IPAM}/assignment/`),
  block: (c: Cidr) => `${IPAM}/assignment/${ipv(c.family)}/block/${cidrSegment(c)}`,
  hostAffinityPrefix: (host: string, f: Family) => `${IPAM}/host/${host}/${ipv(f)}/block/`,
  allHostAffinitiesPrefix: () => `${IPAM}/host/`,
  affinity: (host: string, c: Cidr) => `${IPAM}/host/${host}/${ipv(c.family)}/block/${cidrSegment(c)}`,
  handlePrefix: () => `${IPAM}/handle/`,
  handle: (id: string) => `${IPAM}/handle/${id}`,
  ipamConfig: () => `${IPAM}/config`,
  resourcePrefix: (plural: string) => `${RESOURCES}/${plural}/`,
  resource: (plural: string, name: string) => `${RESOURCES}/${plural}/${name}`,
  pool: (name: string) => `${RESOURCES}/ippools/${name}`,
  node: (name: string) => `${RESOURCES}/nodes/${name}`,
} as const

const BLOCK_KEY = /^\/?calico\/ipam\/v2\/assignment\/ipv.\/block\/([^/]+)$/
const AFFINITY_KEY = /^\/?calico\/ipam\/v2\/(host|virtual)\/([^/]+)\/ipv.\/block\/([^/]+)$/

export function parseBlockKey(key: string): Cidr | undefined {
  const m = BLOCK_KEY.exec(key)
  if (!m) return undefined
  try {
    return cidrFromSegment(m[1]!)
  } catch {
    return undefined
  }
}

export function parseAffinityKey(key: string): {type: string; host: string; cidr: Cidr} | undefined {
  const m = AFFINITY_KEY.exec(key)
  if (!m) return undefined
  try {
    return {type: m[1]!, host: m[2]!, cidr: cidrFromSegment(m[3]!)}
  } catch {
    return undefined
  }
}

/**
 * Handle IDs are key segments too: Calico reads `/calico/ipam/v2/handle/<id>` with no "/" in <id>, so such a
 * handle would be invisible to it. Control characters (a newline) break every line-oriented output.
 */
export function isValidHandleId(id: string): boolean {
  return isKeySegment(id)
}

/** One segment of a key (a handle ID, a WorkloadEndpoint's namespace or name): 1-253 characters, no "/" or control characters. */
export function isKeySegment(s: string): boolean {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
  return s.length > 0 && s.length <= 253 && !/[/\u0000-\u001f\u007f]/.test(s)
}

/** Host names end up inside keys; a `/` would silently change the layout. */
export function isValidHostName(host: string): boolean {
  return host.length > 0 && host.length <= 253 && !/[/\s]/.test(host)
}
