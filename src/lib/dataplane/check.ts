// CNI CHECK for the dataplane: is the pod still wired the way wirePod left it? Reports the first difference found,
// pod side first (that is what a tampering test or a crashed runtime usually breaks), then the host side.
import {formatIp, parseIp, type Ip} from '../net/cidr.js'
import {PodCheckError, type PodMismatch} from './errors.js'
import {checkRequest, POD_GATEWAY_V4, type WireRequest} from './layout.js'
import {openNetns} from './netns.js'
import {
  AF_INET,
  AF_INET6,
  afOf,
  findLink,
  formatMac,
  hostSocket,
  ipBytes,
  nl,
  routesTo,
  RT_TABLE_MAIN,
  socketIn,
  type Rtnl,
} from './rtnl.js'
import type {Link} from './rtnl-codec.js'

const fail = (mismatch: PodMismatch, message: string): never => {
  throw new PodCheckError(mismatch, message)
}

/**
 * Throws PodCheckError (with `mismatch`) for the first difference: link missing or down, wrong MTU or MAC, address
 * missing, route missing. Throws NetnsNotFoundError if the netns is gone. Resolves when everything is in place.
 */
export async function checkPod(req: WireRequest): Promise<void> {
  const r = checkRequest(req)
  const ns = openNetns(r.netns)
  let pod: Rtnl | undefined
  let host: Rtnl | undefined
  try {
    host = hostSocket()
    pod = socketIn(ns)
    const podLink = await findLink(pod, r.ifName)
    if (!podLink) return fail('pod-link-missing', `interface ${r.ifName} not found in netns ${r.netns}`)
    checkLink(podLink, r.ifName, 'pod')
    if (r.mtu > 0 && podLink.mtu !== r.mtu)
      fail('pod-link-mtu', `interface ${r.ifName} has MTU ${podLink.mtu}, expected ${r.mtu}`)
    if (r.podMac && !podLink.address?.equals(r.podMac)) {
      fail(
        'pod-link-mac',
        `interface ${r.ifName} has MAC ${formatMac(podLink.address)}, expected ${formatMac(r.podMac)}`,
      )
    }
    const podIndex = podLink.index
    for (const ip of [r.v4, r.v6]) if (ip) await checkAddress(pod, podIndex, r.ifName, ip)
    if (r.v4 && !r.secondary) {
      const gw = ipBytes(parseIp(POD_GATEWAY_V4))
      const onLink = await routesTo(pod, 4, gw, 32)
      if (!onLink.some((x) => x.oif === podIndex))
        fail('pod-route-missing', `route ${POD_GATEWAY_V4}/32 dev ${r.ifName} missing in the pod`)
      const defaults = await defaultRoutes(pod, AF_INET)
      if (!defaults.some((x) => x.oif === podIndex && x.gateway?.equals(gw))) {
        fail('pod-route-missing', `default route via ${POD_GATEWAY_V4} dev ${r.ifName} missing in the pod`)
      }
    }
    if (r.v6 && !r.secondary) {
      const defaults = await defaultRoutes(pod, AF_INET6)
      if (!defaults.some((x) => x.oif === podIndex && x.gateway?.[0] === 0xfe)) {
        fail('pod-route-missing', `IPv6 default route via a link-local gateway dev ${r.ifName} missing in the pod`)
      }
    }

    const hostLink = await findLink(host, r.hostIfName)
    if (!hostLink) return fail('host-link-missing', `host interface ${r.hostIfName} not found`)
    checkLink(hostLink, r.hostIfName, 'host')
    for (const ip of [r.v4, r.v6]) {
      if (!ip) continue
      const prefix = ip.family === 4 ? 32 : 128
      const routes = await routesTo(host, ip.family, ipBytes(ip), prefix)
      if (!routes.some((x) => x.oif === hostLink.index)) {
        fail('host-route-missing', `host route ${formatIp(ip.family, ip.value)}/${prefix} dev ${r.hostIfName} missing`)
      }
    }
  } finally {
    pod?.close()
    host?.close()
    ns.close()
  }
}

function checkLink(link: Link, name: string, where: 'pod' | 'host'): void {
  if (!link.up) fail(`${where}-link-down`, `${where} interface ${name} is down`)
}

async function checkAddress(pod: Rtnl, index: number, ifName: string, ip: Ip): Promise<void> {
  const bytes = ipBytes(ip)
  const prefix = ip.family === 4 ? 32 : 128
  const addrs = await nl('failed to list pod addresses', pod.addresses(afOf(ip.family)))
  const ok = addrs.some((a) => a.index === index && a.prefixlen === prefix && (a.local ?? a.address)?.equals(bytes))
  if (!ok)
    fail('pod-address-missing', `address ${formatIp(ip.family, ip.value)}/${prefix} missing on ${ifName} in the pod`)
}

async function defaultRoutes(sock: Rtnl, af: number) {
  const all = await nl('failed to list pod routes', sock.routes(af))
  return all.filter((x) => x.dstLen === 0 && x.table === RT_TABLE_MAIN)
}
