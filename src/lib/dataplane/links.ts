// Read-only looks into a pod's network namespace for the manual path (`cni add` picking a free interface name).
import {openNetns} from './netns.js'
import {nl, socketIn} from './rtnl.js'

/** The names of the interfaces in a namespace (lo included). Throws NetnsNotFoundError if it is missing. */
export async function linkNames(netns: string): Promise<string[]> {
  const ns = openNetns(netns)
  try {
    const sock = socketIn(ns)
    try {
      return (await nl(`failed to list interfaces in ${netns}`, sock.links())).map((l) => l.ifname ?? '')
    } finally {
      sock.close()
    }
  } finally {
    ns.close()
  }
}
