// Address math on bigints so IPv4 and IPv6 share one code path and IPv6 counts stay exact.
import {ValidationError} from '../errors.js'

export type Family = 4 | 6

export interface Ip {
  readonly family: Family
  readonly value: bigint
}

export interface Cidr {
  readonly family: Family
  /** Network address (host bits are always zero). */
  readonly base: bigint
  readonly prefix: number
}

export const bitsOf = (family: Family): number => (family === 4 ? 32 : 128)

function parseV4(text: string): bigint | undefined {
  // One pass over the characters (whole-store scans parse a CIDR per block): four parts of 1-3 digits, each at
  // most 255, and no leading zeros (Go rejects them as ambiguous octal; so do we).
  let value = 0
  let octet = 0
  let digits = 0
  let leadingZero = false
  let parts = 0
  for (let i = 0; i <= text.length; i++) {
    const c = i < text.length ? text.charCodeAt(i) : 46
    if (c === 46) {
      if (digits === 0 || (leadingZero && digits > 1) || octet > 255 || ++parts > 4) return undefined
      value = value * 256 + octet
      octet = 0
      digits = 0
    } else if (c >= 48 && c <= 57) {
      if (digits === 0) leadingZero = c === 48
      if (++digits > 3) return undefined
      octet = octet * 10 + (c - 48)
    } else return undefined
  }
  return parts === 4 ? BigInt(value) : undefined
}

function parseV6(text: string): bigint | undefined {
  if (text.length < 2 || text.includes(':::')) return undefined
  let tail = text
  let v4tail: bigint | undefined
  const lastColon = text.lastIndexOf(':')
  if (text.slice(lastColon + 1).includes('.')) {
    v4tail = parseV4(text.slice(lastColon + 1))
    if (v4tail === undefined) return undefined
    tail = `${text.slice(0, lastColon + 1)}0:0`
  }
  const halves = tail.split('::')
  if (halves.length > 2) return undefined
  const groups = (s: string): string[] | undefined => {
    if (s === '') return []
    const g = s.split(':')
    return g.every((x) => /^[0-9a-fA-F]{1,4}$/.test(x)) ? g : undefined
  }
  const head = groups(halves[0]!)
  const rest = halves.length === 2 ? groups(halves[1]!) : []
  if (!head || !rest) return undefined
  const missing = 8 - head.length - rest.length
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined
  const all = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...rest]
  let v = 0n
  for (const g of all) v = (v << 16n) | BigInt(parseInt(g, 16))
  if (v4tail !== undefined) v = (v & ~0xffffffffn) | v4tail
  return v
}

export function tryParseIp(text: string): Ip | undefined {
  // No trimming: Go's net.ParseIP refuses whitespace, and an address with a stray newline is a mistake to report.
  const t = text
  if (t.includes(':')) {
    const v = parseV6(t)
    return v === undefined ? undefined : {family: 6, value: v}
  }
  const v = parseV4(t)
  return v === undefined ? undefined : {family: 4, value: v}
}

export function parseIp(text: string): Ip {
  const ip = tryParseIp(text)
  if (!ip) throw new ValidationError(`invalid IP address specified: ${text}`)
  return ip
}

/** Canonical text: dotted quad, or RFC 5952 compressed IPv6 (what Go's net.IP.String prints). */
export function formatIp(family: Family, value: bigint): string {
  if (family === 4) {
    const n = Number(value & 0xffffffffn)
    return `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`
  }
  const groups: number[] = []
  for (let i = 7; i >= 0; i--) groups.push(Number((value >> BigInt(i * 16)) & 0xffffn))
  // Longest run of at least two zero groups, first one on a tie.
  let bestStart = -1
  let bestLen = 1
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++
      continue
    }
    let j = i
    while (j < 8 && groups[j] === 0) j++
    if (j - i > bestLen) {
      bestStart = i
      bestLen = j - i
    }
    i = j
  }
  const hex = (gs: number[]) => gs.map((g) => g.toString(16)).join(':')
  if (bestStart < 0) return hex(groups)
  return `${hex(groups.slice(0, bestStart))}::${hex(groups.slice(bestStart + bestLen))}`
}

export const ipToString = (ip: Ip): string => formatIp(ip.family, ip.value)

