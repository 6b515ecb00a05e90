// Reading a store where SQLite may not write: a copy on a read-only mount (a tmpfs this test mounts, remounts
// read-only and always unmounts), and a store in a directory the reading user may not write (the CLI run as
// nobody). Every read command answers as it does on the original, including transactions that are still only
// in the store's -wal file; write commands fail with one line, exit 5. The one case that cannot be read safely
// (committed data in -wal, no -shm, and no way to create it) is refused with one line naming the missing file.
// Needs root (mount, setpriv); integration because it does.
import assert from 'node:assert/strict'
import {execFileSync, spawnSync} from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {after, before, describe, test} from 'node:test'
import Database from 'better-sqlite3'
import {assertCleanError, ensureBuilt, ROOT, runCli, type RunResult} from '../commands/helpers.ts'
import {runProcess} from '../support/process.ts'
import {mountTestTmpfs} from '../support/tmpfs.ts'

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-rostore-'))
fs.chmodSync(dir, 0o755)
const fsys = mountTestTmpfs(dir, {size: '16m', source: 'ipamctl-rostore'})
const {mnt, skip} = fsys
const hasSetpriv = spawnSync('setpriv', ['--version']).status === 0
after(() => fsys.cleanup())
before(() => ensureBuilt())

async function ok(db: string, ...args: string[]): Promise<string> {
  const r = await runCli(db, args)
  assert.equal(r.status, 0, `${args.join(' ')}: ${r.stderr}`)
  return r.stdout
}

let block: string

/** The read commands, with what each prints on the writable original. */
function reads(): string[][] {
  return [
    ['pool', 'list'],
    ['pool', 'get', 'p'],
    ['pool', 'get', 'late'],
    ['ipam', 'show', '--show-blocks'],
    ['ipam', 'check'],
    ['block', 'list'],
    ['block', 'inspect', block],
    ['node', 'list'],
    ['reservation', 'list'],
    ['cni', 'list'],
  ]
}
const expected = new Map<string, string>()

/**
 * The original store, in a writable directory: a pool, allocations, a reservation; then one more pool
 * ("late") committed while another connection holds the store open, so that it stays in the -wal file.
 * Returns the three files as they were at that moment, copied into `snap`.
 */
async function seed(): Promise<string> {
  const d = fs.mkdtempSync(path.join(dir, 'origin-'))
  const db = path.join(d, 'ipam.db')
  await ok(db, 'pool', 'create', 'p', '--cidr', '10.88.0.0/16')
  await ok(db, 'ipam', 'assign', '--host', 'h1', '--count', '3', '--handle', 'first')
  await ok(db, 'reservation', 'create', 'r', '--cidr', '10.88.9.0/30')
  block = (JSON.parse(await ok(db, 'block', 'list', '-o', 'json')) as {cidr: string}[])[0]!.cidr
  const holder = new Database(db, {fileMustExist: true})
  try {
    holder.pragma('wal_autocheckpoint = 0')
    holder.prepare('SELECT count(*) FROM kv').get()
    await ok(db, 'pool', 'create', 'late', '--cidr', '10.99.0.0/16')
    const snap = path.join(d, 'snap')
    fs.mkdirSync(snap)
    for (const s of ['', '-wal', '-shm']) fs.copyFileSync(db + s, path.join(snap, `ipam.db${s}`))
    assert.ok(fs.statSync(path.join(snap, 'ipam.db-wal')).size > 0, 'the late pool is in the -wal file')
    for (const args of reads()) expected.set(args.join(' '), await ok(db, ...args))
    return snap
  } finally {
    holder.close()
  }
}

/** A copy of the snapshot's files `which` (suffixes) into a new directory under `where`. */
function copy(snap: string, where: string, which: string[]): string {
  const d = fs.mkdtempSync(path.join(where, 'store-'))
  fs.chmodSync(d, 0o755)
  for (const s of which) fs.copyFileSync(path.join(snap, `ipam.db${s}`), path.join(d, `ipam.db${s}`))
  return path.join(d, 'ipam.db')
}

/** A checkpointed store (everything in the main file, no -wal): made from the snapshot in a scratch dir. */
function checkpointed(snap: string, where: string): string {
  const scratch = fs.mkdtempSync(path.join(dir, 'ckpt-'))
  for (const s of ['', '-wal', '-shm'])
    fs.copyFileSync(path.join(snap, `ipam.db${s}`), path.join(scratch, `ipam.db${s}`))
  const d = new Database(path.join(scratch, 'ipam.db'))
  d.pragma('wal_checkpoint(TRUNCATE)')
  d.close()
  assert.equal(fs.existsSync(path.join(scratch, 'ipam.db-wal')), false)
  const out = fs.mkdtempSync(path.join(where, 'store-'))
  fs.chmodSync(out, 0o755)
  fs.copyFileSync(path.join(scratch, 'ipam.db'), path.join(out, 'ipam.db'))
  return path.join(out, 'ipam.db')
}

