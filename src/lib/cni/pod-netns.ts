// What ADD checks about the pod's namespace before it allocates anything: allocating first and undoing it when
// wiring fails would still leave a claimed block, its affinity and a node record behind, and a repeated ADD for
// a pod that is already wired would release the addresses the pod is using.
import fs from 'node:fs'
import {InterfaceExistsError} from '../dataplane/errors.js'
import {openNetns} from '../dataplane/netns.js'

/** Interface names in the network namespace of the calling thread (/proc/net/dev is per namespace). */
function interfaceNames(): string[] {
  return fs
    .readFileSync('/proc/thread-self/net/dev', 'utf8')
    .split('\n')
    .slice(2)
    .map((l) => l.split(':')[0]!.trim())
    .filter(Boolean)
}

/**
 * Throws NetnsNotFoundError when `netns` is missing or not a network namespace (a regular file, a directory, a
 * mount namespace), and InterfaceExistsError when `ifName` already exists in it.
 */
export function assertPodNetnsReady(netns: string, ifName: string): void {
  const ns = openNetns(netns)
  try {
    // Entering it also proves it is a *network* namespace (setns refuses another kind).
    if (ns.run(interfaceNames).includes(ifName)) throw new InterfaceExistsError(ifName, 'pod')
  } finally {
    ns.close()
  }
}
