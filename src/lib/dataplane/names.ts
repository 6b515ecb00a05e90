// Interface names. The host veth name must match upstream Calico's exactly: Felix finds a workload's interface by
// recomputing it from the same inputs (reference §5.6 step 5).
import {sha1Hex} from '../codec/sha1.js'

export const DEFAULT_INTERFACE_PREFIX = 'cali'

/** Linux IFNAMSIZ is 16 including the NUL. */
export const MAX_IFNAME_LENGTH = 15

export interface HostVethNameArgs {
  /** Kubernetes namespace; with `pod` set, the name is derived from `<namespace>.<pod>`. */
  namespace?: string
  pod?: string
  containerId: string
  /** Default `cali`. Callers pass `interfacePrefix(process.env.FELIX_INTERFACEPREFIX)`. */
  prefix?: string
}

/** `cali` + 11 hex chars of SHA-1(`<namespace>.<pod>`) for k8s pods, else `cali` + the first 11 chars of the container ID. */
export function hostVethName({namespace, pod, containerId, prefix = DEFAULT_INTERFACE_PREFIX}: HostVethNameArgs): string {
  // As upstream: the suffix is cut to 11 characters, the prefix is not, so a prefix longer than 4 characters gives
  // a name the kernel refuses; wirePod reports that as InvalidInterfaceNameError rather than silently cutting it.
  if (namespace && pod) return prefix + sha1Hex(`${namespace}.${pod}`).slice(0, 11)
  return prefix + containerId.slice(0, 11)
}

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
  if (Buffer.byteLength(name) > MAX_IFNAME_LENGTH) return `interface name "${name}" is longer than ${MAX_IFNAME_LENGTH} characters`
  if (name === '.' || name === '..') return `interface name "${name}" is not allowed`
  if (/[/:\s]/.test(name)) return `interface name "${name}" contains "/", ":" or whitespace`
  return undefined
}
