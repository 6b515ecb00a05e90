// NameSet: the handle names of blocks, each matched once by a handle key's tail; hash collisions, table growth
// and names beyond Latin-1 must not change what matches.
import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {NameSet, nameHash} from '../../../src/lib/ipam/name-set.ts'

const PREFIX = '/calico/ipam/v2/handle/'

/** Two different names of one length with the same hash, found by search (a 32-bit hash collides within ~100,000). */
function collidingPair(): [string, string] {
  const seen = new Map<number, string>()
  for (let i = 0; ; i++) {
    const name = `k8s-pod-network.${String(i).padStart(8, '0')}`
    const h = nameHash(name)
    const other = seen.get(h)
    if (other !== undefined) return [other, name]
    seen.set(h, name)
  }
}

describe('nameHash', () => {
  it('hashes the text from an offset as it hashes the sliced text, whatever the units', () => {
    for (const name of [
      '',
      'a',
      'abc',
      'abcd',
      'abcde',
      'k8s-pod-network.0123456789abcdef',
      'ħé-名前-😀',
      '\u0000\uffff',
    ]) {
      assert.equal(nameHash(`${PREFIX}${name}`, PREFIX.length), nameHash(name), name)
    }
    assert.notEqual(nameHash('pod-1'), nameHash('pod-2'))
    assert.notEqual(nameHash('ab'), nameHash('ba'))
  })
})

describe('NameSet', () => {
  it('matches each name once, by a key that ends with exactly it', () => {
    const s = new NameSet()
    for (const n of ['h1', 'h2', 'h1', 'handle-é', '名前😀']) s.add(n)
    assert.equal(s.size, 4)
    assert.equal(s.matchTail(`${PREFIX}h1`, PREFIX.length), true)
    assert.equal(s.matchTail(`${PREFIX}h1`, PREFIX.length), false, 'matched once only')
    assert.equal(s.matchTail(`${PREFIX}h`, PREFIX.length), false, 'a prefix of a name')
    assert.equal(s.matchTail(`${PREFIX}h22`, PREFIX.length), false, 'a name as a prefix')
    assert.equal(s.matchTail(`${PREFIX}xh2`, PREFIX.length), false, 'a name as a suffix')
    assert.equal(s.matchTail(`${PREFIX}handle-é`, PREFIX.length), true)
    assert.equal(s.matchTail(`x${PREFIX}名前😀`, PREFIX.length + 1), true)
    assert.deepEqual(s.unmatched(), ['h2'])
  })

  it('tells apart names whose hashes collide', () => {
    const [a, b] = collidingPair()
    assert.notEqual(a, b)
    assert.equal(nameHash(a), nameHash(b))
    const only = new NameSet()
    only.add(a)
    assert.equal(only.matchTail(`${PREFIX}${b}`, PREFIX.length), false)
    assert.deepEqual(only.unmatched(), [a])
    const both = new NameSet()
    both.add(a)
    both.add(b)
    both.add(a)
    assert.equal(both.size, 2)
    assert.equal(both.matchTail(`${PREFIX}${b}`, PREFIX.length), true)
    assert.deepEqual(both.unmatched(), [a])
    assert.equal(both.matchTail(`${PREFIX}${a}`, PREFIX.length), true)
    assert.equal(both.matchTail(`${PREFIX}${b}`, PREFIX.length), false)
    assert.deepEqual(both.unmatched(), [])
  })

  it('keeps every name through growth and matches as a Set would', () => {
    const s = new NameSet()
    const ref = new Set<string>()
    const names = Array.from(
      {length: 20_000},
      (_, i) => `k8s-pod-network.${i.toString(16).padStart(12, '0')}${'c'.repeat(52)}`,
    )
    for (const n of names) {
      s.add(n)
      ref.add(n)
    }
    assert.equal(s.size, names.length)
    // Every other name, plus keys that are near misses of names.
    for (let i = 0; i < names.length; i += 2) {
      for (const key of [`${PREFIX}${names[i]}`, `${PREFIX}${names[i]}x`, `${PREFIX}${names[i]!.slice(1)}`]) {
        assert.equal(s.matchTail(key, PREFIX.length), ref.delete(key.slice(PREFIX.length)), key)
      }
    }
    assert.deepEqual(s.unmatched(), [...ref])
  })

  it('takes names from stretches of a text as it takes strings, and gives the unmatched ones as strings', () => {
    const text = '{"a":"h1","b":"h2","c":"h1","d":"handle-é"}'
    const s = new NameSet()
    const ref = s.text(text)
    for (const name of ['h1', 'h2', 'h1', 'handle-é']) {
      const at = text.indexOf(`"${name}"`) + 1
      s.addFrom(ref, at, at + name.length)
    }
    s.add('h2')
    s.add('名前')
    assert.equal(s.size, 4)
    assert.equal(s.matchTail(`${PREFIX}h1`, PREFIX.length), true)
    assert.equal(s.matchTail(`${PREFIX}h1`, PREFIX.length), false, 'matched once only')
    assert.equal(s.matchTail(`${PREFIX}h`, PREFIX.length), false, 'a prefix of a name')
    assert.equal(s.matchTail(`${PREFIX}"h2"`, PREFIX.length), false, 'the text around a name')
    assert.equal(s.matchTail(`${PREFIX}名前`, PREFIX.length), true)
    assert.deepEqual(s.unmatched(), ['h2', 'handle-é'])
  })
})
