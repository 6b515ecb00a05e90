// What the agent's pool and node gauges need, kept between scrapes: each block's counts (blockUsage,
// blockBorrowed and its owner, as `ipam show` computes them) and the pools, reservations and IPAM config. A
// ChangeFeed (Store.watch) brings it up to date, so a scrape reads what changed since the previous one instead
// of every block; the totals are added up by the same pure function `ipam show` uses (poolUsage).
import {type Block, decodeBlock, garbageCollect, isCoolingDown, ownerHost} from '../ipam/block.js'
import {type Ctx, configFrom} from '../ipam/context.js'
import {decodePool, type Pool} from '../ipam/pool.js'
import {type BlockUsage, blockBorrowed, blockUsage, occupancy, type PoolUsage, poolUsage} from '../ipam/query.js'
import type {IpamConfig} from '../ipam/records.js'
import {decodeReservation, type ReservedMatcher, reservedMatcher} from '../ipam/reservation.js'
import {containsIp, parseCidr, parseIp} from '../net/cidr.js'
import {keys} from '../store/keys.js'
import {compareBytes} from '../codec/gojson.js'
import {type ChangeFeed, changeFeed, forEachKv, type KeyValue} from '../store/store.js'

interface BlockEntry {
  usage: BlockUsage
  owner: string | undefined
  /** Borrowed addresses (usually none). */
  borrowed: string[]
  /** When the first of its cooling-down addresses becomes free (ms since the epoch; Infinity: none). */
  expires: number
}

export interface UsageFigures {
  pools: (PoolUsage & {borrowed: number})[]
  /** Blocks per owning node. */
  nodeBlocks: ReadonlyMap<string, number>
  /** Nodes whose count changed (or went to zero: absent from nodeBlocks) since the previous figures; all after a reset. */
  changedNodes: ReadonlySet<string>
  /** The node gauges must be rebuilt (the view started over). */
  reset: boolean
}

const POOLS = keys.resourcePrefix('ippools')
const RESERVATIONS = keys.resourcePrefix('ipreservations')
const CONFIG = keys.ipamConfig()
const BLOCKS = keys.blockPrefix()

export class UsageView {
  private feed: ChangeFeed | undefined
  private readonly poolKvs = new Map<string, string>()
  private readonly reservationKvs = new Map<string, string>()
  private configKv: KeyValue | undefined
  private pools: Pool[] = []
  private reserved: ReservedMatcher = reservedMatcher([])
  private config: IpamConfig = configFrom(undefined)
  private readonly blocks = new Map<string, BlockEntry>()
  private readonly perNode = new Map<string, number>()
  private changedNodes = new Set<string>()
  private figures: UsageFigures | undefined
  private earliestExpiry = Infinity

  constructor(private readonly ctx: Ctx) {}

  /** The figures as of now: what changed since the last call is read, nothing else. */
  async refresh(): Promise<UsageFigures> {
    try {
      return await this.update()
    } catch (err) {
      // Half-applied changes cannot be trusted: start over with a full read next time.
      await this.close()
      throw err
    }
  }

  async close(): Promise<void> {
    const f = this.feed
    this.feed = undefined
    await f?.close()
  }

