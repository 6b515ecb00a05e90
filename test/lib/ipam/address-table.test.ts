// AddressTable: each address once, in the order first named, with its owners and flags, through table growth;
// IPv4 by number and IPv6 by text side by side.
import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {AddressTable, keyText, v4Text} from '../../../src/lib/ipam/address-table.ts'

describe('AddressTable', () => {
  it('keeps the first-named order, every owner, and the pool flag of the first owner', () => {
    const t = new AddressTable()
    t.add(0x0a000001, 'Node(n1)', true)
    t.add('fd00::1', 'Workload(ns/a)', false)
    t.add(0x0a000002, 'Workload(ns/b)', false)
    t.add(0x0a000001, 'Workload(ns/c)', false)
    t.add('fd00::1', 'Workload(ns/d)', true)
    assert.equal(t.size, 3)
    assert.deepEqual(
      Array.from({length: t.size}, (_, e) => [t.ip(e), t.ownersOf(e), t.pooled(e)]),
      [
        ['10.0.0.1', ['Node(n1)', 'Workload(ns/c)'], true],
        ['fd00::1', ['Workload(ns/a)', 'Workload(ns/d)'], false],
        ['10.0.0.2', ['Workload(ns/b)'], false],
      ],
    )
    assert.equal(t.ownerCount(0), 2)
    assert.equal(t.ownerCount(2), 1)
    // A copy each time: a caller's changes do not reach the table.
    t.ownersOf(0).push('x')
    assert.equal(t.ownerCount(0), 2)
  })

  it('finds every address after growing, misses absent ones, and marks allocations', () => {
    const t = new AddressTable()
    const n = 100_000
    // Whole /26 blocks far apart and runs of neighbours: both must spread over the slots.
    const addrs: number[] = []
    for (let i = 0; i < n; i++) addrs.push(i % 2 ? 0x0a000000 + i : (0xc0a80000 + i * 64) >>> 0)
    for (const a of addrs) t.add(a, `o${a}`, true)
    assert.equal(t.size, n)
    for (let i = 0; i < n; i += 997) {
      const e = t.find(addrs[i]!)
      assert.equal(e, i)
      assert.deepEqual(t.ownersOf(e), [`o${addrs[i]}`])
    }
    assert.equal(t.find(0x0b000000), -1)
    assert.equal(t.find('fd00::1'), -1)
    assert.equal(t.allocated(5), false)
    t.markAllocated(5)
    assert.equal(t.allocated(5), true)
    assert.equal(t.allocated(6), false)
    assert.equal(t.pooled(5), true)
  })

  it('keeps numbered owners and texts in the order found, through growth and a copy to another thread', () => {
    const t = new AddressTable((ref) => `Workload(${ref})`)
    t.add(0x0a000001, 'Node(n1)', true)
    t.add(0x0a000001, 7, true)
    t.add('fd00::1', 8, false)
    t.add('fd00::1', 'Node(n2)', false)
    t.add('fd00::1', 9, false)
    for (let i = 0; i < 3000; i++) t.add(0x0b000000 + i, 100 + i, true)
    t.add(0x0b000002, 5, true)
    const expected = [
      ['10.0.0.1', ['Node(n1)', 'Workload(7)']],
      ['fd00::1', ['Workload(8)', 'Node(n2)', 'Workload(9)']],
      ['11.0.0.0', ['Workload(100)']],
      ['11.0.0.2', ['Workload(102)', 'Workload(5)']],
    ]
    const seen = (x: AddressTable) =>
      [0, 1, 2, 4].map((e) => [x.ip(e), x.ownersOf(e), x.ownerCount(e) === x.ownersOf(e).length])
    assert.deepEqual(
      seen(t),
      expected.map(([ip, o]) => [ip, o, true]),
    )
    const c = t.contents()
    const copy = structuredClone(c, {transfer: [c.v4.buffer, c.flags.buffer, c.ownerRefs.buffer, c.slots.buffer]})
    const there = AddressTable.from(copy, (ref) => `Workload(${ref})`)
    assert.deepEqual(
      seen(there),
      expected.map(([ip, o]) => [ip, o, true]),
    )
    assert.equal(there.find(0x0b000bb7), 3001)
  })

  it('writes addresses as formatIp does', () => {
    assert.equal(v4Text(0), '0.0.0.0')
    assert.equal(v4Text(0xffffffff), '255.255.255.255')
    assert.equal(keyText(0xc0a80101), '192.168.1.1')
    assert.equal(keyText('fd00::1'), 'fd00::1')
  })
})
