import {after, describe, test} from 'node:test'
import assert from 'node:assert/strict'
import {spawn} from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {fileURLToPath} from 'node:url'
import Database from 'better-sqlite3'
import {DatastoreUnavailableError} from '../../../src/lib/errors.ts'
import {defaultDatastorePath} from '../../../src/lib/store/default-path.ts'
import {SqliteStore, VISIT_PAGE} from '../../../src/lib/store/sqlite.ts'
import {guardFor, type KeyValue, type Scan} from '../../../src/lib/store/store.ts'
import {storeContract} from './contract.ts'

const HERE = path.dirname(fileURLToPath(import.meta.url))
const REPO = path.resolve(HERE, '../../..')
const WORKER = path.join(HERE, 'fixtures', 'cas-worker.ts')

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-sqlite-test-'))
after(() => fs.rmSync(root, {recursive: true, force: true}))

let n = 0
/** A path that does not exist yet, inside its own not-yet-created directory. */
const freshPath = (): string => path.join(root, `case-${++n}`, 'nested', 'ipam.db')

// --- the shared contract ---------------------------------------------------------------

const contractDir = path.join(root, 'contract')
storeContract(
  'SqliteStore',
  async () => SqliteStore.open(path.join(contractDir, `store-${++n}.db`)),
  async () => fs.rmSync(contractDir, {recursive: true, force: true}),
)

// --- SQLite-specific behaviour ------------------------------------------------------------

