// When the embedded store is created: only by commands that add state, once, saying so on stderr. Commands that
// read (or only change what exists) on a path where no store exists fail with one line naming the path, exit 3,
// and create nothing: no file and no parent directory. Reads of an existing store change nothing.
import assert from 'node:assert/strict'
import {createHash} from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import {describe, test} from 'node:test'
import {assertCleanError, fixture, runCli, sandbox} from './helpers.ts'

const READS: string[][] = [
  ['ipam', 'show'],
  ['ipam', 'show', '--show-blocks'],
  ['ipam', 'check'],
  ['pool', 'list'],
  ['pool', 'get', 'default-ipv4'],
  ['block', 'list'],
  ['block', 'inspect', '10.65.0.0/26'],
  ['node', 'list'],
  ['reservation', 'list'],
  ['cni', 'list'],
]

// Commands that only change or remove existing state: nothing to do on a store that does not exist.
const UPDATES: string[][] = [
  ['ipam', 'release', '--handle', 'pod-a', '--yes'],
  ['ipam', 'gc', '--yes'],
  ['ipam', 'split', '2', '--name', 'default-ipv4', '--yes'],
  ['pool', 'delete', 'default-ipv4', '--yes'],
  ['pool', 'update', 'default-ipv4', '--disable'],
  ['node', 'remove', 'node-1', '--yes'],
  ['reservation', 'delete', 'r', '--yes'],
  ['datastore', 'unlock', '--yes'],
]

/** A store path two directories below the sandbox, none of which exist. */
function missing(): {root: string; db: string} {
  const sb = sandbox()
  const root = path.join(sb.dir, 'no-such-dir')
  return {root, db: path.join(root, 'sub', 'typo.db')}
}

const sha = (file: string) => createHash('sha256').update(fs.readFileSync(file)).digest('hex')

describe('a missing embedded store is never created by a read', {concurrency: true}, () => {
  for (const args of [...READS, ...UPDATES]) {
    test(`${args.join(' ')}: exit 3, one line naming the path, nothing created`, async () => {
      const {root, db} = missing()
      const r = await runCli(db, args)
      assertCleanError(r, 3, `embedded datastore ${db} does not exist; nothing was created`)
      assert.equal(fs.existsSync(root), false, 'no parent directory was created')
    })
  }

  test('--datastore-path typo.db on ipam show: exit 3, nothing created', async () => {
    const sb = sandbox()
    const typo = path.join(sb.dir, 'typo.db')
    const r = await sb.run('ipam', 'show', '--datastore-path', typo)
    assertCleanError(r, 3, typo)
    assert.deepEqual(fs.readdirSync(sb.dir), [])
  })

  test('datastore status reports the store as missing (not healthy), exit 3, nothing created', async () => {
    const {root, db} = missing()
    const r = await runCli(db, ['datastore', 'status', '-o', 'json'])
    assert.equal(r.status, 3, r.stderr)
    const st = JSON.parse(r.stdout) as {healthy: boolean; missing?: boolean; location: string}
    assert.equal(st.healthy, false)
    assert.equal(st.missing, true)
    assert.equal(st.location, db)
    assert.equal(
      r.stderr,
      `Error: embedded datastore ${db} does not exist; nothing was created (check the path; only commands that write create a store)\n`,
    )
    assert.equal(fs.existsSync(root), false)
  })
})

