// npm run bench:scale (part of npm run bench): Kubernetes' documented limits, 5,000 nodes × 110 pods = 550,000
// allocations, on the embedded store and on a real three-member etcd cluster, in ONE run. Each whole-store
// command is set beside its floor: a process that reads exactly the keys the command reads, raw (bench/raw-read.mjs,
// etcd3 or SQLite, no decoding), measured in the same run, interleaved with it. Prints Markdown; with --write it
// also writes bench/results/scale-<date>.md and the last section of BENCHMARKS.md (writeScaleSection). Benchmarks
// are never timed tests.
//
// Environment: SCALE_NODES (default 5000) and SCALE_SMALL_NODES (default: the node count for ~100,000 allocations,
// for the growth ratio), SCALE_RUNS (default 3), SCALE_BACKENDS (default embedded,cluster), SCALE_CLUSTER_DIR
// (default /dev/shm when present: the members' data dirs), SCALE_ROWS (default: all; comma-separated words, e.g.
// `show`: only the commands whose row names one of them, with their floors; the agent's scrape only with `scrape`,
// which needs `ipam show` too).
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {fileURLToPath} from 'node:url'
import {autoAssign} from '../src/lib/ipam/autoassign.ts'
import {makeCtx} from '../src/lib/ipam/context.ts'
import {encodeNode, newNode} from '../src/lib/ipam/node.ts'
import {createPools} from '../src/lib/ipam/pool-admin.ts'
import {releaseByHandle} from '../src/lib/ipam/release.ts'
import {parseCidr, subnet} from '../src/lib/net/cidr.ts'
import {EtcdStore} from '../src/lib/store/etcd.ts'
import {keys} from '../src/lib/store/keys.ts'
import {SqliteStore} from '../src/lib/store/sqlite.ts'
import type {Store} from '../src/lib/store/store.ts'
import {parseMetrics, startAgentProc} from '../test/support/agent.ts'
import {type EtcdCluster, startCluster} from '../test/support/etcd-cluster.ts'
import {haveEtcd} from '../test/support/etcd-server.ts'
import {runProcess} from '../test/support/process.ts'
import {
  BulkWriter,
  benchCommit,
  median,
  timeMs,
  waitForQuiet,
  writeScaleSection,
  writeWorkloadBlock,
} from './support.ts'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const WRITE = process.argv.includes('--write')
const PODS = 110
const NODES = Number(process.env.SCALE_NODES ?? 5000)
const SMALL_NODES = Number(process.env.SCALE_SMALL_NODES ?? Math.round((NODES * 100_000) / 550_000))
const RUNS = Number(process.env.SCALE_RUNS ?? 3)
const BACKENDS = (process.env.SCALE_BACKENDS ?? 'embedded,cluster').split(',') as ('embedded' | 'cluster')[]
const CLUSTER_DIR = process.env.SCALE_CLUSTER_DIR ?? (fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir())
const NEW_NODES = 20

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-scale-'))
process.on('exit', () => fs.rmSync(dir, {recursive: true, force: true}))
const T0 = Date.now()
const log = (s: string) => process.stderr.write(`[scale ${((Date.now() - T0) / 1000).toFixed(0).padStart(5)} s] ${s}\n`)

if (!fs.existsSync(path.join(ROOT, 'dist', 'commands'))) {
  console.error('scale bench: not built: npm run build')
  process.exit(2)
}

const RSS_HOOK = path.join(dir, 'rss-hook.mjs')
// Peak RSS of the measured process itself (getrusage ru_maxrss, KiB), written at exit by a preloaded hook.
fs.writeFileSync(
  RSS_HOOK,
  "import fs from 'node:fs'\nprocess.on('exit', () => fs.writeFileSync(process.env.BENCH_RSS_FILE, String(process.resourceUsage().maxRSS)))\n",
)
const NO_CONFIG = path.join(dir, 'ipamctl.cfg')
fs.writeFileSync(NO_CONFIG, 'apiVersion: projectcalico.org/v3\nkind: CalicoAPIConfig\nspec: {}\n')

// ------------------------------------------------------------------------------------------- backends