describe('SqliteStore file handling', () => {
  test('creates the directory 0700 and the database file 0600', async () => {
    const file = freshPath()
    const store = SqliteStore.open(file)
    try {
      await store.txn([], [{put: '/k', value: 'v'}])
      assert.equal(fs.statSync(file).mode & 0o777, 0o600)
      assert.equal(fs.statSync(path.dirname(file)).mode & 0o777, 0o700)
      assert.equal(fs.statSync(path.dirname(path.dirname(file))).mode & 0o777, 0o700, 'intermediate directories too')
      for (const side of ['-wal', '-shm']) {
        if (fs.existsSync(file + side)) assert.equal(fs.statSync(file + side).mode & 0o777, 0o600, side)
      }
    } finally {
      await store.close()
    }
  })

  test('description names the file', async () => {
    const file = freshPath()
    const store = SqliteStore.open(file)
    try {
      assert.equal(store.description, `embedded (${file})`)
    } finally {
      await store.close()
    }
  })

  test('journal mode is WAL', async () => {
    const file = freshPath()
    const store = SqliteStore.open(file)
    try {
      const db = new Database(file, {readonly: true})
      try {
        assert.equal(db.pragma('journal_mode', {simple: true}), 'wal')
      } finally {
        db.close()
      }
    } finally {
      await store.close()
    }
  })

  test('data and the revision counter persist across close and reopen', async () => {
    const file = freshPath()
    const s1 = SqliteStore.open(file)
    await s1.txn([], [{put: '/a', value: 'one'}])
    const r2 = await s1.txn(
      [],
      [
        {put: '/b', value: 'two'},
        {put: '/c', value: 'big:1767323045000000001'},
      ],
    )
    await s1.txn([], [{delete: '/c'}])
    const rev = await s1.revision()
    await s1.close()

    const s2 = SqliteStore.open(file)
    try {
      assert.equal(await s2.revision(), rev)
      assert.deepEqual(await s2.get('/b'), {key: '/b', value: 'two', modRevision: r2.revision})
      assert.deepEqual(await s2.listKeys('/'), ['/a', '/b'])
      // The counter continues; it does not restart.
      const r = await s2.txn([{key: '/b', modRevision: r2.revision}], [{put: '/b', value: 'three'}])
      assert.equal(r.succeeded, true)
      assert.equal(r.revision, rev + 1n)
    } finally {
      await s2.close()
    }
  })

  test('eachAtOnce reads one snapshot: a write by another connection between its scans is not seen', async () => {
    const file = freshPath()
    const a = SqliteStore.open(file)
    const b = SqliteStore.open(file)
    try {
      await a.txn(
        [],
        [
          {put: '/p/1', value: 'a'},
          {put: '/q/1', value: 'b'},
        ],
      )
      const seen: string[] = []
      function* scans(): Generator<Scan> {
        yield {prefix: '/p/', visit: (kv) => seen.push(kv.key)}
        // SqliteStore.txn does its work before returning its promise: the write is committed here.
        void b.txn([], [{put: '/q/2', value: 'c'}, {delete: '/q/1'}])
        yield {prefix: '/q/', visit: (kv) => seen.push(kv.key)}
      }
      await a.eachAtOnce(scans())
      assert.deepEqual(seen, ['/p/1', '/q/1'])
      assert.deepEqual(await a.listKeys('/q/'), ['/q/2'])
    } finally {
      await a.close()
      await b.close()
    }
  })

  test('each reads page by page: every key under the prefix once, in order, values and revisions as list gives them', async () => {
    const store = SqliteStore.open(freshPath())
    try {
      // Past two page boundaries, with neighbours on both sides and the prefix itself as a key.
      const n = 2 * VISIT_PAGE + 3
      const under = Array.from({length: n}, (_, i) => `/p/${String(i).padStart(4, '0')}`)
      const ops = [...under, '/p', '/o/1', '/p0', '/q/1', '/é/1', '/é/2', '/ê/1'].map((k) => ({
        put: k,
        value: `v:${k}`,
      }))
      await store.txn([], ops)
      for (const [prefix, want] of [
        ['/p/', under],
        ['/p', ['/p', ...under, '/p0']],
        ['/é/', ['/é/1', '/é/2']],
        ['/é', ['/é/1', '/é/2']],
      ] as const) {
        const full: KeyValue[] = []
        await store.each(prefix, (kv) => full.push(kv))
        assert.deepEqual(
          full.map((kv) => kv.key),
          want,
          prefix,
        )
        assert.deepEqual(full, await store.list(prefix), prefix)
        const keysOnly: KeyValue[] = []
        await store.each(prefix, (kv) => keysOnly.push(kv), {keysOnly: true})
        assert.deepEqual(
          keysOnly,
          full.map((kv) => ({...kv, value: ''})),
          prefix,
        )
      }
    } finally {
      await store.close()
    }
  })

  test('each reads one snapshot across its pages: a write by another connection while it visits is not seen', async () => {
    const file = freshPath()
    const a = SqliteStore.open(file)
    const b = SqliteStore.open(file)
    try {
      const keys = Array.from({length: 2 * VISIT_PAGE}, (_, i) => `/p/${String(i).padStart(4, '0')}`)
      await a.txn(
        [],
        keys.map((k) => ({put: k, value: 'old'})),
      )
      const seen: string[] = []
      await a.each('/p/', (kv) => {
        // Committed before its promise is returned, in the middle of the first page.
        if (seen.length === 10)
          void b.txn(
            [],
            [
              {put: keys.at(-1)!, value: 'new'},
              {put: '/p/9999', value: 'new'},
            ],
          )
        seen.push(kv.value)
      })
      assert.deepEqual(seen, Array(keys.length).fill('old'))
      assert.equal((await a.get(keys.at(-1)!))!.value, 'new')
    } finally {
      await a.close()
      await b.close()
    }
  })

  test('close is idempotent', async () => {
    const store = SqliteStore.open(freshPath())
    await store.close()
    await store.close()
  })

  test('two handles on one file share data, revision and guards', async () => {
    const file = freshPath()
    const a = SqliteStore.open(file)
    const b = SqliteStore.open(file)
    try {
      const r1 = await a.txn([{key: '/k', absent: true}], [{put: '/k', value: 'from-a'}])
      assert.equal(r1.succeeded, true)
      const seenByB = await b.get('/k')
      assert.deepEqual(seenByB, {key: '/k', value: 'from-a', modRevision: r1.revision})
      assert.equal(await b.revision(), r1.revision)

      const seenByA = await a.get('/k')
      const r2 = await b.txn([guardFor('/k', seenByB)], [{put: '/k', value: 'from-b'}])
      assert.equal(r2.succeeded, true)
      assert.equal(r2.revision, r1.revision + 1n)
      // a's read is now stale.
      const r3 = await a.txn([guardFor('/k', seenByA)], [{put: '/k', value: 'lost'}])
      assert.equal(r3.succeeded, false)
      assert.equal((await a.get('/k'))!.value, 'from-b')
    } finally {
      await a.close()
      await b.close()
    }
  })
})

