// `cni list --check` and `cni connectivity`: what the WorkloadEndpoint records of this node say, checked against the
// host. Reads only: the datastore through the caller's read-mode store, the dataplane through netlink dumps.
import path from 'node:path'
import {CniError} from '../cni/errors.js'
import {addressOf, familyOf} from '../cni/result.js'
import {checkPod} from '../dataplane/check.js'
import {NetnsNotFoundError, PodCheckError} from '../dataplane/errors.js'
import type {Party} from '../dataplane/connectivity.js'
import {PRIMARY_IFNAME} from '../dataplane/names.js'
import {CheckMismatchError, type MismatchSide} from '../errors.js'
import type {Ctx} from '../ipam/context.js'
import type {WorkloadEndpoint} from '../workload/endpoint.js'
import {checkHandleAddresses} from './operations.js'

export interface EndpointState {
  /** `ok`, or the side that is wrong. */
  state: 'ok' | MismatchSide
  /** The first difference found. */
  detail?: string
}

/**
 * CHECK of one record of this node: the attachment's handle holds exactly the record's addresses (when the record
 * names its network), and the pod is wired as the record says (checkPod). MTU and MAC are not compared: the record
 * does not hold the MTU the netconf asked for.
 */
export async function checkEndpoint(ctx: Ctx, wep: WorkloadEndpoint): Promise<EndpointState> {
  try {
    await checkEndpointOrThrow(ctx, wep)
    return {state: 'ok'}
  } catch (err) {
    if (err instanceof CheckMismatchError) return {state: err.side, detail: err.difference}
    throw err
  }
}

async function checkEndpointOrThrow(ctx: Ctx, wep: WorkloadEndpoint): Promise<void> {
  if (wep.network) {
    try {
      await checkHandleAddresses(ctx, `${wep.network}.${wep.containerID}`, wep.ipNetworks)
    } catch (err) {
      if (err instanceof CniError)
        throw new CheckMismatchError('datastore', err.msg.replace(/^IPAM CHECK failed: /, ''))
      throw err
    }
  }
  if (!wep.netns) throw new CheckMismatchError('datastore', 'the record names no network namespace')
  const ips = wep.ipNetworks.map(addressOf)
  const ifName = wep.endpoint || PRIMARY_IFNAME
  try {
    await checkPod({
      netns: wep.netns,
      ifName,
      hostIfName: wep.interfaceName,
      ipv4: ips.find((x) => familyOf(x) === 4),
      ipv6: ips.find((x) => familyOf(x) === 6),
      secondary: ifName !== PRIMARY_IFNAME,
    })
  } catch (err) {
    if (err instanceof PodCheckError)
      throw new CheckMismatchError(err.mismatch.startsWith('host-') ? 'host' : 'pod', err.message)
    if (err instanceof NetnsNotFoundError) throw new CheckMismatchError('pod', err.message)
    throw err
  }
}

/** The pods (one per network namespace) the records of this node describe, each with all its addresses. */
export function podParties(weps: readonly WorkloadEndpoint[]): (Party & {names: string[]})[] {
  const byNetns = new Map<string, Party & {names: string[]}>()
  for (const w of weps) {
    if (!w.netns) continue
    let p = byNetns.get(w.netns)
    if (!p) {
      const name = w.pod ? `${w.namespace}/${w.pod}` : w.containerID
      p = {name, netns: w.netns, addresses: [], names: [name, w.containerID, w.netns, path.basename(w.netns)]}
      if (w.pod) p.names.push(w.pod)
      byNetns.set(w.netns, p)
    }
    p.addresses.push(...w.ipNetworks.map(addressOf))
  }
  return [...byNetns.values()]
}
