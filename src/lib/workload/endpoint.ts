// WorkloadEndpoint records: what the CNI plugin writes for each wired pod, so `ipam check` can tell a live
// address from a leaked one. Stored in Calico's v3 resource layout
// (docs/calico.md#workload-endpoints).
import {randomUuid} from '../random.js'
import {encodeJson, goMap, nativeParse} from '../codec/gojson.js'
import {JsonCursor, once} from '../codec/json-scan.js'
import {keys} from '../store/keys.js'
import type {KeyValue, Store} from '../store/store.js'
import {rfc3339} from '../codec/gotime.js'

export interface WorkloadEndpoint {
  name: string
  namespace: string
  uid: string
  creationTimestamp: string
  labels: Record<string, string>
  orchestrator: 'k8s' | 'cni'
  node: string
  containerID: string
  pod?: string
  endpoint: string
  /** Addresses as /32 or /128. */
  ipNetworks: string[]
  profiles: string[]
  interfaceName: string
  mac?: string
  /** ipamctl extension (annotation): the pod's netns path, so `ipam check` can spot endpoints whose pod is gone. */
  netns?: string
  /** ipamctl extension (annotation): the CNI network (netconf `name`), so CNI GC of one network leaves another's alone. */
  network?: string
}

export const NETNS_ANNOTATION = 'ipamctl.io/netns'
export const NETWORK_ANNOTATION = 'ipamctl.io/network'

/** Segments joined by "-", each "-" inside a segment doubled: node-1/web-0/eth0 → node--1-k8s-web--0-eth0. */
export function workloadEndpointName(p: {
  node: string
  orchestrator: 'k8s' | 'cni'
  pod?: string
  containerId: string
  ifName: string
}): string {
  const esc = (s: string) => s.replace(/-/g, '--')
  const workload = p.orchestrator === 'k8s' ? p.pod! : p.containerId
  return [p.node, p.orchestrator, workload, p.ifName].map(esc).join('-')
}

export const endpointKey = (namespace: string, name: string): string =>
  `${keys.resourcePrefix('workloadendpoints')}${namespace}/${name}`

export function newWorkloadEndpoint(
  p: Omit<WorkloadEndpoint, 'uid' | 'creationTimestamp' | 'labels' | 'profiles'>,
  now: Date,
): WorkloadEndpoint {
  return {
    ...p,
    uid: randomUuid(),
    creationTimestamp: rfc3339(now),
    labels: {'projectcalico.org/namespace': p.namespace, 'projectcalico.org/orchestrator': p.orchestrator},
    profiles: p.orchestrator === 'k8s' ? [`kns.${p.namespace}`] : [],
  }
}

export function encodeWorkloadEndpoint(w: WorkloadEndpoint): string {
  return encodeJson({
    kind: 'WorkloadEndpoint',
    apiVersion: 'projectcalico.org/v3',
    metadata: {
      name: w.name,
      namespace: w.namespace,
      uid: w.uid,
      creationTimestamp: w.creationTimestamp,
      labels: goMap(w.labels),
      annotations:
        w.netns || w.network
          ? goMap({
              ...(w.netns ? {[NETNS_ANNOTATION]: w.netns} : {}),
              ...(w.network ? {[NETWORK_ANNOTATION]: w.network} : {}),
            })
          : undefined,
    },
    spec: {
      orchestrator: w.orchestrator,
      node: w.node,
      containerID: w.containerID,
      pod: w.pod,
      endpoint: w.endpoint,
      ipNetworks: w.ipNetworks,
      profiles: w.profiles.length ? w.profiles : undefined,
      interfaceName: w.interfaceName,
      mac: w.mac,
    },
  })
}

/**
 * The native parser is enough here: no member of a WorkloadEndpoint is an integer, let alone one above 2^53
 * (ports are 16-bit), and every field read below is a string. `ipam check` decodes 100,000 of these, and the
 * lossless parser's scan for long digit runs cost as much as the parse itself.
 */
export function decodeWorkloadEndpoint(text: string): WorkloadEndpoint {
  return workloadEndpointFrom(nativeParse(text))
}

