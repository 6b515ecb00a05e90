// Thin helpers over the `netlink` package (0.3.0, pinned: its API is not stable): sockets per namespace, errno
// extraction, address and MAC encoding, and link/route lookups used by veth.ts, routes.ts and checkPod.
import {createRtNetlink, type RtNetlinkSocket, type rt, type ifla} from 'netlink'
import {formatIp, parseIp, type Family, type Ip} from '../net/cidr.js'
import {DataplaneError, InvalidWireRequestError} from './errors.js'
import type {NetnsHandle} from './netns.js'

export type {RtNetlinkSocket}
export type LinkMessage = rt.LinkMessage
export type RouteMessage = rt.RouteMessage
export type AddressMessage = rt.AddressMessage
export type LinkAttrs = ifla.LinkAttrs

export const AF_INET = 2
export const AF_INET6 = 10
export const RT_TABLE_MAIN = 254
export const RT_SCOPE_UNIVERSE = 0
export const RT_SCOPE_LINK = 253

export const afOf = (family: Family): number => (family === 4 ? AF_INET : AF_INET6)

/** A socket in the calling thread's namespace (the host, outside inNetns). */
export const hostSocket = (): RtNetlinkSocket => createRtNetlink()

/** A socket bound to `ns`: created while switched, it keeps talking to that namespace afterwards. */
export const socketIn = (ns: NetnsHandle): RtNetlinkSocket => ns.run(() => createRtNetlink())

/**
 * The errno name of a failed netlink request. netlink 0.3.0 rejects with a plain
 * `Error('Request rejected: EEXIST')`, so the code is recovered from the message.
 */
export function nlErrno(error: unknown): string | undefined {
  const m = /Request rejected: (\w+)/.exec((error as Error)?.message ?? '')
  return m?.[1]
}

export const isErrno = (error: unknown, ...codes: string[]): boolean => codes.includes(nlErrno(error) ?? '')

/** Wrap a failed request into a DataplaneError that says what we were doing. */
export function nlFailure(what: string, error: unknown): DataplaneError {
  const code = nlErrno(error)
  return new DataplaneError(`${what}: ${code ?? (error as Error)?.message ?? String(error)}`, code, {cause: error})
}

/** Run a request; on failure throw a DataplaneError naming the operation. */
export async function nl<T>(what: string, request: Promise<T>): Promise<T> {
  try {
    return await request
  } catch (error) {
    throw nlFailure(what, error)
  }
}

export function ipBytes(ip: Ip): Buffer {
  const bytes = ip.family === 4 ? 4 : 16
  const out = Buffer.alloc(bytes)
  let v = ip.value
  for (let i = bytes - 1; i >= 0; i--) {
    out[i] = Number(v & 0xffn)
    v >>= 8n
  }
  return out
}

export function bytesToIp(buf: Buffer): string {
  let v = 0n
  for (const b of buf) v = (v << 8n) | BigInt(b)
  return formatIp(buf.length === 4 ? 4 : 6, v)
}

/** Parse a pod address of the given family; wrong family or bad text is a request error. */
export function podIp(text: string, family: Family): Ip {
  let ip: Ip
  try {
    ip = parseIp(text)
  } catch {
    throw new InvalidWireRequestError(`invalid IPv${family} address "${text}"`)
  }
  if (ip.family !== family) throw new InvalidWireRequestError(`"${text}" is not an IPv${family} address`)
  return ip
}

export function parseMac(text: string): Buffer {
  if (!/^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$/.test(text)) throw new InvalidWireRequestError(`invalid MAC address "${text}"`)
  return Buffer.from(text.split(':').map((h) => parseInt(h, 16)))
}

export const formatMac = (buf: Buffer | undefined): string => (buf ? [...buf].map((b) => b.toString(16).padStart(2, '0')).join(':') : '')

/** The link named `name`, or undefined. RTM_GETLINK by IFLA_IFNAME: one round trip, no dump. */
export async function findLink(sock: RtNetlinkSocket, name: string): Promise<LinkMessage | undefined> {
  try {
    const [link] = await sock.getLink({}, {ifname: name})
    return link
  } catch (error) {
    if (isErrno(error, 'ENODEV')) return undefined
    throw nlFailure(`failed to look up link ${name}`, error)
  }
}

export async function findLinkByIndex(sock: RtNetlinkSocket, index: number): Promise<LinkMessage | undefined> {
  try {
    const [link] = await sock.getLink({index})
    return link
  } catch (error) {
    if (isErrno(error, 'ENODEV')) return undefined
    throw nlFailure(`failed to look up link #${index}`, error)
  }
}

export async function setUp(sock: RtNetlinkSocket, index: number, name: string): Promise<void> {
  await nl(`failed to set ${name} up`, sock.setLink({index, flags: {up: true}, change: {up: true}}))
}

/** Delete a link by index; a link that is already gone is fine. */
export async function deleteLink(sock: RtNetlinkSocket, index: number, name: string): Promise<void> {
  try {
    await sock.delLink({index})
  } catch (error) {
    if (isErrno(error, 'ENODEV')) return
    throw nlFailure(`failed to delete link ${name}`, error)
  }
}

/** Main-table routes of one family whose destination is exactly `dst`/`dstLen`. */
export async function routesTo(sock: RtNetlinkSocket, family: Family, dst: Buffer, dstLen: number): Promise<RouteMessage[]> {
  // Dump filters in the request are ignored by kernels without strict checking, so filter here.
  const all = await nl('failed to list routes', sock.getRoutes({family: afOf(family)}))
  return all.filter(
    (r) =>
      r.data.dstLen === dstLen &&
      (r.data.table ?? 0) === RT_TABLE_MAIN &&
      (r.attrs.table === undefined || r.attrs.table === RT_TABLE_MAIN) &&
      r.attrs.dst !== undefined &&
      r.attrs.dst.equals(dst),
  )
}

/** Numeric scope of a parsed route (the package returns the enum value, or its name for known values). */
export function scopeNumber(scope: rt.Route['scope']): number {
  if (typeof scope === 'number') return scope
  const names: Record<string, number> = {UNIVERSE: 0, SITE: 200, LINK: 253, HOST: 254, NOWHERE: 255}
  return scope === undefined ? 0 : (names[scope] ?? 0)
}