interface Backend {
  key: 'embedded' | 'cluster'
  /** An empty store (a new file; a new cluster). */
  fresh(): Promise<Store>
  /** Another connection to the current store. */
  open(): Promise<Store>
  cliArgs(): string[]
  rawArgs(): string[]
  /** Bulk writes for this backend: big SQLite transactions, etcd's 128-operation ones several in flight. */
  writer(store: Store): BulkWriter
  stop(): Promise<void>
}

let files = 0
function embeddedBackend(): Backend {
  let file = ''
  return {
    key: 'embedded',
    async fresh() {
      file = path.join(dir, `s${++files}.db`)
      return SqliteStore.open(file)
    },
    open: async () => SqliteStore.open(file),
    cliArgs: () => ['--datastore', 'embedded', '--datastore-path', file],
    rawArgs: () => ['sqlite', file],
    writer: (store) => new BulkWriter(store, 20_000, 40_000_000, 1),
    async stop() {
      if (file) fs.rmSync(file, {force: true})
    },
  }
}

function clusterBackend(): Backend {
  let cluster: EtcdCluster | undefined
  const endpoints = () => cluster!.endpoints
  return {
    key: 'cluster',
    async fresh() {
      await cluster?.stop()
      cluster = await startCluster({baseDir: CLUSTER_DIR, quotaBytes: 8 * 1024 ** 3})
      return EtcdStore.connect({endpoints: endpoints().split(','), timeoutMs: 120_000})
    },
    open: () => EtcdStore.connect({endpoints: endpoints().split(','), timeoutMs: 120_000}),
    cliArgs: () => ['--datastore', 'etcdv3', '--etcd-endpoints', endpoints(), '--timeout', '120'],
    rawArgs: () => ['etcd', endpoints()],
    writer: (store) => new BulkWriter(store, 120, 1_000_000, 8),
    async stop() {
      await cluster?.stop()
      cluster = undefined
    },
  }
}

// ------------------------------------------------------------------------------------------- the store

const POOL = '10.0.0.0/10'
const SEQ = 1767323045000000000n

/**
 * A consistent cluster of `nodes` nodes with 110 pods each: per node a Node record and two /26 blocks affine to
 * it (64 + 46 addresses), per pod a handle (as the CNI plugin names them), an allocation and a WorkloadEndpoint
 * listing its address. `ipam check` finds 0 problems in it.
 */
async function seedScale(store: Store, w: BulkWriter, nodes: number): Promise<{allocations: number; blocks: number}> {
  await createPools(makeCtx(store), [{name: 'pods', cidr: POOL, blockSize: 26}])
  const pool = parseCidr(POOL)
  const now = new Date()
  let n = 0
  let blocks = 0
  for (let i = 0; i < nodes; i++) {
    const host = `node-${i}`
    await w.put(keys.node(host), encodeNode(newNode(host, {'kubernetes.io/hostname': host}, now)))
    for (let k = 0; k * 64 < PODS; k++) {
      const cidr = subnet(pool, 26, BigInt(2 * i + k))
      const inBlock = Math.min(64, PODS - k * 64)
      n = await writeWorkloadBlock(w, {host, cidr, seq: SEQ + BigInt(blocks), firstPod: n, pods: inBlock, now})
      blocks++
    }
  }
  await w.done()
  return {allocations: n, blocks}
}

// ------------------------------------------------------------------------------------------- measurements

interface ProcRun {
  ms: number
  rssMb: number
}

async function proc(args: string[], check: (stdout: string) => boolean, what: string): Promise<ProcRun> {
  const rssFile = path.join(dir, 'rss')
  const r = await runProcess(process.execPath, ['--import', RSS_HOOK, ...args], {
    env: {...process.env, BENCH_RSS_FILE: rssFile, IPAMCTL_CONFIG: NO_CONFIG},
    killAfterMs: 1_200_000,
  })
  if (r.code !== 0 || !check(r.stdout))
    throw new Error(`${what} failed (${r.code}): ${r.stderr.trim().slice(-500) || r.stdout.slice(-500)}`)
  return {ms: r.ms, rssMb: Number(fs.readFileSync(rssFile, 'utf8')) / 1024}
}

