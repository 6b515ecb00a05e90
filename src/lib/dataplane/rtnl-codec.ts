// The rtnetlink messages the dataplane sends and reads, encoded and decoded by hand (pure functions, no I/O).
//
// Why not the `netlink` package's rtnetlink layer: its generated struct tables (rt/ifla.js, rt/gen_structs.js,
// ~240 KB of JavaScript) cost ~5 ms of every CNI ADD just to load and deserialise, more than all the kernel work
// of wiring a pod, and we use five message types and a dozen attributes of them. The package still provides the
// socket (netlink/dist/netlink.js: sequence numbers, multipart replies, error ACKs); see rtnl.ts.
//
// Layouts are the kernel's (include/uapi/linux/rtnetlink.h, if_link.h, if_addr.h, neighbour.h, veth.h), in host
// byte order; attributes are <len u16, type u16, payload> padded to 4 bytes.

export const RTM = {
  NEWLINK: 16,
  DELLINK: 17,
  GETLINK: 18,
  SETLINK: 19,
  NEWADDR: 20,
  GETADDR: 22,
  NEWROUTE: 24,
  DELROUTE: 25,
  GETROUTE: 26,
  NEWNEIGH: 28,
} as const

/** nlmsghdr flags beyond REQUEST|ACK (which every request gets). */
export const NLM_F = {REPLACE: 0x100, EXCL: 0x200, CREATE: 0x400, DUMP: 0x300} as const

export const IFF_UP = 0x1
export const IFLA = {ADDRESS: 1, IFNAME: 3, MTU: 4, LINKINFO: 18, IFALIAS: 20, NET_NS_FD: 28} as const
export const IFLA_INFO = {KIND: 1, DATA: 2} as const
export const VETH_INFO_PEER = 1
export const IFA = {ADDRESS: 1, LOCAL: 2} as const
export const IFA_F_NODAD = 0x02
export const RTA = {DST: 1, OIF: 4, GATEWAY: 5, TABLE: 15} as const
export const RTPROT_BOOT = 3
export const RTN_UNICAST = 1
export const RT_SCOPE = {UNIVERSE: 0, LINK: 253, NOWHERE: 255} as const
export const NDA = {DST: 1, LLADDR: 2} as const
export const NUD_PERMANENT = 0x80

/** Netlink speaks the host's byte order. */
const LE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1

const align4 = (n: number): number => (n + 3) & ~3

// ---- encoding ----------------------------------------------------------------------------------------------

/** One attribute, padded. */
export function attr(type: number, payload: Buffer): Buffer {
  const out = Buffer.alloc(align4(4 + payload.length))
  const v = new DataView(out.buffer, out.byteOffset)
  v.setUint16(0, 4 + payload.length, LE)
  v.setUint16(2, type, LE)
  payload.copy(out, 4)
  return out
}

export function u32Attr(type: number, value: number): Buffer {
  const p = Buffer.alloc(4)
  new DataView(p.buffer, p.byteOffset).setUint32(0, value, LE)
  return attr(type, p)
}

/** NUL-terminated, as the kernel's NLA_STRING / NLA_NUL_STRING policies accept. */
export const strAttr = (type: number, text: string): Buffer => attr(type, Buffer.from(`${text}\0`, 'utf8'))

export const nested = (type: number, children: Buffer[]): Buffer => attr(type, Buffer.concat(children))

/** struct ifinfomsg (16 bytes). */
export function ifinfomsg(m: {index?: number; flags?: number; change?: number} = {}): Buffer {
  const out = Buffer.alloc(16)
  const v = new DataView(out.buffer, out.byteOffset)
  v.setInt32(4, m.index ?? 0, LE)
  v.setUint32(8, m.flags ?? 0, LE)
  v.setUint32(12, m.change ?? 0, LE)
  return out
}

/** struct rtmsg (12 bytes). */
export function rtmsg(m: {
  family: number
  dstLen?: number
  table?: number
  protocol?: number
  scope?: number
  type?: number
  /** rtm_flags (RTNH_F_ONLINK…), a u32 in the host's byte order. */
  flags?: number
}): Buffer {
  const out = Buffer.from([
    m.family,
    m.dstLen ?? 0,
    0,
    0,
    m.table ?? 0,
    m.protocol ?? 0,
    m.scope ?? 0,
    m.type ?? 0,
    0,
    0,
    0,
    0,
  ])
  new DataView(out.buffer, out.byteOffset).setUint32(8, m.flags ?? 0, LE)
  return out
}

