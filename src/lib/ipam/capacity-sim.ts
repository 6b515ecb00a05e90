// `ipam plan --simulate`: the capacity question answered by the production allocator itself (autoAssign,
// autoAssignBatch, releaseByHandle, removeNode) on an in-memory store, with a clock the simulation moves. Nodes
// join one after another and start their pods, as the arithmetic of capacity.ts assumes; then churn removes nodes
// and adds new ones, and deletes and re-creates pods on every node. What happened is read back from the store.
import {NotFoundError} from '../errors.js'
import {type Family, formatCidr} from '../net/cidr.js'
import type {Clock} from '../clock.js'
import {CountedStore, roundTrips} from '../store/counted.js'
import {MemoryStore} from '../store/memory.js'
import {autoAssign, type FamilyResult} from './autoassign.js'
import {autoAssignBatch} from './batch-assign.js'
import {ownerHost} from './block.js'
import {planCapacity, type PlanInput} from './capacity.js'
import {updateConfig} from './config.js'
import {type Ctx, makeCtx} from './context.js'
import {removeNode} from './node-removal.js'
import {createPools} from './pool-admin.js'
import {listBlocks} from './query.js'
import {releaseByHandle} from './release.js'

export interface SimInput extends PlanInput {
  /** Pod starts handed to the allocator at once, as the node agent batches them (1: one CNI ADD each). */
  readonly batch?: number
  /**
   * Fraction of nodes removed and replaced (default: `churn`). With a cooldown a removed node's blocks keep its
   * cooling addresses, lose their owner and stay, so new nodes cannot claim them: the arithmetic does not model that.
   */
  readonly nodeChurn?: number
  /** Seeds the choice of churned pods and removed nodes, so a run can be repeated. */
  readonly seed?: number
  /** Called every few hundred allocations and at the end. */
  readonly onProgress?: (done: number, total: number) => void
}

export interface SimResult {
  /** Pod starts asked of the allocator, and how many got no address. */
  readonly allocations: number
  readonly failedAllocations: number
  /** Pod starts served from a block their node does not own. */
  readonly borrowedAllocations: number
  readonly podsDeleted: number
  readonly nodesRemoved: number
  readonly nodesAdded: number
  /** At the end: blocks in the store, addresses in use from others' blocks, free addresses in affine blocks. */
  readonly blocksClaimed: bigint
  readonly borrowed: bigint
  readonly stranded: bigint
  /** Pods without an address at the end: every node wants `podsPerNode`. */
  readonly failed: bigint
  /** Datastore round trips of the allocations (not of releases or node removals), per allocation. */
  readonly datastoreCallsPerAllocation: number
  /** Transactions that lost a compare-and-swap race (none expected: the simulation runs one request at a time). */
  readonly conflicts: number
  /** The whole run (releases and node removals included), and the part spent inside allocation calls. */
  readonly seconds: number
  readonly allocationSeconds: number
  /** Allocations per second of allocation time: the allocator's own rate, as the benchmarks measure it. */
  readonly allocationsPerSecond: number
}

/** mulberry32: small, fast and repeatable; the simulation needs no more. */
function rng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

class SimClock implements Clock {
  private t = Date.parse('2026-01-01T00:00:00Z')
  now(): Date {
    return new Date(this.t)
  }
  advance(seconds: number): void {
    this.t += seconds * 1000
  }
}

interface Node {
  readonly name: string
  /** Running pods: handle → block CIDR of its address. */
  readonly pods: Map<string, string>
  next: number
}

