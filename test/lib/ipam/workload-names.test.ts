// WorkloadNames: each endpoint's `Workload(<ns>/<name>)` owner as a number, its text built when asked, the same
// across page boundaries, before and after a page is complete, and when more are added after a text was read.
import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {WorkloadNames} from '../../../src/lib/ipam/check.ts'

describe('WorkloadNames', () => {
  it('gives back every owner text, whichever page it is on and whenever it is read', () => {
    const names = new WorkloadNames()
    const want: string[] = []
    const add = (ns: string, name: string) => {
      assert.equal(names.add(ns, name), want.length)
      want.push(`Workload(${ns}/${name})`)
    }
    add('default', 'first')
    // Read before its page is complete; more added afterwards must not move it.
    assert.equal(names.text(0), want[0])
    for (let i = 0; i < 1500; i++) add(i % 3 === 0 ? '' : `ns-${i % 7}`, `pod-${i}-é😀`)
    assert.equal(names.text(700), want[700])
    add('kube-system', 'last')
    assert.deepEqual(
      want.map((_, ref) => names.text(ref)),
      want,
    )
  })
})
