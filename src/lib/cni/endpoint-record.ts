// A pod's WorkloadEndpoint record, as the main plugin writes it on ADD and removes it on DEL: the same code
// whether the plugin does it on the datastore itself or the per-node agent does it for the plugin.
import type {Store} from '../store/store.js'
import {decodeWorkloadEndpoint, encodeWorkloadEndpoint, endpointKey, type WorkloadEndpoint} from '../workload/endpoint.js'
import {CNI_ERR, CniError} from './errors.js'

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
  if (!r.succeeded) throw new CniError(CNI_ERR.tryAgainLater, `WorkloadEndpoint ${wep.namespace}/${wep.name} changed while it was being written`)
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
export async function takeEndpoint(store: Store, namespace: string, name: string, containerId: string): Promise<TakenEndpoint> {
  const key = endpointKey(namespace, name)
  const seen = await store.get(key)
  const wep = seen && decodeWorkloadEndpoint(seen.value)
  const stale = wep !== undefined && wep.containerID !== '' && wep.containerID !== containerId
  if (seen && !stale) await store.txn([{key, modRevision: seen.modRevision}], [{delete: key}])
  return {wep, stale}
}