const IPAM = '/calico/ipam/v2/'
const RES = '/calico/resources/v3/projectcalico.org/'
/** What each command reads (see src/lib/ipam/query.ts utilization, src/lib/ipam/check.ts checkIpam, export). */
const READS = {
  blocks: [`${IPAM}assignment/`, `${IPAM}config`, `${RES}ippools/`],
  check: [
    `${IPAM}assignment/`,
    `${IPAM}config`,
    `${IPAM}handle/`,
    `${IPAM}host/`,
    `${RES}clusterinformations/`,
    `${RES}ippools/`,
    `${RES}nodes/`,
    `${RES}workloadendpoints/`,
  ],
  all: ['/calico/'],
} as const

interface Row {
  what: string
  floor: keyof typeof READS
  args: string[]
  check: (stdout: string, s: SizeResult) => boolean
}

const ALL_ROWS: Row[] = [
  {what: '`ipam show`', floor: 'blocks', args: ['ipam', 'show'], check: (o) => o.includes(POOL)},
  {
    what: '`ipam show --show-blocks`',
    floor: 'blocks',
    args: ['ipam', 'show', '--show-blocks'],
    check: (o, s) => o.split('\n').length > s.blocks,
  },
  {
    what: '`ipam check`',
    floor: 'check',
    args: ['ipam', 'check'],
    check: (o, s) => o.includes(`IPAM blocks record ${s.allocations} allocations.`) && o.includes('found 0 problems'),
  },
  {what: '`ipam gc --dry-run`', floor: 'check', args: ['ipam', 'gc', '--dry-run'], check: () => true},
  {what: '`datastore export -o FILE`', floor: 'all', args: ['datastore', 'export', '-o', '@FILE'], check: () => true},
]

const ROW_WORDS = process.env.SCALE_ROWS?.split(',').filter(Boolean)
const ROWS = ALL_ROWS.filter((r) => !ROW_WORDS || ROW_WORDS.some((w) => r.what.includes(w)))
const FLOORS = (Object.keys(READS) as (keyof typeof READS)[]).filter((f) => ROWS.some((r) => r.floor === f))

interface SizeResult {
  nodes: number
  allocations: number
  blocks: number
  seedMs: number
  raw: Record<keyof typeof READS, ProcRun[]>
  cmds: Record<string, ProcRun[]>
  /** A new node's first allocation (claims a block), in process, median of NEW_NODES. */
  firstAllocMs: number
  scrape?: Scrape
}

interface Scrape {
  firstMs: number
  /** Median of the scrapes that each follow SCRAPE_ALLOCS new allocations. */
  medianMs: number
  /** Median of scrapes with nothing changed since the previous one. */
  unchangedMs: number
}

const SCRAPES = 7
const SCRAPE_ALLOCS = 10

/** The share of CPU busy (over a second, twice running) below which the machine counts as quiet. */
const QUIET = 0.15

/**
 * Before timing anything in a store just seeded: every etcd member has applied every raft entry (a follower
 * still applying the seeding would hold up the reads it serves), the machine is quiet and this process's
 * garbage from the seeding is collected (with --expose-gc, as npm run bench:scale runs it).
 */
async function settle(store: Store): Promise<void> {
  const t = Date.now()
  for (let caughtUp = 0; store.members && caughtUp < 2 && Date.now() - t < 120_000; ) {
    const members = await store.members()
    const top = members.reduce((m, x) => ((x.raftIndex ?? 0n) > m ? x.raftIndex! : m), 0n)
    caughtUp = members.every((m) => m.reachable && (m.raftAppliedIndex ?? 0n) >= top) ? caughtUp + 1 : 0
    if (caughtUp < 2) await new Promise((r) => setTimeout(r, 500))
  }
  const busy = await waitForQuiet(QUIET)
  ;(globalThis as {gc?: () => void}).gc?.()
  log(`settled in ${((Date.now() - t) / 1000).toFixed(1)} s (CPU ${(busy * 100).toFixed(0)} % busy)`)
}

