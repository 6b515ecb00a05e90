// Wiring a pod the way Calico's CNI plugin does (docs/calico.md#pod-wiring): a veth pair whose pod end is CNI_IFNAME in
// the pod netns and whose host end is cali…, /32 and /128 pod addresses, a default route via a fake next hop the host
// answers for, and a host route per pod address. All netlink work goes through two sockets, one per namespace (see
// netns.ts); nothing awaits while the thread is switched.
import {formatIp, parseIp, type Ip} from '../net/cidr.js'
import {DataplaneError, InterfaceExistsError, NetnsNotFoundError} from './errors.js'
import {
  checkIfName,
  checkRequest,
  EXPECTED_HOST_LL_V6,
  HOST_VETH_MAC,
  POD_GATEWAY_V4,
  type CheckedRequest,
  type WireRequest,
} from './layout.js'
import {hostLinkMarker, isHostLinkMarker} from './names.js'
import {openNetns, type NetnsHandle} from './netns.js'
import {addHostRoute, deleteHostRoute, type HostLink} from './routes.js'
import {
  afOf,
  AF_INET,
  AF_INET6,
  bytesToIp,
  deleteLink,
  findLink,
  formatMac,
  hostSocket,
  ipBytes,
  isErrno,
  nl,
  nlFailure,
  parseMac,
  RT_TABLE_MAIN,
  setAlias,
  setMac,
  setUp,
  socketIn,
  type Rtnl,
} from './rtnl.js'
import {
  IFA,
  IFA_F_NODAD,
  IFLA,
  IFLA_INFO,
  ifaddrmsg,
  ifinfomsg,
  NDA,
  ndmsg,
  nested,
  NLM_F,
  NUD_PERMANENT,
  RT_SCOPE,
  RTA,
  RTM,
  rtmsg,
  RTN_UNICAST,
  RTNH_F_ONLINK,
  RTPROT_BOOT,
  strAttr,
  u32Attr,
  attr,
  VETH_INFO_PEER,
  type Link,
} from './rtnl-codec.js'
import {writeSysctl, writeSysctlsIn, type SysctlKey} from './sysctl.js'

export interface WireResult {
  hostIfName: string
  hostMac: string
  podIfName: string
  podMac: string
  /** The pod link's MTU as the kernel reports it (the kernel default when the request had none). */
  mtu: number
  /** The netns the pod interface lives in, as given in the request (CNI result `sandbox`). */
  sandbox: string
  /** Non-fatal problems (a sysctl upstream also only warns about, a host MAC that would not stick). */
  warnings: string[]
}

export interface UnwireRequest {
  /** Unset or already deleted is fine: the host veth is then removed by name, if it is this attachment's. */
  netns?: string
  ifName: string
  hostIfName: string
  ipv4?: string
  ipv6?: string
  /** The attachment (container ID): a host link marked for another attachment is never deleted. */
  owner?: string
  /**
   * Whether a host link of that name WITHOUT an ipamctl marker (made by upstream Calico or an older ipamctl) is
   * taken as this attachment's: the caller knows, e.g. from this attachment's WorkloadEndpoint record naming it.
   * Default true (callers without a record, such as tests of the dataplane alone).
   */
  claimUnmarked?: boolean
}

/** What unwirePod did with the host side. */
export type UnwireOutcome = 'deleted-with-pod' | 'deleted' | 'absent' | 'not-ours'

/**
 * Pauses between looks for the host veth's IPv6 link-local. Upstream polls 10× at 50 ms; the address usually
 * appears within a few ms of carrier-up, so start short and keep upstream's ~0.5 s budget.
 */
const LL_POLL_DELAYS_MS = [2, 5, 10, 25, 50, 50, 50, 50, 50, 50, 50, 50, 50]

/** The pod's network namespace, opened with a netlink socket inside it, its CNI_IFNAME known to be free. */
export interface PodSide {
  readonly ns: NetnsHandle
  readonly sock: Rtnl
  /** Idempotent; wirePod closes the side it is given. */
  close(): void
}

