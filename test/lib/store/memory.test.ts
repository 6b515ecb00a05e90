import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryStore } from '../../../src/lib/store/memory.ts';
import { storeContract } from './contract.ts';

storeContract('MemoryStore', async () => new MemoryStore(), undefined, {
  knownBugs: {
    'list orders by UTF-8 bytes (U+FFFF before U+10000)':
      'BUG: MemoryStore.list sorts with JS string < (UTF-16 code units), so U+10000 sorts before U+FFFF; etcd and SQLite use byte order',
  },
});

test('MemoryStore instances do not share data', async () => {
  const a = new MemoryStore();
  const b = new MemoryStore();
  await a.txn([], [{ put: '/k', value: 'v' }]);
  assert.equal(await b.get('/k'), undefined);
  assert.equal(await b.revision(), 0n);
  assert.equal(a.description, 'memory');
});
