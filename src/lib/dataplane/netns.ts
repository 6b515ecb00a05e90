// Running code inside a pod's network namespace from Node.
//
// setns(2) switches only the calling thread. Everything here runs synchronously on the main thread and switches
// back before returning, so no other JavaScript, no promise continuation and no libuv thread-pool work ever runs
// while the main thread is in the pod namespace (threads created meanwhile would inherit it). What outlives the
// switch is a socket: a netlink socket is bound to the namespace it was created in, so rtnl.ts socketIn(ns)
// (a socket created inside ns.run) keeps talking to the pod namespace after we are back in the host. The agent
// client's thread-pool exchange (native/unix-exchange) never runs inside a switch: ns.run is synchronous.
//
// Sysctls: /proc/sys/net resolves against the network namespace of the thread that looks the path up (the kernel's
// net sysctl root is chosen from current->nsproxy->net_ns at open time). A synchronous fs.writeFileSync inside
// inNetns therefore writes the pod's value; verified on this kernel (6.18): after setns, writing
// /proc/sys/net/ipv4/ip_forward changed the pod's value (seen with `ip netns exec`) and left the host's alone, and
// /proc/sys/net/ipv4/conf/<if> listed the pod's interfaces. The async fs API would run the syscall on a libuv
// thread, still in the host namespace, so it must not be used for this.
import {closeSync, openSync, statfsSync} from 'node:fs'
import {CLONE_NEWNET, setns} from 'netns'
import {DataplaneError, NetnsNotFoundError} from './errors.js'

/** Where `ip netns add <name>` bind-mounts named namespaces. */
export const NETNS_RUN_DIR = '/var/run/netns'

/** statfs f_type of nsfs, the filesystem behind every namespace file. */
const NSFS_MAGIC = 0x6e736673

/** A bare name (`ipamctl-t-1`) means a named namespace under /var/run/netns; anything with a `/` is a path. */
export function netnsPath(nameOrPath: string): string {
  return nameOrPath.includes('/') ? nameOrPath : `${NETNS_RUN_DIR}/${nameOrPath}`
}

export interface NetnsHandle {
  readonly path: string
  /** An fd on the namespace, e.g. for IFLA_NET_NS_FD (create a link directly inside it). Valid until close(). */
  readonly fd: number
  /** Run `fn` synchronously with the calling thread inside the namespace. */
  run<T>(fn: () => T): T
  close(): void
}

/** Open a network namespace by path (or bare name). Throws NetnsNotFoundError if it is missing or not a netns. */
export function openNetns(nameOrPath: string): NetnsHandle {
  const path = netnsPath(nameOrPath)
  let fd: number
  try {
    fd = openSync(path, 'r')
  } catch (error) {
    throw new NetnsNotFoundError(path, describeFsError(error), {cause: error})
  }
  try {
    // An unmounted /var/run/netns/<name> is an empty file on tmpfs: opening it works, joining it would not.
    if (statfsSync(path).type !== NSFS_MAGIC) throw new NetnsNotFoundError(path, 'not a network namespace')
  } catch (error) {
    closeSync(fd)
    if (error instanceof NetnsNotFoundError) throw error
    throw new NetnsNotFoundError(path, describeFsError(error), {cause: error})
  }
  let open = true
  return {
    path,
    fd,
    run: <T>(fn: () => T): T => {
      if (!open) throw new Error(`netns handle for ${path} is closed`)
      return runIn(fd, path, fn)
    },
    close: () => {
      if (open) closeSync(fd)
      open = false
    },
  }
}

/** Run `fn` synchronously inside the network namespace at `nsPath`; the thread is back in its own namespace after. */
export function inNetns<T>(nsPath: string, fn: () => T): T {
  const ns = openNetns(nsPath)
  try {
    return ns.run(fn)
  } finally {
    ns.close()
  }
}

function runIn<T>(targetFd: number, path: string, fn: () => T): T {
  // thread-self, not self: setns is per thread and this is the thread we must return to.
  const home = openSync('/proc/thread-self/ns/net', 'r')
  try {
    try {
      setns(targetFd, CLONE_NEWNET)
    } catch (error) {
      // EINVAL: the fd is a namespace of another type (mnt, pid…).
      if ((error as {errno?: number}).errno === 22)
        throw new NetnsNotFoundError(path, 'not a network namespace', {cause: error})
      throw new DataplaneError(`failed to enter netns ${path}: ${(error as Error).message}`, undefined, {cause: error})
    }
    let result: T
    try {
      result = fn()
    } finally {
      restore(home, path)
    }
    if (result instanceof Promise) {
      // The async part would run after we switched back, in the wrong namespace: a programming error.
      result.catch(() => {})
      throw new TypeError('inNetns callback must be synchronous (it returned a Promise)')
    }
    return result
  } finally {
    closeSync(home)
  }
}

function restore(home: number, path: string): void {
  try {
    setns(home, CLONE_NEWNET)
  } catch (error) {
    // Cannot happen short of the host ns file vanishing; continuing would send host work into the pod, so stop.
    process.stderr.write(
      `ipamctl: fatal: could not return from netns ${path} to the host netns: ${(error as Error).message}\n`,
    )
    process.abort()
  }
}

function describeFsError(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code
  if (code === 'ENOENT') return 'no such file or directory'
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied'
  return (error as Error).message
}