describe('commands that add state create the store and say so once', {concurrency: true}, () => {
  test('pool create on a missing path: created 0600 in 0700 directories, one stderr line; the next write says nothing', async () => {
    const {root, db} = missing()
    const r = await runCli(db, ['pool', 'create', 'p1', '--cidr', '10.1.0.0/16'])
    assert.equal(r.status, 0, r.stderr)
    assert.equal(r.stderr, `created new datastore at ${db}\n`)
    assert.equal(fs.statSync(db).mode & 0o777, 0o600)
    assert.equal(fs.statSync(path.dirname(db)).mode & 0o777, 0o700)
    assert.equal(fs.statSync(root).mode & 0o777, 0o700)
    const again = await runCli(db, ['pool', 'create', 'p2', '--cidr', '10.2.0.0/16'])
    assert.equal(again.status, 0, again.stderr)
    assert.equal(again.stderr, '')
    const list = await runCli(db, ['pool', 'list'])
    assert.equal(list.stderr, '')
    assert.match(list.stdout, /p1 .*10\.1\.0\.0\/16[\s\S]*p2 .*10\.2\.0\.0\/16/)
  })

  for (const args of [
    ['node', 'create', 'node-1'],
    ['reservation', 'create', 'r', '--cidr', '10.1.0.1'],
    ['ipam', 'configure', '--strictaffinity', 'true'],
    ['datastore', 'lock'],
  ]) {
    test(`${args.join(' ')} creates a missing store and says so`, async () => {
      const {db} = missing()
      const r = await runCli(db, args)
      assert.match(r.stderr, new RegExp(`^created new datastore at ${db.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}\\n`))
      assert.ok(fs.existsSync(db))
    })
  }

  for (const args of [
    ['ipam', 'assign', '--host', 'node-1', '--count', '0'],
    ['ipam', 'assign', '--host', 'node-1', '--count', '1'],
    ['pool', 'create', 'p', '--cidr', '10.1.0.1/16'],
    ['reservation', 'create', 'r', '--cidr', 'bogus'],
  ]) {
    test(`${args.join(' ')} fails before writing: one error line, no store and no directory created`, async () => {
      const {root, db} = missing()
      const r = await runCli(db, args)
      assert.ok(r.status !== 0)
      assert.match(r.stderr, /^Error: [^\n]*\n$/)
      assert.equal(fs.existsSync(root), false)
    })
  }

  test('four writers racing on a missing path: one store, exactly one of them says it created it', async () => {
    const {db} = missing()
    const rs = await Promise.all(
      [1, 2, 3, 4].map((i) => runCli(db, ['pool', 'create', `p${i}`, '--cidr', `10.${i}.0.0/16`])),
    )
    for (const r of rs) assert.equal(r.status, 0, r.stderr)
    assert.equal(
      rs.filter((r) => r.stderr === `created new datastore at ${db}\n`).length,
      1,
      rs.map((r) => r.stderr).join('|'),
    )
    assert.equal(rs.filter((r) => r.stderr !== '' && r.stderr !== `created new datastore at ${db}\n`).length, 0)
    const list = await runCli(db, ['pool', 'list', '-o', 'json'])
    assert.equal((JSON.parse(list.stdout) as unknown[]).length, 4)
    assert.deepEqual(
      fs.readdirSync(path.dirname(db)).filter((f) => f.includes('.new-')),
      [],
      'no temporary file left',
    )
  })
})

describe('reads of an existing store change nothing', () => {
  test('every read command leaves the store file byte-identical and adds no file', async () => {
    const sb = await fixture('store-open-reads', [
      ['pool', 'create', 'default-ipv4', '--cidr', '10.65.0.0/16'],
      ['ipam', 'assign', '--host', 'node-1', '--count', '2', '--handle', 'pod-a'],
      ['reservation', 'create', 'r', '--cidr', '10.65.9.0/30'],
    ])
    // The fixture copy may carry a -wal; one write here leaves the file checkpointed, as a store at rest is.
    await sb.ok('node', 'create', 'node-2')
    const block = (JSON.parse(await sb.ok('block', 'list', '-o', 'json')) as {cidr: string}[])[0]!.cidr
    const files = fs.readdirSync(sb.dir).sort()
    const before = sha(sb.db)
    for (const args of [
      ...READS.filter((a) => a[1] !== 'inspect'),
      ['block', 'inspect', block],
      ['datastore', 'status'],
    ]) {
      const r = await sb.run(...args)
      assert.equal(r.status, 0, `${args.join(' ')}: ${r.stderr}`)
      assert.equal(r.stderr, '', args.join(' '))
    }
    assert.equal(sha(sb.db), before)
    assert.deepEqual(fs.readdirSync(sb.dir).sort(), files)
  })
})
