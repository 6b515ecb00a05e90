// CNI results: one internal form (the 1.x shape), written in any requested version exactly as the Go library
// converts and prints it, and read back from any version (prevResult on CHECK/DEL/chained ADD).
import {bitsOf, type Family, formatIp, tryParseIp} from '../net/cidr.js'
import {CNI_ERR, CniError} from './errors.js'
import {goIndent} from '../codec/gojson.js'
import {resultFormat} from './version.js'

export interface CniInterface {
  name: string
  mac?: string
  /** 1.1 field; written for 1.0.0/1.1.0 results (the Go 1.x result type), dropped for older versions. */
  mtu?: number
  /** Inside the container: the CNI_NETNS path; absent for host-side interfaces. */
  sandbox?: string
  socketPath?: string
  pciID?: string
}

export interface CniIpConfig {
  /** Address with prefix length, host bits kept: `10.65.79.5/26`. */
  address: string
  gateway?: string
  /** Index into `interfaces` (main plugins only; IPAM results leave it out). */
  interface?: number
}

export interface CniRoute {
  dst: string
  gw?: string
  mtu?: number
  advmss?: number
  priority?: number
  table?: number
  scope?: number
}

export interface CniDns {
  nameservers?: string[]
  domain?: string
  search?: string[]
  options?: string[]
}

export interface CniResult {
  interfaces?: CniInterface[]
  ips: CniIpConfig[]
  routes?: CniRoute[]
  dns?: CniDns
}

// ---------------------------------------------------------------------------------------------- helpers

/** The address part of `ip/len`. */
export function addressOf(cidr: string): string {
  const slash = cidr.indexOf('/')
  return slash < 0 ? cidr : cidr.slice(0, slash)
}

/** Family of an `ip/len` or bare address; undefined if it is not one. */
export function familyOf(text: string): Family | undefined {
  return tryParseIp(addressOf(text))?.family
}

/** `ip/32` or `ip/128` (the main plugin narrows IPAM addresses this way). */
export function hostCidr(address: string): string {
  const ip = tryParseIp(addressOf(address))
  if (!ip) throw new CniError(CNI_ERR.internal, `invalid IP address: ${address}`)
  return `${formatIp(ip.family, ip.value)}/${bitsOf(ip.family)}`
}

/**
 * calico-ipam's result for auto-assigned addresses: each address with its block's prefix length
 * (`10.65.79.5/26`), and one route per address whose dst is that same string
 * (docs/calico.md#ipam-plugin-result).
 */
export function ipamResult(ips: readonly {cidr: string}[]): CniResult {
  return {
    ips: ips.map((ip) => ({address: ip.cidr})),
    routes: ips.map((ip) => ({dst: ip.cidr})),
    dns: {},
  }
}

// ---------------------------------------------------------------------------------------------- writing

function dnsJson(d: CniDns | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  if (d?.nameservers?.length) out.nameservers = d.nameservers
  if (d?.domain) out.domain = d.domain
  if (d?.search?.length) out.search = d.search
  if (d?.options?.length) out.options = d.options
  return out
}

function routeJson(r: CniRoute, full: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {dst: r.dst}
  if (r.gw) out.gw = r.gw
  if (!full) return out
  if (r.mtu) out.mtu = r.mtu
  if (r.advmss) out.advmss = r.advmss
  if (r.priority) out.priority = r.priority
  if (r.table !== undefined) out.table = r.table
  if (r.scope !== undefined) out.scope = r.scope
  return out
}

function interfaceJson(i: CniInterface, v1: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {name: i.name}
  if (i.mac) out.mac = i.mac
  if (v1 && i.mtu) out.mtu = i.mtu
  if (i.sandbox) out.sandbox = i.sandbox
  if (v1 && i.socketPath) out.socketPath = i.socketPath
  if (v1 && i.pciID) out.pciID = i.pciID
  return out
}

function ipVersion(address: string): '4' | '6' {
  return familyOf(address) === 4 ? '4' : '6'
}

