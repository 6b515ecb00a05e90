// npm run bench: allocation cost on the embedded store, measured side by side in one run.
// Prints a Markdown section to paste into BENCHMARKS.md.
import {spawn} from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {autoAssign} from '../src/lib/ipam/autoassign.ts'
import {encodeBlock, newBlock} from '../src/lib/ipam/block.ts'
import {blockWalk} from '../src/lib/ipam/blockgen.ts'
import {makeCtx} from '../src/lib/ipam/context.ts'
import {createPools} from '../src/lib/ipam/pool-admin.ts'
import {encodeAffinity} from '../src/lib/ipam/records.ts'
import {releaseIps} from '../src/lib/ipam/release.ts'
import {parseCidr} from '../src/lib/net/cidr.ts'
import {keys} from '../src/lib/store/keys.ts'
import {SqliteStore} from '../src/lib/store/sqlite.ts'
import type {Store, WriteOp} from '../src/lib/store/store.ts'
import {EtcdStore} from '../src/lib/store/etcd.ts'
import {startEtcd, haveEtcd} from '../test/support/etcd-server.ts'
import {Etcd3} from 'etcd3'

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-bench-'))
let n = 0
/** Opens an empty store of the backend being measured. */
let fresh: () => Promise<Store> = async () => SqliteStore.open(path.join(dir, `b${++n}.db`))
/** What a worker process is told to open (a file, or etcd:<endpoint>). */
let workerSpec = () => path.join(dir, `b${n}.db`)

/** `hosts` other hosts, each owning one block of 10.0.0.0/8, written directly in bulk. */
async function seeded(hosts: number): Promise<Store> {
  const store = await fresh()
  const ctx = makeCtx(store)
  await createPools(ctx, [{name: 'big', cidr: '10.0.0.0/8', blockSize: 26}])
  const pool = parseCidr('10.0.0.0/8')
  const taken = new Set<string>()
  let ops: WriteOp[] = []
  for (let h = 0; h < hosts; h++) {
    const host = `seed-${h}`
    for (const cidr of blockWalk(pool, 26, host)) {
      const k = keys.block(cidr)
      if (taken.has(k)) continue
      taken.add(k)
      const b = newBlock(cidr, `host:${host}`, new Date(), 1767323045000000000n)
      b.unallocated = b.unallocated.slice(1)
      b.allocations[0] = 0
      b.attributes = [{handle_id: `seed.${h}`, secondary: {node: host}}]
      ops.push({put: k, value: encodeBlock(b)}, {put: keys.affinity(host, cidr), value: encodeAffinity('confirmed')})
      break
    }
    if (ops.length >= 100) {
      await store.txn([], ops)
      ops = []
    }
  }
  if (ops.length) await store.txn([], ops)
  return store
}

async function time<T>(fn: () => Promise<T>): Promise<number> {
  const t = process.hrtime.bigint()
  await fn()
  return Number(process.hrtime.bigint() - t) / 1e6
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

async function steadyAllocations(hosts: number, count: number): Promise<{perOpMs: number; claimMs: number}> {
  const store = await seeded(hosts)
  const ctx = makeCtx(store)
  // First request claims the host's block; the timed ones allocate from it (and release, to stay in it).
  const claimMs = await time(() => autoAssign(ctx, {host: 'bench-host', num4: 1, num6: 0}))
  const per: number[] = []
  for (let i = 0; i < count; i++) {
    let ip = ''
    per.push(await time(async () => {
      ip = (await autoAssign(ctx, {host: 'bench-host', num4: 1, num6: 0, handle: `b.${i}`})).v4.ips[0]!.address
    }))
    await releaseIps(ctx, [{ip}])
  }
  await store.close()
  return {perOpMs: median(per), claimMs}
}

async function claimCost(hosts: number, newHosts: number): Promise<number> {
  const store = await seeded(hosts)
  const ctx = makeCtx(store)
  const per: number[] = []
  for (let i = 0; i < newHosts; i++) per.push(await time(() => autoAssign(ctx, {host: `new-${i}`, num4: 1, num6: 0})))
  await store.close()
  return median(per)
}

async function rawCas(count: number): Promise<number> {
  const store = await fresh()
  await store.txn([], [{put: '/k', value: 'x'.repeat(1000)}])
  const per: number[] = []
  for (let i = 0; i < count; i++) {
    per.push(await time(async () => {
      const kv = (await store.get('/k'))!
      await store.txn([{key: '/k', modRevision: kv.modRevision}], [{put: '/k', value: 'y'.repeat(1000)}])
    }))
  }
  await store.close()
  return median(per)
}

const WORKER = new URL('../test/lib/ipam/fixtures/alloc-worker.ts', import.meta.url).pathname

/** `procs` OS processes each making `each` one-address requests against one store file; allocations/s. */
async function processes(procs: number, each: number, sameHost: boolean): Promise<number> {
  const store = await fresh()
  await createPools(makeCtx(store), [{name: 'p', cidr: '10.0.0.0/16', blockSize: 24}])
  await store.close()
  const file = workerSpec()
  const t = process.hrtime.bigint()
  await Promise.all(
    Array.from({length: procs}, (_, i) => new Promise<void>((resolve, reject) => {
      const c = spawn(process.execPath, ['--import', 'tsx', WORKER, file, sameHost ? 'h' : `h${i}`, String(each), `w${i}`], {stdio: 'ignore'})
      c.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`worker exited ${code}`))))
    })),
  )
  const secs = Number(process.hrtime.bigint() - t) / 1e9
  return (procs * each) / secs
}

