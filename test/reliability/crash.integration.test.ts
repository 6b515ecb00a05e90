// SIGKILL at a random moment: 100 trials per store (embedded SQLite and a real etcd). Each trial is a worker
// process (workers/churn.mjs) assigning and releasing addresses in a tight loop, killed at a random delay after
// it is ready, so most kills land inside an operation. Trials run a few at a time against one datastore; after
// every batch the datastore must be consistent (helpers.ts assertConsistent): every logical change is one
// transaction, so a kill can leak the addresses the process held but never damage anything.
//
// The seed is printed; IPAMCTL_TEST_SEED=<seed> replays the same delays and worker choices.
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import {after, before, describe, test, type TestContext} from 'node:test'
import {makeCtx} from '../../src/lib/ipam/context.ts'
import {createPools} from '../../src/lib/ipam/pool-admin.ts'
import {EtcdStore} from '../../src/lib/store/etcd.ts'
import {SqliteStore} from '../../src/lib/store/sqlite.ts'
import type {Store} from '../../src/lib/store/store.ts'
import {ensureBuilt} from '../commands/helpers.ts'
import {etcdSkipReason, startEtcd, type EtcdServer} from '../support/etcd-server.ts'
import {assertConsistent, fastTempDir, rng, startChurn, testSeed} from './helpers.ts'

const TRIALS = 100
const PARALLEL = 6
/** Kill between 0 and this many ms after the worker's first operation (an operation takes ~1-10 ms). */
const MAX_DELAY_MS = 50

const seed = testSeed()
const dir = fastTempDir('ipamctl-crash-')
after(() => fs.rmSync(dir, {recursive: true, force: true}))
before(() => ensureBuilt())

/**
 * Run TRIALS kills against `spec` (what churn.mjs takes), checking `store` after every batch. Returns how many
 * kills hit a worker that was still running (the rest had failed: an error, reported with its stderr).
 */
async function trials(t: TestContext, name: string, spec: string, store: Store): Promise<void> {
  const random = rng(seed ^ name.length)
  t.diagnostic(`${name}: seed ${seed} (replay with IPAMCTL_TEST_SEED=${seed})`)
  await createPools(makeCtx(store), [{name: 'crash', cidr: '10.70.0.0/16', blockSize: 26}])
  let allocatedAfter = 0
  let checkCpu = 0
  const cpu0 = process.cpuUsage()
  for (let first = 0; first < TRIALS; first += PARALLEL) {
    const batch = Array.from({length: Math.min(PARALLEL, TRIALS - first)}, (_, i) => {
      const trial = first + i
      // A few hosts, so trials share (and fight over) blocks as well as claim new ones.
      const host = `crash-${trial % 4}`
      const delay = Math.floor(random() * MAX_DELAY_MS)
      const w = startChurn([spec, host, `t${trial}`, Math.floor(random() * 2 ** 31), 0])
      return {trial, delay, w}
    })
    await Promise.all(
      batch.map(async ({trial, delay, w}) => {
        await w.ready
        await new Promise((r) => setTimeout(r, delay))
        w.child.kill('SIGKILL')
        const e = await w.exited
        assert.equal(
          e.signal,
          'SIGKILL',
          `trial ${trial} (seed ${seed}): the worker ended by itself (${e.code}) before the kill:\n${e.stderr}`,
        )
      }),
    )
    const c0 = process.cpuUsage()
    const {allocated} = await assertConsistent(
      store,
      `${name}, after trials ${first}-${first + batch.length - 1}, seed ${seed}`,
    )
    checkCpu += process.cpuUsage(c0).user
    allocatedAfter = allocated
  }
  t.diagnostic(
    `${name}: ${TRIALS} kills, ${allocatedAfter} addresses left allocated by killed workers; test process CPU ${Math.round(process.cpuUsage(cpu0).user / 1000)} ms, of which checks ${Math.round(checkCpu / 1000)} ms`,
  )
  assert.ok(allocatedAfter > 0, 'the workers never allocated anything before being killed: the trials tested nothing')
}

describe('SIGKILL during assign/release', () => {
  test(`embedded store: ${TRIALS} kills, consistent after each batch`, {timeout: 240_000}, async (t) => {
    const db = path.join(dir, 'crash.db')
    const store = SqliteStore.open(db)
    try {
      await trials(t, 'embedded', db, store)
      // SQLite's own view of the file after 100 kills mid-transaction.
      const raw = (await import('better-sqlite3')).default
      const check = new raw(db, {readonly: true})
      try {
        assert.equal(check.pragma('integrity_check', {simple: true}), 'ok')
      } finally {
        check.close()
      }
    } finally {
      await store.close()
    }
  })

  describe('etcd', {skip: etcdSkipReason}, () => {
    let server: EtcdServer
    before(async () => {
      server = await startEtcd()
    })
    after(async () => {
      await server?.stop()
    })

    test(`etcd: ${TRIALS} kills, consistent after each batch`, {timeout: 300_000}, async (t) => {
      const store = await EtcdStore.connect({endpoints: [server.endpoint], timeoutMs: 10_000})
      try {
        await trials(t, 'etcd', `etcd:${server.endpoint}`, store)
      } finally {
        await store.close()
      }
    })
  })
})
