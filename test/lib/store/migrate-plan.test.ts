// datastore migrate's plan and its guarded application (admin.ts), on in-process stores.
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'
import {ConflictError, NotFoundError} from '../../../src/lib/errors.ts'
import {applyMigration, keyGroups, planMigration} from '../../../src/lib/store/admin.ts'
import {MemoryStore} from '../../../src/lib/store/memory.ts'

async function storeWith(kvs: Record<string, string>): Promise<MemoryStore> {
  const s = new MemoryStore()
  if (Object.keys(kvs).length)
    await s.txn(
      [],
      Object.entries(kvs).map(([put, value]) => ({put, value})),
    )
  return s
}

describe('migration plan', () => {
  test('an empty source is refused (exit 3) whatever the target holds', async () => {
    const from = await storeWith({'/other/k': 'x'})
    const to = await storeWith({'/calico/a': '1'})
    await assert.rejects(
      planMigration(from, to, {force: true, target: 't'}),
      (e: Error) => e instanceof NotFoundError && /holds no keys under \/calico\//.test(e.message),
    )
  })

  test('counts new, overwritten, unchanged and removed keys; a missing target is empty', async () => {
    const from = await storeWith({'/calico/a': '1', '/calico/b': '2', '/calico/c': '3'})
    const to = await storeWith({'/calico/a': '1', '/calico/b': 'old', '/calico/z': '9', '/keep': 'k'})
    const p = await planMigration(from, to, {force: true, target: 't'})
    assert.deepEqual(
      {
        created: p.created,
        overwritten: p.overwritten,
        unchanged: p.unchanged,
        remove: p.remove,
        targetKeys: p.targetKeys,
      },
      {
        created: 1,
        overwritten: ['/calico/b'],
        unchanged: 1,
        remove: ['/calico/z'],
        targetKeys: 3,
      },
    )
    const fresh = await planMigration(from, undefined, {force: false, target: 't'})
    assert.deepEqual([fresh.created, fresh.remove.length, fresh.targetKeys], [3, 0, 0])
  })

  test('a non-empty target without force is refused (exit 4)', async () => {
    const from = await storeWith({'/calico/a': '1'})
    const to = await storeWith({'/calico/a': '1'})
    await assert.rejects(planMigration(from, to, {force: false, target: 't'}), ConflictError)
  })

  test('applying writes every source key, then deletes the extras; keys outside /calico/ stay', async () => {
    const from = await storeWith(Object.fromEntries(Array.from({length: 250}, (_, i) => [`/calico/k${i}`, `v${i}`])))
    const to = await storeWith({'/calico/old': 'x', '/keep': 'k'})
    const r = await applyMigration(from, to, await planMigration(from, to, {force: true, target: 't'}))
    assert.deepEqual(r, {copied: 250, removed: 1, sourceChanged: false})
    assert.equal((await to.list('/calico/')).length, 250)
    assert.equal((await to.get('/keep'))?.value, 'k')
  })

  test('a target written to after the plan was made: refused (exit 4) before anything is written', async () => {
    const from = await storeWith({'/calico/a': '1'})
    const to = await storeWith({'/calico/old': 'x'})
    const plan = await planMigration(from, to, {force: true, target: 't'})
    await to.txn([], [{put: '/calico/new-from-someone', value: 'y'}])
    const rev = await to.revision()
    await assert.rejects(
      applyMigration(from, to, plan),
      (e: Error) => e instanceof ConflictError && /written to by someone else/.test(e.message),
    )
    assert.equal(await to.revision(), rev)
    assert.equal((await to.get('/calico/old'))?.value, 'x')
  })
})

describe('keyGroups', () => {
  test('few keys are listed one by one', () => {
    assert.deepEqual(keyGroups(['/calico/ipam/v2/handle/a', '/calico/ipam/v2/config']), [
      {prefix: '/calico/ipam/v2/', count: 1, keys: ['/calico/ipam/v2/config']},
      {prefix: '/calico/ipam/v2/handle/', count: 1, keys: ['/calico/ipam/v2/handle/a']},
    ])
  })

  test('100k keys of 1000 nodes fit in at most 20 groups, with exact counts', () => {
    const keys: string[] = []
    for (let i = 0; i < 1000; i++)
      for (let j = 0; j < 50; j++) keys.push(`/calico/ipam/v2/host/node-${i}/ipv4/block/10.${i % 250}.${j}.0-26`)
    for (let i = 0; i < 50_000; i++) keys.push(`/calico/ipam/v2/handle/h-${i}`)
    const groups = keyGroups(keys)
    assert.ok(groups.length <= 20, `${groups.length} groups`)
    assert.equal(
      groups.reduce((s, g) => s + g.count, 0),
      keys.length,
    )
    assert.deepEqual(
      groups.map((g) => [g.prefix, g.count]),
      [
        ['/calico/ipam/v2/handle/', 50_000],
        ['/calico/ipam/v2/host/', 50_000],
      ],
    )
  })
})