/**
 * Open the pod side of a future wirePod: NetnsNotFoundError if `netns` is missing or not a network namespace,
 * InterfaceExistsError if `ifName` is taken (CNI: ADD must fail then). The CNI plugin does this before it
 * allocates, so that such an ADD changes nothing in the datastore; wirePod then reuses it.
 */
export async function openPodSide(netns: string, ifName: string): Promise<PodSide> {
  const ns = openNetns(netns)
  let sock: Rtnl | undefined
  let open = true
  const close = () => {
    if (!open) return
    open = false
    sock?.close()
    ns.close()
  }
  try {
    sock = socketIn(ns)
    if (await findLink(sock, ifName)) throw new InterfaceExistsError(ifName, 'pod')
  } catch (error) {
    close()
    throw error
  }
  return {ns, sock, close}
}

/** Who a host link belongs to, for messages: the container its marker names, else "something else". */
function ownerText(link: Link): string {
  if (!isHostLinkMarker(link.alias)) return 'something other than ipamctl (it has no ipamctl marker)'
  return `container ${link.alias!.slice(link.alias!.indexOf(':') + 1)}`
}

/**
 * The ownership rule for an existing host link named like the one an ADD is about to create: it may be replaced
 * if it is a leftover of the same attachment (its marker names `owner`), or if the request allows replacing
 * another owner's (Kubernetes names). Anything else is InterfaceExistsError: never delete another attachment's veth.
 */
function assertReplaceable(link: Link, req: Pick<WireRequest, 'hostIfName' | 'owner' | 'replaceOtherOwner'>): void {
  if (req.replaceOtherOwner) return
  if (req.owner !== undefined && link.alias === hostLinkMarker(req.owner)) return
  throw new InterfaceExistsError(
    req.hostIfName,
    'host',
    `interface "${req.hostIfName}" already exists on the host and belongs to ${ownerText(link)}; not replacing it`,
  )
}

/**
 * Fail early (before IPAM) when the host veth name is taken by a link this request may not replace (see
 * assertReplaceable). wirePod checks again: this is only so that such an ADD changes nothing in the datastore.
 */
export async function checkHostLinkReplaceable(
  req: Pick<WireRequest, 'hostIfName' | 'owner' | 'replaceOtherOwner'>,
): Promise<void> {
  checkIfName(req.hostIfName, 'host interface name')
  const host = hostSocket()
  try {
    const link = await findLink(host, req.hostIfName)
    if (link) assertReplaceable(link, req)
  } finally {
    host.close()
  }
}

/**
 * Create and configure the pod's veth pair, addresses and routes. On any failure everything this call created is
 * removed again before the error is rethrown. Throws NetnsNotFoundError, InterfaceExistsError,
 * RouteConflictError, InvalidInterfaceNameError / InvalidWireRequestError or DataplaneError. `side`: the pod side
 * already opened for `req` (openPodSide); wirePod opens it itself when not given, and closes it either way.
 */