/**
 * The result as the JSON value of `cniVersion` (the Go types' field order and omitempty rules):
 * - 0.1.0/0.2.0: `{cniVersion, ip4?: {ip, gateway?, routes?}, ip6?, dns}`; only the first address of
 *   each family, routes sorted into ip4/ip6 by their dst family (dst and gw only);
 * - 0.3.0/0.3.1/0.4.0: `{cniVersion, interfaces?, ips?: [{version, interface?, address, gateway?}], routes?, dns}`;
 * - 1.0.0/1.1.0: the same without `ips[].version`.
 * `dns` is always written (`{}` when empty).
 */
export function encodeResult(result: CniResult, cniVersion: string): Record<string, unknown> {
  const format = resultFormat(cniVersion)
  if (format === '020') {
    const out: Record<string, unknown> = {cniVersion}
    const slots: Partial<Record<'4' | '6', Record<string, unknown>>> = {}
    for (const ip of result.ips) {
      const v = ipVersion(ip.address)
      if (slots[v]) continue
      slots[v] = {ip: ip.address, ...(ip.gateway ? {gateway: ip.gateway} : {})}
    }
    if (!slots['4'] && !slots['6']) throw new CniError(CNI_ERR.internal, 'cannot convert: no valid IP addresses')
    for (const r of result.routes ?? []) {
      const slot = slots[ipVersion(r.dst)]
      if (!slot) continue
      slot.routes ??= []
      ;(slot.routes as unknown[]).push(routeJson(r, false))
    }
    if (slots['4']) out.ip4 = slots['4']
    if (slots['6']) out.ip6 = slots['6']
    out.dns = dnsJson(result.dns)
    return out
  }
  const v1 = format === '100'
  const out: Record<string, unknown> = {cniVersion}
  if (result.interfaces?.length) out.interfaces = result.interfaces.map((i) => interfaceJson(i, v1))
  if (result.ips.length) {
    out.ips = result.ips.map((ip) => {
      const o: Record<string, unknown> = v1 ? {} : {version: ipVersion(ip.address)}
      if (ip.interface !== undefined) o.interface = ip.interface
      o.address = ip.address
      if (ip.gateway) o.gateway = ip.gateway
      return o
    })
  }
  if (result.routes?.length) out.routes = result.routes.map((r) => routeJson(r, true))
  out.dns = dnsJson(result.dns)
  return out
}

/** What a plugin prints on stdout: the result in `cniVersion`, 4-space indented, no trailing newline. */
export function formatResult(result: CniResult, cniVersion: string): string {
  return goIndent(encodeResult(result, cniVersion))
}

// ---------------------------------------------------------------------------------------------- reading

type Obj = Record<string, unknown>
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)

function fail(what: string): CniError {
  return new CniError(CNI_ERR.decoding, `failed to parse prevResult: ${what}`)
}

/** Go's types.ParseCIDR: `ip/len` with the host bits kept; returned in canonical text. */
function cidrField(v: unknown, where: string): string {
  if (typeof v !== 'string') throw fail(`${where} must be a string`)
  const slash = v.indexOf('/')
  const ip = slash > 0 ? tryParseIp(v.slice(0, slash)) : undefined
  const len = v.slice(slash + 1)
  if (
    !ip ||
    v.slice(0, slash).trim() !== v.slice(0, slash) ||
    !/^\d{1,3}$/.test(len) ||
    Number(len) > bitsOf(ip.family)
  ) {
    throw fail(`invalid CIDR address: ${v}`)
  }
  return `${formatIp(ip.family, ip.value)}/${Number(len)}`
}

function ipField(v: unknown, where: string): string | undefined {
  if (v === undefined || v === null || v === '') return undefined
  const ip = typeof v === 'string' ? tryParseIp(v) : undefined
  if (!ip) throw fail(`${where}: invalid IP address: ${String(v)}`)
  return formatIp(ip.family, ip.value)
}

function optStr(v: unknown, where: string): string | undefined {
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'string') throw fail(`${where} must be a string`)
  return v || undefined
}

function optInt(v: unknown, where: string): number | undefined {
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'number' || !Number.isInteger(v)) throw fail(`${where} must be an integer`)
  return v
}

function list(v: unknown, where: string): unknown[] {
  if (v === undefined || v === null) return []
  if (!Array.isArray(v)) throw fail(`${where} must be a list`)
  return v
}

function strList(v: unknown, where: string): string[] | undefined {
  const l = list(v, where)
  if (!l.every((x) => typeof x === 'string')) throw fail(`${where} must be a list of strings`)
  return l.length ? (l as string[]) : undefined
}

