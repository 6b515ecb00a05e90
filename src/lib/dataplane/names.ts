// Interface names. For Kubernetes pods the host veth name must match upstream Calico's exactly: Felix finds a pod's
// interface by recomputing it from `<namespace>.<pod>`. For other workloads nothing recomputes it (Felix-style
// consumers read the name from the WorkloadEndpoint record's interfaceName), so ipamctl hashes the whole container
// ID instead of cutting it: see docs/host-veths.md.
import {sha1Hex} from '../codec/sha1.js'

export const DEFAULT_INTERFACE_PREFIX = 'cali'

/** The pod's primary interface: the one that gets the default routes (docs/host-veths.md#names). */
export const PRIMARY_IFNAME = 'eth0'

/** Linux IFNAMSIZ is 16 including the NUL. */
export const MAX_IFNAME_LENGTH = 15

export interface HostVethNameArgs {
  /** Kubernetes namespace; with `pod` set, the name is derived from `<namespace>.<pod>`. */
  namespace?: string
  pod?: string
  containerId: string
  /**
   * The pod-side interface (CNI_IFNAME). A pod's second interface (anything but eth0, e.g. eth1 on another network)
   * needs a host end of its own: its name is hashed with the interface name too (docs/host-veths.md#names).
   */
  ifName?: string
  /** Default `cali`. Callers pass `interfacePrefix(process.env.FELIX_INTERFACEPREFIX)`. */
  prefix?: string
}

/**
 * `cali` + 11 hex chars of SHA-1(`<namespace>.<pod>`) for k8s pods (as upstream), else `cali` + 11 hex chars of
 * SHA-1(container ID). Upstream takes the first 11 characters of the container ID there, so two IDs sharing them
 * (cnitool's `cnitool-<hex>` differ after 8) got one name and the second ADD deleted the first pod's veth.
 */
export function hostVethName({
  namespace,
  pod,
  containerId,
  ifName,
  prefix = DEFAULT_INTERFACE_PREFIX,
}: HostVethNameArgs): string {
  const extra = ifName && ifName !== PRIMARY_IFNAME ? `.${ifName}` : ''
  // As upstream: the suffix is cut to 11 characters, the prefix is not, so a prefix longer than 4 characters gives
  // a name the kernel refuses; wirePod reports that as InvalidInterfaceNameError rather than silently cutting it.
  if (namespace && pod) return prefix + sha1Hex(`${namespace}.${pod}${extra}`).slice(0, 11)
  return prefix + sha1Hex(`${containerId}${extra}`).slice(0, 11)
}

/** IFALIASZ is 256 including the NUL. */
const MAX_ALIAS_LENGTH = 255
const MARKER_PREFIX = 'ipamctl-cni:'

/**
 * The alias wirePod gives a host veth: which attachment (container ID) created it, so that a later ADD, DEL or GC
 * can tell its own link from another attachment's before deleting anything. A container ID too long for an alias
 * is recorded as its SHA-1.
 */
export function hostLinkMarker(containerId: string): string {
  const text = MARKER_PREFIX + containerId
  return Buffer.byteLength(text) <= MAX_ALIAS_LENGTH ? text : `${MARKER_PREFIX}sha1:${sha1Hex(containerId)}`
}

/** Whether `alias` is an ipamctl host-link marker at all (a link without one was made by something else). */
export const isHostLinkMarker = (alias: string | undefined): boolean => alias?.startsWith(MARKER_PREFIX) === true

/** Felix's FELIX_INTERFACEPREFIX may list several prefixes (`cali,tap`); the first is the one for new workloads. */
export function interfacePrefix(felixInterfacePrefix: string | undefined): string {
  const first = felixInterfacePrefix?.split(',')[0]?.trim()
  return first || DEFAULT_INTERFACE_PREFIX
}

/** What the kernel's dev_valid_name() accepts (and CNI's ValidateInterfaceName): non-empty, < 16 chars, not `.`/`..`, no `/`, `:` or whitespace. */
export function validIfName(name: string): boolean {
  return ifNameProblem(name) === undefined
}

/** Why `name` is not a valid interface name, or undefined if it is. */
export function ifNameProblem(name: string): string | undefined {
  if (name.length === 0) return 'interface name is empty'
  // The kernel counts bytes, not characters.
  if (Buffer.byteLength(name) > MAX_IFNAME_LENGTH)
    return `interface name "${name}" is longer than ${MAX_IFNAME_LENGTH} characters`
  if (name === '.' || name === '..') return `interface name "${name}" is not allowed`
  if (/[/:\s]/.test(name)) return `interface name "${name}" contains "/", ":" or whitespace`
  return undefined
}
