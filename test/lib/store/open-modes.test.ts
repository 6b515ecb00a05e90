// How the embedded store is opened for each declared intent (openStore's OpenMode): 'read' and 'update' never
// create anything and refuse a missing file with StoreMissingError (exit 3); 'read' cannot write; 'create'
// reads a missing store as empty and creates it with the first write, calling onCreated once.
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {after, describe, test} from 'node:test'
import {StoreMissingError} from '../../../src/lib/errors.ts'
import {openStore} from '../../../src/lib/store/open.ts'
import type {DatastoreSettings} from '../../../src/lib/store/settings.ts'
import {SqliteStore} from '../../../src/lib/store/sqlite.ts'
import type {OpenMode} from '../../../src/lib/store/store.ts'

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-open-modes-'))
after(() => fs.rmSync(root, {recursive: true, force: true}))
let n = 0
const fresh = () => path.join(root, `case-${++n}`, 'sub', 'ipam.db')
const settings = (file: string): DatastoreSettings => ({
  type: 'embedded',
  path: file,
  etcdEndpoints: [],
  timeoutMs: 5000,
  sources: {},
})

describe('openStore modes on the embedded store', () => {
  for (const mode of ['read', 'update'] as OpenMode[]) {
    test(`${mode} on a missing file: StoreMissingError (exit 3) naming the path; no file, no directory`, async () => {
      const file = fresh()
      await assert.rejects(
        openStore(settings(file), {mode}),
        (err: Error) =>
          err instanceof StoreMissingError && err.message.includes(file) && (err as StoreMissingError).exitCode === 3,
      )
      assert.equal(fs.existsSync(path.dirname(path.dirname(file))), false)
    })
  }

  test('create on a missing file: reads as empty, creates nothing until the first write, then says so once', async () => {
    const file = fresh()
    const created: string[] = []
    const store = await openStore(settings(file), {mode: 'create', onCreated: (f) => created.push(f)})
    try {
      assert.equal(await store.revision(), 0n)
      assert.deepEqual(await store.list('/'), [])
      assert.equal(await store.get('/k'), undefined)
      assert.deepEqual(await store.read!({gets: ['/k'], lists: ['/']}), {gets: [undefined], lists: [[]]})
      // A guard-only transaction is answered as the empty store would answer it.
      assert.equal((await store.txn([{key: '/k', absent: true}], [])).succeeded, true)
      assert.equal((await store.txn([{key: '/k', modRevision: 1n}], [])).succeeded, false)
      assert.equal(fs.existsSync(path.dirname(path.dirname(file))), false, 'nothing created before a write')
      const r = await store.txn([{key: '/k', absent: true}], [{put: '/k', value: 'v'}])
      assert.deepEqual(r, {succeeded: true, revision: 1n})
      assert.deepEqual(created, [file])
      assert.equal(fs.statSync(file).mode & 0o777, 0o600)
      assert.equal(fs.statSync(path.dirname(file)).mode & 0o777, 0o700)
      assert.equal((await store.get('/k'))?.value, 'v')
      await store.txn([], [{put: '/k2', value: 'v'}])
      assert.deepEqual(created, [file], 'said once')
    } finally {
      await store.close()
    }
  })

  test('create when another process creates the file first: its data is seen, its guards apply, nothing is said', async () => {
    const file = fresh()
    const created: string[] = []
    const store = await openStore(settings(file), {mode: 'create', onCreated: (f) => created.push(f)})
    const other = SqliteStore.open(file)
    await other.txn([], [{put: '/k', value: 'theirs'}])
    await other.close()
    try {
      assert.equal((await store.get('/k'))?.value, 'theirs')
      // A write planned against the empty store (key absent) loses: the guard sees their key.
      assert.equal((await store.txn([{key: '/k', absent: true}], [{put: '/k', value: 'mine'}])).succeeded, false)
      assert.deepEqual(created, [])
    } finally {
      await store.close()
    }
  })

  test('read on an existing store refuses a write before it reaches SQLite', async () => {
    const file = fresh()
    await SqliteStore.open(file).close()
    const store = await openStore(settings(file), {mode: 'read'})
    try {
      await assert.rejects(store.txn([], [{put: '/k', value: 'v'}]), /opened for reading only/)
      assert.equal(await store.revision(), 0n)
    } finally {
      await store.close()
    }
  })

  test('read on a file that is not a store: exit 5 saying so, the file untouched', async () => {
    const file = fresh()
    fs.mkdirSync(path.dirname(file), {recursive: true})
    fs.writeFileSync(file, '')
    await assert.rejects(
      openStore(settings(file), {mode: 'read'}),
      (err: Error & {exitCode?: number}) => err.exitCode === 5 && /not an ipamctl datastore/.test(err.message),
    )
    assert.equal(fs.statSync(file).size, 0)
  })

  test('a path below a regular file is not "missing": exit 5', async () => {
    const file = path.join(root, `plain-${++n}`)
    fs.writeFileSync(file, 'x')
    await assert.rejects(
      openStore(settings(path.join(file, 'ipam.db')), {mode: 'read'}),
      (err: Error & {exitCode?: number}) => err.exitCode === 5,
    )
  })
})
