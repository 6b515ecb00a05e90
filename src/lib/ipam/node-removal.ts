// Removing a node that is gone for good (upstream's RemoveIPAMHost, reference §3.12): its claims on blocks
// are given up so the space is reusable, and, if asked, the addresses its workloads held are released.
// Non-empty blocks lose their owner but keep their addresses; they go away when their last address does.
import {NotFoundError, RevisionConflict} from '../errors.js'
import {checkpoint, type Committed, restated} from '../interrupt.js'
import {type Family, formatIp} from '../net/cidr.js'
import {keys, parseAffinityKey} from '../store/keys.js'
import {guardFor, type KeyValue} from '../store/store.js'
import {listWorkloadEndpoints} from '../workload/endpoint.js'
import {releaseBlockAffinity} from './affinity.js'
import {type Block, isCoolingDown, ownerHost, sanitizeHandle} from './block.js'
import {type Ctx, withRetry} from './context.js'
import {validateHostName} from './node.js'
import {listBlocks} from './query.js'
import {releaseByHandle, releaseIps} from './release.js'

export interface NodeRemoval {
  affinitiesReleased: number
  blocksDeleted: number
  blocksKeptNonAffine: number
  addressesReleased: number
  endpointsDeleted: number
}

/** What removing the node would touch; read-only, so a command can show it before asking. */
export interface NodeFootprint {
  hasRecord: boolean
  affinities: number
  addresses: number
  endpoints: number
}

interface Owned {
  ip: string
  handle?: string
}

/** Live (not cooling-down) allocations of a block, with their `node` attribute. */
function* liveAllocations(block: Block): Generator<{ip: string; node?: string; handle?: string}> {
  for (const [o, idx] of block.allocations.entries()) {
    if (idx === null) continue
    const a = block.attributes?.[idx]
    if (isCoolingDown(a)) continue
    const ip = formatIp(block.cidr.family, block.cidr.base + BigInt(o))
    yield {ip, node: a?.secondary?.node, handle: a?.handle_id === undefined ? undefined : sanitizeHandle(a.handle_id)}
  }
}

// The bare `/calico/ipam/v2/host/<host>` key older Calico versions wrote; RemoveIPAMHost deletes it too.
const legacyHostKey = (host: string): string => `${keys.allHostAffinitiesPrefix()}${host}`

async function affinityKeys(ctx: Ctx, host: string): Promise<string[]> {
  const fams: Family[] = [4, 6]
  const out: string[] = []
  for (const f of fams) out.push(...(await ctx.store.listKeys(keys.hostAffinityPrefix(host, f))))
  return out
}

async function scan(ctx: Ctx, host: string) {
  const [record, legacy, affs, blocks, endpoints] = await Promise.all([
    ctx.store.get(keys.node(host)),
    ctx.store.get(legacyHostKey(host)),
    affinityKeys(ctx, host),
    listBlocks(ctx),
    listWorkloadEndpoints(ctx.store, host),
  ])
  const owned: Owned[] = []
  // Every address of each handle, so a handle is only released whole when all of it is on this node.
  const handleNodes = new Map<string, Set<string | undefined>>()
  for (const {block} of blocks) {
    for (const a of liveAllocations(block)) {
      if (a.handle !== undefined) {
        const s = handleNodes.get(a.handle) ?? new Set()
        s.add(a.node)
        handleNodes.set(a.handle, s)
      }
      if (a.node === host) owned.push({ip: a.ip, handle: a.handle})
    }
  }
  return {record, legacy, affs, owned, handleNodes, endpoints}
}

function assertKnown(host: string, s: Awaited<ReturnType<typeof scan>>, releaseAddresses: boolean): void {
  // Leftover addresses only count when this call would release them: otherwise a second plain remove
  // would "succeed" forever on a node whose record and affinities are already gone.
  const leftovers = releaseAddresses && (s.owned.length > 0 || s.endpoints.length > 0)
  if (!s.record && !s.legacy && s.affs.length === 0 && !leftovers) throw new NotFoundError(`node ${host} not found: no node record, block affinities or addresses`)
}

export async function nodeFootprint(ctx: Ctx, host: string, opts: {releaseAddresses: boolean}): Promise<NodeFootprint> {
  validateHostName(host)
  const s = await scan(ctx, host)
  assertKnown(host, s, opts.releaseAddresses)
  return {hasRecord: !!s.record, affinities: s.affs.length, addresses: s.owned.length, endpoints: s.endpoints.length}
}