async function measureSize(b: Backend, nodes: number, full: boolean): Promise<SizeResult> {
  const store = await b.fresh()
  log(`${b.key}: seeding ${nodes} nodes × ${PODS} pods`)
  const seeded = await timeMs(() => seedScale(store, b.writer(store), nodes))
  log(`${b.key}: ${seeded.value.allocations} allocations in ${(seeded.ms / 1000).toFixed(1)} s`)
  const s: SizeResult = {
    nodes,
    ...seeded.value,
    seedMs: seeded.ms,
    raw: {blocks: [], check: [], all: []},
    cmds: {},
    firstAllocMs: 0,
  }
  // The first allocation of NEW_NODES new nodes, before the commands run, once the store and the machine have
  // settled and after one untimed claim (the first in this store) has warmed the path up.
  await settle(store)
  const ctx = makeCtx(store)
  await autoAssign(ctx, {host: 'warm-up', num4: 1, num6: 0, handle: 'warm-up'})
  const lat: number[] = []
  for (let i = 0; i < NEW_NODES; i++) {
    const t = await timeMs(() => autoAssign(ctx, {host: `new-${i}`, num4: 1, num6: 0, handle: `new-${i}`}))
    if (t.value.v4.ips.length !== 1) throw new Error(`new-${i} got no address`)
    lat.push(t.ms)
  }
  s.firstAllocMs = median(lat)
  // Released again (untimed): without a WorkloadEndpoint they would be leaks to ipam check. Their blocks stay.
  for (let i = 0; i < NEW_NODES; i++) await releaseByHandle(ctx, `new-${i}`)
  await releaseByHandle(ctx, 'warm-up')
  s.blocks += NEW_NODES + 1
  await store.close()
  if (nodes <= 1) return s
  for (let run = 0; run < RUNS; run++) {
    // Each run's processes start on a quiet machine (what ran before them, here or elsewhere, has wound down).
    await waitForQuiet(QUIET, 20_000)
    for (const floor of FLOORS) {
      const prefixes = READS[floor]
      log(`${b.key}: raw read (${floor}), run ${run + 1}`)
      s.raw[floor].push(
        await proc(
          [path.join(ROOT, 'bench', 'raw-read.mjs'), ...b.rawArgs(), ...prefixes],
          (o) => /^\d+ \d+/.test(o),
          `raw read ${floor}`,
        ),
      )
    }
    for (const row of ROWS) {
      log(`${b.key}: ${row.what}, run ${run + 1}`)
      const out = path.join(dir, `export-${run}.txt`)
      fs.rmSync(out, {force: true})
      const args = row.args.map((a) => (a === '@FILE' ? out : a))
      const runs = s.cmds[row.what] ?? []
      s.cmds[row.what] = runs
      runs.push(
        await proc([path.join(ROOT, 'bin', 'run.cjs'), ...args, ...b.cliArgs()], (o) => row.check(o, s), row.what),
      )
      fs.rmSync(out, {force: true})
    }
  }
  if (full && (!ROW_WORDS || ROW_WORDS.includes('scrape'))) s.scrape = await scrape(b, s.allocations)
  return s
}

/**
 * The agent's /metrics on this store: its first scrape (a full read), then SCRAPES scrapes each after
 * SCRAPE_ALLOCS allocations made by another process's connection (the incremental path), then SCRAPES with
 * nothing changed. The agent's background leak scan is off (--leak-scan-interval 0): it is a whole `ipam check`
 * and would compete with the scrapes for the CPU. Each scrape's in-use figure is checked against the store.
 */
