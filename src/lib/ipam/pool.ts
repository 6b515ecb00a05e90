// IPPool resources: defaults and validation as upstream applies them, and their stored v3 JSON form.
import {randomUuid} from '../random.js'
import {encodeJson, goMap, type JsonValue, parseJson} from '../codec/gojson.js'
import {ValidationError} from '../errors.js'
import {type Cidr, formatCidr, overlaps, parseCidr} from '../net/cidr.js'
import {parseSelector, SelectorError} from './selector.js'
import {rfc3339} from '../codec/gotime.js'

export const ENCAP_MODES = ['Never', 'Always', 'CrossSubnet'] as const
export const ALLOWED_USES = ['Workload', 'Tunnel', 'LoadBalancer'] as const
export const ASSIGNMENT_MODES = ['Automatic', 'Manual'] as const
export type EncapMode = (typeof ENCAP_MODES)[number]
export type AllowedUse = (typeof ALLOWED_USES)[number]
export type AssignmentMode = (typeof ASSIGNMENT_MODES)[number]

export interface PoolSpec {
  cidr: string
  vxlanMode: EncapMode
  ipipMode: EncapMode
  natOutgoing: boolean
  disabled: boolean
  disableBGPExport: boolean
  blockSize: number
  nodeSelector: string
  namespaceSelector: string
  allowedUses: AllowedUse[]
  assignmentMode: AssignmentMode
}

export interface Pool {
  name: string
  uid: string
  creationTimestamp: string
  labels?: Record<string, string>
  spec: PoolSpec
  /** Parsed `spec.cidr`, for address math. */
  cidr: Cidr
}

/** What a user may give; everything else is defaulted. */
export type PoolInput = {name: string; labels?: Record<string, string>} & Partial<Omit<PoolSpec, 'cidr'>> & {
    cidr: string
  }

// Parsed on first use: module load is on every CNI plugin exec, and the agent path never validates a pool.
let linkLocal: Cidr[] | undefined
const LINK_LOCAL = (): Cidr[] => (linkLocal ??= [parseCidr('169.254.0.0/16'), parseCidr('fe80::/10')])
const NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/

/** Kubernetes resource name rules, shared by every v3 resource we store. */
export const isResourceName = (name: unknown): name is string =>
  typeof name === 'string' && name.length <= 253 && NAME.test(name)

export const defaultBlockSize = (c: Cidr): number => (c.family === 4 ? 26 : 122)

function oneOf<T extends string>(what: string, v: unknown, allowed: readonly T[]): T {
  if (typeof v === 'string' && (allowed as readonly string[]).includes(v)) return v as T
  throw new ValidationError(`invalid ${what} ${JSON.stringify(v)}: must be one of ${allowed.join(', ')}`)
}