/** The fields ipamctl reads from a parsed WorkloadEndpoint; anything missing or mistyped reads as empty. */
export function workloadEndpointFrom(parsed: unknown): WorkloadEndpoint {
  const raw = parsed as {metadata?: Record<string, unknown>; spec?: Record<string, unknown>} | null
  const md = raw?.metadata ?? {}
  const spec = raw?.spec ?? {}
  const str = (v: unknown) => (typeof v === 'string' ? v : '')
  const network = str((md.annotations as Record<string, unknown> | undefined)?.[NETWORK_ANNOTATION])
  return {
    name: str(md.name),
    namespace: str(md.namespace),
    uid: str(md.uid),
    creationTimestamp: str(md.creationTimestamp),
    labels: (md.labels as Record<string, string>) ?? {},
    orchestrator: spec.orchestrator === 'k8s' ? 'k8s' : 'cni',
    node: str(spec.node),
    containerID: str(spec.containerID),
    pod: typeof spec.pod === 'string' ? spec.pod : undefined,
    endpoint: str(spec.endpoint),
    ipNetworks: Array.isArray(spec.ipNetworks) ? spec.ipNetworks.map(String) : [],
    profiles: Array.isArray(spec.profiles) ? spec.profiles.map(String) : [],
    interfaceName: str(spec.interfaceName),
    mac: typeof spec.mac === 'string' ? spec.mac : undefined,
    netns: str((md.annotations as Record<string, unknown> | undefined)?.[NETNS_ANNOTATION]) || undefined,
    // Only when present: records written before the annotation existed decode exactly as they did.
    ...(network ? {network} : {}),
  }
}

/** What `ipam check` needs of an endpoint: whose it is, its node and netns (liveness), and its addresses. */
export type EndpointAddresses = Pick<WorkloadEndpoint, 'name' | 'namespace' | 'node' | 'netns' | 'ipNetworks'>

/**
 * `EndpointAddresses` read straight off the stored text, as `decodeWorkloadEndpoint` would give them, without
 * building the record (`ipam check` reads every endpoint). Undefined when in doubt: a backslash anywhere, a member
 * of another type than Go writes (null included) or twice, anything malformed; the caller then decodes in full.
 * The one thing not looked for is a raw control character inside a string (JSON.parse refuses one, Go never writes
 * one): such a record is read rather than failing the whole check.
 */
export function scanEndpointAddresses(text: string): EndpointAddresses | undefined {
  const c = JsonCursor.over(text)
  if (!c) return undefined
  try {
    return readEndpointAddresses(c)
  } catch {
    // NOT_LEAN, or a nesting too deep for the recursive skip: the full decoder decides.
    return undefined
  }
}

function readEndpointAddresses(c: JsonCursor): EndpointAddresses {
  const out: EndpointAddresses = {name: '', namespace: '', node: '', netns: undefined, ipNetworks: []}
  // One bit per member read (`once`).
  let seen = 0
  if (c.openObject())
    do {
      c.name()
      if (c.is('metadata')) {
        seen = once(seen, 1)
        if (c.openObject())
          do {
            c.name()
            if (c.is('name')) {
              seen = once(seen, 2)
              out.name = c.string()
            } else if (c.is('namespace')) {
              seen = once(seen, 4)
              out.namespace = c.string()
            } else if (c.is('annotations')) {
              seen = once(seen, 8)
              if (c.openObject())
                do {
                  c.name()
                  if (c.is(NETNS_ANNOTATION)) {
                    seen = once(seen, 16)
                    // As workloadEndpointFrom: an empty path is no path.
                    out.netns = c.string() || undefined
                  } else c.skip()
                } while (c.nextMember())
            } else c.skip()
          } while (c.nextMember())
      } else if (c.is('spec')) {
        seen = once(seen, 32)
        if (c.openObject())
          do {
            c.name()
            if (c.is('node')) {
              seen = once(seen, 64)
              out.node = c.string()
            } else if (c.is('ipNetworks')) {
              seen = once(seen, 128)
              if (c.openArray())
                do out.ipNetworks.push(c.string())
                while (c.nextElement())
            } else c.skip()
          } while (c.nextMember())
      } else c.skip()
    } while (c.nextMember())
  c.end()
  return out
}

/**
 * For `ipam check` on a node: an endpoint of this node whose recorded netns no longer exists has lost its pod
 * (a runtime that never sent DEL), so its addresses count as leaked. Other nodes' endpoints, and endpoints
 * without a recorded netns, are trusted.
 */
export function netnsLiveness(
  node: string,
  exists: (path: string) => boolean,
): (w: Pick<WorkloadEndpoint, 'node' | 'netns'>) => boolean {
  return (w) => w.node !== node || !w.netns || exists(w.netns)
}

export async function listWorkloadEndpoints(
  store: Store,
  node?: string,
): Promise<(WorkloadEndpoint & {kv: KeyValue})[]> {
  const kvs = await store.list(keys.resourcePrefix('workloadendpoints'))
  return kvs
    .map((kv) => ({...decodeWorkloadEndpoint(kv.value), kv}))
    .filter((w) => node === undefined || w.node === node)
}
