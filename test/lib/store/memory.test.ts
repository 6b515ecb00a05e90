import {test} from 'node:test'
import assert from 'node:assert/strict'
import {MemoryStore} from '../../../src/lib/store/memory.ts'
import {storeContract} from './contract.ts'

storeContract('MemoryStore', async () => new MemoryStore(), undefined)

test('MemoryStore instances do not share data', async () => {
  const a = new MemoryStore()
  const b = new MemoryStore()
  await a.txn([], [{put: '/k', value: 'v'}])
  assert.equal(await b.get('/k'), undefined)
  assert.equal(await b.revision(), 0n)
  assert.equal(a.description, 'memory')
})