/** rtm_flags: the gateway is on the link even though no route says so. */
export const RTNH_F_ONLINK = 4

/** struct ifaddrmsg (8 bytes). */
export function ifaddrmsg(m: {
  family: number
  prefixlen?: number
  flags?: number
  scope?: number
  index?: number
}): Buffer {
  const out = Buffer.from([m.family, m.prefixlen ?? 0, m.flags ?? 0, m.scope ?? 0, 0, 0, 0, 0])
  new DataView(out.buffer, out.byteOffset).setUint32(4, m.index ?? 0, LE)
  return out
}

/** struct ndmsg (12 bytes). */
export function ndmsg(m: {family: number; ifindex: number; state: number}): Buffer {
  const out = Buffer.alloc(12)
  const v = new DataView(out.buffer, out.byteOffset)
  v.setUint8(0, m.family)
  v.setInt32(4, m.ifindex, LE)
  v.setUint16(8, m.state, LE)
  return out
}

// ---- decoding ----------------------------------------------------------------------------------------------

/** Attributes from `offset` on, by type (flag bits stripped); a truncated attribute ends the list. */
export function parseAttrs(buf: Buffer, offset: number): Map<number, Buffer> {
  const out = new Map<number, Buffer>()
  const v = new DataView(buf.buffer, buf.byteOffset, buf.length)
  for (let at = offset; at + 4 <= buf.length; ) {
    const len = v.getUint16(at, LE)
    if (len < 4 || at + len > buf.length) break
    out.set(v.getUint16(at + 2, LE) & 0x3fff, buf.subarray(at + 4, at + len))
    at += align4(len)
  }
  return out
}

const u32 = (b: Buffer | undefined): number | undefined =>
  b && b.length >= 4 ? new DataView(b.buffer, b.byteOffset).getUint32(0, LE) : undefined
const cstr = (b: Buffer | undefined): string | undefined => {
  if (!b) return undefined
  const nul = b.indexOf(0)
  return b.subarray(0, nul < 0 ? b.length : nul).toString('utf8')
}
const copy = (b: Buffer | undefined): Buffer | undefined => (b ? Buffer.from(b) : undefined)

function need(buf: Buffer, bytes: number, what: string): DataView {
  if (buf.length < bytes) throw new Error(`short ${what} message (${buf.length} bytes)`)
  return new DataView(buf.buffer, buf.byteOffset, buf.length)
}

export interface Link {
  index: number
  up: boolean
  ifname?: string
  address?: Buffer
  mtu?: number
  /** IFLA_IFALIAS: where wirePod records which attachment created a host veth (names.ts hostLinkMarker). */
  alias?: string
}

export function decodeLink(buf: Buffer): Link {
  const v = need(buf, 16, 'link')
  const a = parseAttrs(buf, 16)
  const alias = cstr(a.get(IFLA.IFALIAS))
  return {
    index: v.getInt32(4, LE),
    up: (v.getUint32(8, LE) & IFF_UP) !== 0,
    ifname: cstr(a.get(IFLA.IFNAME)),
    address: copy(a.get(IFLA.ADDRESS)),
    mtu: u32(a.get(IFLA.MTU)),
    ...(alias ? {alias} : {}),
  }
}

export interface Route {
  family: number
  dstLen: number
  /** RTA_TABLE when present (tables above 255 only fit there), else rtm_table. */
  table: number
  scope: number
  dst?: Buffer
  oif?: number
  gateway?: Buffer
}

export function decodeRoute(buf: Buffer): Route {
  need(buf, 12, 'route')
  const a = parseAttrs(buf, 12)
  return {
    family: buf[0]!,
    dstLen: buf[1]!,
    table: u32(a.get(RTA.TABLE)) ?? buf[4]!,
    scope: buf[6]!,
    dst: copy(a.get(RTA.DST)),
    oif: u32(a.get(RTA.OIF)),
    gateway: copy(a.get(RTA.GATEWAY)),
  }
}

export interface Address {
  family: number
  prefixlen: number
  index: number
  /** ifa_scope: 0 universe (global), 253 link, 254 host. */
  scope: number
  address?: Buffer
  local?: Buffer
}

export function decodeAddress(buf: Buffer): Address {
  const v = need(buf, 8, 'address')
  const a = parseAttrs(buf, 8)
  return {
    family: buf[0]!,
    prefixlen: buf[1]!,
    index: v.getUint32(4, LE),
    scope: buf[3]!,
    address: copy(a.get(IFA.ADDRESS)),
    local: copy(a.get(IFA.LOCAL)),
  }
}
