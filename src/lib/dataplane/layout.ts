// Calico's pod layout (docs/calico.md#pod-wiring) and the checked form of a wiring request, shared by wirePod and checkPod.
import {type Cidr, type Ip, parseCidr} from '../net/cidr.js'
import {InvalidInterfaceNameError, InvalidWireRequestError} from './errors.js'
import {ifNameProblem} from './names.js'
import {parseMac, podIp} from './rtnl.js'

/** Every host veth gets this MAC, so pods see one fixed next-hop MAC whatever node or veth they are on. */
export const HOST_VETH_MAC = 'ee:ee:ee:ee:ee:ee'
/** The pod's IPv4 next hop: a link-local address nobody owns; the host answers for it (proxy ARP / static neighbour). */
export const POD_GATEWAY_V4 = '169.254.1.1'
/** EUI-64 link-local of ee:ee:ee:ee:ee:ee: what the host veth's IPv6 link-local normally is. */
export const EXPECTED_HOST_LL_V6 = 'fe80::ecee:eeff:feee:eeee'

export interface WireRequest {
  /** Path of the pod's network namespace (CNI_NETNS); a bare name means /var/run/netns/<name>. */
  netns: string
  /** Pod-side name (CNI_IFNAME), created directly inside the pod netns. */
  ifName: string
  /** Host-side name (cali + 11 hex chars, see names.ts). */
  hostIfName: string
  /** Pod address without prefix; wired as /32. */
  ipv4?: string
  /** Pod address without prefix; wired as /128. */
  ipv6?: string
  /** 0 or undefined: the kernel default. */
  mtu?: number
  /** container_settings.allow_ip_forwarding: pod ip_forward / ipv6 forwarding = 1 instead of 0. */
  allowIpForwarding?: boolean
  /** Fixed pod-side MAC (cni.projectcalico.org/hwAddr); default kernel-chosen. */
  podMac?: string
  /** The attachment (container ID) this is for: wirePod records it on the host veth (names.ts hostLinkMarker). */
  owner?: string
  /**
   * A host link of that name that is not marked as `owner`'s may be deleted and replaced: only for Kubernetes names,
   * which are the pod's identity (one sandbox per pod; a new sandbox replaces the old one's veth, as upstream).
   * Otherwise only a leftover of the same attachment is replaced and any other link fails the ADD.
   */
  replaceOtherOwner?: boolean
  /**
   * A second interface of the pod (eth1…, another network): the default routes stay the primary interface's, so
   * this one gets only its addresses and a route per `podRoutes` CIDR through the host (docs/host-veths.md#names).
   */
  secondary?: boolean
  /** For a secondary interface: the CIDRs (masked, as IPAM reported them) the pod reaches through it. */
  podRoutes?: string[]
}

export interface CheckedRequest {
  netns: string
  ifName: string
  hostIfName: string
  v4?: Ip
  v6?: Ip
  mtu: number
  allowIpForwarding: boolean
  podMac?: Buffer
  secondary: boolean
  podRoutes: Cidr[]
}

export function checkIfName(name: string, what: string): void {
  const problem = ifNameProblem(name)
  if (problem) throw new InvalidInterfaceNameError(`invalid ${what}: ${problem}`)
}

export function checkRequest(req: WireRequest): CheckedRequest {
  checkIfName(req.ifName, 'pod interface name')
  checkIfName(req.hostIfName, 'host interface name')
  const mtu = req.mtu ?? 0
  if (!Number.isInteger(mtu) || mtu < 0 || mtu > 65535) throw new InvalidWireRequestError(`invalid MTU ${req.mtu}`)
  return {
    netns: req.netns,
    ifName: req.ifName,
    hostIfName: req.hostIfName,
    v4: req.ipv4 ? podIp(req.ipv4, 4) : undefined,
    v6: req.ipv6 ? podIp(req.ipv6, 6) : undefined,
    mtu,
    allowIpForwarding: req.allowIpForwarding ?? false,
    podMac: req.podMac ? parseMac(req.podMac) : undefined,
    secondary: req.secondary === true,
    podRoutes: (req.podRoutes ?? []).map((text) => {
      try {
        return parseCidr(text)
      } catch {
        throw new InvalidWireRequestError(`invalid pod route "${text}"`)
      }
    }),
  }
}
