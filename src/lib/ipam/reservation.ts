// IPReservation resources: CIDRs that new allocations must never use (existing allocations are left alone),
// their stored v3 JSON form, and a matcher the allocator and the utilization report consult.
import {randomUuid} from '../random.js'
import {encodeJson, goMap, type JsonValue, parseJson} from '../codec/gojson.js'
import {ConflictError, NotFoundError, RevisionConflict, ValidationError} from '../errors.js'
import {type Cidr, type Family, formatCidr, type Ip, lastAddress, parseCidrOrIp} from '../net/cidr.js'
import {keys} from '../store/keys.js'
import {type Ctx, WriteBatch} from './context.js'
import {isResourceName} from './pool.js'
import {rfc3339} from '../codec/gotime.js'

const PLURAL = 'ipreservations'

export interface Reservation {
  name: string
  uid: string
  creationTimestamp: string
  /** Canonical masked CIDRs, in the order given. */
  reservedCIDRs: string[]
  labels?: Record<string, string>
}

export interface ReservationInput {
  name: string
  reservedCIDRs: readonly string[]
  labels?: Record<string, string>
}

/**
 * Validate and canonicalise: a bare address becomes /32 or /128. A CIDR with host bits set is refused, as
 * `pool create` refuses it: masking `10.70.0.1/24` would reserve the whole /24 when one address was meant.
 */
export function normalizeReservation(input: ReservationInput): {
  name: string
  reservedCIDRs: string[]
  labels?: Record<string, string>
} {
  const {name} = input
  if (!isResourceName(name)) {
    throw new ValidationError(
      `invalid reservation name ${JSON.stringify(name)}: use lower-case letters, digits, "-" and "." (at most 253 characters)`,
    )
  }
  if (!Array.isArray(input.reservedCIDRs) || input.reservedCIDRs.length === 0) {
    throw new ValidationError(`reservation ${name}: give at least one CIDR or IP address to reserve`)
  }
  const reservedCIDRs = input.reservedCIDRs.map((text) => {
    if (typeof text !== 'string' || text.length > 64)
      throw new ValidationError(`reservation ${name}: invalid CIDR ${JSON.stringify(text)}`)
    try {
      return formatCidr(parseCidrOrIp(text, {strict: true}))
    } catch (err) {
      throw new ValidationError(`reservation ${name}: ${(err as Error).message}`)
    }
  })
  const labels = input.labels && Object.keys(input.labels).length > 0 ? input.labels : undefined
  return labels ? {name, reservedCIDRs, labels} : {name, reservedCIDRs}
}

export function newReservation(input: ReservationInput, now: Date): Reservation {
  return {...normalizeReservation(input), uid: randomUuid(), creationTimestamp: rfc3339(now)}
}

/** The v3 resource as Calico stores it (Go field order). */
export function reservationResource(r: Reservation) {
  return {
    kind: 'IPReservation',
    apiVersion: 'projectcalico.org/v3',
    metadata: {name: r.name, uid: r.uid, creationTimestamp: r.creationTimestamp, labels: r.labels && goMap(r.labels)},
    spec: {reservedCIDRs: r.reservedCIDRs},
  }
}

export const encodeReservation = (r: Reservation): string => encodeJson(reservationResource(r))

export function decodeReservation(text: string): Reservation {
  const raw = parseJson(text) as {metadata?: Record<string, JsonValue>; spec?: Record<string, JsonValue>}
  const md = raw?.metadata ?? {}
  const cidrs = Array.isArray(raw?.spec?.reservedCIDRs) ? raw.spec.reservedCIDRs : []
  // Entries another tool wrote that we cannot parse are dropped rather than failing every allocation.
  const reservedCIDRs = cidrs.flatMap((c) => {
    try {
      return [formatCidr(parseCidrOrIp(String(c)))]
    } catch {
      return []
    }
  })
  const r: Reservation = {
    name: String(md.name),
    uid: typeof md.uid === 'string' ? md.uid : '',
    creationTimestamp: typeof md.creationTimestamp === 'string' ? md.creationTimestamp : '',
    reservedCIDRs,
  }
  // Absent, not undefined, when there are none: decoded records compare equal to the ones they were made from.
  if (md.labels && typeof md.labels === 'object') r.labels = md.labels as Record<string, string>
  return r
}

