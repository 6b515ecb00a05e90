// Shared plumbing of the IPAM operations (src/lib/ipam/context.ts): here, pools decoded once per stored text.
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'
import {poolsFrom} from '../../../src/lib/ipam/context.ts'
import {decodePool, encodePool, newPool} from '../../../src/lib/ipam/pool.ts'
import type {KeyValue} from '../../../src/lib/store/store.ts'

const NOW = new Date('2026-01-02T03:04:05Z')
const stored = (text: string, modRevision = 1n): KeyValue => ({key: '/calico/resources/v3/x', value: text, modRevision})

describe('poolsFrom', () => {
  const text = encodePool(newPool({name: 'p1', cidr: '10.1.0.0/24', nodeSelector: 'zone == "a"'}, NOW))

  test('decodes as decodePool does, and the same text again gives the same (shared, frozen) pool', () => {
    const [first] = poolsFrom([stored(text)])
    assert.deepEqual(first, decodePool(text))
    const [again] = poolsFrom([stored(`${text}`, 7n)])
    assert.equal(again, first)
    assert.ok(Object.isFrozen(first) && Object.isFrozen(first!.spec) && Object.isFrozen(first!.cidr))
    assert.throws(() => {
      ;(first!.spec as {disabled: boolean}).disabled = true
    }, TypeError)
  })

  test('a changed pool is decoded anew: what is returned is always what is stored now', () => {
    const [before] = poolsFrom([stored(text)])
    const changed = encodePool({...decodePool(text), spec: {...decodePool(text).spec, disabled: true}})
    const [after] = poolsFrom([stored(changed)])
    assert.equal(before!.spec.disabled, false)
    assert.equal(after!.spec.disabled, true)
    assert.deepEqual(after, decodePool(changed))
  })

  test('many distinct pools (past the memo size) are all decoded right', () => {
    const texts = Array.from({length: 600}, (_, i) =>
      encodePool(newPool({name: `p${i}`, cidr: `10.${i >> 8}.${i & 255}.0/24`}, NOW)),
    )
    const pools = poolsFrom(texts.map((t) => stored(t)))
    assert.deepEqual(
      pools.map((p) => p.name),
      texts.map((_, i) => `p${i}`),
    )
    assert.deepEqual(poolsFrom([stored(texts[3]!)])[0], decodePool(texts[3]!))
  })
})
