// The embedded store's change feed (SqliteStore.watch): puts, updates and deletes under the followed prefixes,
// through its index on (key, mod_revision) on a store opened for writing, and by walking the rows on one opened
// for reading (which must not create the index).
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {after, describe, it} from 'node:test'
import Database from 'better-sqlite3'
import {sqliteNativeBinding} from '../../../src/lib/store/sqlite-addon.ts'
import {SqliteStore} from '../../../src/lib/store/sqlite.ts'
import type {ChangeHandler, KeyValue} from '../../../src/lib/store/store.ts'

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-sqlite-watch-'))
after(() => fs.rmSync(dir, {recursive: true, force: true}))

const indexes = (file: string): string[] => {
  const db = new Database(file, {readonly: true, nativeBinding: sqliteNativeBinding()})
  try {
    return db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_%'")
      .pluck()
      .all() as string[]
  } finally {
    db.close()
  }
}

async function scenario(mode: 'update' | 'read'): Promise<void> {
  const file = path.join(dir, `${mode}.db`)
  const writer = SqliteStore.open(file)
  const reader = SqliteStore.open(file, {mode})
  const put = (key: string, value: string) => writer.txn([], [{put: key, value}])
  const state = new Map<string, string>()
  let resets = 0
  const h: ChangeHandler = {
    reset: () => {
      resets++
      state.clear()
    },
    change: (key: string, kv: KeyValue | undefined) => (kv ? state.set(key, kv.value) : state.delete(key)),
  }
  try {
    await put('/t/a/1', 'x')
    await put('/t/c/1', 'not followed')
    const feed = reader.watch(['/t/a/', '/t/b/'])
    await feed.next(h)
    assert.deepEqual([resets, Object.fromEntries(state)], [1, {'/t/a/1': 'x'}])
    await put('/t/a/1', 'y')
    await put('/t/b/2', 'z')
    await put('/t/a/3', 'w')
    await writer.txn([], [{delete: '/t/a/1'}, {put: '/t/a/0', value: 'v'}])
    await put('/t/c/2', 'not followed')
    assert.equal(await feed.next(h), await writer.revision())
    assert.deepEqual([resets, Object.fromEntries(state)], [1, {'/t/b/2': 'z', '/t/a/3': 'w', '/t/a/0': 'v'}])
    await writer.txn([], [{delete: '/t/b/2'}])
    await feed.next(h)
    assert.deepEqual([resets, Object.fromEntries(state)], [1, {'/t/a/3': 'w', '/t/a/0': 'v'}])
    assert.deepEqual(indexes(file), mode === 'read' ? [] : ['kv_key_revision'])
  } finally {
    await reader.close()
    await writer.close()
  }
}

describe('SqliteStore.watch', () => {
  it('hands over puts, updates and deletes (store opened for writing)', () => scenario('update'))
  it('hands over puts, updates and deletes (store opened for reading)', () => scenario('read'))
})