const cpus = os.cpus()
console.log(`Machine: ${cpus.length} × ${cpus[0]?.model ?? 'unknown CPU'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${os.platform()} ${os.release()}. Date: ${new Date().toISOString().slice(0, 10)}.\n`)

async function section(title: string): Promise<void> {
  console.log(`## ${title}\n`)
  await steadyAllocations(10, 50) // warm up the JIT (and the connection) so the first measured case is not penalised
  const raw = await rawCas(300)
  const small = await steadyAllocations(10, 300)
  const large = await steadyAllocations(5000, 300)
  const claimSmall = await claimCost(10, 30)
  const claimLarge = await claimCost(5000, 30)
  console.log('| measurement (median of the runs) | 10 other hosts | 5,000 other hosts | ratio 5000/10 |')
  console.log('|---|---|---|---|')
  console.log(`| raw get + guarded txn of a 1 KB value | ${raw.toFixed(3)} ms | – | – |`)
  console.log(`| AutoAssign 1 IP from the host's existing block (300 runs) | ${small.perOpMs.toFixed(3)} ms | ${large.perOpMs.toFixed(3)} ms | ${(large.perOpMs / small.perOpMs).toFixed(2)} |`)
  console.log(`| first AutoAssign of a new host: claims a block (30 hosts) | ${claimSmall.toFixed(3)} ms | ${claimLarge.toFixed(3)} ms | ${(claimLarge / claimSmall).toFixed(2)} |`)
  console.log(`\nIn one process: raw guarded transactions ${(1000 / raw).toFixed(0)}/s; allocations from an existing block ${(1000 / small.perOpMs).toFixed(0)}/s (${(small.perOpMs / raw).toFixed(1)}× a raw transaction: it also reads config, pools, node and affinities, and writes block + handle atomically).`)
  const one = await processes(1, 800, true)
  const eightSame = await processes(8, 100, true)
  const eightDiff = await processes(8, 100, false)
  console.log(`\n| concurrency (wall clock incl. process start, 800 allocations) | allocations/s | ratio to 1 process |`)
  console.log('|---|---|---|')
  console.log(`| 1 process × 800 | ${one.toFixed(0)} | 1.00 |`)
  console.log(`| 8 processes × 100, one host (one hot block) | ${eightSame.toFixed(0)} | ${(eightSame / one).toFixed(2)} |`)
  console.log(`| 8 processes × 100, eight hosts | ${eightDiff.toFixed(0)} | ${(eightDiff / one).toFixed(2)} |\n`)
}

await section('Embedded store (SQLite WAL, synchronous=FULL)')
if (haveEtcd) {
  const server = await startEtcd()
  const admin = new Etcd3({hosts: server.endpoint})
  try {
    fresh = async () => {
      await admin.delete().all()
      return EtcdStore.connect({endpoints: [server.endpoint], timeoutMs: 30_000})
    }
    workerSpec = () => `etcd:${server.endpoint}`
    await section(`etcd v3 (${server.ctl('version').split('\n')[0]}, one member on 127.0.0.1, data on local disk)`)
  } finally {
    admin.close()
    await server.stop()
  }
} else {
  console.log('etcd is not installed: etcd section skipped (bash scripts/install-test-deps.sh)')
}
fs.rmSync(dir, {recursive: true, force: true})
