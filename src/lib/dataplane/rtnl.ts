// The dataplane's netlink: sockets per namespace, the requests wirePod / unwirePod / checkPod make, errno
// extraction and address/MAC encoding. The socket is the `netlink` package's (0.3.0, pinned: its API is not
// stable): sequence numbers, multipart replies, error ACKs. The messages are ours (rtnl-codec.ts).
import {createNetlink, type NetlinkSocket} from 'netlink/dist/netlink.js'
import {formatIp, parseIp, type Family, type Ip} from '../net/cidr.js'
import {DataplaneError, InvalidWireRequestError} from './errors.js'
import type {NetnsHandle} from './netns.js'
import {
  decodeAddress,
  decodeLink,
  decodeRoute,
  IFF_UP,
  IFLA,
  ifaddrmsg,
  ifinfomsg,
  NLM_F,
  RT_SCOPE,
  RTM,
  rtmsg,
  strAttr,
  attr,
  type Address,
  type Link,
  type Route,
} from './rtnl-codec.js'

export const AF_INET = 2
export const AF_INET6 = 10
export const RT_TABLE_MAIN = 254
export const RT_SCOPE_LINK = RT_SCOPE.LINK

export const afOf = (family: Family): number => (family === 4 ? AF_INET : AF_INET6)

const NETLINK_ROUTE = 0

/** An rtnetlink socket in one network namespace (the one it was created in). */
export class Rtnl {
  constructor(private readonly sock: NetlinkSocket) {}

  close(): void {
    this.sock.close()
  }

  /** One request (REQUEST|ACK plus `flags`): the payloads of the reply messages, none for a bare ACK. */
  async request(type: number, flags: number, parts: Buffer[]): Promise<Buffer[]> {
    const [msgs] = await this.sock.request(type, parts, {flags})
    return msgs.map((m) => m.data)
  }

  async getLink(by: {name: string} | {index: number}): Promise<Link | undefined> {
    const parts = 'name' in by ? [ifinfomsg(), strAttr(IFLA.IFNAME, by.name)] : [ifinfomsg({index: by.index})]
    const [reply] = await this.request(RTM.GETLINK, 0, parts)
    return reply && decodeLink(reply)
  }

  async links(): Promise<Link[]> {
    return (await this.request(RTM.GETLINK, NLM_F.DUMP, [ifinfomsg()])).map(decodeLink)
  }

  async routes(family: number): Promise<Route[]> {
    return (await this.request(RTM.GETROUTE, NLM_F.DUMP, [rtmsg({family})])).map(decodeRoute)
  }

  async addresses(family: number): Promise<Address[]> {
    return (await this.request(RTM.GETADDR, NLM_F.DUMP, [ifaddrmsg({family})])).map(decodeAddress)
  }
}

/** A socket in the calling thread's namespace (the host, outside inNetns). */
export const hostSocket = (): Rtnl => new Rtnl(createNetlink(NETLINK_ROUTE))

/** A socket bound to `ns`: created while switched, it keeps talking to that namespace afterwards. */
export const socketIn = (ns: NetnsHandle): Rtnl => ns.run(() => new Rtnl(createNetlink(NETLINK_ROUTE)))

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
  if (!/^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$/.test(text))
    throw new InvalidWireRequestError(`invalid MAC address "${text}"`)
  return Buffer.from(text.split(':').map((h) => parseInt(h, 16)))
}

export const formatMac = (buf: Buffer | undefined): string =>
  buf ? [...buf].map((b) => b.toString(16).padStart(2, '0')).join(':') : ''

/** The link named `name` (RTM_GETLINK by IFLA_IFNAME: one round trip, no dump) or with that index; undefined if none. */
export async function findLink(sock: Rtnl, by: string | number): Promise<Link | undefined> {
  try {
    return await sock.getLink(typeof by === 'string' ? {name: by} : {index: by})
  } catch (error) {
    if (isErrno(error, 'ENODEV')) return undefined
    throw nlFailure(`failed to look up link ${typeof by === 'string' ? by : `#${by}`}`, error)
  }
}

export async function setUp(sock: Rtnl, index: number, name: string): Promise<void> {
  await nl(
    `failed to set ${name} up`,
    sock.request(RTM.SETLINK, 0, [ifinfomsg({index, flags: IFF_UP, change: IFF_UP})]),
  )
}

export async function setMac(sock: Rtnl, index: number, mac: Buffer): Promise<void> {
  await sock.request(RTM.SETLINK, 0, [ifinfomsg({index}), attr(IFLA.ADDRESS, mac)])
}

/** Set the link's alias (IFLA_IFALIAS; the kernel ignores it in RTM_NEWLINK, so it is a separate request). */
export async function setAlias(sock: Rtnl, index: number, name: string, alias: string): Promise<void> {
  await nl(
    `failed to set the alias of ${name}`,
    sock.request(RTM.SETLINK, 0, [ifinfomsg({index}), strAttr(IFLA.IFALIAS, alias)]),
  )
}

/** Delete a link by index; a link that is already gone is fine. */
export async function deleteLink(sock: Rtnl, index: number, name: string): Promise<void> {
  try {
    await sock.request(RTM.DELLINK, 0, [ifinfomsg({index})])
  } catch (error) {
    if (isErrno(error, 'ENODEV')) return
    throw nlFailure(`failed to delete link ${name}`, error)
  }
}

/** Main-table routes of one family whose destination is exactly `dst`/`dstLen`. */
export async function routesTo(sock: Rtnl, family: Family, dst: Buffer, dstLen: number): Promise<Route[]> {
  // Dump filters in the request are ignored by kernels without strict checking, so filter here.
  const all = await nl('failed to list routes', sock.routes(afOf(family)))
  return all.filter((r) => r.dstLen === dstLen && r.table === RT_TABLE_MAIN && r.dst?.equals(dst))
}