async function allReadsAnswer(
  db: string,
  run: (args: string[]) => Promise<RunResult> = (a) => runCli(db, a),
): Promise<void> {
  for (const args of reads()) {
    const r = await run(args)
    assert.equal(r.status, 0, `${args.join(' ')} on ${db}: ${r.stderr}`)
    assert.equal(r.stderr, '', args.join(' '))
    assert.equal(r.stdout, expected.get(args.join(' ')), args.join(' '))
  }
}

const listing = (db: string) => fs.readdirSync(path.dirname(db)).sort()

let seeded: Promise<string> | undefined
const snapshot = () => (seeded ??= seed())

describe('a store SQLite may not write to', {skip}, () => {
  let snap: string
  const stores: Record<string, string> = {}
  before(async () => {
    snap = await snapshot()
    stores.clean = checkpointed(snap, mnt)
    stores.walShm = copy(snap, mnt, ['', '-wal', '-shm'])
    stores.staleShm = copy(path.dirname(stores.clean), mnt, [''])
    fs.copyFileSync(path.join(snap, 'ipam.db-shm'), `${stores.staleShm}-shm`)
    stores.walOnly = copy(snap, mnt, ['', '-wal'])
    execFileSync('mount', ['-o', 'remount,ro', mnt])
  })
  after(() => {
    if (!skip) execFileSync('mount', ['-o', 'remount,rw', mnt])
  })

  test('read-only mount, a store copied without -wal/-shm: every read command answers as on the original', async () => {
    await allReadsAnswer(stores.clean!)
    assert.deepEqual(listing(stores.clean!), ['ipam.db'])
  })

  test('read-only mount, the store with its -wal and -shm: the transaction still in -wal is read', async () => {
    await allReadsAnswer(stores.walShm!)
  })

  test('read-only mount, a store with a left-over -shm and no -wal: every read command answers', async () => {
    await allReadsAnswer(stores.staleShm!)
  })

  test('read-only mount, committed data in -wal but no -shm: refused with one line naming -shm, exit 5', async () => {
    const db = stores.walOnly!
    assertCleanError(await runCli(db, ['pool', 'list']), 5, `${db}-shm is missing and cannot be created`)
  })

  test('read-only mount: write commands fail with one line, exit 5', async () => {
    for (const args of [
      ['pool', 'create', 'x', '--cidr', '10.77.0.0/16'],
      ['ipam', 'assign', '--host', 'h1', '--handle', 'ro'],
      ['ipam', 'release', '--handle', 'first', '--yes'],
    ]) {
      assertCleanError(await runCli(stores.clean!, args), 5, /read-only file system|readonly database|unable to open/)
    }
  })

  test('datastore status on the read-only copy is healthy', async () => {
    const r = await runCli(stores.clean!, ['datastore', 'status', '-o', 'json'])
    assert.equal(r.status, 0, r.stderr)
    assert.equal((JSON.parse(r.stdout) as {healthy: boolean}).healthy, true)
  })
})

describe('a store in a directory the reader may not write (run as nobody)', {
  skip: skip || (hasSetpriv ? false : 'setpriv is not installed'),
}, () => {
  let snap: string
  before(async () => {
    snap = await snapshot()
  })

  const asNobody = (db: string) => (args: string[]) =>
    runProcess(
      'setpriv',
      [
        '--reuid=65534',
        '--regid=65534',
        '--clear-groups',
        process.execPath,
        path.join(ROOT, 'bin', 'run.cjs'),
        ...args,
      ],
      {
        cwd: '/',
        env: {PATH: process.env.PATH, HOME: '/', NO_COLOR: '1', IPAMCTL_DATASTORE_PATH: db},
      },
    ).then((r) => ({stdout: r.stdout, stderr: r.stderr, status: r.code}))

  test('no -wal/-shm and no right to create them: every read command answers, nothing is created', async () => {
    const db = checkpointed(snap, dir)
    fs.chmodSync(db, 0o644)
    await allReadsAnswer(db, asNobody(db))
    assert.deepEqual(listing(db), ['ipam.db'])
  })

  test('-wal and -shm present but not writable: the transaction still in -wal is read', async () => {
    const db = copy(snap, dir, ['', '-wal', '-shm'])
    for (const s of ['', '-wal', '-shm']) fs.chmodSync(db + s, 0o644)
    await allReadsAnswer(db, asNobody(db))
  })

  test('a write as nobody fails with one line, exit 5, and changes nothing', async () => {
    const db = checkpointed(snap, dir)
    fs.chmodSync(db, 0o644)
    const before = fs.readFileSync(db)
    assertCleanError(await asNobody(db)(['pool', 'create', 'x', '--cidr', '10.77.0.0/16']), 5)
    assert.deepEqual(fs.readFileSync(db), before)
  })
})