  private async update(): Promise<UsageFigures> {
    // Config and reservations come first: on a reset the blocks are counted with the new ones.
    this.feed ??= changeFeed(this.ctx.store, [CONFIG, POOLS, RESERVATIONS, BLOCKS])
    let reset = false
    let changed = false
    let blocksSeen = false
    let metaAfterBlocks = false
    let poolsChanged = false
    let countsChanged = false
    const now = this.ctx.clock.now()
    await this.feed.next({
      reset: () => {
        reset = changed = true
        this.poolKvs.clear()
        this.reservationKvs.clear()
        this.configKv = undefined
        this.blocks.clear()
        this.perNode.clear()
        this.changedNodes.clear()
        this.earliestExpiry = Infinity
        poolsChanged = true
        this.refreshMeta()
      },
      change: (key, kv) => {
        changed = true
        if (key.startsWith(BLOCKS)) {
          blocksSeen = true
          this.setBlock(key, kv && this.entry(decodeBlock(kv.value), now))
          return
        }
        if (key === CONFIG) this.configKv = kv
        else if (key.startsWith(POOLS)) {
          poolsChanged = true
          if (kv) this.poolKvs.set(key, kv.value)
          else this.poolKvs.delete(key)
          return
        } else if (key.startsWith(RESERVATIONS)) {
          if (kv) this.reservationKvs.set(key, kv.value)
          else this.reservationKvs.delete(key)
        } else return
        countsChanged = true
        if (blocksSeen) metaAfterBlocks = true
        this.refreshMeta()
      },
    })
    if (poolsChanged) this.pools = sortedValues(this.poolKvs).map(decodePool)
    if (countsChanged && (metaAfterBlocks || !reset)) {
      // New reservations or cooldown change every block's counts: count them again.
      await forEachKv(this.ctx.store, BLOCKS, (kv) => this.setBlock(kv.key, this.entry(decodeBlock(kv.value), now)))
    }
    if (now.getTime() >= this.earliestExpiry) {
      // Cooling-down addresses became free with time alone: count their blocks again.
      const due = [...this.blocks].filter(([, e]) => e.expires <= now.getTime()).map(([k]) => k)
      const kvs = await Promise.all(due.map((k) => this.ctx.store.get(k)))
      for (const [i, k] of due.entries()) this.setBlock(k, kvs[i] && this.entry(decodeBlock(kvs[i]!.value), now))
      changed = true
    }
    this.earliestExpiry = Infinity
    for (const e of this.blocks.values()) if (e.expires < this.earliestExpiry) this.earliestExpiry = e.expires
    if (!changed && this.figures) {
      this.figures = {...this.figures, reset: false, changedNodes: new Set()}
      return this.figures
    }
    this.figures = {
      pools: this.total(),
      nodeBlocks: this.perNode,
      changedNodes: this.changedNodes,
      reset: reset || !this.figures,
    }
    this.changedNodes = new Set()
    return this.figures
  }

  private refreshMeta(): void {
    this.config = configFrom(this.configKv)
    this.reserved = reservedMatcher(sortedValues(this.reservationKvs).map(decodeReservation))
  }

  private entry(block: Block, now: Date): BlockEntry {
    garbageCollect(block, this.config.ipCooldownSeconds, now)
    let expires = Infinity
    for (const a of block.attributes ?? []) {
      if (!isCoolingDown(a)) continue
      const at = Date.parse(a.releasedAt!) + this.config.ipCooldownSeconds * 1000
      if (at < expires) expires = at
    }
    return {
      usage: blockUsage(occupancy(block), this.reserved),
      owner: ownerHost(block),
      borrowed: blockBorrowed(block).borrowed.map((b) => b.ip),
      expires,
    }
  }

  private setBlock(key: string, e: BlockEntry | undefined): void {
    const old = this.blocks.get(key)
    if (old?.owner !== undefined) this.count(old.owner, -1)
    if (e) {
      this.blocks.set(key, e)
      if (e.owner !== undefined) this.count(e.owner, 1)
      if (e.expires < this.earliestExpiry) this.earliestExpiry = e.expires
    } else this.blocks.delete(key)
  }

  private count(node: string, d: number): void {
    const n = (this.perNode.get(node) ?? 0) + d
    if (n > 0) this.perNode.set(node, n)
    else this.perNode.delete(node)
    this.changedNodes.add(node)
  }

  /** Per-pool totals, and borrowed addresses by the first pool that holds them (else the orphaned group). */
  private total(): (PoolUsage & {borrowed: number})[] {
    const usage = poolUsage(
      this.pools,
      this.reserved,
      [...this.blocks.values()].map((e) => e.usage),
      {orphans: true},
    )
    const out = usage.map((u) => ({...u, borrowed: 0}))
    const ranges = usage.map((u) => (u.cidr ? parseCidr(u.cidr) : undefined))
    for (const e of this.blocks.values()) {
      for (const text of e.borrowed) {
        const ip = parseIp(text)
        let i = ranges.findIndex((r) => r !== undefined && containsIp(r, ip))
        if (i < 0) i = usage.findIndex((u) => u.cidr === '')
        if (i >= 0) out[i]!.borrowed++
      }
    }
    return out
  }
}

/** Values in key order (the order listPools and listReservations give). */
function sortedValues(m: ReadonlyMap<string, string>): string[] {
  return [...m.keys()].sort(compareBytes).map((k) => m.get(k)!)
}
