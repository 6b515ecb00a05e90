import assert from 'node:assert/strict'
import {createHash} from 'node:crypto'
import {test} from 'node:test'
import {sha1Hex} from '../../../src/lib/codec/sha1.ts'

const ref = (s: string | Uint8Array) => createHash('sha1').update(s).digest('hex')

test('sha1Hex: FIPS 180 test vectors', () => {
  assert.equal(sha1Hex(''), 'da39a3ee5e6b4b0d3255bfef95601890afd80709')
  assert.equal(sha1Hex('abc'), 'a9993e364706816aba3e25717850c26c9cd0d89d')
  assert.equal(
    sha1Hex('abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq'),
    '84983e441c3bd26ebaae4aa1f95129e5e54670f1',
  )
  assert.equal(sha1Hex('a'.repeat(1_000_000)), '34aa973cd4c4daa4f61eeb2bdbad27316534016f')
})

test('sha1Hex equals node:crypto at every length around the block and padding boundaries, and for UTF-8', () => {
  for (let n = 0; n <= 200; n++) {
    const bytes = Uint8Array.from({length: n}, (_, i) => (i * 131 + n * 7) & 0xff)
    assert.equal(sha1Hex(bytes), ref(bytes), `length ${n}`)
  }
  for (const s of ['default.web-0', 'kube-system.coredns-5d78c9869d-abcde', 'ns.pödé-名前', '😀.x'.repeat(30)])
    assert.equal(sha1Hex(s), ref(s), s)
})
