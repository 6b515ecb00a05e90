// The blocks each host's last AutoAssign read, remembered per store connection. A long-lived allocator (one
// process making many allocations, like a node agent) can then read them in its first round trip, together
// with config, pools and the host's affinities, instead of in a second one after the affinities. Only a
// guess: a block is used only if the affinities read in that same round still name it, and every write is
// guarded by the revisions read, so a stale or wrong guess costs one wasted read, never correctness.
import type {Cidr, Family} from '../net/cidr.js'
import type {Store} from '../store/store.js'

/** Blocks read ahead per allocation: a host normally allocates from its first non-full block. */
export const MAX_RECENT_BLOCKS = 4
/** Hosts remembered per store; the oldest is forgotten first. A CNI plugin process only ever sees one. */
const MAX_HOSTS = 1024

const byStore = new WeakMap<Store, Map<string, Cidr[]>>()
const slot = (host: string, family: Family): string => `${family} ${host}`

export function recentBlocks(store: Store, host: string, family: Family): Cidr[] {
  return byStore.get(store)?.get(slot(host, family)) ?? []
}

export function rememberBlocks(store: Store, host: string, family: Family, blocks: readonly Cidr[]): void {
  let hosts = byStore.get(store)
  if (!hosts) {
    hosts = new Map()
    byStore.set(store, hosts)
  }
  const key = slot(host, family)
  hosts.delete(key) // re-inserted last: most recently used
  if (blocks.length > 0) hosts.set(key, blocks.slice(-MAX_RECENT_BLOCKS))
  if (hosts.size > MAX_HOSTS) hosts.delete(hosts.keys().next().value!)
}
