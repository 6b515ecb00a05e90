// The agent's Prometheus metrics. Pool and node gauges come from a UsageView, which a scrape brings up to date
// with what changed in the datastore since the previous scrape, counted the way `ipam show` counts, so they are
// what `ipam show -o json` says for the same store at that moment. Leak candidates come from `ipam check`'s
// scan, which reads every block, handle and endpoint: while /metrics is scraped it runs in the background every
// leak-scan interval (a GC pass's scan serves as one too), never on a scrape, which serves the last result and
// its time.
import {Counter, Gauge, Histogram, Registry} from 'prom-client'
import {checkIpam} from '../ipam/check.js'
import type {Ctx} from '../ipam/context.js'
import type {StoreCounts, StoreOp} from '../store/counted.js'
import {UsageView} from './usage-view.js'

export const LEAK_SCAN_INTERVAL_MS = 60_000

export interface LeakCounts {
  /** Leaked addresses (allocated, not cooling down, no endpoint), grace period or not. */
  addresses: number
  handles: number
}

export class AgentMetrics {
  readonly registry = new Registry()
  private readonly pool = {
    capacity: this.gauge('ipamctl_pool_capacity_addresses', 'Addresses in the pool (ipam show: IPS TOTAL).', [
      'pool',
      'cidr',
    ]),
    inUse: this.gauge(
      'ipamctl_pool_in_use_addresses',
      'Allocated addresses, cooling-down ones included (ipam show: IPS IN USE).',
      ['pool', 'cidr'],
    ),
    free: this.gauge('ipamctl_pool_free_addresses', 'Addresses that can be allocated (ipam show: IPS FREE).', [
      'pool',
      'cidr',
    ]),
    reserved: this.gauge(
      'ipamctl_pool_reserved_addresses',
      'Addresses held back by IPReservations (ipam show: IPS RESERVED).',
      ['pool', 'cidr'],
    ),
    borrowed: this.gauge(
      'ipamctl_pool_borrowed_addresses',
      "Addresses allocated to a node other than their block's owner (ipam show --show-borrowed).",
      ['pool', 'cidr'],
    ),
  }
  private readonly nodeBlocks = this.gauge('ipamctl_node_blocks', 'Allocation blocks affine to each node.', ['node'])
  private readonly leakedAddresses = this.gauge(
    'ipamctl_leak_candidate_addresses',
    'Allocated addresses no workload endpoint uses (ipam check: leaked), as of the last scan.',
    [],
  )
  private readonly leakedHandles = this.gauge(
    'ipamctl_leaked_handles',
    'Handles no allocation refers to (ipam check), as of the last scan.',
    [],
  )
  private readonly leakScanTime = this.gauge(
    'ipamctl_leak_scan_timestamp_seconds',
    'When the scan behind the leak figures began (Unix time); 0: no scan has finished yet.',
    [],
  )
  private readonly queueDepth = this.gauge('ipamctl_agent_queue_depth', "Requests waiting for the agent's writer.", [])
  readonly allocationSeconds = new Histogram({
    name: 'ipamctl_allocation_duration_seconds',
    help: "Time from an assign request's arrival to its reply.",
    labelNames: ['op', 'outcome'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  })
  readonly releaseSeconds = new Histogram({
    name: 'ipamctl_release_duration_seconds',
    help: "Time from a release request's arrival to its reply.",
    labelNames: ['outcome'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  })
  readonly requests = new Counter({
    name: 'ipamctl_agent_requests_total',
    help: 'Requests by operation and outcome (ok, error, rejected).',
    labelNames: ['op', 'outcome'],
    registers: [this.registry],
  })
  readonly batchSize = new Histogram({
    name: 'ipamctl_agent_batch_size',
    help: 'Auto-assign requests served per batch (its _count is the number of batches).',
    buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256],
    registers: [this.registry],
  })
  readonly blockTxns = new Counter({
    name: 'ipamctl_agent_block_transactions_total',
    help: 'Batched block transactions (one block and the handles of every request it served).',
    registers: [this.registry],
  })
  readonly gcActions = new Counter({
    name: 'ipamctl_gc_actions_total',
    help: 'Background GC: released / skipped addresses, deleted / skipped handles, candidates deferred to the next pass.',
    labelNames: ['action'],
    registers: [this.registry],
  })
  private readonly roundTrips = new Counter({
    name: 'ipamctl_datastore_round_trips_total',
    help: 'Datastore requests by operation.',
    labelNames: ['op'],
    registers: [this.registry],
  })
  private readonly conflicts = new Counter({
    name: 'ipamctl_datastore_cas_conflicts_total',
    help: 'Transactions whose compare-and-swap guards failed (each is retried after a re-read).',
    registers: [this.registry],
  })
  private readonly reported: StoreCounts = {
    calls: {get: 0, list: 0, listKeys: 0, read: 0, each: 0, watch: 0, txn: 0, revision: 0},
    conflicts: 0,
  }
  private leaks: {at: number; counts: LeakCounts} | undefined
  private refreshing: Promise<void> | undefined
  private readonly view: UsageView
  private leakTimer: NodeJS.Timeout | undefined
  private scanning: Promise<void> | undefined
  private leakScans: {intervalMs: number; onError: (err: unknown) => void} | undefined
  private scrapedSinceScan = false
  private leakLoop = false
  private stopped = false

  constructor(
    private readonly ctx: Ctx,
    private readonly counts: StoreCounts,
    private readonly depth: () => number,
  ) {
    this.view = new UsageView(ctx)
  }

  /**
   * Scan for leaks in the background every `intervalMs` while /metrics is being scraped: the first scrape starts
   * the scans, and a scan is skipped when no scrape came since the previous one or while the last figures (a GC
   * pass's) are younger than the interval. So agents nobody scrapes put no whole-store scans on the datastore.
   * `onError` hears a failed scan (the old figures stay).
   */
  enableLeakScans(intervalMs: number, onError: (err: unknown) => void): void {
    this.leakScans = {intervalMs, onError}
  }

  private leakTick(): void {
    const o = this.leakScans
    if (this.stopped || !o) return
    const start = Date.now()
    const due = !this.leaks || start - this.leaks.at >= o.intervalMs
    if (due && this.scrapedSinceScan) {
      this.scrapedSinceScan = false
      this.scanning = checkIpam(this.ctx).then(
        (r) => {
          // Dated by when the scan began: it saw nothing older.
          if (!this.stopped) this.setLeaks({addresses: r.leaked.length, handles: r.leakedHandles.length}, start)
        },
        (err: unknown) => {
          if (!this.stopped) o.onError(err)
        },
      )
    }
    void (this.scanning ?? Promise.resolve()).then(() => {
      if (this.stopped) return
      this.leakTimer = setTimeout(() => this.leakTick(), o.intervalMs)
      this.leakTimer.unref()
    })
  }

  /**
   * Stop the leak scans and the datastore feed. A scan in progress is not waited for (at 550,000 allocations it
   * takes seconds): it fails once the store closes, and its outcome is dropped.
   */
  async stop(): Promise<void> {
    this.stopped = true
    clearTimeout(this.leakTimer)
    await this.view.close()
  }

  private gauge(name: string, help: string, labelNames: string[]): Gauge {
    return new Gauge({name, help, labelNames, registers: [this.registry]})
  }

  /** A GC pass's scan doubles as the leak scan. */
  setLeaks(counts: LeakCounts, at = Date.now()): void {
    this.leaks = {at, counts}
  }

  /** The text exposition, with the pool and node values brought up to date now. */
  async render(): Promise<string> {
    this.scrapedSinceScan = true
    if (!this.leakLoop && this.leakScans) {
      this.leakLoop = true
      this.leakTick()
    }
    // Concurrent scrapes share one refresh.
    this.refreshing ??= this.refresh().finally(() => {
      this.refreshing = undefined
    })
    await this.refreshing
    return this.registry.metrics()
  }

  get contentType(): string {
    return this.registry.contentType
  }

  private async refresh(): Promise<void> {
    const f = await this.view.refresh()
    // Reset first: a deleted pool must disappear, not keep its last value.
    for (const g of Object.values(this.pool)) g.reset()
    for (const u of f.pools) {
      const labels = {pool: u.name, cidr: u.cidr}
      this.pool.capacity.set(labels, Number(u.capacity))
      this.pool.inUse.set(labels, Number(u.inUse))
      this.pool.free.set(labels, Number(u.free))
      this.pool.reserved.set(labels, Number(u.reserved))
      this.pool.borrowed.set(labels, u.borrowed)
    }
    // Only the nodes whose count changed are touched; a node left without blocks disappears.
    if (f.reset) this.nodeBlocks.reset()
    for (const node of f.reset ? f.nodeBlocks.keys() : f.changedNodes) {
      const n = f.nodeBlocks.get(node)
      if (n === undefined) this.nodeBlocks.remove({node})
      else this.nodeBlocks.set({node}, n)
    }
    this.leakedAddresses.set(this.leaks?.counts.addresses ?? 0)
    this.leakedHandles.set(this.leaks?.counts.handles ?? 0)
    this.leakScanTime.set(this.leaks ? this.leaks.at / 1000 : 0)
    this.queueDepth.set(this.depth())
    // Counters mirror the store's own counts (including this refresh's reads).
    for (const op of Object.keys(this.counts.calls) as StoreOp[]) {
      const d = this.counts.calls[op] - this.reported.calls[op]
      if (d > 0) this.roundTrips.inc({op}, d)
      this.reported.calls[op] = this.counts.calls[op]
    }
    if (this.counts.conflicts > this.reported.conflicts)
      this.conflicts.inc(this.counts.conflicts - this.reported.conflicts)
    this.reported.conflicts = this.counts.conflicts
  }
}
