// Shared pieces of the benchmarks: the Store wrapper that counts datastore calls, bulk seeding written directly
// as Calico-format keys (the way a long-running cluster would have them), and small statistics helpers.
import fs from 'node:fs'
import path from 'node:path'
import {execFileSync} from 'node:child_process'
import {encodeBlock, newBlock, type Attribute} from '../src/lib/ipam/block.ts'
import {blockWalk} from '../src/lib/ipam/blockgen.ts'
import {makeCtx} from '../src/lib/ipam/context.ts'
import {createPools} from '../src/lib/ipam/pool-admin.ts'
import {encodeAffinity, encodeHandle} from '../src/lib/ipam/records.ts'
import {
  encodeWorkloadEndpoint,
  endpointKey,
  newWorkloadEndpoint,
  workloadEndpointName,
} from '../src/lib/workload/endpoint.ts'
import {type Cidr, formatIp, parseCidr, subnet} from '../src/lib/net/cidr.ts'
import {keys} from '../src/lib/store/keys.ts'
import type {Store} from '../src/lib/store/store.ts'

// Datastore calls are counted by the store wrapper the agent uses too (src/lib/store/counted.ts).
export {CountedStore, roundTrips as totalCalls, type StoreCounts as CallCounts} from '../src/lib/store/counted.ts'

// Unguarded bulk writes, shared with tests that seed large stores.
export {BulkWriter} from '../test/support/bulk-writer.ts'
import {BulkWriter} from '../test/support/bulk-writer.ts'

export const SEED_POOL = '10.0.0.0/8'
const SEQ = 1767323045000000000n

/** A /8 pool of /26 blocks in which `hosts` other hosts each already own one block holding one address. */
export async function seedHosts(store: Store, hosts: number): Promise<void> {
  await createPools(makeCtx(store), [{name: 'big', cidr: SEED_POOL, blockSize: 26}])
  const pool = parseCidr(SEED_POOL)
  const taken = new Set<string>()
  const w = new BulkWriter(store)
  for (let h = 0; h < hosts; h++) {
    const host = `seed-${h}`
    for (const cidr of blockWalk(pool, 26, host)) {
      const k = keys.block(cidr)
      if (taken.has(k)) continue
      taken.add(k)
      const b = newBlock(cidr, `host:${host}`, new Date(), SEQ)
      b.unallocated = b.unallocated.slice(1)
      b.allocations[0] = 0
      b.attributes = [{handle_id: `seed.${h}`, secondary: {node: host}}]
      await w.put(k, encodeBlock(b))
      await w.put(keys.affinity(host, cidr), encodeAffinity('confirmed'))
      break
    }
  }
  await w.done()
}

/**
 * A consistent cluster of `blocks` full /26 blocks (64 addresses each) spread over `hosts` hosts in one pool:
 * per address a handle (as the CNI plugin names them) and a WorkloadEndpoint that lists it, per block a
 * confirmed affinity, so `ipam check` finds 0 problems. Returns the number of allocations.
 */
export async function seedFullCluster(store: Store, blocks: number, hosts: number): Promise<number> {
  const poolCidr = '10.64.0.0/12'
  await createPools(makeCtx(store), [{name: 'pods', cidr: poolCidr, blockSize: 26}])
  const pool = parseCidr(poolCidr)
  const w = new BulkWriter(store)
  const now = new Date()
  let n = 0
  for (let i = 0; i < blocks; i++) {
    const host = `node-${i % hosts}`
    const cidr = subnet(pool, 26, BigInt(i))
    n = await writeWorkloadBlock(w, {host, cidr, seq: SEQ + BigInt(i), firstPod: n, pods: 64, now})
  }
  await w.done()
  return n
}

/**
 * One /26 block affine to `host` holding `pods` workload addresses (offsets 0…pods-1), written as the CNI plugin
 * leaves them: per address a handle and a WorkloadEndpoint that lists it, and a confirmed affinity for the block.
 * Pods are numbered from `firstPod` (pod names and container IDs derive from the number); returns the next number.
 */
