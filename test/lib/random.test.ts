import assert from 'node:assert/strict'
import {test} from 'node:test'
import {randomBytes, randomHex, randomUuid} from '../../src/lib/random.ts'

test('randomUuid: RFC 9562 version 4, variant 10, lower-case, and not repeated', () => {
  const seen = new Set<string>()
  for (let i = 0; i < 2000; i++) {
    const u = randomUuid()
    assert.match(u, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    seen.add(u)
  }
  assert.equal(seen.size, 2000)
})

test('randomBytes / randomHex: the requested length, and the bytes vary', () => {
  assert.equal(randomBytes(0).length, 0)
  assert.equal(randomBytes(1000).length, 1000)
  assert.match(randomHex(6), /^[0-9a-f]{12}$/)
  // 1000 bytes from a CSPRNG take well over 200 distinct values; a stuck or zeroed buffer would not.
  assert.ok(new Set(randomBytes(1000)).size > 200)
})

test('randomBytes: small reads served from one read of /dev/urandom never hand out the same bytes twice', () => {
  // 200 reads of 16 bytes span several refills of the pool; a slice served twice would repeat a whole id.
  const seen = new Set<string>()
  for (let i = 0; i < 200; i++) seen.add(Buffer.from(randomBytes(16)).toString('hex'))
  assert.equal(seen.size, 200)
  // Each result is a copy: changing one leaves the next ones alone.
  const a = randomBytes(8)
  a.fill(0)
  assert.ok(new Set(randomBytes(64)).size > 20)
})
