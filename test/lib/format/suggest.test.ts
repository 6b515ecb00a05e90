import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {closest, editDistance} from '../../../src/lib/format/suggest.ts'

describe('command suggestions', () => {
  it('edit distance counts inserts, deletes and substitutions', () => {
    assert.equal(editDistance('', ''), 0)
    assert.equal(editDistance('list', 'lst'), 1)
    assert.equal(editDistance('show', 'shwo'), 2)
    assert.equal(editDistance('kitten', 'sitting'), 3)
    assert.equal(editDistance('abc', ''), 3)
  })

  const commands = ['pool create', 'pool list', 'pool delete', 'ipam show', 'ipam check', 'ipam split']
  it('a typo gets the nearest command; a different word gets nothing', () => {
    assert.equal(closest('pool lst', commands), 'pool list')
    assert.equal(closest('ipam shwo', commands), 'ipam show')
    assert.equal(closest('ipam chek', commands), 'ipam check')
    assert.equal(closest('frobnicate', commands), undefined)
    assert.equal(closest('pool', commands), undefined)
  })

  it('short words allow one edit at most', () => {
    assert.equal(closest('ab', ['ac', 'xy']), 'ac')
    assert.equal(closest('ab', ['cd']), undefined)
  })
})
