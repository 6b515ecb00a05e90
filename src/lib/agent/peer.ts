// Who is on the other end of an agent connection, as the kernel records it, and whether the agent may run a plugin
// invocation for it (`/v1/invoke`, docs/startup.md#the-agent-runs-the-invocation). Running an invocation means
// doing, as the agent's user, what the plugin process would have done as its own: reading the files its netconf
// names (nodename file, client config) and appending to, creating and rotating its log file. So the agent does it
// only for a peer that could have done all of that itself, seeing the same files and host name:
// - the same uid as the agent (from SO_PEERCRED: not what the request claims; a member of the socket's group
//   that is not that user may still ask for assignments, as before, but not have files written for it);
// - the same mount namespace (the same files under the same paths), the same UTS namespace (os.hostname(), a
//   netconf's last say on the node name) and the same working directory (relative paths in the netconf);
// read from /proc/<pid> of the peer's pid as the kernel gives it in this process's pid namespace.
import fs from 'node:fs'
import type {Socket} from 'node:net'
import {loadUnixExchange} from '../agent-client/client.js'

/** What an invocation sees of its process besides its environment and stdin. */
export interface ProcessView {
  uid: number
  /** readlink of /proc/<pid>/ns/mnt, e.g. `mnt:[4026531841]`. */
  mnt: string
  uts: string
  cwd: string
}

/** The view of process `proc` (`self` or a pid) with user `uid`; undefined where /proc does not tell. */
export function viewOf(proc: 'self' | number, uid: number): ProcessView | undefined {
  try {
    return {
      uid,
      mnt: fs.readlinkSync(`/proc/${proc}/ns/mnt`),
      uts: fs.readlinkSync(`/proc/${proc}/ns/uts`),
      cwd: fs.readlinkSync(`/proc/${proc}/cwd`),
    }
  } catch {
    return undefined
  }
}

/** The view of the process connected on `socket`, from the kernel's record of it; undefined where it has none. */
export function peerView(socket: Socket): ProcessView | undefined {
  const fd = (socket as unknown as {_handle?: {fd?: unknown}})._handle?.fd
  if (typeof fd !== 'number' || fd < 0) return undefined
  const cred = loadUnixExchange().peerCredentials(fd)
  // pid 0: the peer's pid namespace is not visible from here, so neither are its namespaces.
  return cred && cred.pid > 0 ? viewOf(cred.pid, cred.uid) : undefined
}

/** Why the agent may not run an invocation for `peer`, for the refusal's message; undefined when it may. */
export function peerDifference(own: ProcessView | undefined, peer: ProcessView | undefined): string | undefined {
  if (!own) return 'the agent cannot read its own namespaces'
  if (!peer) return 'the kernel does not say who the plugin process is'
  if (own.uid !== peer.uid) return `the plugin runs as uid ${peer.uid}, the agent as ${own.uid}`
  if (own.mnt !== peer.mnt) return 'the plugin runs in another mount namespace'
  if (own.uts !== peer.uts) return 'the plugin runs in another UTS namespace'
  if (own.cwd !== peer.cwd) return `the plugin runs in ${peer.cwd}, the agent in ${own.cwd}`
  return undefined
}
