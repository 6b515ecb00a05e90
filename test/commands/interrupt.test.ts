// SIGINT/SIGTERM during multi-transaction commands: the real binary, real signals. A signal is sent once the
// datastore file shows the command is part-way (polled read-only), never after a fixed delay; every
// expectation is then read back from the store, so nothing depends on how far the command had got.
import assert from 'node:assert/strict'
import {spawn} from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import {describe, test} from 'node:test'
import {SqliteStore} from '../../src/lib/store/sqlite.ts'
import type {WriteOp} from '../../src/lib/store/store.ts'
import {encodeWorkloadEndpoint, endpointKey, newWorkloadEndpoint} from '../../src/lib/workload/endpoint.ts'
import {
  assertCleanError,
  assertRejected,
  ensureBuilt,
  fixture,
  ROOT,
  runCli,
  type RunResult,
  type Sandbox,
} from './helpers.ts'

const POOL_KEY = '/calico/resources/v3/projectcalico.org/ippools/p1'
const NODE_KEY = (host: string) => `/calico/resources/v3/projectcalico.org/nodes/${host}`
const BLOCKS = '/calico/ipam/v2/assignment/'

/** Start `ipamctl ...args` on the sandbox's store; the caller signals it and awaits `done`. */
function start(sb: Sandbox, args: readonly string[]): {pid: number; done: Promise<RunResult>} {
  ensureBuilt()
  const env: NodeJS.ProcessEnv = {...process.env, IPAMCTL_DATASTORE_PATH: sb.db, NO_COLOR: '1'}
  delete env.NODE_OPTIONS
  delete env.FORCE_COLOR
  const child = spawn(process.execPath, [path.join(ROOT, 'bin', 'run.cjs'), ...args], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d) => (stdout += d))
  child.stderr.on('data', (d) => (stderr += d))
  const killer = setTimeout(() => child.kill('SIGKILL'), 120_000)
  const done = new Promise<RunResult>((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code, signal) => {
      clearTimeout(killer)
      resolve({stdout, stderr, status: code ?? (signal ? -1 : null)})
    })
  })
  return {pid: child.pid!, done}
}

/** Poll the store (read-only) until `ready` holds; fails if the command ends first. */
async function until(running: Promise<RunResult>, ready: () => boolean): Promise<void> {
  let ended = false
  void running.then(() => {
    ended = true
  })
  while (!ready()) {
    if (ended)
      assert.fail(`the command ended before the state to interrupt it in was seen: ${JSON.stringify(await running)}`)
    await new Promise((r) => setTimeout(r, 2))
  }
}

const safeValue = (sb: Sandbox, key: string): string | undefined => {
  try {
    return sb.value(key)
  } catch {
    return undefined // the file is being created
  }
}

/** Addresses the store holds for `handle`, by its handle record. */
function handleCount(sb: Sandbox, handle: string): number {
  const v = sb.value(`/calico/ipam/v2/handle/${handle}`)
  if (!v) return 0
  return Object.values(JSON.parse(v).block as Record<string, number>).reduce((a, b) => a + b, 0)
}

/** The command in "...; to undo: ipamctl ..." as an argv (our commands here have no quoted arguments). */
const undoArgs = (line: string): string[] => {
  const m = /; to undo: ipamctl (.*)$/.exec(line.trim())
  assert.ok(m, `no undo command in ${JSON.stringify(line)}`)
  return m[1]!.split(' ')
}

// One host with 100 small blocks of its own (strict affinity lifts the 20-block cap): deleting the pool
// then has 100 affinity releases after the grace wait, so it is still running when the signal comes.
const manyBlocks = () =>
  fixture('interrupt-many-blocks', [
    ['pool', 'create', 'p1', '--cidr', '10.0.0.0/8', '--block-size', '30'],
    ['ipam', 'configure', '--strictaffinity=true', '--max-blocks-per-host', '100000'],
    ['ipam', 'assign', '--host', 'n1', '--count', '400', '--handle', 'old'],
  ])

describe('interrupting pool delete', () => {
  test('SIGINT after the pool was disabled: exit 130, one line, the pool still exists and is enabled again', async () => {
    const sb = await manyBlocks()
    const run = start(sb, ['pool', 'delete', 'p1', '--yes'])
    await until(run.done, () => safeValue(sb, POOL_KEY)?.includes('"disabled":true') ?? false)
    process.kill(run.pid, 'SIGINT')
    const r = await run.done
    assertCleanError(r, 130, /^Error: interrupted by SIGINT: IP pool p1 was not deleted and is enabled again/)
    const pool = sb.value(POOL_KEY)
    assert.ok(pool, 'the pool must still exist')
    assert.doesNotMatch(pool, /"disabled"/, 'the pool must be enabled again')
    // Affinities released before the signal left their blocks unowned; the line says how many.
    const affinities = sb.keys('/calico/ipam/v2/host/n1/').length
    const released = 100 - affinities
    if (released > 0)
      assert.match(r.stderr, new RegExp(`; ${released} block affinit(y was|ies were) already released \\(harmless`))
    else assert.doesNotMatch(r.stderr, /already released/)
    // Nothing lost: every address is still allocated.
    assert.equal(handleCount(sb, 'old'), 400)
  })
})