export function hostMask(family: Family, prefix: number): bigint {
  return (1n << BigInt(bitsOf(family) - prefix)) - 1n
}

/** Network masks by family and prefix length, made on first use: maskIp runs for every block of a scan. */
const networkMasks: Record<Family, bigint[]> = {4: [], 6: []}

export function maskIp(family: Family, value: bigint, prefix: number): bigint {
  let mask = networkMasks[family][prefix]
  if (mask === undefined) {
    mask = ~hostMask(family, prefix) & ((1n << BigInt(bitsOf(family))) - 1n)
    if (Number.isInteger(prefix) && prefix >= 0 && prefix <= bitsOf(family)) networkMasks[family][prefix] = mask
  }
  return value & mask
}

/**
 * Parse `addr/len`. With `strict`, host bits must be zero (IPPool's "strictly masked" rule);
 * otherwise the result is masked, as Go's net.ParseCIDR does.
 */
export function parseCidr(text: string, opts: {strict?: boolean} = {}): Cidr {
  const t = text
  const slash = t.indexOf('/')
  if (slash < 0) throw new ValidationError(`invalid CIDR "${text}": expected ADDRESS/PREFIX, e.g. 10.65.0.0/16`)
  const ip = tryParseIp(t.slice(0, slash))
  const lenText = t.slice(slash + 1)
  if (!ip) throw new ValidationError(`invalid CIDR "${text}": "${t.slice(0, slash)}" is not an IP address`)
  if (!/^\d{1,3}$/.test(lenText) || Number(lenText) > bitsOf(ip.family)) {
    throw new ValidationError(`invalid CIDR "${text}": prefix length must be 0-${bitsOf(ip.family)}`)
  }
  const prefix = Number(lenText)
  const base = maskIp(ip.family, ip.value, prefix)
  if (opts.strict && base !== ip.value) {
    throw new ValidationError(
      `invalid CIDR "${text}": not strictly masked (host bits set); did you mean ${formatIp(ip.family, base)}/${prefix}?`,
    )
  }
  return {family: ip.family, base, prefix}
}

/** Accepts a CIDR or a bare address (treated as /32 or /128); `strict` as for parseCidr. */
export function parseCidrOrIp(text: string, opts: {strict?: boolean} = {}): Cidr {
  if (text.includes('/')) return parseCidr(text, opts)
  const ip = parseIp(text)
  return {family: ip.family, base: ip.value, prefix: bitsOf(ip.family)}
}

export const formatCidr = (c: Cidr): string => `${formatIp(c.family, c.base)}/${c.prefix}`

export const cidrSize = (c: Cidr): bigint => 1n << BigInt(bitsOf(c.family) - c.prefix)

export const lastAddress = (c: Cidr): bigint => c.base + cidrSize(c) - 1n

export function containsIp(c: Cidr, ip: Ip): boolean {
  return c.family === ip.family && maskIp(c.family, ip.value, c.prefix) === c.base
}

export function containsCidr(outer: Cidr, inner: Cidr): boolean {
  return (
    outer.family === inner.family &&
    outer.prefix <= inner.prefix &&
    maskIp(outer.family, inner.base, outer.prefix) === outer.base
  )
}

export function overlaps(a: Cidr, b: Cidr): boolean {
  return containsCidr(a, b) || containsCidr(b, a)
}

export const sameCidr = (a: Cidr, b: Cidr): boolean =>
  a.family === b.family && a.base === b.base && a.prefix === b.prefix

/** The index-th sub-network of length `prefix` inside `c` (blocks of a pool, children of a split). */
export function subnet(c: Cidr, prefix: number, index: bigint): Cidr {
  return {family: c.family, base: c.base + (index << BigInt(bitsOf(c.family) - prefix)), prefix}
}

export function subnetCount(c: Cidr, prefix: number): bigint {
  return 1n << BigInt(prefix - c.prefix)
}

export function subnetIndex(c: Cidr, prefix: number, inner: Cidr): bigint {
  return (inner.base - c.base) >> BigInt(bitsOf(c.family) - prefix)
}

/** Ordering for display and deterministic iteration: family, then address, then prefix. */
export function compareCidr(a: Cidr, b: Cidr): number {
  if (a.family !== b.family) return a.family - b.family
  if (a.base !== b.base) return a.base < b.base ? -1 : 1
  return a.prefix - b.prefix
}
