// Stored forms of the small IPAM records: handles, block affinities and the IPAM configuration.
// Field order and omitempty follow Calico's Go structs so the bytes match what Calico writes.
import {encodeJson, goMap, type JsonValue, parseJson} from '../codec/gojson.js'
import {ValidationError} from '../errors.js'

// ---- IPAMHandle: block CIDR → number of this handle's addresses in it.

export type HandleCounts = Map<string, number>

export function decodeHandle(text: string): HandleCounts {
  const raw = parseJson(text) as {block?: Record<string, JsonValue>}
  const out: HandleCounts = new Map()
  for (const [cidr, n] of Object.entries(raw?.block ?? {})) out.set(cidr, Number(n))
  return out
}

export function encodeHandle(counts: HandleCounts): string {
  return encodeJson({block: goMap(counts), deleted: false})
}

/** A handle's addresses per IP version; a block key containing `:` is IPv6. */
export function handleCountByFamily(counts: HandleCounts, family: 4 | 6): number {
  let n = 0
  for (const [cidr, c] of counts) if (cidr.includes(':') === (family === 6)) n += c
  return n
}

// ---- BlockAffinity: `pending` → `confirmed` → `pendingDeletion`; pending never counts as ownership.

export type AffinityState = 'pending' | 'confirmed' | 'pendingDeletion'

export function decodeAffinity(text: string): AffinityState {
  if (text.trim() === '') return 'confirmed'
  const raw = parseJson(text) as {state?: string}
  const s = raw?.state ?? ''
  // Very old data has no state at all; upstream treats "" as confirmed.
  if (s === '' || s === 'confirmed') return 'confirmed'
  if (s === 'pending' || s === 'pendingDeletion') return s
  throw new ValidationError(`malformed block affinity: unknown state "${s}"`)
}

export const encodeAffinity = (state: AffinityState): string => encodeJson({state, deleted: false})

// ---- IPAM configuration (`/calico/ipam/v2/config`).

export interface IpamConfig {
  strictAffinity: boolean
  autoAllocateBlocks: boolean
  /** 0 means "use the default cap of 20". */
  maxBlocksPerHost: number
  kubeVirtVMAddressPersistence: 'Enabled' | 'Disabled'
  ipCooldownSeconds: number
}

export const DEFAULT_IPAM_CONFIG: IpamConfig = Object.freeze({
  strictAffinity: false,
  autoAllocateBlocks: true,
  maxBlocksPerHost: 0,
  kubeVirtVMAddressPersistence: 'Enabled',
  ipCooldownSeconds: 0,
})

export const MAX_BLOCKS_PER_HOST_LIMIT = 1_000_000
export const MAX_COOLDOWN_SECONDS = 1200

export function decodeIpamConfig(text: string): IpamConfig {
  const raw = (parseJson(text) ?? {}) as Record<string, JsonValue>
  return {
    strictAffinity: raw.strict_affinity === true,
    autoAllocateBlocks: raw.auto_allocate_blocks === true,
    maxBlocksPerHost: Number(raw.maxBlocksPerHost ?? 0),
    kubeVirtVMAddressPersistence: raw.kubeVirtVMAddressPersistence === 'Disabled' ? 'Disabled' : 'Enabled',
    ipCooldownSeconds: Number(raw.ipCooldownSeconds ?? 0),
  }
}

export function encodeIpamConfig(c: IpamConfig): string {
  return encodeJson({
    strict_affinity: c.strictAffinity || undefined,
    auto_allocate_blocks: c.autoAllocateBlocks || undefined,
    maxBlocksPerHost: c.maxBlocksPerHost || undefined,
    kubeVirtVMAddressPersistence: c.kubeVirtVMAddressPersistence,
    ipCooldownSeconds: c.ipCooldownSeconds || undefined,
  })
}

/** Upstream's two cross-field rules plus the range checks it forgets in etcd mode
 * (docs/calico.md#ipam-config). */
export function validateIpamConfig(c: IpamConfig): void {
  if (!c.strictAffinity && !c.autoAllocateBlocks) {
    throw new ValidationError("Cannot disable 'StrictAffinity' and 'AutoAllocateBlocks' at the same time")
  }
  if (
    !Number.isInteger(c.maxBlocksPerHost) ||
    c.maxBlocksPerHost < 0 ||
    c.maxBlocksPerHost > MAX_BLOCKS_PER_HOST_LIMIT
  ) {
    throw new ValidationError(
      `maxBlocksPerHost must be an integer from 0 to ${MAX_BLOCKS_PER_HOST_LIMIT} (0 means the default of 20)`,
    )
  }
  if (c.maxBlocksPerHost > 0 && !c.strictAffinity) {
    throw new ValidationError('MaxBlocksPerHost requires StrictAffinity to be enabled')
  }
  if (!Number.isInteger(c.ipCooldownSeconds) || c.ipCooldownSeconds < 0 || c.ipCooldownSeconds > MAX_COOLDOWN_SECONDS) {
    throw new ValidationError(`ipCooldownSeconds must be an integer from 0 to ${MAX_COOLDOWN_SECONDS}`)
  }
}