describe('interrupting ipam assign', () => {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    test(`${signal} between block transactions: exit 130, the line's count is what the store holds, its undo releases them all`, async () => {
      const sb = await fixture('interrupt-assign', [
        ['pool', 'create', 'p1', '--cidr', '10.0.0.0/8', '--block-size', '30'],
        ['ipam', 'configure', '--strictaffinity=true', '--max-blocks-per-host', '100000'],
      ])
      // 4000 addresses in blocks of 4: a thousand transactions, far more than happen before the signal.
      const run = start(sb, ['ipam', 'assign', '--host', 'n1', '--count', '4000', '--handle', 'h1'])
      await until(run.done, () => {
        try {
          return sb.keys(BLOCKS).length >= 3
        } catch {
          return false
        }
      })
      process.kill(run.pid, signal)
      const r = await run.done
      assertCleanError(
        r,
        130,
        new RegExp(
          `^Error: interrupted by ${signal}: assigned \\d+ of 4000 addresses to host n1 under handle h1; to undo: ipamctl ipam release --handle h1 --yes\\n$`,
        ),
      )
      const said = Number(/assigned (\d+) of/.exec(r.stderr)![1])
      assert.ok(said > 0 && said < 4000, r.stderr)
      assert.equal(handleCount(sb, 'h1'), said, 'the count on the line must be what the store holds for the handle')
      assert.ok(sb.value(NODE_KEY('n1')), 'the Node record a completed request writes must exist')
      const undo = await runCli(sb.db, undoArgs(r.stderr))
      assert.equal(undo.status, 0, undo.stderr)
      assert.match(undo.stdout, new RegExp(`^Successfully released ${said} IP addresses of handle h1`))
      assert.equal(sb.value('/calico/ipam/v2/handle/h1'), undefined)
    })
  }
})

describe('interrupting release and node removal', () => {
  test('ipam release --handle: exit 130, the line says how many were released, its finish command releases the rest', async () => {
    const sb = await manyBlocks()
    const run = start(sb, ['ipam', 'release', '--handle', 'old', '--yes'])
    await until(run.done, () => handleCount(sb, 'old') < 400)
    process.kill(run.pid, 'SIGINT')
    const r = await run.done
    assertCleanError(
      r,
      130,
      /^Error: interrupted by SIGINT: released \d+ addresses of handle old; to finish: ipamctl ipam release --handle old --yes\n$/,
    )
    const said = Number(/released (\d+) addresses/.exec(r.stderr)![1])
    assert.equal(said + handleCount(sb, 'old'), 400, 'released + still held must be every address')
    const finish = await runCli(sb.db, ['ipam', 'release', '--handle', 'old', '--yes'])
    assert.equal(finish.status, 0, finish.stderr)
    assert.equal(sb.value('/calico/ipam/v2/handle/old'), undefined)
  })

  test('node remove: exit 130, the node record is still there, re-running the printed command finishes it', async () => {
    const sb = await manyBlocks()
    const run = start(sb, ['node', 'remove', 'n1', '--yes'])
    await until(run.done, () => sb.keys('/calico/ipam/v2/host/n1/').length < 100)
    process.kill(run.pid, 'SIGINT')
    const r = await run.done
    assertCleanError(
      r,
      130,
      /^Error: interrupted by SIGINT: the node record is still there; released 0 addresses, deleted 0 workload endpoints, released \d+ block affinities; to finish: ipamctl node remove n1 --yes\n$/,
    )
    const said = Number(/released (\d+) block affinities/.exec(r.stderr)![1])
    assert.equal(said + sb.keys('/calico/ipam/v2/host/n1/').length, 100)
    assert.ok(sb.value(NODE_KEY('n1')))
    const finish = await runCli(sb.db, ['node', 'remove', 'n1', '--yes'])
    assert.equal(finish.status, 0, finish.stderr)
    assert.deepEqual(sb.keys('/calico/ipam/v2/host/n1/'), [])
    assert.equal(sb.value(NODE_KEY('n1')), undefined)
  })
})

describe('pool update', () => {
  test('--disable and --enable flip spec.disabled; asking for the current state changes nothing', async () => {
    const sb = await fixture('interrupt-pool', [['pool', 'create', 'p1', '--cidr', '10.9.0.0/24']])
    assert.equal(await sb.ok('pool', 'update', 'p1', '--disable'), 'IP pool p1 (10.9.0.0/24) is now disabled\n')
    assert.match(sb.value(POOL_KEY)!, /"disabled":true/)
    const before = sb.dump()
    assert.equal(
      await sb.ok('pool', 'update', '10.9.0.0/24', '--disable'),
      'IP pool p1 (10.9.0.0/24) was already disabled; nothing was changed\n',
    )
    assert.equal(sb.dump(), before)
    assert.equal(await sb.ok('pool', 'update', 'p1', '--enable'), 'IP pool p1 (10.9.0.0/24) is now enabled\n')
    assert.doesNotMatch(sb.value(POOL_KEY)!, /"disabled"/)
  })

  test('both flags or neither: exit 2; unknown pool: exit 3; nothing changed', async () => {
    const sb = await fixture('interrupt-pool', [['pool', 'create', 'p1', '--cidr', '10.9.0.0/24']])
    await assertRejected(sb, ['pool', 'update', 'p1'], 2, 'give exactly one of --enable and --disable')
    await assertRejected(
      sb,
      ['pool', 'update', 'p1', '--enable', '--disable'],
      2,
      'give exactly one of --enable and --disable',
    )
    await assertRejected(sb, ['pool', 'update', 'nope', '--enable'], 3, 'IP pool nope not found')
  })
})