/** Delete `key` if it still exists, re-reading on a race so a concurrent update is not lost silently. */
async function deleteKey(ctx: Ctx, key: string): Promise<boolean> {
  return withRetry(ctx, async () => {
    const kv: KeyValue | undefined = await ctx.store.get(key)
    if (!kv) return false
    const r = await ctx.store.txn([guardFor(key, kv)], [{delete: key}])
    if (!r.succeeded) throw new RevisionConflict(`${key} changed while deleting it; retrying`)
    return true
  })
}

export async function removeNode(ctx: Ctx, host: string, opts: {releaseAddresses: boolean}): Promise<NodeRemoval> {
  const summary: NodeRemoval = {affinitiesReleased: 0, blocksDeleted: 0, blocksKeptNonAffine: 0, addressesReleased: 0, endpointsDeleted: 0}
  // Each step is its own transaction and the removal is idempotent: interrupted, running it again finishes it.
  const progress = (): Committed => ({
    done: removalSoFar(summary),
    finish: `ipamctl node remove ${host}${opts.releaseAddresses ? ' --release-addresses' : ''} --yes`,
  })
  try {
    return await removeNodeSteps(ctx, host, opts, summary, progress)
  } catch (err) {
    throw restated(err, progress())
  }
}

function removalSoFar(s: NodeRemoval): string {
  const n = s.addressesReleased + s.endpointsDeleted + s.affinitiesReleased
  if (n === 0) return ''
  return `the node record is still there; released ${s.addressesReleased} addresses, deleted ${s.endpointsDeleted} workload endpoints, released ${s.affinitiesReleased} block affinities`
}

async function removeNodeSteps(ctx: Ctx, host: string, opts: {releaseAddresses: boolean}, summary: NodeRemoval, progress: () => Committed): Promise<NodeRemoval> {
  validateHostName(host)
  const s = await scan(ctx, host)
  assertKnown(host, s, opts.releaseAddresses)

  // Addresses first: blocks they empty are then deleted by the affinity release below rather than kept.
  if (opts.releaseAddresses) {
    const byIp: Owned[] = []
    const done = new Set<string>()
    for (const o of s.owned) {
      if (o.handle === undefined || [...s.handleNodes.get(o.handle)!].some((n) => n !== host)) {
        // No handle, or the handle also holds addresses of other nodes: release just this address.
        byIp.push(o)
        continue
      }
      if (done.has(o.handle)) continue
      done.add(o.handle)
      await checkpoint(ctx, progress())
      try {
        summary.addressesReleased += (await releaseByHandle(ctx, o.handle)).length
      } catch (err) {
        // A handle key that went missing (a leak): fall back to the addresses themselves.
        if (!(err instanceof NotFoundError)) throw err
        byIp.push(...s.owned.filter((x) => x.handle === o.handle))
      }
    }
    await checkpoint(ctx, progress())
    if (byIp.length > 0) summary.addressesReleased += (await releaseIps(ctx, byIp.map((o) => ({ip: o.ip, handle: o.handle})))).released.length
    for (const w of s.endpoints) {
      await checkpoint(ctx, progress())
      if (await deleteKey(ctx, w.kv.key)) summary.endpointsDeleted++
    }
  }

  // v4 then v6, as upstream; keys listed again in case an assignment claimed a block meanwhile.
  for (const key of await affinityKeys(ctx, host)) {
    const a = parseAffinityKey(key)
    if (!a) continue
    await checkpoint(ctx, progress())
    const r = await releaseBlockAffinity(ctx, host, a.cidr, {requireEmpty: false})
    if (r === 'absent') continue
    summary.affinitiesReleased++
    if (r === 'deleted-block') summary.blocksDeleted++
    else if (r === 'released') summary.blocksKeptNonAffine++
  }

  await checkpoint(ctx, progress())
  await deleteKey(ctx, legacyHostKey(host))
  await deleteKey(ctx, keys.node(host))
  return summary
}

export interface NodeUsage {
  /** Blocks whose affinity is this node. */
  blocks: number
  /** Allocated (not cooling-down) addresses whose `node` attribute is this node, in any block. */
  addresses: number
}

export async function nodeUsage(ctx: Ctx): Promise<Map<string, NodeUsage>> {
  const usage = new Map<string, NodeUsage>()
  const of = (n: string) => {
    let u = usage.get(n)
    if (!u) usage.set(n, (u = {blocks: 0, addresses: 0}))
    return u
  }
  for (const {block} of await listBlocks(ctx)) {
    const owner = ownerHost(block)
    if (owner !== undefined) of(owner).blocks++
    for (const a of liveAllocations(block)) if (a.node !== undefined) of(a.node).addresses++
  }
  return usage
}
