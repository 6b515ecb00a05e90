// Host-side routes to pods: `<ip>/32|/128 dev <hostveth> scope link` in the main table (reference §5.6).
// A route to the same address on another link means an older pod leaked its veth or Felix routes the address
// elsewhere; upstream refuses to steal it and so do we.
import {FlagsNew} from 'netlink'
import {formatIp, type Ip} from '../net/cidr.js'
import {RouteConflictError} from './errors.js'
import {
  afOf,
  findLinkByIndex,
  ipBytes,
  isErrno,
  nlFailure,
  RT_SCOPE_LINK,
  RT_TABLE_MAIN,
  routesTo,
  scopeNumber,
  type RouteMessage,
  type RtNetlinkSocket,
} from './rtnl.js'

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
export async function addHostRoute(sock: RtNetlinkSocket, ip: Ip, link: HostLink): Promise<boolean> {
  const dst = ipBytes(ip)
  // Look first: for IPv6 a same-destination route with another metric would not make the add fail with EEXIST.
  const existing = await routesTo(sock, ip.family, dst, prefixOf(ip))
  const foreign = existing.find((r) => r.attrs.oif !== link.index)
  if (foreign) throw await conflict(sock, ip, link, foreign)
  if (existing.length > 0) return false
  try {
    await sock.newRoute(
      {family: afOf(ip.family), dstLen: prefixOf(ip), table: RT_TABLE_MAIN, protocol: 'BOOT', scope: 'LINK', type: 'UNICAST'},
      {dst, oif: link.index},
      {flags: FlagsNew.CREATE | FlagsNew.EXCL},
    )
    return true
  } catch (error) {
    if (!isErrno(error, 'EEXIST')) throw nlFailure(`failed to add route (Ifindex: ${link.index}, Dst: ${dstText(ip)}, Scope: ${RT_SCOPE_LINK}, Iface: ${link.name})`, error)
    // Raced with someone else adding it between the lookup and the add.
    const now = await routesTo(sock, ip.family, dst, prefixOf(ip))
    const other = now.find((r) => r.attrs.oif !== link.index)
    if (other) throw await conflict(sock, ip, link, other)
    return false
  }
}

/** Delete the route to `ip` if it goes via `ifIndex`; a route via another link is left alone. */
export async function deleteHostRoute(sock: RtNetlinkSocket, ip: Ip, ifIndex: number): Promise<void> {
  const dst = ipBytes(ip)
  for (const r of await routesTo(sock, ip.family, dst, prefixOf(ip))) {
    if (r.attrs.oif !== ifIndex) continue
    try {
      await sock.delRoute({family: afOf(ip.family), dstLen: prefixOf(ip), table: RT_TABLE_MAIN, scope: 'NOWHERE'}, {dst, oif: ifIndex})
    } catch (error) {
      if (!isErrno(error, 'ESRCH', 'ENODEV')) throw nlFailure(`failed to delete route ${dstText(ip)} dev #${ifIndex}`, error)
    }
  }
}

async function conflict(sock: RtNetlinkSocket, ip: Ip, link: HostLink, other: RouteMessage): Promise<RouteConflictError> {
  const otherIndex = other.attrs.oif ?? 0
  const otherName = otherIndex ? ((await findLinkByIndex(sock, otherIndex).catch(() => undefined))?.attrs.ifname ?? 'unknown') : 'unknown'
  const dst = dstText(ip)
  return new RouteConflictError(
    `route (Ifindex: ${link.index}, Dst: ${dst}, Scope: ${RT_SCOPE_LINK}) already exists for an interface other than '${link.name}': ` +
      `route (Ifindex: ${otherIndex}, Dst: ${dst}, Scope: ${scopeNumber(other.data.scope)}, Iface: ${otherName})`,
    dst,
    otherIndex,
  )
}