export async function wirePod(req: WireRequest, side?: PodSide): Promise<WireResult> {
  let r: CheckedRequest
  try {
    r = checkRequest(req)
  } catch (error) {
    side?.close()
    throw error
  }
  // CNI: ADD must fail if CNI_IFNAME exists; openPodSide checks that before the host is touched.
  const opened = side ?? (await openPodSide(r.netns, r.ifName))
  const {ns, sock: pod} = opened
  let host: Rtnl | undefined
  const warnings: string[] = []
  // What to undo on failure. The pod end needs no entry: deleting either end of a veth deletes both.
  let created: HostLink | undefined
  const routesAdded: Ip[] = []
  try {
    host = hostSocket()
    const stale = await findLink(host, r.hostIfName)
    if (stale) {
      assertReplaceable(stale, req)
      await deleteLink(host, stale.index, r.hostIfName)
    }

    await createVeth(host, pod, ns, r)
    created = {index: 0, name: r.hostIfName} // index 0 until looked up: rollback then deletes by name
    let hostLink = await mustFindLink(host, r.hostIfName, 'host')
    created.index = hostLink.index
    // The kernel ignores IFLA_IFALIAS in RTM_NEWLINK, hence a second request. Until it lands the link is
    // unmarked, which every other attachment treats as not theirs (see assertReplaceable / unwirePod).
    if (req.owner !== undefined) await setAlias(host, created.index, r.hostIfName, hostLinkMarker(req.owner))
    hostLink = await ensureHostMac(host, hostLink, warnings)
    const hostMac = hostLink.address!
    const podLink = await mustFindLink(pod, r.ifName, 'pod')
    const podIndex = podLink.index

    // Pod sysctls that must precede link-up: without accept_dad=0 the /128 would sit in DAD ("tentative").
    if (r.v6) writeSysctlsIn(ns, podV6Sysctls(r.ifName))
    hostSysctls(r, warnings)

    await setUp(host, created.index, r.hostIfName)
    await setUp(pod, podIndex, r.ifName)

    if (r.secondary) {
      const ll = r.v6 ? await hostLinkLocal(host, created.index, r.hostIfName, warnings) : undefined
      await podSecondaryRoutes(pod, podIndex, r, hostMac, ll)
    } else {
      if (r.v4) await podRoutesV4(pod, podIndex, r.ifName, hostMac)
      if (r.v6) {
        const ll = await hostLinkLocal(host, created.index, r.hostIfName, warnings)
        await podDefaultRouteV6(pod, podIndex, r.ifName, ll)
      }
    }
    for (const ip of [r.v4, r.v6]) if (ip) await addPodAddress(pod, podIndex, r.ifName, ip)
    writeSysctlsIn(ns, podForwardingSysctls(r))

    for (const ip of [r.v4, r.v6]) {
      if (ip && (await addHostRoute(host, ip, created))) routesAdded.push(ip)
    }

    // The pod link as read right after creation: its MAC and MTU were fixed then (nothing here changes them).
    return {
      hostIfName: r.hostIfName,
      hostMac: formatMac(hostMac),
      podIfName: r.ifName,
      podMac: formatMac(podLink.address),
      mtu: podLink.mtu ?? 0,
      sandbox: req.netns,
      warnings,
    }
  } catch (error) {
    if (created && host) await rollback(host, created, routesAdded, error)
    throw error
  } finally {
    host?.close()
    opened.close()
  }
}

/**
 * Remove the pod's interfaces. Idempotent: a missing netns, link or route is success. The pod end is deleted inside
 * the netns (which takes the host end with it); only when that did not happen (netns unset or gone, pod end
 * missing) is the host veth deleted by name, with its routes to the pod's addresses, and only if it is this
 * attachment's: marked for `owner`, or unmarked and `claimUnmarked`. Another attachment's link is left alone
 * ('not-ours').
 */
export async function unwirePod(req: UnwireRequest): Promise<UnwireOutcome> {
  checkIfName(req.ifName, 'pod interface name')
  checkIfName(req.hostIfName, 'host interface name')
  let podDeleted = false
  if (req.netns) {
    let ns: NetnsHandle | undefined
    try {
      ns = openNetns(req.netns)
    } catch (error) {
      if (!(error instanceof NetnsNotFoundError)) throw error
    }
    if (ns) {
      let pod: Rtnl | undefined
      try {
        pod = socketIn(ns)
        const link = await findLink(pod, req.ifName)
        if (link) {
          await deleteLink(pod, link.index, req.ifName)
          podDeleted = true
        }
      } finally {
        pod?.close()
        ns.close()
      }
    }
  }
  if (podDeleted) return 'deleted-with-pod'
  const host = hostSocket()
  try {
    const link = await findLink(host, req.hostIfName)
    if (!link) return 'absent'
    const ours = isHostLinkMarker(link.alias)
      ? req.owner !== undefined && link.alias === hostLinkMarker(req.owner)
      : req.claimUnmarked !== false
    if (!ours) return 'not-ours'
    const index = link.index
    // The kernel drops a link's routes with it; deleting them first only narrows the window in which they point
    // at a dying device. Routes to these addresses via other links are not ours and stay.
    for (const text of [req.ipv4, req.ipv6]) if (text) await deleteHostRoute(host, parseIp(text), index)
    await deleteLink(host, index, req.hostIfName)
    return 'deleted'
  } finally {
    host.close()
  }
}

// ---------------------------------------------------------------------------------------------------------------

