// Real concurrency: 8 OS processes allocate from one embedded store file at the same time.
import {test} from 'node:test'
import assert from 'node:assert/strict'
import {spawn} from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {fileURLToPath} from 'node:url'
import {updateConfig} from '../../../src/lib/ipam/config.ts'
import {makeCtx} from '../../../src/lib/ipam/context.ts'
import {createPools} from '../../../src/lib/ipam/pool-admin.ts'
import {SqliteStore} from '../../../src/lib/store/sqlite.ts'
import {assertInvariants} from './helpers.ts'

const WORKER = fileURLToPath(new URL('./fixtures/alloc-worker.ts', import.meta.url))
const PROCS = 8
const PER_PROC = 200

function runWorker(db: string, host: string, prefix: string, count = PER_PROC): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', WORKER, db, host, String(count), prefix], {
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    let err = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (err += d))
    child.on('error', reject)
    child.on('close', (code) =>
      code === 0 ? resolve(JSON.parse(out) as string[]) : reject(new Error(`worker ${prefix} exited ${code}: ${err}`)),
    )
  })
}

async function race(hostOf: (i: number) => string, blockSize: number): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-conc-'))
  const db = path.join(dir, 'ipam.db')
  try {
    const setup = SqliteStore.open(db)
    await createPools(makeCtx(setup), [{name: 'conc', cidr: '10.80.0.0/16', blockSize}])
    await setup.close()
    const results = await Promise.all(Array.from({length: PROCS}, (_, i) => runWorker(db, hostOf(i), `p${i}`)))
    const all = results.flat()
    assert.equal(all.length, PROCS * PER_PROC)
    assert.equal(new Set(all).size, PROCS * PER_PROC, 'every address must be distinct')
    const store = SqliteStore.open(db)
    try {
      await assertInvariants(store)
      // Every allocation made its own handle, and each handle records exactly one address.
      const handles = await store.list('/calico/ipam/v2/handle/')
      assert.equal(handles.length, PROCS * PER_PROC)
      for (const h of handles) assert.match(h.value, /^\{"block":\{"10\.80\.[0-9.]+\/\d+":1\},"deleted":false\}$/)
    } finally {
      await store.close()
    }
  } finally {
    fs.rmSync(dir, {recursive: true, force: true})
  }
}

test('8 processes x 200 allocations on ONE host: 1600 distinct addresses, invariants hold', {
  timeout: 120_000,
}, async () => {
  // /24 blocks keep the host under the default cap of 20 blocks (1600 / 256 = 7 blocks).
  await race(() => 'same-host', 24)
})

test('8 processes x 200 allocations on 8 hosts: 1600 distinct addresses, invariants hold', {
  timeout: 120_000,
}, async () => {
  await race((i) => `host-${i}`, 26)
})

test('8 processes fill ONE host up to its block cap (strict affinity, 2 blocks of /26): 128 addresses, never a third block', {
  timeout: 120_000,
}, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-conc-'))
  const db = path.join(dir, 'ipam.db')
  try {
    const setup = SqliteStore.open(db)
    await createPools(makeCtx(setup), [{name: 'conc', cidr: '10.80.0.0/16', blockSize: 26}])
    await updateConfig(makeCtx(setup), {strictAffinity: true, maxBlocksPerHost: 2})
    await setup.close()
    // Exactly the capacity of two blocks: every request succeeds only if no process claimed past the cap.
    const all = (await Promise.all(Array.from({length: PROCS}, (_, i) => runWorker(db, 'capped', `c${i}`, 16)))).flat()
    assert.equal(new Set(all).size, 128)
    const store = SqliteStore.open(db)
    try {
      await assertInvariants(store)
      assert.equal((await store.listKeys('/calico/ipam/v2/host/capped/ipv4/block/')).length, 2)
    } finally {
      await store.close()
    }
  } finally {
    fs.rmSync(dir, {recursive: true, force: true})
  }
})