export async function writeWorkloadBlock(
  w: BulkWriter,
  o: {host: string; cidr: Cidr; seq: bigint; firstPod: number; pods: number; now: Date},
): Promise<number> {
  const {host, cidr, now} = o
  const b = newBlock(cidr, `host:${host}`, now, o.seq)
  const attributes: Attribute[] = []
  let n = o.firstPod
  for (let off = 0; off < o.pods; off++) {
    const pod = `pod-${n}`
    const containerId = `${n.toString(16).padStart(12, '0')}${'c'.repeat(52)}`
    const handle = `k8s-pod-network.${containerId}`
    attributes.push({
      handle_id: handle,
      secondary: {namespace: 'default', node: host, pod, timestamp: '2026-11-22 10:00:00.000000000 +0000 UTC'},
    })
    b.allocations[off] = off
    b.sequenceNumberForAllocation.set(String(off), b.sequenceNumber)
    await w.put(keys.handle(handle), encodeHandle(new Map([[`${formatIp(4, cidr.base)}/26`, 1]])))
    const ip = formatIp(4, cidr.base + BigInt(off))
    const name = workloadEndpointName({node: host, orchestrator: 'k8s', pod, containerId, ifName: 'eth0'})
    const wep = newWorkloadEndpoint(
      {
        name,
        namespace: 'default',
        orchestrator: 'k8s',
        node: host,
        containerID: containerId,
        pod,
        endpoint: 'eth0',
        ipNetworks: [`${ip}/32`],
        interfaceName: `cali${n.toString(16).padStart(11, '0')}`,
      },
      now,
    )
    await w.put(endpointKey('default', name), encodeWorkloadEndpoint(wep))
    n++
  }
  b.attributes = attributes
  b.unallocated = b.unallocated.filter((u) => u >= o.pods)
  await w.put(keys.block(cidr), encodeBlock(b))
  await w.put(keys.affinity(host, cidr), encodeAffinity('confirmed'))
  return n
}

export function percentile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!
}
export const median = (xs: readonly number[]): number => percentile(xs, 0.5)

export async function timeMs<T>(fn: () => Promise<T>): Promise<{ms: number; value: T}> {
  const t = process.hrtime.bigint()
  const value = await fn()
  return {ms: Number(process.hrtime.bigint() - t) / 1e6, value}
}

/** CPU time every core spent busy and in all since boot, from /proc/stat (jiffies). */
function cpuTimes(): {busy: number; all: number} {
  const f = fs.readFileSync('/proc/stat', 'utf8')
  const t = f.slice(4, f.indexOf('\n')).trim().split(/\s+/).map(Number)
  // user nice system idle iowait irq softirq steal: idle and iowait are the idle ones.
  const all = t.slice(0, 8).reduce((a, b) => a + b, 0)
  return {busy: all - t[3]! - t[4]!, all}
}

/**
 * Wait until the machine is quiet: the share of CPU busy over a second is at most `maxBusy` twice running (what
 * ran before, here or in another section, has wound down), or `limitMs` passed. Returns the last busy share.
 */
export async function waitForQuiet(maxBusy = 0.15, limitMs = 60_000): Promise<number> {
  const until = Date.now() + limitMs
  let quiet = 0
  let busy = 1
  while (quiet < 2 && Date.now() < until) {
    const a = cpuTimes()
    await new Promise((r) => setTimeout(r, 1000))
    const b = cpuTimes()
    busy = (b.busy - a.busy) / Math.max(1, b.all - a.all)
    quiet = busy <= maxBusy ? quiet + 1 : 0
  }
  return busy
}

/** The commit a benchmark measured, as BENCHMARKS.md records it. */
export function benchCommit(root: string): string {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], {cwd: root, encoding: 'utf8'}).trim()
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], {
      cwd: root,
      encoding: 'utf8',
    }).trim()
    return dirty ? `${commit} (with uncommitted changes)` : commit
  } catch {
    return 'unknown (not a git checkout)'
  }
}

/**
 * BENCHMARKS.md is written in three parts, in this order: bench/ipam.bench.ts writes everything above the process
 * start section, bench/cni.bench.ts that section, bench/scale.bench.ts the scale section at the end (its heading).
 */
export const SCALE_SECTION = "## Scale at Kubernetes' limits"

/**
 * The scale bench's Markdown (bench/results/scale-<date>.md) as the last section of BENCHMARKS.md: its title
 * becomes SCALE_SECTION, its sections one level down; whatever was there from SCALE_SECTION on is replaced.
 */
export function writeScaleSection(root: string, result: string): void {
  const file = path.join(root, 'BENCHMARKS.md')
  const old = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : ''
  const at = old.indexOf(SCALE_SECTION)
  const section = result.replace(/^## /gm, '### ').replace(/^# Scale: (.*)$/m, `${SCALE_SECTION}: $1`)
  fs.writeFileSync(file, `${(at >= 0 ? old.slice(0, at) : old).trimEnd()}\n\n${section.trim()}\n`)
}