/**
 * One RTM_NEWLINK from the host socket: host end `hostIfName` here, peer `ifName` created directly in the pod
 * netns (IFLA_NET_NS_FD in the peer's attributes). Creating the peer in the host and moving it would collide with
 * the host's own eth0.
 */
async function createVeth(host: Rtnl, pod: Rtnl, ns: NetnsHandle, r: CheckedRequest): Promise<void> {
  const mtu = r.mtu > 0 ? [u32Attr(IFLA.MTU, r.mtu)] : []
  const peer = [
    ifinfomsg(),
    strAttr(IFLA.IFNAME, r.ifName),
    u32Attr(IFLA.NET_NS_FD, ns.fd),
    ...mtu,
    ...(r.podMac ? [attr(IFLA.ADDRESS, r.podMac)] : []),
  ]
  const linkinfo = nested(IFLA.LINKINFO, [
    strAttr(IFLA_INFO.KIND, 'veth'),
    nested(IFLA_INFO.DATA, [nested(VETH_INFO_PEER, peer)]),
  ])
  try {
    await host.request(RTM.NEWLINK, NLM_F.CREATE | NLM_F.EXCL, [
      ifinfomsg(),
      strAttr(IFLA.IFNAME, r.hostIfName),
      attr(IFLA.ADDRESS, parseMac(HOST_VETH_MAC)),
      ...mtu,
      linkinfo,
    ])
  } catch (error) {
    if (isErrno(error, 'EEXIST')) {
      // Someone created either name since we looked (a concurrent ADD for the same pod).
      if (await findLink(pod, r.ifName)) throw new InterfaceExistsError(r.ifName, 'pod')
      if (await findLink(host, r.hostIfName)) throw new InterfaceExistsError(r.hostIfName, 'host')
    }
    throw nlFailure(`failed to create veth pair ${r.hostIfName} <-> ${r.ifName}`, error)
  }
}

async function mustFindLink(sock: Rtnl, name: string, where: 'host' | 'pod'): Promise<Link> {
  const link = await findLink(sock, name)
  if (!link) throw new DataplaneError(`${where} interface ${name} vanished while it was being configured`, 'ENODEV')
  return link
}

/** The MAC is set at creation; read it back, retry once, and otherwise keep the kernel's (upstream does the same). */
async function ensureHostMac(host: Rtnl, link: Link, warnings: string[]): Promise<Link> {
  if (formatMac(link.address) === HOST_VETH_MAC) return link
  const name = link.ifname ?? `#${link.index}`
  try {
    await setMac(host, link.index, parseMac(HOST_VETH_MAC))
  } catch (error) {
    warnings.push(
      `could not set MAC ${HOST_VETH_MAC} on ${name}: ${nlFailure('setLink', error).message}; using ${formatMac(link.address)}`,
    )
    return link
  }
  const again = await mustFindLink(host, name, 'host')
  if (formatMac(again.address) !== HOST_VETH_MAC)
    warnings.push(`MAC of ${name} did not stick; using ${formatMac(again.address)}`)
  return again
}

const conf = (family: 'ipv4' | 'ipv6', ifName: string, leaf: string): SysctlKey => ['net', family, 'conf', ifName, leaf]

function podV6Sysctls(ifName: string): Array<[SysctlKey, string]> {
  return [
    // A pod netns may start with IPv6 disabled (container runtimes do that for v4-only pods).
    [conf('ipv6', 'all', 'disable_ipv6'), '0'],
    [conf('ipv6', 'default', 'disable_ipv6'), '0'],
    [conf('ipv6', 'lo', 'disable_ipv6'), '0'],
    [conf('ipv6', ifName, 'disable_ipv6'), '0'],
    [conf('ipv6', ifName, 'accept_dad'), '0'],
  ]
}

function podForwardingSysctls(r: CheckedRequest): Array<[SysctlKey, string]> {
  const v = r.allowIpForwarding ? '1' : '0'
  const out: Array<[SysctlKey, string]> = []
  if (r.v4) out.push([['net', 'ipv4', 'ip_forward'], v])
  if (r.v6) out.push([conf('ipv6', 'all', 'forwarding'), v])
  return out
}

