// Soak: 20,000 assign/release operations from 4 processes on one embedded store (two of them on the same
// host, so they share blocks). Each process logs every operation it completed; at the end the datastore must
// hold exactly the allocations the logs say are live — same handles, same addresses — with the invariants
// intact and no handle left without addresses.
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import {after, test} from 'node:test'
import {makeCtx} from '../../src/lib/ipam/context.ts'
import {createPools} from '../../src/lib/ipam/pool-admin.ts'
import {keys} from '../../src/lib/store/keys.ts'
import {SqliteStore} from '../../src/lib/store/sqlite.ts'
import {decodeBlock, ipOf} from '../../src/lib/ipam/block.ts'
import {formatIp} from '../../src/lib/net/cidr.ts'
import {ensureBuilt} from '../commands/helpers.ts'
import {assertConsistent, fastTempDir, startChurn, testSeed} from './helpers.ts'

const PROCS = 4
const OPS = 20_000
const HOSTS = ['soak-a', 'soak-a', 'soak-b', 'soak-c']

const dir = fastTempDir('ipamctl-soak-')
after(() => fs.rmSync(dir, {recursive: true, force: true}))

/** handle → sorted addresses, from a worker's log. */
function liveFromLog(file: string): Map<string, string[]> {
  const live = new Map<string, string[]>()
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (line === '') continue
    const [op, handle, ip] = line.split(' ') as [string, string, string | undefined]
    if (op === '+') live.set(handle, [...(live.get(handle) ?? []), ip!].sort())
    else if (op === '-') assert.ok(live.delete(handle), `${file}: released ${handle}, which it did not hold`)
    else assert.fail(`${file}: bad line ${JSON.stringify(line)}`)
  }
  return live
}

test(`soak: ${OPS} mixed operations from ${PROCS} processes; the store holds exactly what the logs say`, {
  timeout: 180_000,
}, async (t) => {
  ensureBuilt()
  const seed = testSeed()
  t.diagnostic(`seed ${seed} (replay with IPAMCTL_TEST_SEED=${seed})`)
  const db = path.join(dir, 'soak.db')
  const setup = SqliteStore.open(db)
  await createPools(makeCtx(setup), [{name: 'soak', cidr: '10.72.0.0/16', blockSize: 26}])
  await setup.close()

  const started = Date.now()
  const logs = HOSTS.map((_, i) => path.join(dir, `worker-${i}.log`))
  const workers = HOSTS.map((host, i) => startChurn([db, host, `w${i}`, seed + i, OPS / PROCS, logs[i]!]))
  for (const [i, w] of workers.entries()) {
    const e = await w.exited
    assert.equal(e.code, 0, `worker ${i} failed (${e.code ?? e.signal}):\n${e.stderr}`)
  }
  t.diagnostic(`${OPS} operations in ${Date.now() - started} ms`)

  const expected = new Map<string, string[]>()
  let done = 0
  for (const log of logs) {
    done += fs
      .readFileSync(log, 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('-')).length
    for (const [h, ips] of liveFromLog(log)) expected.set(h, ips)
  }
  const assigned = logs.reduce(
    (n, log) =>
      n +
      new Set(
        fs
          .readFileSync(log, 'utf8')
          .split('\n')
          .filter((l) => l.startsWith('+'))
          .map((l) => l.split(' ')[1]),
      ).size,
    0,
  )
  assert.equal(assigned + done, OPS, 'every operation was logged')

  const store = SqliteStore.open(db)
  try {
    await assertConsistent(store, `soak, seed ${seed}`)
    const actual = new Map<string, string[]>()
    for (const kv of await store.list(keys.blockPrefix())) {
      const b = decodeBlock(kv.value)
      b.allocations.forEach((idx, o) => {
        if (idx === null) return
        const a = b.attributes?.[idx]
        if (a?.handle_id === undefined) return // cooling down
        const ip = ipOf(b, o)
        actual.set(a.handle_id, [...(actual.get(a.handle_id) ?? []), formatIp(ip.family, ip.value)].sort())
      })
    }
    const sorted = (m: Map<string, string[]>) => Object.fromEntries([...m].sort(([a], [b]) => (a < b ? -1 : 1)))
    assert.deepEqual(
      sorted(actual),
      sorted(expected),
      'the allocations in the store differ from the live ones in the logs',
    )
    const handles = (await store.listKeys(keys.handlePrefix())).map((k) => k.slice(keys.handlePrefix().length)).sort()
    assert.deepEqual(
      handles,
      [...expected.keys()].sort(),
      'handle records differ from the live handles (a leaked or missing handle)',
    )
    t.diagnostic(
      `${expected.size} handles and ${[...expected.values()].flat().length} addresses live at the end; ${done} releases`,
    )
  } finally {
    await store.close()
  }
})