async function scrape(b: Backend, allocations: number): Promise<Scrape> {
  log(`${b.key}: agent metrics scrape`)
  const socket = path.join(dir, 'agent.sock')
  const agent = await startAgentProc(
    [
      '--node',
      'new-0',
      '--socket',
      socket,
      '--metrics-address',
      '127.0.0.1:0',
      '--leak-scan-interval',
      '0',
      ...b.cliArgs(),
      '--config',
      NO_CONFIG,
    ],
    {DATASTORE_TYPE: undefined, ETCD_ENDPOINTS: undefined, IPAMCTL_CONFIG: undefined},
  )
  const store = await b.open()
  let inUse = allocations
  try {
    const get = async () => {
      const t = await timeMs(async () => (await fetch(agent.metricsUrl!)).text())
      const m = parseMetrics(t.value)
      const got = m.get(`ipamctl_pool_in_use_addresses{pool="pods",cidr="${POOL}"}`)
      if (got !== inUse) throw new Error(`the scrape says ${got} addresses in use, the store holds ${inUse}`)
      return t.ms
    }
    const firstMs = await get()
    const ctx = makeCtx(store)
    const changed: number[] = []
    for (let i = 0; i < SCRAPES; i++) {
      for (let k = 0; k < SCRAPE_ALLOCS; k++) {
        const h = `scrape-${i}-${k}`
        const r = await autoAssign(ctx, {host: `new-${k % NEW_NODES}`, num4: 1, num6: 0, handle: h})
        inUse += r.v4.ips.length
      }
      changed.push(await get())
    }
    const unchanged: number[] = []
    for (let i = 0; i < SCRAPES; i++) unchanged.push(await get())
    return {firstMs, medianMs: median(changed), unchangedMs: median(unchanged)}
  } finally {
    await store.close()
    agent.proc.kill('SIGTERM')
    await agent.exited
  }
}

// ------------------------------------------------------------------------------------------- a run

const loadBefore = os.loadavg()
const results: {key: Backend['key']; one: SizeResult; small: SizeResult; big: SizeResult}[] = []
for (const key of BACKENDS) {
  if (key === 'cluster' && !haveEtcd) {
    log('cluster: etcd not installed, skipped')
    continue
  }
  const b = key === 'embedded' ? embeddedBackend() : clusterBackend()
  try {
    const one = await measureSize(b, 1, false)
    const small = await measureSize(b, SMALL_NODES, false)
    const big = await measureSize(b, NODES, true)
    results.push({key, one, small, big})
  } finally {
    await b.stop()
  }
}
const loadAfter = os.loadavg()

// ------------------------------------------------------------------------------------------- report

const f0 = (x: number) => Math.round(x).toLocaleString('en-US')
const ms = (x: number) => `${f0(x)} ms`
const r2 = (x: number) => x.toFixed(2)
const med = (rs: ProcRun[]) => median(rs.map((r) => r.ms))
const rss = (rs: ProcRun[]) => Math.max(...rs.map((r) => r.rssMb))
const verdict = (ok: boolean) => (ok ? 'met' : '**NOT met**')
const out: string[] = []
const p = (s = '') => out.push(s)