/** All reservations in name order (the store's key order). */
export async function listReservations(ctx: Ctx): Promise<Reservation[]> {
  return (await ctx.store.list(keys.resourcePrefix(PLURAL))).map((kv) => decodeReservation(kv.value))
}

export async function createReservation(ctx: Ctx, input: ReservationInput): Promise<Reservation> {
  const r = newReservation(input, ctx.clock.now())
  const key = keys.resource(PLURAL, r.name)
  const exists = new ConflictError(`IP reservation ${r.name} already exists`)
  if (await ctx.store.get(key)) throw exists
  try {
    // Guarded as "must not exist", so a concurrent create of the same name loses cleanly.
    await new WriteBatch(ctx).put(key, encodeReservation(r), undefined).commit()
  } catch (err) {
    if (err instanceof RevisionConflict) throw exists
    throw err
  }
  return r
}

export async function deleteReservation(ctx: Ctx, name: string): Promise<Reservation> {
  const kv = isResourceName(name) ? await ctx.store.get(keys.resource(PLURAL, name)) : undefined
  if (!kv) throw new NotFoundError(`IP reservation ${name} not found`)
  const r = await ctx.store.txn([{key: kv.key, modRevision: kv.modRevision}], [{delete: kv.key}])
  if (!r.succeeded) throw new ConflictError(`IP reservation ${name} was changed concurrently; try again`)
  return decodeReservation(kv.value)
}

interface Range {
  start: bigint
  end: bigint
}

export interface ReservedMatcher {
  /** True when any reservation covers at least one address; lets hot paths skip the checks entirely. */
  readonly any: boolean
  /** The first reservation (name order) covering `ip`, if any. */
  reservedBy(ip: Ip): string | undefined
  isReserved(ip: Ip): boolean
  blockWhollyReserved(cidr: Cidr): boolean
  /** Reserved addresses inside `cidr`, overlapping reservations counted once. */
  reservedIn(cidr: Cidr): bigint
  reservedInBlock(cidr: Cidr): number
  /** A takeOrdinals skip predicate for the block `cidr`, or undefined when nothing in it is reserved. */
  skipFor(cidr: Cidr): ((ordinal: number) => boolean) | undefined
}

const range = (c: Cidr): Range => ({start: c.base, end: lastAddress(c)})

/** Pure: the union of all reserved CIDRs, merged into sorted disjoint ranges per family. */
export function reservedMatcher(reservations: readonly Pick<Reservation, 'name' | 'reservedCIDRs'>[]): ReservedMatcher {
  const named: {name: string; cidr: Cidr}[] = reservations.flatMap((r) =>
    r.reservedCIDRs.map((c) => ({name: r.name, cidr: parseCidrOrIp(c)})),
  )
  const merged = new Map<Family, Range[]>()
  for (const family of [4, 6] as const) {
    const sorted = named
      .filter((n) => n.cidr.family === family)
      .map((n) => range(n.cidr))
      .sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0))
    const out: Range[] = []
    for (const r of sorted) {
      const last = out.at(-1)
      if (last && r.start <= last.end + 1n) {
        if (r.end > last.end) last.end = r.end
      } else out.push({...r})
    }
    merged.set(family, out)
  }
  const reservedIn = (cidr: Cidr): bigint => {
    const {start, end} = range(cidr)
    let n = 0n
    for (const r of merged.get(cidr.family)!) {
      const lo = r.start > start ? r.start : start
      const hi = r.end < end ? r.end : end
      if (lo <= hi) n += hi - lo + 1n
    }
    return n
  }
  const isReserved = (ip: Ip): boolean => merged.get(ip.family)!.some((r) => r.start <= ip.value && ip.value <= r.end)
  return {
    any: named.length > 0,
    reservedBy: (ip) =>
      named.find((n) => n.cidr.family === ip.family && range(n.cidr).start <= ip.value && ip.value <= range(n.cidr).end)
        ?.name,
    isReserved,
    blockWhollyReserved: (cidr) => {
      const {start, end} = range(cidr)
      return merged.get(cidr.family)!.some((r) => r.start <= start && end <= r.end)
    },
    reservedIn,
    reservedInBlock: (cidr) => Number(reservedIn(cidr)),
    skipFor: (cidr) => {
      if (reservedIn(cidr) === 0n) return undefined
      return (o) => isReserved({family: cidr.family, value: cidr.base + BigInt(o)})
    },
  }
}

export const NO_RESERVATIONS: ReservedMatcher = reservedMatcher([])
