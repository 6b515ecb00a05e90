// A pod's WorkloadEndpoint record, as the main plugin writes it on ADD and removes it on DEL (the same code
// whether the plugin does it on the datastore itself or the per-node agent does it for the plugin) and on CNI GC.
import type {KeyValue, Store} from '../store/store.js'
import {
  decodeWorkloadEndpoint,
  encodeWorkloadEndpoint,
  endpointKey,
  listWorkloadEndpoints,
  type WorkloadEndpoint,
} from '../workload/endpoint.js'
import {CNI_ERR, CniError} from '../cni/errors.js'

/**
 * Create the record, or replace the one a previous attempt for the same pod left. A new pod's record does not
 * exist, so the create is tried first: one request, not a read and a write.
 */
export async function putEndpoint(store: Store, wep: WorkloadEndpoint): Promise<void> {
  const key = endpointKey(wep.namespace, wep.name)
  const put = [{put: key, value: encodeWorkloadEndpoint(wep)}]
  if ((await store.txn([{key, absent: true}], put)).succeeded) return
  const seen = await store.get(key)
  const r = await store.txn([seen ? {key, modRevision: seen.modRevision} : {key, absent: true}], put)
  if (!r.succeeded)
    throw new CniError(
      CNI_ERR.tryAgainLater,
      `WorkloadEndpoint ${wep.namespace}/${wep.name} changed while it was being written`,
    )
}

export interface TakenEndpoint {
  /** The record found, if any. */
  wep?: WorkloadEndpoint
  /** It belongs to another container (this DEL is for a stale sandbox): it was left in place. */
  stale: boolean
}

/**
 * Remove the record of `containerId`'s attachment. A record of another container means a DEL for a stale
 * sandbox: the live pod's record stays.
 */
export async function takeEndpoint(
  store: Store,
  namespace: string,
  name: string,
  containerId: string,
): Promise<TakenEndpoint> {
  const key = endpointKey(namespace, name)
  const seen = await store.get(key)
  const wep = seen && decodeWorkloadEndpoint(seen.value)
  const stale = wep !== undefined && wep.containerID !== '' && wep.containerID !== containerId
  if (seen && !stale) await store.txn([{key, modRevision: seen.modRevision}], [{delete: key}])
  return {wep, stale}
}

export interface GcScope {
  /** This node: GC's list of valid attachments comes from this node's runtime, so other nodes' records are not ours. */
  node: string
  /** The CNI network being collected (netconf `name`). */
  network: string
  /** Container IDs of the valid attachments. */
  valid: ReadonlySet<string>
  /** Addresses the IPAM part of this GC released (without prefix). */
  released: ReadonlySet<string>
}

/**
 * The records of attachments a CNI GC collects: on this node, of a container that is not valid, and of this
 * network, known by the record's network annotation or, for records written before it existed, by all of its
 * addresses having just been released from this network's handles.
 */
export async function endpointsToCollect(store: Store, scope: GcScope): Promise<(WorkloadEndpoint & {kv: KeyValue})[]> {
  const addr = (cidr: string) => cidr.split('/')[0]!
  return (await listWorkloadEndpoints(store, scope.node)).filter((w) => {
    if (w.containerID === '' || scope.valid.has(w.containerID)) return false
    if (w.network !== undefined) return w.network === scope.network
    return w.ipNetworks.length > 0 && w.ipNetworks.every((n) => scope.released.has(addr(n)))
  })
}

/** Delete a record GC collects, only if it is unchanged since it was read (else a new ADD may own it now). */
export async function removeCollectedEndpoint(store: Store, wep: {kv: KeyValue}): Promise<boolean> {
  return (await store.txn([{key: wep.kv.key, modRevision: wep.kv.modRevision}], [{delete: wep.kv.key}])).succeeded
}