export async function simulateCluster(input: SimInput): Promise<SimResult> {
  planCapacity(input) // the same validation as the plan
  const family: Family = input.pool.family
  const batch = Math.max(1, input.batch ?? 1)
  const random = rng(input.seed ?? 1)
  const store = new CountedStore(new MemoryStore())
  const clock = new SimClock()
  const ctx: Ctx = makeCtx(store, {clock, maxAttempts: 100})
  await createPools(ctx, [{name: 'sim', cidr: formatCidr(input.pool), blockSize: input.blockSize}])
  await updateConfig(ctx, {
    strictAffinity: input.strictAffinity,
    maxBlocksPerHost: input.maxBlocksPerHost,
    ipCooldownSeconds: input.ipCooldownSeconds,
  })
  const P = input.podsPerNode
  const churnPods = Math.round(input.churn * P)
  const churnNodes = Math.round((input.nodeChurn ?? input.churn) * input.nodes)
  const total = input.nodes * P + input.nodes * churnPods + churnNodes * P
  const stats = {allocations: 0, failed: 0, borrowed: 0, calls: 0, deleted: 0, ns: 0n}
  // Who claimed each block: the first address of a new block always goes to the node that claims it.
  const owner = new Map<string, string>()
  const nodes: Node[] = []
  let lastReport = 0
  const report = () => {
    if (input.onProgress && (stats.allocations - lastReport >= 500 || stats.allocations === total)) {
      lastReport = stats.allocations
      input.onProgress(stats.allocations, total)
    }
  }

  const start = async (node: Node, count: number): Promise<void> => {
    for (let i = 0; i < count; i += batch) {
      const handles = Array.from({length: Math.min(batch, count - i)}, () => `sim.${node.name}.${node.next++}`)
      const args = handles.map((handle) => ({
        host: node.name,
        num4: family === 4 ? 1 : 0,
        num6: family === 6 ? 1 : 0,
        handle,
        attrs: {namespace: 'sim', pod: handle.slice(4)},
      }))
      const before = roundTrips(store.counts)
      const t = process.hrtime.bigint()
      let results: (FamilyResult | undefined)[]
      if (batch === 1) {
        const r = await autoAssign(ctx, args[0]!)
        results = [family === 4 ? r.v4 : r.v6]
      } else {
        const out = await autoAssignBatch(ctx, args)
        results = out.map((o) => ('ok' in o ? (family === 4 ? o.ok.v4 : o.ok.v6) : undefined))
      }
      stats.ns += process.hrtime.bigint() - t
      stats.calls += roundTrips(store.counts) - before
      for (const [j, r] of results.entries()) {
        stats.allocations++
        const ip = r?.ips[0]
        if (!ip) {
          stats.failed++
          continue
        }
        node.pods.set(handles[j]!, ip.block)
        const claimer = owner.get(ip.block)
        if (claimer === undefined) owner.set(ip.block, node.name)
        else if (claimer !== node.name) stats.borrowed++
      }
      report()
    }
  }

  let joined = 0
  const join = async (): Promise<void> => {
    const node: Node = {name: `node-${joined++}`, pods: new Map(), next: 0}
    nodes.push(node)
    await start(node, P)
  }

  const t0 = process.hrtime.bigint()
  for (let i = 0; i < input.nodes; i++) await join()
  // Nodes leave (their pods with them, as `node remove --release-addresses` does) and as many new ones join.
  let removed = 0
  for (let i = 0; i < churnNodes && nodes.length > 0; i++) {
    const [node] = nodes.splice(Math.floor(random() * nodes.length), 1)
    try {
      await removeNode(ctx, node!.name, {releaseAddresses: true})
    } catch (err) {
      // A node none of whose pods got an address left nothing behind, not even its Node record.
      if (!(err instanceof NotFoundError) || node!.pods.size > 0) throw err
    }
    for (const [cidr, host] of owner) if (host === node!.name) owner.delete(cidr)
    stats.deleted += node!.pods.size
    removed++
  }
  for (let i = 0; i < removed; i++) await join()
  if (churnPods > 0) {
    // Then every node, new ones included, deletes some of its pods and starts as many new ones; with a cooldown
    // the old addresses are held until the clock has moved on, which it does once every node has churned.
    for (const node of nodes) {
      const running = [...node.pods.keys()]
      const k = Math.min(churnPods, running.length)
      for (let i = 0; i < k; i++) {
        const at = i + Math.floor(random() * (running.length - i))
        ;[running[i], running[at]] = [running[at]!, running[i]!]
        await releaseByHandle(ctx, running[i]!)
        node.pods.delete(running[i]!)
        stats.deleted++
      }
      await start(node, churnPods)
    }
    clock.advance(input.ipCooldownSeconds + 1)
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9

  let borrowed = 0n
  let stranded = 0n
  let running = 0n
  const blocks = await listBlocks(ctx)
  for (const {block} of blocks) {
    const host = ownerHost(block)
    if (host !== undefined) stranded += BigInt(block.unallocated.length)
    for (const idx of block.allocations) {
      if (idx === null) continue
      running++
      if (block.attributes?.[idx]?.secondary?.node !== host) borrowed++
    }
  }
  input.onProgress?.(stats.allocations, total)
  return {
    allocations: stats.allocations,
    failedAllocations: stats.failed,
    borrowedAllocations: stats.borrowed,
    podsDeleted: stats.deleted,
    nodesRemoved: removed,
    nodesAdded: removed,
    blocksClaimed: BigInt(blocks.length),
    borrowed,
    stranded,
    failed: BigInt(nodes.length * P) - running,
    datastoreCallsPerAllocation: stats.allocations === 0 ? 0 : stats.calls / stats.allocations,
    conflicts: store.counts.conflicts,
    seconds,
    allocationSeconds: Number(stats.ns) / 1e9,
    allocationsPerSecond: stats.ns === 0n ? 0 : stats.allocations / (Number(stats.ns) / 1e9),
  }
}