/** Apply upstream's defaults and validation; throws ValidationError naming the offending field. */
export function normalizePool(input: PoolInput): {
  name: string
  labels?: Record<string, string>
  spec: PoolSpec
  cidr: Cidr
} {
  const name = input.name
  if (typeof name !== 'string' || name.length > 253 || !NAME.test(name)) {
    throw new ValidationError(
      `invalid pool name ${JSON.stringify(name)}: use lower-case letters, digits, "-" and "." (at most 253 characters)`,
    )
  }
  if (typeof input.cidr !== 'string' || input.cidr.length > 48)
    throw new ValidationError(`pool ${name}: cidr is required (e.g. 10.65.0.0/16)`)
  let cidr: Cidr
  try {
    cidr = parseCidr(input.cidr, {strict: true})
  } catch (err) {
    throw new ValidationError(
      `pool ${name}: ${(err as Error).message.replace('not strictly masked', 'IPPool CIDR is not strictly masked')}`,
    )
  }
  if (LINK_LOCAL().some((ll) => overlaps(ll, cidr))) {
    throw new ValidationError(
      `pool ${name}: IPPool CIDR ${formatCidr(cidr)} overlaps with the link-local range ${formatCidr(LINK_LOCAL()[cidr.family === 4 ? 0 : 1]!)}`,
    )
  }
  const v4 = cidr.family === 4
  const blockSize = input.blockSize ?? defaultBlockSize(cidr)
  const [min, max] = v4 ? [20, 32] : [116, 128]
  if (!Number.isInteger(blockSize) || blockSize < min || blockSize > max) {
    throw new ValidationError(
      `pool ${name}: block size ${blockSize} is out of range: IPv${cidr.family} block sizes must be ${min}-${max}`,
    )
  }
  const disabled = input.disabled ?? false
  if (cidr.prefix > blockSize && !disabled) {
    throw new ValidationError(
      `pool ${name}: the pool /${cidr.prefix} is smaller than its block size /${blockSize}; use a larger pool or a larger --block-size number`,
    )
  }
  const ipipMode = oneOf('ipipMode', input.ipipMode ?? 'Never', ENCAP_MODES)
  const vxlanMode = oneOf('vxlanMode', input.vxlanMode ?? 'Never', ENCAP_MODES)
  if (!v4 && ipipMode !== 'Never')
    throw new ValidationError(`pool ${name}: IPIP is not supported on IPv6 pools; set ipipMode to Never`)
  if (ipipMode !== 'Never' && vxlanMode !== 'Never')
    throw new ValidationError(`pool ${name}: IPIP and VXLAN cannot both be enabled`)
  const nodeSelector = (input.nodeSelector ?? 'all()').trim() || 'all()'
  const namespaceSelector = input.namespaceSelector ?? ''
  for (const [field, sel] of [
    ['nodeSelector', nodeSelector],
    ['namespaceSelector', namespaceSelector],
  ] as const) {
    try {
      parseSelector(sel)
    } catch (err) {
      if (err instanceof SelectorError) throw new ValidationError(`pool ${name}: ${field}: ${err.message}`)
      throw err
    }
  }
  const uses = (input.allowedUses ?? ['Workload', 'Tunnel']).map((u) => oneOf('allowedUses entry', u, ALLOWED_USES))
  if (uses.length === 0) throw new ValidationError(`pool ${name}: allowedUses must not be empty`)
  if (uses.includes('Tunnel') && namespaceSelector !== '') {
    throw new ValidationError(`pool ${name}: namespaceSelector must be empty when Tunnel is an allowed use`)
  }
  const disableBGPExport = input.disableBGPExport ?? false
  if (uses.includes('LoadBalancer')) {
    if (uses.length > 1)
      throw new ValidationError(`pool ${name}: LoadBalancer cannot be combined with other allowedUses`)
    if (nodeSelector !== 'all()')
      throw new ValidationError(`pool ${name}: a LoadBalancer pool needs nodeSelector all()`)
    if (ipipMode !== 'Never' || vxlanMode !== 'Never')
      throw new ValidationError(`pool ${name}: a LoadBalancer pool needs ipipMode and vxlanMode Never`)
    if (disableBGPExport) throw new ValidationError(`pool ${name}: a LoadBalancer pool cannot disable BGP export`)
  }
  const spec: PoolSpec = {
    cidr: formatCidr(cidr),
    vxlanMode,
    ipipMode,
    natOutgoing: input.natOutgoing ?? false,
    disabled,
    disableBGPExport,
    blockSize,
    nodeSelector,
    namespaceSelector,
    allowedUses: uses,
    assignmentMode: oneOf('assignmentMode', input.assignmentMode ?? 'Automatic', ASSIGNMENT_MODES),
  }
  return {name, labels: input.labels, spec, cidr}
}

export function newPool(input: PoolInput, now: Date): Pool {
  return {...normalizePool(input), uid: randomUuid(), creationTimestamp: rfc3339(now)}
}

/** The v3 resource as Calico stores it (Go field order; undefined = omitted, as omitempty does). */
export function poolResource(p: Pool) {
  const s = p.spec
  return {
    kind: 'IPPool',
    apiVersion: 'projectcalico.org/v3',
    metadata: {name: p.name, uid: p.uid, creationTimestamp: p.creationTimestamp, labels: p.labels && goMap(p.labels)},
    spec: {
      cidr: s.cidr,
      vxlanMode: s.vxlanMode,
      ipipMode: s.ipipMode,
      natOutgoing: s.natOutgoing || undefined,
      disabled: s.disabled || undefined,
      disableBGPExport: s.disableBGPExport || undefined,
      blockSize: s.blockSize,
      nodeSelector: s.nodeSelector,
      namespaceSelector: s.namespaceSelector || undefined,
      allowedUses: s.allowedUses,
      assignmentMode: s.assignmentMode,
    },
  }
}

export const encodePool = (p: Pool): string => encodeJson(poolResource(p))

export function decodePool(text: string): Pool {
  const raw = parseJson(text) as {metadata?: Record<string, JsonValue>; spec?: Record<string, JsonValue>}
  const md = raw?.metadata ?? {}
  const spec = (raw?.spec ?? {}) as unknown as Partial<PoolSpec>
  // Stored pools get defaults re-applied on read, as upstream does; a pool that no longer validates is
  // still returned so operators can see and delete it.
  const input: PoolInput = {...spec, name: String(md.name), cidr: String(spec.cidr)}
  let norm: ReturnType<typeof normalizePool>
  try {
    norm = normalizePool(input)
  } catch {
    const cidr = parseCidr(String(spec.cidr))
    norm = {
      name: input.name,
      spec: {...(spec as PoolSpec), cidr: formatCidr(cidr), blockSize: spec.blockSize ?? defaultBlockSize(cidr)},
      cidr,
    }
  }
  return {
    ...norm,
    labels: (md.labels as Record<string, string> | undefined) ?? undefined,
    uid: typeof md.uid === 'string' ? md.uid : '',
    creationTimestamp: typeof md.creationTimestamp === 'string' ? md.creationTimestamp : '',
  }
}
