// freshRead: the agent's shared read of a record (ClusterInformation) among requests that wait at once.
import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {freshRead} from '../../../src/lib/agent/fresh-read.ts'

/** A read whose calls are counted and settled by hand, in order. */
function manualRead() {
  const pending: {resolve: (v: number) => void; reject: (e: Error) => void}[] = []
  let calls = 0
  const read = () =>
    new Promise<number>((resolve, reject) => {
      calls++
      pending.push({resolve, reject})
    })
  return {
    read,
    calls: () => calls,
    settle: (v: number) => pending.shift()!.resolve(v),
    fail: (e: Error) => pending.shift()!.reject(e),
  }
}

const tick = () => new Promise((r) => setImmediate(r))

describe('freshRead', () => {
  it('callers while a read is in flight share the next read, started when that one settles', async () => {
    const m = manualRead()
    const shared = freshRead(m.read)
    const first = shared()
    const joined = [shared(), shared(), shared()]
    assert.equal(m.calls(), 1, 'no second read while the first is in flight')
    m.settle(1)
    assert.equal(await first, 1)
    await tick()
    assert.equal(m.calls(), 2, 'one read for all three who came while the first was in flight')
    m.settle(2)
    assert.deepEqual(await Promise.all(joined), [2, 2, 2], 'none of them got the read that started before it called')
  })

  it('a call with no read in flight starts its own; reads in turn are each fresh', async () => {
    const m = manualRead()
    const shared = freshRead(m.read)
    const a = shared()
    m.settle(1)
    assert.equal(await a, 1)
    const b = shared()
    assert.equal(m.calls(), 2)
    m.settle(2)
    assert.equal(await b, 2)
  })

  it('a failed read fails its callers only; the next call reads again', async () => {
    const m = manualRead()
    const shared = freshRead(m.read)
    const first = shared()
    const joined = shared()
    m.fail(new Error('first failed'))
    await assert.rejects(first, /first failed/)
    await tick()
    m.fail(new Error('second failed'))
    await assert.rejects(joined, /second failed/)
    const later = shared()
    m.settle(3)
    assert.equal(await later, 3)
    assert.equal(m.calls(), 3)
  })
})
