// Removing a node that is gone for good (upstream's RemoveIPAMHost, docs/calico.md#node-removal): its claims on blocks
// are given up so the space is reusable, and, if asked, the addresses its workloads held are released.
// Non-empty blocks lose their owner but keep their addresses; they go away when their last address does.
import {NotFoundError, RevisionConflict} from '../errors.js'
import {checkpoint, type Committed, restated} from '../interrupt.js'
import {type Family, formatCidr, formatIp} from '../net/cidr.js'
import {keys, parseAffinityKey} from '../store/keys.js'
import {guardFor, type KeyValue} from '../store/store.js'
import {listWorkloadEndpoints} from '../workload/endpoint.js'
import {releaseBlockAffinity} from './affinity.js'
import {type Block, cloneBlock, isCoolingDown, isEmpty, markReleased, ownerHost, sanitizeHandle} from './block.js'
import {type Ctx, loadConfig, withRetry} from './context.js'
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

interface Owned {
  ip: string
  handle?: string
}

/** Live (not cooling-down) allocations of a block, with their `node` attribute. */
function* liveAllocations(block: Block): Generator<{ip: string; ordinal: number; node?: string; handle?: string}> {
  for (const [o, idx] of block.allocations.entries()) {
    if (idx === null) continue
    const a = block.attributes?.[idx]
    if (isCoolingDown(a)) continue
    const ip = formatIp(block.cidr.family, block.cidr.base + BigInt(o))
    yield {
      ip,
      ordinal: o,
      node: a?.secondary?.node,
      handle: a?.handle_id === undefined ? undefined : sanitizeHandle(a.handle_id),
    }
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
  const {ipCooldownSeconds: cooldownSeconds} = await loadConfig(ctx)
  const [record, legacy, affs, blocks, endpoints] = await Promise.all([
    ctx.store.get(keys.node(host)),
    ctx.store.get(legacyHostKey(host)),
    affinityKeys(ctx, host),
    listBlocks(ctx, {cooldownSeconds}),
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
  return {record, legacy, affs, blocks, cooldownSeconds, owned, handleNodes, endpoints}
}

function assertKnown(host: string, s: Awaited<ReturnType<typeof scan>>, releaseAddresses: boolean): void {
  // Leftover addresses only count when this call would release them: otherwise a second plain remove
  // would "succeed" forever on a node whose record and affinities are already gone.
  const leftovers = releaseAddresses && (s.owned.length > 0 || s.endpoints.length > 0)
  if (!s.record && !s.legacy && s.affs.length === 0 && !leftovers)
    throw new NotFoundError(`node ${host} not found: no node record, block affinities or addresses`)
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

/**
 * Everything removing the node will do, worked out from one read of the datastore and changing nothing.
 * `executeNodeRemoval` carries out exactly these steps, so `node remove --dry-run` can show the outcome the
 * real run reports (`predicted`), as long as nothing else changes the node's data in between.
 */
export interface NodeRemovalPlan {
  host: string
  releaseAddresses: boolean
  /** Handles whose every address is on this node: each released whole (with its addresses). */
  handles: {handle: string; ips: string[]}[]
  /** Addresses released one by one: no handle, or a handle that also holds other nodes' addresses. */
  ips: Owned[]
  endpointKeys: string[]
  /** The node's affinities in release order (v4 then v6), with what releasing each will do to its block. */
  affinities: {key: string; cidr: string; outcome: 'deleted-block' | 'released' | 'stale'}[]
  /** The summary the real run reports when nothing else writes the node's data meanwhile. */
  predicted: NodeRemoval
}

export async function planNodeRemoval(
  ctx: Ctx,
  host: string,
  opts: {releaseAddresses: boolean},
): Promise<NodeRemovalPlan> {
  validateHostName(host)
  const s = await scan(ctx, host)
  assertKnown(host, s, opts.releaseAddresses)
  const handles: NodeRemovalPlan['handles'] = []
  const ips: Owned[] = []
  if (opts.releaseAddresses) {
    const byHandle = new Map<string, string[]>()
    for (const o of s.owned) {
      if (o.handle === undefined || [...s.handleNodes.get(o.handle)!].some((n) => n !== host)) ips.push(o)
      else byHandle.set(o.handle, [...(byHandle.get(o.handle) ?? []), o.ip])
    }
    const present = await Promise.all([...byHandle.keys()].map((h) => ctx.store.get(keys.handle(h))))
    ;[...byHandle].forEach(([handle, hIps], i) => {
      // A handle whose record is missing (a leak) cannot be released by handle: its addresses go one by one.
      if (present[i]) handles.push({handle, ips: hIps})
      else ips.push(...hIps.map((ip) => ({ip, handle})))
    })
  }
  const released = new Set([...handles.flatMap((h) => h.ips), ...ips.map((o) => o.ip)])
  const now = ctx.clock.now()
  const ownBlocks = new Map(
    s.blocks.filter((b) => ownerHost(b.block) === host).map((b) => [formatCidr(b.block.cidr), b.block]),
  )
  const affinities = s.affs.flatMap((key): NodeRemovalPlan['affinities'] => {
    const a = parseAffinityKey(key)
    if (!a) return []
    const cidr = formatCidr(a.cidr)
    const block = ownBlocks.get(cidr)
    // An affinity whose block is gone or owned by another host is only deleted (releaseBlockAffinity's 'stale').
    if (!block) return [{key, cidr, outcome: 'stale'}]
    // The block as it will be once the addresses above are released, judged by releaseBlockAffinity's rule.
    const after = cloneBlock(block)
    const ordinals = [...liveAllocations(after)].filter((x) => released.has(x.ip)).map((x) => x.ordinal)
    markReleased(after, ordinals, now, s.cooldownSeconds, {recordSeq: false})
    return [{key, cidr, outcome: isEmpty(after) ? 'deleted-block' : 'released'}]
  })
  const count = (o: string) => affinities.filter((a) => a.outcome === o).length
  return {
    host,
    releaseAddresses: opts.releaseAddresses,
    handles,
    ips,
    endpointKeys: opts.releaseAddresses ? s.endpoints.map((w) => w.kv.key) : [],
    affinities,
    predicted: {
      affinitiesReleased: affinities.length,
      blocksDeleted: count('deleted-block'),
      blocksKeptNonAffine: count('released'),
      addressesReleased: released.size,
      endpointsDeleted: opts.releaseAddresses ? s.endpoints.length : 0,
    },
  }
}

/**
 * Carry out a plan; the summary counts what was actually done. Each step is its own transaction and the removal
 * is idempotent, so one interrupted between steps (docs/interrupts.md) is finished by running it again.
 */
export async function executeNodeRemoval(ctx: Ctx, plan: NodeRemovalPlan): Promise<NodeRemoval> {
  const summary: NodeRemoval = {
    affinitiesReleased: 0,
    blocksDeleted: 0,
    blocksKeptNonAffine: 0,
    addressesReleased: 0,
    endpointsDeleted: 0,
  }
  const progress = (): Committed => ({
    done: removalSoFar(summary),
    finish: `ipamctl node remove ${plan.host}${plan.releaseAddresses ? ' --release-addresses' : ''} --yes`,
  })
  try {
    return await removalSteps(ctx, plan, summary, progress)
  } catch (err) {
    throw restated(err, progress())
  }
}

function removalSoFar(s: NodeRemoval): string {
  const n = s.addressesReleased + s.endpointsDeleted + s.affinitiesReleased
  if (n === 0) return ''
  return `the node record is still there; released ${s.addressesReleased} addresses, deleted ${s.endpointsDeleted} workload endpoints, released ${s.affinitiesReleased} block affinities`
}

async function removalSteps(
  ctx: Ctx,
  plan: NodeRemovalPlan,
  summary: NodeRemoval,
  progress: () => Committed,
): Promise<NodeRemoval> {
  const {host} = plan
  // Addresses first: blocks they empty are then deleted by the affinity release below rather than kept.
  const byIp: Owned[] = [...plan.ips]
  for (const h of plan.handles) {
    await checkpoint(ctx, progress())
    try {
      summary.addressesReleased += (await releaseByHandle(ctx, h.handle)).length
    } catch (err) {
      // The handle record went missing since the plan (a leak): fall back to the addresses themselves.
      if (!(err instanceof NotFoundError)) throw err
      byIp.push(...h.ips.map((ip) => ({ip, handle: h.handle})))
    }
  }
  await checkpoint(ctx, progress())
  if (byIp.length > 0)
    summary.addressesReleased += (
      await releaseIps(
        ctx,
        byIp.map((o) => ({ip: o.ip, handle: o.handle})),
      )
    ).released.length
  for (const key of plan.endpointKeys) {
    await checkpoint(ctx, progress())
    if (await deleteKey(ctx, key)) summary.endpointsDeleted++
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

export async function removeNode(ctx: Ctx, host: string, opts: {releaseAddresses: boolean}): Promise<NodeRemoval> {
  return executeNodeRemoval(ctx, await planNodeRemoval(ctx, host, opts))
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
    if (!u) {
      u = {blocks: 0, addresses: 0}
      usage.set(n, u)
    }
    return u
  }
  for (const {block} of await listBlocks(ctx)) {
    const owner = ownerHost(block)
    if (owner !== undefined) of(owner).blocks++
    for (const a of liveAllocations(block)) if (a.node !== undefined) of(a.node).addresses++
  }
  return usage
}