describe('pool delete --dry-run', () => {
  test('prints exactly what the real run then does, and changes nothing', async () => {
    // Two hosts; one block of n1 emptied again (deleted by the delete), the others keep addresses (left unowned).
    const sb = await fixture('interrupt-dry-run', [
      ['pool', 'create', 'p1', '--cidr', '10.9.0.0/24', '--block-size', '28'],
      ['ipam', 'assign', '--host', 'n1', '--count', '20', '--handle', 'a'],
      ['ipam', 'assign', '--host', 'n2', '--count', '1', '--handle', 'b'],
      ['ipam', 'release', '--handle', 'a', '--yes'],
      ['ipam', 'assign', '--host', 'n1', '--count', '3', '--handle', 'c'],
    ])
    const before = sb.dump()
    const dryText = await sb.ok('pool', 'delete', 'p1', '--dry-run')
    const dry = JSON.parse(await sb.ok('pool', 'delete', 'p1', '--dry-run', '-o', 'json'))
    assert.equal(sb.dump(), before, '--dry-run must not change the datastore')
    assert.ok(dry.affinities.length >= 3, JSON.stringify(dry))
    const real = JSON.parse(await sb.ok('pool', 'delete', 'p1', '--yes', '-o', 'json'))
    assert.equal(dry.dryRun, true)
    assert.equal(real.dryRun, false)
    assert.deepEqual({...dry, dryRun: undefined}, {...real, dryRun: undefined})
    // The text names every affinity the real run released, with its outcome.
    for (const a of real.affinities)
      assert.match(dryText, new RegExp(`host ${a.host}: ${a.block.replaceAll('.', '\\.')} \\(`))
    assert.match(dryText, new RegExp(`would release ${real.affinities.length} block affinities`))
    assert.equal(sb.value(POOL_KEY), undefined)
  })
})

/** Export a store of 30,000 endpoints over an earlier export, and signal it while its partial file exists. */
async function interruptExport(signal: 'SIGINT' | 'SIGTERM'): Promise<void> {
  const sb = await fixture('interrupt-export', [['pool', 'create', 'p1', '--cidr', '10.0.0.0/16']])
  const out = path.join(sb.dir, 'backup.txt')
  await sb.ok('datastore', 'export', '-o', out)
  const earlier = fs.readFileSync(out, 'utf8')
  // 30,000 endpoints: the export takes long enough to be signalled while its partial file exists.
  const store = await SqliteStore.open(sb.db)
  try {
    const now = new Date('2026-11-24T10:00:00Z')
    const ops: WriteOp[] = []
    for (let i = 0; i < 30_000; i++) {
      const name = `node--${i % 500}-k8s-pod--${i}-eth0`
      const wep = newWorkloadEndpoint(
        {
          name,
          namespace: 'default',
          orchestrator: 'k8s',
          node: `node-${i % 500}`,
          pod: `pod-${i}`,
          containerID: `c${i}`,
          endpoint: 'eth0',
          ipNetworks: [`10.1.${i >> 8}.${i & 255}/32`],
          interfaceName: `cali${i}`,
        },
        now,
      )
      ops.push({put: endpointKey('default', name), value: encodeWorkloadEndpoint(wep)})
    }
    await store.txn([], ops)
  } finally {
    await store.close()
  }
  const partial = () => fs.readdirSync(sb.dir).filter((f) => f.startsWith('.backup.txt.') && f.endsWith('.tmp'))
  const run = start(sb, ['datastore', 'export', '-o', out])
  await until(run.done, () => partial().length > 0)
  process.kill(run.pid, signal)
  const r = await run.done
  assertCleanError(r, 130, new RegExp(`^Error: interrupted by ${signal}: nothing was changed\\n$`))
  assert.equal(r.stdout, '')
  assert.deepEqual(partial(), [], 'the partial export file must be removed')
  assert.equal(fs.readFileSync(out, 'utf8'), earlier, 'the earlier export must be left as it was')
}

describe('interrupting datastore export -o', () => {
  test('SIGINT mid-export: exit 130, one line, the earlier export untouched, no partial file left', () =>
    interruptExport('SIGINT'))
  test('SIGTERM mid-export: exit 130, one line, the earlier export untouched, no partial file left', () =>
    interruptExport('SIGTERM'))
})
