// Shared by the reliability tests: a seeded random source (the seed is printed so a failure can be replayed),
// worker processes that can be killed at a chosen moment, and the consistency verdict every fault must leave.
import assert from 'node:assert/strict'
import {type ChildProcess, spawn} from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {fileURLToPath} from 'node:url'
import {checkIpam} from '../../src/lib/ipam/check.ts'
import {makeCtx} from '../../src/lib/ipam/context.ts'
import type {Store} from '../../src/lib/store/store.ts'
import {assertInvariants} from '../lib/ipam/helpers.ts'

export const CHURN = fileURLToPath(new URL('./workers/churn.mjs', import.meta.url))

/** The seed from IPAMCTL_TEST_SEED, or a fresh one. */
export function testSeed(): number {
  const fromEnv = Number(process.env.IPAMCTL_TEST_SEED)
  return Number.isInteger(fromEnv) && fromEnv > 0 ? fromEnv : 1 + Math.floor(Math.random() * 2 ** 31)
}

/** xorshift32: small, fast, and the same sequence for the same seed. */
export function rng(seed: number): () => number {
  let s = seed >>> 0 || 1
  return () => {
    s ^= s << 13
    s >>>= 0
    s ^= s >>> 17
    s ^= s << 5
    s >>>= 0
    return s / 2 ** 32
  }
}

export interface Worker {
  child: ChildProcess
  /** Resolves when the worker has opened the store and starts working. */
  ready: Promise<void>
  /** Resolves with how it ended. */
  exited: Promise<{code: number | null; signal: NodeJS.Signals | null; stderr: string}>
}

/** Start test/reliability/workers/churn.mjs (see its header for the arguments). */
export function startChurn(args: readonly (string | number)[]): Worker {
  const env = {...process.env}
  delete env.NODE_OPTIONS
  const child = spawn(process.execPath, [CHURN, ...args.map(String)], {stdio: ['ignore', 'pipe', 'pipe'], env})
  let stderr = ''
  child.stderr!.on('data', (d) => (stderr += d))
  const exited = new Promise<{code: number | null; signal: NodeJS.Signals | null; stderr: string}>((resolve) =>
    child.on('close', (code, signal) => resolve({code, signal, stderr})),
  )
  const ready = new Promise<void>((resolve, reject) => {
    let out = ''
    child.stdout!.on('data', (d) => {
      out += d
      if (out.includes('ready\n')) resolve()
    })
    void exited.then((e) => reject(new Error(`worker exited before it was ready (${e.code ?? e.signal}): ${e.stderr}`)))
  })
  ready.catch(() => {})
  return {child, ready, exited}
}

/**
 * What every fault must leave behind, whatever else it leaves: `ipam check` finds no invalid block, no missing
 * or leaked handle and no affinity without its block (or the reverse); handle counts equal the blocks' exactly
 * (assertInvariants); and no address is allocated twice. Addresses a killed process held are allowed: to the
 * datastore they are ordinary allocations that nobody will release.
 */
export async function assertConsistent(store: Store, what = ''): Promise<{allocated: number}> {
  const r = await checkIpam(makeCtx(store))
  const at = what ? ` (${what})` : ''
  assert.deepEqual(r.invalidBlocks, [], `invalid blocks${at}`)
  assert.deepEqual(r.missingHandles, [], `handles missing${at}`)
  assert.deepEqual(
    r.leakedHandles.map((h) => h.id),
    [],
    `handles without addresses${at}`,
  )
  assert.deepEqual(r.affinitiesWithoutBlock, [], `affinities without a block${at}`)
  assert.deepEqual(r.blocksWithoutAffinity, [], `blocks without an affinity${at}`)
  const ips = r.allocations.filter((a) => !a.coolingDown).map((a) => a.ip)
  assert.equal(new Set(ips).size, ips.length, `an address is allocated twice${at}`)
  await assertInvariants(store)
  return {allocated: ips.length}
}

/**
 * A temp dir on tmpfs when there is one: SIGKILL and concurrency behave exactly as on disk (the page cache
 * survives a killed process), but without an fsync per commit the tests run several times faster.
 */
export function fastTempDir(prefix: string): string {
  const base = fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir()
  return fs.mkdtempSync(path.join(base, prefix))
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')