describe('SqliteStore errors', () => {
  test('a directory that cannot be created gives DatastoreUnavailableError', () => {
    const blocker = path.join(root, `blocker-${++n}`)
    fs.writeFileSync(blocker, 'a regular file, not a directory')
    const file = path.join(blocker, 'sub', 'ipam.db')
    assert.throws(
      () => SqliteStore.open(file),
      (err: unknown) => {
        assert.ok(err instanceof DatastoreUnavailableError, `expected DatastoreUnavailableError, got ${String(err)}`)
        assert.ok(err.message.includes(file), err.message)
        assert.equal(err.exitCode, 5)
        return true
      },
    )
  })

  test('a file that is not a SQLite database gives DatastoreUnavailableError', () => {
    const dir = path.join(root, `garbage-${++n}`)
    fs.mkdirSync(dir)
    const file = path.join(dir, 'ipam.db')
    fs.writeFileSync(file, 'this is definitely not a sqlite database file; '.repeat(200))
    assert.throws(() => SqliteStore.open(file), DatastoreUnavailableError)
  })
})

describe('defaultDatastorePath', () => {
  test('root uses /var/lib/ipamctl/ipam.db regardless of XDG_DATA_HOME', () => {
    assert.equal(defaultDatastorePath({}, 0), '/var/lib/ipamctl/ipam.db')
    assert.equal(defaultDatastorePath({XDG_DATA_HOME: '/xdg', HOME: '/root'}, 0), '/var/lib/ipamctl/ipam.db')
  })

  test('non-root uses $XDG_DATA_HOME/ipamctl/ipam.db', () => {
    assert.equal(defaultDatastorePath({XDG_DATA_HOME: '/xdg/data', HOME: '/home/u'}, 1000), '/xdg/data/ipamctl/ipam.db')
  })

  test('non-root without XDG_DATA_HOME (or with it empty) uses ~/.local/share', () => {
    assert.equal(defaultDatastorePath({HOME: '/home/u'}, 1000), '/home/u/.local/share/ipamctl/ipam.db')
    assert.equal(
      defaultDatastorePath({XDG_DATA_HOME: '', HOME: '/home/u'}, 1000),
      '/home/u/.local/share/ipamctl/ipam.db',
    )
    assert.equal(defaultDatastorePath({}, 1000), path.join(os.homedir(), '.local', 'share', 'ipamctl', 'ipam.db'))
  })
})

// --- real multi-process compare-and-swap ------------------------------------------------------

interface Worker {
  ready: Promise<void>
  done: Promise<{conflicts: number}>
  go(): void
}

function startWorker(file: string, key: string, count: number): Worker {
  const child = spawn(process.execPath, ['--import', 'tsx', WORKER, file, key, String(count)], {
    cwd: REPO,
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  let out = ''
  let err = ''
  let onReady: () => void = () => {}
  const ready = new Promise<void>((resolve) => (onReady = resolve))
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    out += d
    if (out.startsWith('ready\n')) onReady()
  })
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d))
  const done = new Promise<{conflicts: number}>((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`worker exited ${code}: ${err}`))
      const last = out.trim().split('\n').at(-1)!
      resolve(JSON.parse(last) as {conflicts: number})
    })
  })
  // A worker that dies before printing "ready" must not hang the test.
  done.catch(() => onReady())
  return {ready, done, go: () => child.stdin.end('go\n')}
}

test('four processes doing 100 guarded increments each never lose an update', {timeout: 120_000}, async (t) => {
  const file = freshPath()
  const key = '/calico/ipam/v2/test/counter'
  const store = SqliteStore.open(file)
  try {
    const start = await store.txn([{key, absent: true}], [{put: key, value: '0'}])
    assert.equal(start.succeeded, true)

    const workers = Array.from({length: 4}, () => startWorker(file, key, 100))
    await Promise.all(workers.map((w) => w.ready))
    for (const w of workers) w.go()
    const results = await Promise.all(workers.map((w) => w.done))

    const kv = await store.get(key)
    assert.equal(kv!.value, '400')
    // Exactly one revision per successful increment: failed (conflicting) txns did not bump the counter.
    assert.equal(await store.revision(), start.revision + 400n)
    assert.equal(kv!.modRevision, start.revision + 400n)
    const conflicts = results.reduce((a, r) => a + r.conflicts, 0)
    t.diagnostic(`conflicts retried across workers: ${conflicts}`)
  } finally {
    await store.close()
  }
})