p(`# Scale: ${f0(NODES)} nodes × ${PODS} pods`)
p()
p(
  `Machine: ${os.cpus().length} × ${os.cpus()[0]?.model.trim()}, ${Math.round(os.totalmem() / 1024 ** 3)} GiB, Node ${process.version}, ${os.platform()} ${os.release()}. Date: ${new Date().toISOString().slice(0, 10)}. Commit: ${benchCommit(ROOT)}. Load average ${loadBefore.map((x) => x.toFixed(2)).join(' / ')} before, ${loadAfter.map((x) => x.toFixed(2)).join(' / ')} after. ${RUNS} run(s) per row, interleaved with the floors; medians; peak RSS is the largest of the runs.`,
)
p()
p(
  'The cluster is three etcd members (Debian etcd-server) on loopback, data on ' +
    `${CLUSTER_DIR}; the commands are given all three endpoints. A floor is bench/raw-read.mjs in its own process ` +
    '(spawn to exit, like the command): it reads exactly the keys the command reads with their values (etcd3 pages ' +
    'of ~4 MiB at one revision, each over a bounded key window as the store reads, docs/etcd-paging.md; SQLite range queries in pages of 256 rows in one read transaction, as the store reads) and decodes nothing.',
)
for (const r of results) {
  const {big, small, one} = r
  p()
  p(
    `## ${r.key === 'embedded' ? 'Embedded store' : 'Three-member etcd cluster'}: ${f0(big.allocations)} allocations (${f0(big.nodes)} nodes, ${f0(big.blocks)} blocks); seeded in bulk in ${(big.seedMs / 1000).toFixed(0)} s`,
  )
  p()
  p('| what | wall time | peak RSS | : floor | target | at the small size | growth (target ≤ 6) |')
  p('|---|---|---|---|---|---|---|')
  for (const fl of FLOORS) {
    p(
      `| floor: raw read of ${fl === 'blocks' ? 'the blocks (+ pools, config)' : fl === 'check' ? 'everything ipam check reads (blocks, handles, endpoints, nodes, affinities, pools)' : 'everything under /calico/'} | ${ms(med(big.raw[fl]))} | ${f0(rss(big.raw[fl]))} MB | 1 | | ${ms(med(small.raw[fl]))} | ${r2(med(big.raw[fl]) / med(small.raw[fl]))} |`,
    )
  }
  const check = big.cmds['`ipam check`']
  for (const row of ROWS) {
    const c = big.cmds[row.what]!
    const ratio = med(c) / med(big.raw[row.floor])
    const growth = med(c) / med(small.cmds[row.what]!)
    let target = ''
    if (row.what.startsWith('`ipam show')) target = `≤ 1.5 × floor, ≤ 500 MB: ${verdict(ratio <= 1.5 && rss(c) <= 500)}`
    else if (row.what === '`ipam check`') target = `≤ 2 × floor, ≤ 1 GB: ${verdict(ratio <= 2 && rss(c) <= 1024)}`
    else if (check) {
      const checkMs = med(check)
      target = `≤ 1.5 × ipam check: ${r2(med(c) / checkMs)} × — ${verdict(med(c) / checkMs <= 1.5)}`
    }
    p(
      `| ${row.what} | ${ms(med(c))} | ${f0(rss(c))} MB | ${r2(ratio)} | ${target} | ${ms(med(small.cmds[row.what]!))} | ${r2(growth)} ${growth <= 6 ? '' : '**NOT met**'} |`,
    )
  }
  p()
  p(
    `Small size for the growth column: ${f0(small.allocations)} allocations (${f0(small.nodes)} nodes); growth is the ratio of the medians (${r2(big.allocations / small.allocations)} × the data).`,
  )
  p()
  const firstRatio = big.firstAllocMs / one.firstAllocMs
  p(
    `A new node's first allocation (it claims a block), median of ${NEW_NODES} new nodes, in process, once the store has settled (every member has applied every entry, the machine is quiet) and after one untimed claim: ${r2(one.firstAllocMs)} ms at 1 node, ${r2(small.firstAllocMs)} ms at ${f0(small.nodes)}, ${r2(big.firstAllocMs)} ms at ${f0(big.nodes)}: ${r2(firstRatio)} × (target ≤ 1.5 on the cluster: ${r.key === 'cluster' ? verdict(firstRatio <= 1.5) : 'information'}).`,
  )
  if (big.scrape) {
    const showMs = med(big.cmds['`ipam show`']!)
    p()
    p(
      `The agent's metrics scrape at this size: first ${ms(big.scrape.firstMs)} (a full read), then a median of ${ms(big.scrape.medianMs)} over ${SCRAPES} scrapes each after ${SCRAPE_ALLOCS} new allocations = ${r2(big.scrape.medianMs / showMs)} × \`ipam show\` (${ms(showMs)}; target ≤ 0.1: ${verdict(big.scrape.medianMs / showMs <= 0.1)}); with nothing changed ${ms(big.scrape.unchangedMs)}.`,
    )
  }
}
const text = `${out.join('\n')}\n`
process.stdout.write(text)
if (WRITE) {
  const file = path.join(ROOT, 'bench', 'results', `scale-${new Date().toISOString().slice(0, 10)}.md`)
  fs.mkdirSync(path.dirname(file), {recursive: true})
  fs.writeFileSync(file, text)
  writeScaleSection(ROOT, text)
  log(`wrote ${path.relative(ROOT, file)} and its section of BENCHMARKS.md`)
}
