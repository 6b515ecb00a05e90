// Typed dataplane failures. Each extends the IpamError kind it resembles so the CNI entry can map it to a CNI
// error code (NotFound → "invalid netns" 8 / "unknown container" 3, Conflict → "already exists", Validation → 4/7)
// without parsing messages.
import {ConflictError, IpamError, NotFoundError, ValidationError} from '../errors.js'

/** CNI_NETNS names nothing, or names a file that is not a network namespace. */
export class NetnsNotFoundError extends NotFoundError {
  constructor(
    readonly path: string,
    reason: string,
    options?: {cause?: unknown},
  ) {
    super(`failed to open netns "${path}": ${reason}`, options)
  }
}

/** An interface name the kernel would refuse (CNI_IFNAME or a host veth name). */
export class InvalidInterfaceNameError extends ValidationError {}

/** Bad wiring input other than a name: an address of the wrong family, a negative MTU, a malformed MAC. */
export class InvalidWireRequestError extends ValidationError {}

/** CNI_IFNAME already exists in the pod (the CNI spec says ADD must fail), or the host veth name was taken mid-ADD. */
export class InterfaceExistsError extends ConflictError {
  constructor(
    readonly ifName: string,
    readonly where: 'pod' | 'host',
    message?: string,
  ) {
    super(
      message ??
        (where === 'pod'
          ? `interface "${ifName}" already exists in the container network namespace`
          : `interface "${ifName}" already exists on the host`),
    )
  }
}

/** The pod's host route is already programmed on another link (usually a leaked veth of an older pod). */
export class RouteConflictError extends ConflictError {
  constructor(
    message: string,
    readonly dst: string,
    readonly existingIfIndex: number,
  ) {
    super(message)
  }
}

/** A netlink request or sysctl write failed for a reason that is not one of the kinds above. */
export class DataplaneError extends IpamError {
  constructor(
    message: string,
    /** errno name when the kernel gave one (`EPERM`, `ENODEV`, …). */
    readonly code?: string,
    options?: {cause?: unknown},
  ) {
    super(message, options)
  }
}

export type PodMismatch =
  | 'pod-link-missing'
  | 'pod-link-down'
  | 'pod-link-mtu'
  | 'pod-link-mac'
  | 'pod-address-missing'
  | 'pod-route-missing'
  | 'host-link-missing'
  | 'host-link-down'
  | 'host-route-missing'

/** CHECK found the pod's wiring different from what ADD made; `mismatch` says which part (the first one found). */
export class PodCheckError extends IpamError {
  constructor(
    readonly mismatch: PodMismatch,
    message: string,
  ) {
    super(message)
  }
}