function parseRoute(v: unknown, where: string): CniRoute {
  if (!isObj(v)) throw fail(`${where} must be an object`)
  const r: CniRoute = {dst: cidrField(v.dst, `${where}.dst`)}
  const gw = ipField(v.gw, `${where}.gw`)
  if (gw) r.gw = gw
  for (const k of ['mtu', 'advmss', 'priority', 'table', 'scope'] as const) {
    const n = optInt(v[k], `${where}.${k}`)
    if (n !== undefined) r[k] = n
  }
  return r
}

function parseDns(v: unknown): CniDns {
  if (v === undefined || v === null) return {}
  if (!isObj(v)) throw fail('dns must be an object')
  const d: CniDns = {}
  const ns = strList(v.nameservers, 'dns.nameservers')
  if (ns) d.nameservers = ns
  const domain = optStr(v.domain, 'dns.domain')
  if (domain) d.domain = domain
  const search = strList(v.search, 'dns.search')
  if (search) d.search = search
  const options = strList(v.options, 'dns.options')
  if (options) d.options = options
  return d
}

/**
 * Read a result of any version into the internal form. The layout is chosen by the result's own
 * `cniVersion` (or `fallbackVersion`, the config's, when it has none). Unlike the Go library this does not
 * insist that a prevResult's version equals the config's: runtimes convert it, and being lenient costs nothing.
 */
export function parseResult(raw: unknown, fallbackVersion: string): CniResult {
  if (!isObj(raw)) throw fail('it must be a JSON object')
  const version = raw.cniVersion === undefined || raw.cniVersion === '' ? fallbackVersion : raw.cniVersion
  if (typeof version !== 'string') throw fail('cniVersion must be a string')
  const out: CniResult = {ips: [], dns: parseDns(raw.dns)}
  if (resultFormat(version) === '020') {
    const routes: CniRoute[] = []
    for (const key of ['ip4', 'ip6'] as const) {
      const c = raw[key]
      if (c === undefined || c === null) continue
      if (!isObj(c)) throw fail(`${key} must be an object`)
      const ip: CniIpConfig = {address: cidrField(c.ip, `${key}.ip`)}
      const gw = ipField(c.gateway, `${key}.gateway`)
      if (gw) ip.gateway = gw
      out.ips.push(ip)
      for (const [i, r] of list(c.routes, `${key}.routes`).entries()) routes.push(parseRoute(r, `${key}.routes[${i}]`))
    }
    if (routes.length) out.routes = routes
    return out
  }
  const interfaces = list(raw.interfaces, 'interfaces').map((v, i): CniInterface => {
    const where = `interfaces[${i}]`
    if (!isObj(v)) throw fail(`${where} must be an object`)
    const name = optStr(v.name, `${where}.name`) ?? ''
    const intf: CniInterface = {name}
    const mac = optStr(v.mac, `${where}.mac`)
    if (mac) intf.mac = mac
    const mtu = optInt(v.mtu, `${where}.mtu`)
    if (mtu) intf.mtu = mtu
    const sandbox = optStr(v.sandbox, `${where}.sandbox`)
    if (sandbox) intf.sandbox = sandbox
    const socketPath = optStr(v.socketPath, `${where}.socketPath`)
    if (socketPath) intf.socketPath = socketPath
    const pciID = optStr(v.pciID, `${where}.pciID`)
    if (pciID) intf.pciID = pciID
    return intf
  })
  if (interfaces.length) out.interfaces = interfaces
  out.ips = list(raw.ips, 'ips').map((v, i): CniIpConfig => {
    const where = `ips[${i}]`
    if (!isObj(v)) throw fail(`${where} must be an object`)
    const ip: CniIpConfig = {address: cidrField(v.address, `${where}.address`)}
    const gw = ipField(v.gateway, `${where}.gateway`)
    if (gw) ip.gateway = gw
    const intf = optInt(v.interface, `${where}.interface`)
    if (intf !== undefined) {
      if (intf < 0 || intf >= interfaces.length) throw fail(`${where}.interface ${intf} does not index an interface`)
      ip.interface = intf
    }
    return ip
  })
  const routes = list(raw.routes, 'routes').map((r, i) => parseRoute(r, `routes[${i}]`))
  if (routes.length) out.routes = routes
  return out
}
