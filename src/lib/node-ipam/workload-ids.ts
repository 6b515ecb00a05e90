import {goTimeString} from '../codec/gotime.js'
import {NETNS_ANNOTATION, workloadEndpointName} from '../workload/endpoint.js'
import type {CniArgs} from './cni-args.js'
import type {NetConf} from './netconf.js'

export interface WorkloadIds {
  orchestrator: 'k8s' | 'cni'
  node: string
  containerId: string
  /** CNI_IFNAME. */
  endpoint: string
  /** '' unless k8s. */
  pod: string
  /** CNI_NETNS: recorded on the allocation, so GC can tell it is a workload's and whether it is alive (docs/gc-ownership.md). */
  netns: string
  /** The pod's namespace for k8s; "default" (or CNI_TEST_NAMESPACE) otherwise. */
  namespace: string
  /** `<network>.<containerID>`: the IPAM handle of this attachment. */
  handleId: string
  /** The legacy (Calico v2) handle released on DEL: `<namespace>.<pod>` for k8s, else the container ID. */
  workloadId: string
}

/** Upstream's GetIdentifiers + GetHandleID. */
export function workloadIds(
  conf: NetConf,
  cmd: {containerId: string; ifName: string; netns?: string},
  args: CniArgs,
  node: string,
): WorkloadIds {
  const k8s = args.podNamespace !== '' && args.podName !== ''
  const namespace = k8s ? args.podNamespace : args.testNamespace || 'default'
  const pod = k8s ? args.podName : ''
  return {
    orchestrator: k8s ? 'k8s' : 'cni',
    node,
    containerId: cmd.containerId,
    endpoint: cmd.ifName,
    pod,
    netns: cmd.netns ?? '',
    namespace,
    handleId: `${conf.name}.${cmd.containerId}`,
    workloadId: k8s ? `${namespace}.${pod}` : cmd.containerId,
  }
}

/** The attachment's WorkloadEndpoint name (workloadEndpointName: the one builder, which the benchmarks use too). */
export function wepName(ids: WorkloadIds): string {
  return workloadEndpointName({
    node: ids.node,
    orchestrator: ids.orchestrator,
    pod: ids.pod,
    containerId: ids.containerId,
    ifName: ids.endpoint,
  })
}

/** Attributes stored with each allocation: node, timestamp (Go's time.Now().UTC().String()), pod, namespace. */
export function allocationAttrs(ids: WorkloadIds, now: Date): Record<string, string> {
  const attrs: Record<string, string> = {node: ids.node, timestamp: goTimeString(now)}
  if (ids.pod !== '') {
    attrs.pod = ids.pod
    attrs.namespace = ids.namespace
  }
  if (ids.netns !== '') attrs[NETNS_ANNOTATION] = ids.netns
  return attrs
}
