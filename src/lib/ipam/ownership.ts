// Which leaked allocations garbage collection may release (`ipam gc`, the agent's GC loop). The store may be
// shared with Calico and with operators' manual assignments, so GC releases only what it can attribute to a
// workload that the CNI plugins set up: docs/gc-ownership.md gives the rule and why.
import {NETNS_ANNOTATION} from '../workload/endpoint.js'

/**
 * Values of the `type` attribute that Calico's node agent gives the tunnel addresses it allocates. Such an
 * allocation belongs to its Node record, never to a workload, whatever else its attributes say.
 */
export const TUNNEL_TYPES: ReadonlySet<string> = new Set([
  'ipipTunnelAddress',
  'vxlanTunnelAddress',
  'vxlanV6TunnelAddress',
  'wireguardTunnelAddress',
  'wireguardV6TunnelAddress',
])

/** The attribute that names a non-Kubernetes workload's network namespace (same key as the endpoint annotation). */
export const NETNS_ATTRIBUTE = NETNS_ANNOTATION

/**
 * `<network>.<containerID>`, the handle the CNI plugins give each attachment: a CNI network name and a CNI
 * container ID are both alphanumeric plus `_`, `.` and `-`, starting alphanumeric.
 */
const CNI_HANDLE = /^[A-Za-z0-9][A-Za-z0-9_.-]*\.[A-Za-z0-9][A-Za-z0-9_.-]*$/

const present = (v: string | undefined): boolean => v !== undefined && v !== ''

/**
 * Whether an allocation is a workload's, as the CNI plugins write them: a CNI handle `<network>.<containerID>`,
 * and either both `namespace` and `pod` attributes (a Kubernetes pod) or the `ipamctl.io/netns` attribute, and
 * no tunnel `type`. Only such allocations may be released by GC when no workload endpoint lists them; any
 * other leaked allocation (a manual `ipam assign`, a tunnel address, another tool's) is reported, never released.
 */
export function isWorkloadAllocation(attrs: Readonly<Record<string, string>>, handle: string | undefined): boolean {
  if (handle === undefined || !CNI_HANDLE.test(handle)) return false
  if (present(attrs.type) && TUNNEL_TYPES.has(attrs.type!)) return false
  return (present(attrs.namespace) && present(attrs.pod)) || present(attrs[NETNS_ATTRIBUTE])
}

/**
 * The network namespace the CNI plugins recorded for a workload allocation (`ipamctl.io/netns`), if any. The
 * attachment may have been wired by another main plugin that writes no WorkloadEndpoint, so the lack of an
 * endpoint does not make it leaked: it is alive as long as its network namespace exists, which only its own node
 * can tell. Allocations without it (written by Calico or an older ipamctl) are judged by their endpoint alone.
 */
export function workloadNetns(attrs: Readonly<Record<string, string>>): string | undefined {
  return present(attrs[NETNS_ATTRIBUTE]) ? attrs[NETNS_ATTRIBUTE] : undefined
}