/** Host-side sysctls for the veth (host netns: the thread is not switched here). */
function hostSysctls(r: CheckedRequest, warnings: string[]): void {
  const bestEffort = (key: SysctlKey, value: string): void => {
    try {
      writeSysctl(key, value)
    } catch (error) {
      warnings.push((error as Error).message)
    }
  }
  const veth = r.hostIfName
  if (r.v4) {
    // Let the pod reach host services bound to 127.0.0.1 via DNAT (Felix relies on it).
    writeSysctl(conf('ipv4', veth, 'route_localnet'), '1')
    // Answer ARP for 169.254.1.1 at once instead of after the default random 0–800 ms.
    bestEffort(['net', 'ipv4', 'neigh', veth, 'proxy_delay'], '0')
    writeSysctl(conf('ipv4', veth, 'proxy_arp'), '1')
    writeSysctl(conf('ipv4', veth, 'forwarding'), '1')
  }
  if (r.v6) {
    writeSysctl(conf('ipv6', veth, 'accept_dad'), '0')
    writeSysctl(conf('ipv6', veth, 'disable_ipv6'), '0')
    writeSysctl(conf('ipv6', veth, 'proxy_ndp'), '1')
    writeSysctl(conf('ipv6', veth, 'forwarding'), '1')
  }
  // The host must never take a default route from something a pod sends.
  bestEffort(conf('ipv6', veth, 'accept_ra'), '0')
}

/** `169.254.1.1 dev <if> scope link`, `default via 169.254.1.1 dev <if>`, and a permanent neighbour for it. */
async function podRoutesV4(pod: Rtnl, index: number, ifName: string, hostMac: Buffer): Promise<void> {
  const gw = ipBytes(parseIp(POD_GATEWAY_V4))
  await nl(
    `failed to add route ${POD_GATEWAY_V4}/32 dev ${ifName} in the pod`,
    newPodRoute(pod, AF_INET, 32, RT_SCOPE.LINK, [attr(RTA.DST, gw), u32Attr(RTA.OIF, index)]),
  )
  await nl(
    `failed to add default route via ${POD_GATEWAY_V4} dev ${ifName} in the pod`,
    newPodRoute(pod, AF_INET, 0, RT_SCOPE.UNIVERSE, [attr(RTA.GATEWAY, gw), u32Attr(RTA.OIF, index)]),
  )
  // Proxy ARP on the host only answers when the host forwards (ip_forward=1); a static entry makes host <-> pod
  // traffic work regardless, and saves the first ARP round trip.
  await nl(
    `failed to add neighbour ${POD_GATEWAY_V4} in the pod`,
    pod.request(RTM.NEWNEIGH, NLM_F.CREATE | NLM_F.REPLACE, [
      ndmsg({family: AF_INET, ifindex: index, state: NUD_PERMANENT}),
      attr(NDA.DST, gw),
      attr(NDA.LLADDR, hostMac),
    ]),
  )
}

/**
 * A secondary interface: the primary one holds the default routes (a second `default via 169.254.1.1` would
 * collide with it), so this one gets a route per CIDR of its network via the same fake next hop, marked on-link
 * (no /32 route to 169.254.1.1 on this interface either), and the static neighbour for it.
 */
async function podSecondaryRoutes(
  pod: Rtnl,
  index: number,
  r: CheckedRequest,
  hostMac: Buffer,
  ll: Buffer | undefined,
): Promise<void> {
  const gw4 = ipBytes(parseIp(POD_GATEWAY_V4))
  if (r.v4)
    await nl(
      `failed to add neighbour ${POD_GATEWAY_V4} in the pod`,
      pod.request(RTM.NEWNEIGH, NLM_F.CREATE | NLM_F.REPLACE, [
        ndmsg({family: AF_INET, ifindex: index, state: NUD_PERMANENT}),
        attr(NDA.DST, gw4),
        attr(NDA.LLADDR, hostMac),
      ]),
    )
  for (const c of r.podRoutes) {
    const gw = c.family === 4 ? (r.v4 ? gw4 : undefined) : ll
    if (!gw || c.prefix === 0) continue
    const dst = ipBytes({family: c.family, value: c.base})
    await nl(
      `failed to add route ${formatIp(c.family, c.base)}/${c.prefix} dev ${r.ifName} in the pod`,
      newPodRoute(
        pod,
        afOf(c.family),
        c.prefix,
        RT_SCOPE.UNIVERSE,
        [attr(RTA.DST, dst), attr(RTA.GATEWAY, gw), u32Attr(RTA.OIF, index)],
        c.family === 4 ? RTNH_F_ONLINK : 0,
      ),
    )
  }
}

