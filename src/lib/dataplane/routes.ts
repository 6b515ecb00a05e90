// Host-side routes to pods: `<ip>/32|/128 dev <hostveth> scope link` in the main table (docs/calico.md#pod-wiring).
// A route to the same address on another link means an older pod leaked its veth or Felix routes the address
// elsewhere; upstream refuses to steal it and so do we.
import {formatIp, type Ip} from '../net/cidr.js'
import {RouteConflictError} from './errors.js'
import {afOf, findLink, ipBytes, isErrno, nlFailure, RT_SCOPE_LINK, RT_TABLE_MAIN, routesTo, type Rtnl} from './rtnl.js'
import {attr, NLM_F, RT_SCOPE, RTA, RTM, rtmsg, RTN_UNICAST, RTPROT_BOOT, type Route, u32Attr} from './rtnl-codec.js'

const prefixOf = (ip: Ip): number => (ip.family === 4 ? 32 : 128)
const dstText = (ip: Ip): string => `${formatIp(ip.family, ip.value)}/${prefixOf(ip)}`

export interface HostLink {
  index: number
  name: string
}

/**
 * Add the host route to `ip` via `link`. Returns true if this call created it, false if it was already there on
 * the same link. Throws RouteConflictError if the address is routed via another link.
 */
export async function addHostRoute(sock: Rtnl, ip: Ip, link: HostLink): Promise<boolean> {
  const dst = ipBytes(ip)
  // Look first: for IPv6 a same-destination route with another metric would not make the add fail with EEXIST.
  const existing = await routesTo(sock, ip.family, dst, prefixOf(ip))
  const foreign = existing.find((r) => r.oif !== link.index)
  if (foreign) throw await conflict(sock, ip, link, foreign)
  if (existing.length > 0) return false
  try {
    await sock.request(RTM.NEWROUTE, NLM_F.CREATE | NLM_F.EXCL, [
      rtmsg({
        family: afOf(ip.family),
        dstLen: prefixOf(ip),
        table: RT_TABLE_MAIN,
        protocol: RTPROT_BOOT,
        scope: RT_SCOPE.LINK,
        type: RTN_UNICAST,
      }),
      attr(RTA.DST, dst),
      u32Attr(RTA.OIF, link.index),
    ])
    return true
  } catch (error) {
    if (!isErrno(error, 'EEXIST'))
      throw nlFailure(
        `failed to add route (Ifindex: ${link.index}, Dst: ${dstText(ip)}, Scope: ${RT_SCOPE_LINK}, Iface: ${link.name})`,
        error,
      )
    // Raced with someone else adding it between the lookup and the add.
    const now = await routesTo(sock, ip.family, dst, prefixOf(ip))
    const other = now.find((r) => r.oif !== link.index)
    if (other) throw await conflict(sock, ip, link, other)
    return false
  }
}

/** Delete the route to `ip` if it goes via `ifIndex`; a route via another link is left alone. */
export async function deleteHostRoute(sock: Rtnl, ip: Ip, ifIndex: number): Promise<void> {
  const dst = ipBytes(ip)
  for (const r of await routesTo(sock, ip.family, dst, prefixOf(ip))) {
    if (r.oif !== ifIndex) continue
    try {
      await sock.request(RTM.DELROUTE, 0, [
        rtmsg({family: afOf(ip.family), dstLen: prefixOf(ip), table: RT_TABLE_MAIN, scope: RT_SCOPE.NOWHERE}),
        attr(RTA.DST, dst),
        u32Attr(RTA.OIF, ifIndex),
      ])
    } catch (error) {
      if (!isErrno(error, 'ESRCH', 'ENODEV'))
        throw nlFailure(`failed to delete route ${dstText(ip)} dev #${ifIndex}`, error)
    }
  }
}

async function conflict(sock: Rtnl, ip: Ip, link: HostLink, other: Route): Promise<RouteConflictError> {
  const otherIndex = other.oif ?? 0
  const otherName = otherIndex
    ? ((await findLink(sock, otherIndex).catch(() => undefined))?.ifname ?? 'unknown')
    : 'unknown'
  const dst = dstText(ip)
  return new RouteConflictError(
    `route (Ifindex: ${link.index}, Dst: ${dst}, Scope: ${RT_SCOPE_LINK}) already exists for an interface other than '${link.name}': ` +
      `route (Ifindex: ${otherIndex}, Dst: ${dst}, Scope: ${other.scope}, Iface: ${otherName})`,
    dst,
    otherIndex,
  )
}