/** A new main-table unicast route (proto boot, as upstream's netlink.RouteAdd leaves it); EEXIST if present. */
const newPodRoute = (
  sock: Rtnl,
  family: number,
  dstLen: number,
  scope: number,
  attrs: Buffer[],
  flags = 0,
): Promise<unknown> =>
  sock.request(RTM.NEWROUTE, NLM_F.CREATE | NLM_F.EXCL, [
    rtmsg({family, dstLen, table: RT_TABLE_MAIN, protocol: RTPROT_BOOT, scope, type: RTN_UNICAST, flags}),
    ...attrs,
  ])

/** The host veth's IPv6 link-local; it appears once both ends are up (carrier), so poll for it like upstream does. */
async function hostLinkLocal(host: Rtnl, index: number, name: string, warnings: string[]): Promise<Buffer> {
  let found: Buffer | undefined
  for (let attempt = 0; ; attempt++) {
    const addrs = await nl(`failed to list addresses of ${name}`, host.addresses(AF_INET6))
    found = addrs.find((a) => a.index === index && a.address?.[0] === 0xfe && (a.address[1]! & 0xc0) === 0x80)?.address
    if (found || attempt >= LL_POLL_DELAYS_MS.length) break
    await new Promise((resolve) => setTimeout(resolve, LL_POLL_DELAYS_MS[attempt]))
  }
  if (!found) {
    const waited = LL_POLL_DELAYS_MS.reduce((a, b) => a + b, 0)
    throw new DataplaneError(
      `host interface ${name} has no IPv6 link-local address after ${waited} ms (is IPv6 disabled on the host?)`,
    )
  }
  const text = bytesToIp(found)
  if (text !== EXPECTED_HOST_LL_V6)
    warnings.push(`${name} has link-local ${text}, not ${EXPECTED_HOST_LL_V6}; using it as the pod's IPv6 gateway`)
  return found
}

async function podDefaultRouteV6(pod: Rtnl, index: number, ifName: string, gateway: Buffer): Promise<void> {
  await nl(
    `failed to add default route via ${bytesToIp(gateway)} dev ${ifName} in the pod`,
    newPodRoute(pod, AF_INET6, 0, RT_SCOPE.UNIVERSE, [attr(RTA.GATEWAY, gateway), u32Attr(RTA.OIF, index)]),
  )
}

async function addPodAddress(pod: Rtnl, index: number, ifName: string, ip: Ip): Promise<void> {
  const bytes = ipBytes(ip)
  const prefixlen = ip.family === 4 ? 32 : 128
  await nl(
    `failed to add address ${formatIp(ip.family, ip.value)}/${prefixlen} to ${ifName} in the pod`,
    pod.request(RTM.NEWADDR, NLM_F.CREATE | NLM_F.REPLACE, [
      ifaddrmsg({family: afOf(ip.family), prefixlen, index, flags: ip.family === 6 ? IFA_F_NODAD : 0}),
      attr(IFA.LOCAL, bytes),
      attr(IFA.ADDRESS, bytes),
    ]),
  )
}

/** Undo a failed wirePod: its host routes, then the veth pair. Errors here must not mask the original one. */
async function rollback(host: Rtnl, link: HostLink, routes: Ip[], cause: unknown): Promise<void> {
  const problems: string[] = []
  try {
    const index = link.index || (await findLink(host, link.name))?.index
    if (index) {
      for (const ip of routes) await deleteHostRoute(host, ip, index).catch((e: Error) => problems.push(e.message))
      await deleteLink(host, index, link.name)
    }
  } catch (error) {
    problems.push((error as Error).message)
  }
  if (problems.length > 0 && cause instanceof Error) cause.message += ` (cleanup also failed: ${problems.join('; ')})`
}
