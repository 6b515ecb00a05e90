import {describe, test} from 'node:test'
import assert from 'node:assert/strict'
import {
  blockOccupancy,
  hasReleasedAt,
  sanitizeHandle,
  blockProblems,
  cloneBlock,
  decodeBlock,
  encodeBlock,
  garbageCollect,
  ipOf,
  isEmpty,
  markReleased,
  newBlock,
  ordinalOf,
  scanBlockSummary,
  summarizeBlock,
  takeOrdinal,
  takeOrdinals,
  type Attribute,
  type Block,
} from '../../../src/lib/ipam/block.ts'
import {ValidationError} from '../../../src/lib/errors.ts'
import {formatIp, parseCidr, parseIp} from '../../../src/lib/net/cidr.ts'

// --- fixtures: the stored block values of docs/calico.md#block-json -------------------

const CLAIM_TIME = new Date('2026-01-02T03:04:05Z')
const RELEASE_TIME = new Date('2026-01-02T03:10:00Z')
const SEQ = 1767323045000000000n

const REF_FRESH =
  '{"cidr":"10.65.0.0/29","affinity":"host:node-1","affinity_claim_time":"2026-01-02T03:04:05Z","allocations":[null,null,null,null,null,null,null,null],"unallocated":[0,1,2,3,4,5,6,7],"attributes":null,"sequenceNumber":1767323045000000000,"sequenceNumberForAllocation":{},"deleted":false}'
const REF_ALLOCATED =
  '{"cidr":"10.65.0.0/29","affinity":"host:node-1","affinity_claim_time":"2026-01-02T03:04:05Z","allocations":[0,null,null,null,null,null,null,null],"unallocated":[1,2,3,4,5,6,7],"attributes":[{"handle_id":"k8s-pod-network.0123456789abcdef","secondary":{"namespace":"default","node":"node-1","pod":"web-0","timestamp":"2026-01-02 03:04:06.123456789 +0000 UTC"}}],"sequenceNumber":1767323045000000001,"sequenceNumberForAllocation":{"0":1767323045000000000},"deleted":false}'
const REF_RELEASED_COOLDOWN =
  '{"cidr":"10.65.0.0/29","affinity":"host:node-1","affinity_claim_time":"2026-01-02T03:04:05Z","allocations":[0,null,null,null,null,null,null,null],"unallocated":[1,2,3,4,5,6,7],"attributes":[{"releasedAt":"2026-01-02T03:10:00Z"}],"sequenceNumber":1767323045000000002,"sequenceNumberForAllocation":{"0":1767323045000000001},"deleted":false}'
const REF_RELEASED_NO_COOLDOWN =
  '{"cidr":"10.65.0.0/29","affinity":"host:node-1","affinity_claim_time":"2026-01-02T03:04:05Z","allocations":[null,null,null,null,null,null,null,null],"unallocated":[1,2,3,4,5,6,7,0],"attributes":[],"sequenceNumber":1767323045000000002,"sequenceNumberForAllocation":{},"deleted":false}'

/** The CNI attribute of the example; secondary deliberately not in sorted order. */
const podAttr = (): Attribute => ({
  handle_id: 'k8s-pod-network.0123456789abcdef',
  secondary: {timestamp: '2026-01-02 03:04:06.123456789 +0000 UTC', pod: 'web-0', node: 'node-1', namespace: 'default'},
})

const fresh = (cidr = '10.65.0.0/29', affinity: string | null = 'host:node-1'): Block =>
  newBlock(parseCidr(cidr), affinity, CLAIM_TIME, SEQ)

/** Simulates WriteBatch.putBlock on an update: bump the sequence number. */
const bump = (b: Block): Block => {
  b.sequenceNumber += 1n
  return b
}

function allocatedExample(): Block {
  const b = fresh()
  assert.deepEqual(takeOrdinals(b, 1, podAttr()), [0])
  return bump(b)
}

const handleAttr = (h: string): Attribute => ({handle_id: h, secondary: {node: 'node-1'}})

// --- encoding against the reference bytes ------------------------------------------

describe('encodeBlock matches the stored reference bytes', () => {
  test('freshly claimed /29', () => {
    assert.equal(encodeBlock(fresh()), REF_FRESH)
  })

  test('after one CNI allocation (ordinal 0)', () => {
    assert.equal(encodeBlock(allocatedExample()), REF_ALLOCATED)
  })

  test('after release with ipCooldownSeconds > 0', () => {
    const b = allocatedExample()
    markReleased(b, [0], RELEASE_TIME, 60, {recordSeq: true})
    bump(b)
    assert.equal(encodeBlock(b), REF_RELEASED_COOLDOWN)
  })

  test('after release with cooldown 0', () => {
    const b = allocatedExample()
    markReleased(b, [0], RELEASE_TIME, 0, {recordSeq: true})
    bump(b)
    assert.equal(encodeBlock(b), REF_RELEASED_NO_COOLDOWN)
  })

  test('a non-affine v6 /122 block: compressed CIDR, null affinity, no claim time, 64 slots', () => {
    const b = fresh('fd80:24e2:f998:72d6::/122', null)
    const nulls = Array<string>(64).fill('null').join(',')
    const free = Array.from({length: 64}, (_, i) => i).join(',')
    assert.equal(
      encodeBlock(b),
      `{"cidr":"fd80:24e2:f998:72d6::/122","affinity":null,"allocations":[${nulls}],"unallocated":[${free}],"attributes":null,"sequenceNumber":1767323045000000000,"sequenceNumberForAllocation":{},"deleted":false}`,
    )
  })

  test('attribute fields in Go struct order; empty maps omitted', () => {
    const b = fresh()
    takeOrdinals(b, 1, {
      releasedAt: '2026-01-02T03:04:05Z',
      alternateOwnerAttrs: {'vmi-name': 'v', b: '1'},
      secondary: {z: '1', a: '2'},
      handle_id: 'h',
    })
    takeOrdinals(b, 1, {handle_id: 'h2', secondary: {}, alternateOwnerAttrs: {}})
    assert.match(
      encodeBlock(b),
      /"attributes":\[\{"handle_id":"h","secondary":\{"a":"2","z":"1"\},"alternateOwnerAttrs":\{"b":"1","vmi-name":"v"\},"releasedAt":"2026-01-02T03:04:05Z"\},\{"handle_id":"h2"\}\]/,
    )
  })

  test('sequenceNumberForAllocation keys sort bytewise ("10" before "2")', () => {
    const b = fresh('10.65.0.16/28')
    assert.deepEqual(takeOrdinals(b, 11, handleAttr('h')), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
    const s = String(SEQ)
    const order = ['0', '1', '10', '2', '3', '4', '5', '6', '7', '8', '9']
    const want = `"sequenceNumberForAllocation":{${order.map((k) => `"${k}":${s}`).join(',')}}`
    const enc = encodeBlock(b)
    assert.ok(enc.includes(want), enc)
    // Survives a decode/encode cycle (decoding into a plain object would reorder integer-like keys).
    assert.equal(encodeBlock(decodeBlock(enc)), enc)
  })
})

// --- decoding ------------------------------------------------------------------

describe('decodeBlock', () => {
  test('re-encodes every reference value byte-for-byte', () => {
    for (const ref of [REF_FRESH, REF_ALLOCATED, REF_RELEASED_COOLDOWN, REF_RELEASED_NO_COOLDOWN]) {
      assert.equal(encodeBlock(decodeBlock(ref)), ref)
    }
  })

  test('keeps the uint64 sequence numbers exact', () => {
    const b = decodeBlock(REF_RELEASED_COOLDOWN)
    assert.equal(b.sequenceNumber, 1767323045000000002n)
    assert.equal(b.sequenceNumberForAllocation.get('0'), 1767323045000000001n)
  })

  test('distinguishes null attributes (fresh) from an empty list', () => {
    assert.equal(decodeBlock(REF_FRESH).attributes, null)
    assert.deepEqual(decodeBlock(REF_RELEASED_NO_COOLDOWN).attributes, [])
  })

  test('decodeBlock(encodeBlock(b)) round trip of a busy block', () => {
    const b = fresh()
    takeOrdinals(b, 2, handleAttr('a'))
    takeOrdinals(b, 1, {handle_id: 'b', secondary: {pod: 'p', namespace: 'ns'}, alternateOwnerAttrs: {'vmi-uid': 'u'}})
    bump(b)
    markReleased(b, [1], RELEASE_TIME, 300, {recordSeq: true})
    bump(b)
    const d = decodeBlock(encodeBlock(b))
    assert.deepEqual(d.cidr, b.cidr)
    assert.equal(d.affinity, 'host:node-1')
    assert.equal(d.affinityClaimTime, '2026-01-02T03:04:05Z')
    assert.deepEqual(d.allocations, b.allocations)
    assert.deepEqual(d.unallocated, b.unallocated)
    assert.equal(d.sequenceNumber, SEQ + 2n)
    assert.deepEqual(
      new Map([...d.sequenceNumberForAllocation].sort()),
      new Map([...b.sequenceNumberForAllocation].sort()),
    )
    assert.equal(d.deleted, false)
    const defined = (a: Attribute) => Object.fromEntries(Object.entries(a).filter(([, v]) => v !== undefined))
    assert.deepEqual(d.attributes!.map(defined), b.attributes!.map(defined))
    assert.equal(encodeBlock(d), encodeBlock(b))
  })

  test('legacy hostAffinity without affinity becomes host:<name>, and is not written back', () => {
    const legacy =
      '{"cidr":"10.65.0.8/29","hostAffinity":"old-node","allocations":[null,null,null,null,null,null,null,null],"unallocated":[0,1,2,3,4,5,6,7],"attributes":null,"sequenceNumber":7,"sequenceNumberForAllocation":{},"deleted":false}'
    const b = decodeBlock(legacy)
    assert.equal(b.affinity, 'host:old-node')
    assert.equal(b.affinityClaimTime, undefined)
    const out = encodeBlock(b)
    assert.ok(!out.includes('hostAffinity'), out)
    assert.ok(out.startsWith('{"cidr":"10.65.0.8/29","affinity":"host:old-node","allocations":['), out)
  })

  test('an explicit affinity wins over the legacy field', () => {
    const v = REF_FRESH.replace('"affinity":"host:node-1"', '"affinity":"host:node-1","hostAffinity":"other"')
    assert.equal(decodeBlock(v).affinity, 'host:node-1')
  })

  test('rejects a value whose allocations do not match the CIDR size', () => {
    const bad = REF_FRESH.replace('[null,null,null,null,null,null,null,null]', '[null,null]')
    assert.throws(() => decodeBlock(bad), ValidationError)
  })

  test('rejects non-object and malformed JSON', () => {
    assert.throws(() => decodeBlock('[]'), ValidationError)
    assert.throws(() => decodeBlock('null'), ValidationError)
    assert.throws(() => decodeBlock('{"cidr":'), ValidationError)
  })
})

// --- taking ordinals -----------------------------------------------------------------

describe('takeOrdinals', () => {
  test('a new block hands out the network address first, ascending', () => {
    const b = fresh()
    assert.deepEqual(takeOrdinals(b, 3, handleAttr('a')), [0, 1, 2])
    assert.deepEqual(b.unallocated, [3, 4, 5, 6, 7])
    assert.deepEqual(b.allocations, [0, 0, 0, null, null, null, null, null])
    assert.equal(formatIp(4, ipOf(b, 2).value), '10.65.0.2')
  })

  test('records the current (pre-update) sequence number per ordinal', () => {
    const b = fresh()
    b.sequenceNumber = 99n
    takeOrdinals(b, 2, handleAttr('a'))
    assert.deepEqual(
      [...b.sequenceNumberForAllocation],
      [
        ['0', 99n],
        ['1', 99n],
      ],
    )
  })

  test('FIFO: freed ordinals go to the tail and are reused last, in release order', () => {
    const b = fresh()
    assert.equal(takeOrdinals(b, 8, handleAttr('a')).length, 8)
    assert.deepEqual(b.unallocated, [])
    markReleased(b, [5, 2], RELEASE_TIME, 0, {recordSeq: true})
    assert.deepEqual(b.unallocated, [2, 5], 'ascending within one release')
    markReleased(b, [0], RELEASE_TIME, 0, {recordSeq: true})
    assert.deepEqual(b.unallocated, [2, 5, 0])
    assert.deepEqual(takeOrdinals(b, 2, handleAttr('b')), [2, 5])
    assert.deepEqual(b.unallocated, [0])
  })

  test('takes from the head of a rotated queue', () => {
    const b = allocatedExample()
    markReleased(b, [0], RELEASE_TIME, 0, {recordSeq: true})
    assert.deepEqual(b.unallocated, [1, 2, 3, 4, 5, 6, 7, 0])
    assert.deepEqual(takeOrdinals(b, 8, handleAttr('x')), [1, 2, 3, 4, 5, 6, 7, 0])
  })

  test('skip excludes ordinals and keeps their place in the queue', () => {
    const b = fresh()
    assert.deepEqual(
      takeOrdinals(b, 3, handleAttr('a'), (o) => o % 2 === 0),
      [1, 3, 5],
    )
    assert.deepEqual(b.unallocated, [0, 2, 4, 6, 7])
    assert.deepEqual(
      takeOrdinals(b, 2, handleAttr('a'), (o) => o < 4),
      [4, 6],
    )
    assert.deepEqual(b.unallocated, [0, 2, 7])
  })

  test('returns fewer when the block runs out, and nothing (no attribute added) when full or all skipped', () => {
    const b = fresh()
    assert.deepEqual(takeOrdinals(b, 100, handleAttr('a')), [0, 1, 2, 3, 4, 5, 6, 7])
    assert.deepEqual(takeOrdinals(b, 1, handleAttr('b')), [])
    assert.equal(b.attributes!.length, 1)

    const c = fresh()
    assert.deepEqual(
      takeOrdinals(c, 2, handleAttr('a'), () => true),
      [],
    )
    assert.equal(c.attributes, null)
    assert.equal(encodeBlock(c), REF_FRESH)
  })

  test('equal (handle, attrs) share one attribute record regardless of key order', () => {
    const b = fresh()
    takeOrdinals(b, 1, {handle_id: 'h', secondary: {a: '1', b: '2'}})
    takeOrdinals(b, 1, {handle_id: 'h', secondary: {b: '2', a: '1'}})
    takeOrdinals(b, 1, {handle_id: 'h', secondary: {a: '1', b: '3'}})
    takeOrdinals(b, 1, {handle_id: 'h2', secondary: {a: '1', b: '2'}})
    assert.deepEqual(b.allocations.slice(0, 4), [0, 0, 1, 2])
    assert.equal(b.attributes!.length, 3)
  })
})

describe('takeOrdinal', () => {
  test('takes a specific free ordinal and leaves the others in order', () => {
    const b = fresh()
    assert.equal(takeOrdinal(b, 3, handleAttr('a')), true)
    assert.deepEqual(b.unallocated, [0, 1, 2, 4, 5, 6, 7])
    assert.equal(b.allocations[3], 0)
    assert.equal(b.sequenceNumberForAllocation.get('3'), SEQ)
  })

  test('an already allocated ordinal returns false and changes nothing', () => {
    const b = fresh()
    assert.equal(takeOrdinal(b, 3, handleAttr('a')), true)
    const before = encodeBlock(b)
    assert.equal(takeOrdinal(b, 3, handleAttr('b')), false)
    assert.equal(encodeBlock(b), before)
  })

  test('an ordinal in cooldown returns false', () => {
    const b = allocatedExample()
    markReleased(b, [0], RELEASE_TIME, 60, {recordSeq: true})
    const before = encodeBlock(b)
    assert.equal(takeOrdinal(b, 0, handleAttr('b')), false)
    assert.equal(encodeBlock(b), before)
  })

  test('an ordinal outside the block returns false', () => {
    const b = fresh()
    assert.equal(takeOrdinal(b, 8, handleAttr('a')), false)
    assert.equal(takeOrdinal(b, -1, handleAttr('a')), false)
    assert.equal(encodeBlock(b), REF_FRESH)
  })

  test('ordinalOf/ipOf map addresses to slots and reject foreign ones', () => {
    const b = fresh()
    assert.equal(ordinalOf(b, parseIp('10.65.0.5')), 5)
    assert.throws(() => ordinalOf(b, parseIp('10.65.0.8')), ValidationError)
    assert.throws(() => ordinalOf(b, parseIp('::a41:5')), ValidationError)
  })
})

// --- release and garbage collection ------------------------------------------------------

describe('markReleased and garbageCollect', () => {
  test('recordSeq:false keeps the allocation-time sequence number', () => {
    const b = allocatedExample()
    markReleased(b, [0], RELEASE_TIME, 60, {recordSeq: false})
    assert.equal(b.sequenceNumberForAllocation.get('0'), SEQ)
  })

  test('cooldown not yet expired: nothing changes and false is returned', () => {
    const b = allocatedExample()
    markReleased(b, [0], RELEASE_TIME, 60, {recordSeq: true})
    bump(b)
    assert.equal(garbageCollect(b, 60, new Date('2026-01-02T03:10:59Z')), false)
    assert.equal(encodeBlock(b), REF_RELEASED_COOLDOWN)
  })

  test('cooldown expired: ordinal returns to the tail, seq entry and attribute are removed', () => {
    const b = allocatedExample()
    markReleased(b, [0], RELEASE_TIME, 60, {recordSeq: true})
    bump(b)
    assert.equal(garbageCollect(b, 60, new Date('2026-01-02T03:11:01Z')), true)
    assert.equal(encodeBlock(b), REF_RELEASED_NO_COOLDOWN)
    assert.equal(garbageCollect(b, 60, new Date('2026-01-02T03:11:01Z')), false, 'idempotent')
  })

  test('the expiry depends on the cooldown passed at collection time', () => {
    const b = allocatedExample()
    markReleased(b, [0], RELEASE_TIME, 600, {recordSeq: true})
    assert.equal(garbageCollect(b, 600, new Date('2026-01-02T03:15:00Z')), false)
    assert.equal(garbageCollect(b, 120, new Date('2026-01-02T03:15:00Z')), true)
    assert.deepEqual(b.unallocated, [1, 2, 3, 4, 5, 6, 7, 0])
  })

  test('a fresh block is untouched (attributes stay null)', () => {
    const b = fresh()
    assert.equal(garbageCollect(b, 0, RELEASE_TIME), false)
    assert.equal(encodeBlock(b), REF_FRESH)
  })

  test('unreferenced attributes are pruned and indexes remapped (cooldown 0)', () => {
    const b = fresh()
    takeOrdinals(b, 1, handleAttr('A'))
    takeOrdinals(b, 1, handleAttr('B'))
    takeOrdinals(b, 1, handleAttr('C'))
    assert.deepEqual(b.allocations.slice(0, 3), [0, 1, 2])
    markReleased(b, [1], RELEASE_TIME, 0, {recordSeq: true})
    assert.deepEqual(
      b.attributes!.map((a) => a.handle_id),
      ['A', 'C'],
    )
    assert.deepEqual(b.allocations, [0, null, 1, null, null, null, null, null])
    assert.deepEqual(b.unallocated, [3, 4, 5, 6, 7, 1])
    assert.deepEqual([...b.sequenceNumberForAllocation.keys()].sort(), ['0', '2'])
    assert.deepEqual(blockProblems(b, RELEASE_TIME), [])
  })

  test('pruning while an ordinal cools down remaps to the cooldown record', () => {
    const b = fresh()
    takeOrdinals(b, 1, handleAttr('A'))
    takeOrdinals(b, 1, handleAttr('B'))
    takeOrdinals(b, 1, handleAttr('C'))
    markReleased(b, [0], RELEASE_TIME, 60, {recordSeq: true})
    assert.deepEqual(b.attributes, [handleAttr('B'), handleAttr('C'), {releasedAt: '2026-01-02T03:10:00Z'}])
    assert.deepEqual(b.allocations, [2, 0, 1, null, null, null, null, null])
    assert.deepEqual(b.unallocated, [3, 4, 5, 6, 7])
    assert.deepEqual(blockProblems(b, RELEASE_TIME), [])
  })

  test('several ordinals released together return in ascending order', () => {
    const b = fresh()
    takeOrdinals(b, 4, handleAttr('A'))
    markReleased(b, [3, 1], RELEASE_TIME, 0, {recordSeq: true})
    assert.deepEqual(b.unallocated, [4, 5, 6, 7, 1, 3])
    assert.deepEqual(b.allocations, [0, null, 0, null, null, null, null, null])
    assert.equal(b.attributes!.length, 1)
  })

  test('releasing nothing is a no-op', () => {
    const b = allocatedExample()
    const before = encodeBlock(b)
    markReleased(b, [], RELEASE_TIME, 0, {recordSeq: true})
    assert.equal(encodeBlock(b), before)
  })

  test('cloneBlock is deep: mutating the clone leaves the original alone', () => {
    const b = allocatedExample()
    const c = cloneBlock(b)
    markReleased(c, [0], RELEASE_TIME, 0, {recordSeq: true})
    c.attributes!.push({handle_id: 'x'})
    assert.equal(encodeBlock(b), REF_ALLOCATED)
  })
})

// --- emptiness ------------------------------------------------------------------

describe('isEmpty', () => {
  test('a fresh block is empty; one allocation makes it non-empty', () => {
    assert.equal(isEmpty(fresh()), true)
    assert.equal(isEmpty(allocatedExample()), false)
  })

  test('an ordinal in cooldown makes the block non-empty; after expiry it is empty again', () => {
    const b = allocatedExample()
    markReleased(b, [0], RELEASE_TIME, 60, {recordSeq: true})
    assert.equal(isEmpty(b), false)
    garbageCollect(b, 60, new Date('2026-01-02T03:20:00Z'))
    assert.equal(isEmpty(b), true)
  })

  test('Windows reserved handle ordinals count as empty (case-insensitive)', () => {
    const b = fresh()
    takeOrdinals(b, 3, {handle_id: 'windows-reserved-ipam-handle', secondary: {note: 'windows host rsvd'}})
    takeOrdinal(b, 7, {handle_id: 'Windows-Reserved-IPAM-Handle', secondary: {note: 'windows host rsvd'}})
    assert.equal(isEmpty(b), true)
    takeOrdinals(b, 1, handleAttr('pod'))
    assert.equal(isEmpty(b), false)
  })

  test('an allocation with no handle is not empty', () => {
    const b = fresh()
    takeOrdinals(b, 1, {secondary: {note: 'x'}})
    assert.equal(isEmpty(b), false)
  })
})

// --- invariants (calicoctl ipam check messages) -----------------------------------------

describe('blockProblems', () => {
  const NOW = new Date('2026-01-02T03:30:00Z')

  /** /29 with ordinal 0 allocated: unallocated [1..7], attributes [pod]. */
  const healthy = (): Block => allocatedExample()

  test('a healthy block has no problems', () => {
    assert.deepEqual(blockProblems(healthy(), NOW), [])
    assert.deepEqual(blockProblems(fresh(), NOW), [])
  })

  test('allocation indexing a nonexistent attribute', () => {
    const b = healthy()
    b.allocations[1] = 5
    b.unallocated = [2, 3, 4, 5, 6, 7]
    assert.deepEqual(blockProblems(b, NOW), ['allocation 1 indexes a nonexistent attribute 5'])
  })

  test('attribute not indexed by any allocation', () => {
    const b = healthy()
    b.attributes!.push(handleAttr('orphan'))
    assert.deepEqual(blockProblems(b, NOW), ['attribute index 1 exists but is not indexed by an allocation'])
  })

  test('releasedAt in the future', () => {
    const b = healthy()
    markReleased(b, [0], new Date('2026-01-02T04:00:00Z'), 1200, {recordSeq: true})
    assert.deepEqual(blockProblems(b, NOW), ['attribute index 0 has releasedAt in the future, suggesting clock skew'])
    assert.deepEqual(blockProblems(b, new Date('2026-01-02T04:00:01Z')), [])
  })

  test('ordinal out of the block in Unallocated', () => {
    const b = healthy()
    b.unallocated = [1, 2, 3, 4, 5, 6, 8]
    assert.deepEqual(blockProblems(b, NOW), ['ordinal 8 appears in the Unallocated array but is out of the block'])
  })

  test('negative ordinal in Unallocated', () => {
    const b = healthy()
    b.unallocated = [-1, 1, 2, 3, 4, 5, 6]
    assert.deepEqual(blockProblems(b, NOW), ['ordinal -1 appears in the Unallocated array but is out of the block'])
  })

  test('duplicate ordinal in Unallocated', () => {
    const b = healthy()
    b.unallocated = [1, 2, 3, 4, 5, 6, 3]
    assert.deepEqual(blockProblems(b, NOW), ['ordinal 3 appears more than once in Unallocated array'])
  })

  test('allocated ordinal in Unallocated', () => {
    const b = healthy()
    b.unallocated = [1, 2, 3, 4, 5, 6, 0]
    assert.deepEqual(blockProblems(b, NOW), ['ordinal 0 is allocated but appears in Unallocated'])
  })

  test('address count mismatch', () => {
    const b = healthy()
    b.unallocated = [1, 2, 3, 4, 5, 6]
    assert.deepEqual(blockProblems(b, NOW), [
      'expected 8 addresses in this block, but Unallocated (6) + Allocated (1) = 7',
    ])
  })

  test('several problems are all reported', () => {
    const b = healthy()
    b.attributes!.push(handleAttr('orphan'))
    b.unallocated = [1, 2, 3, 4, 5, 6, 7, 7]
    const got = blockProblems(b, NOW)
    assert.equal(got.length, 3, got.join('\n'))
    assert.ok(got.includes('attribute index 1 exists but is not indexed by an allocation'))
    assert.ok(got.includes('ordinal 7 appears more than once in Unallocated array'))
    assert.ok(got.includes('expected 8 addresses in this block, but Unallocated (8) + Allocated (1) = 9'))
  })
})

describe('blockOccupancy', () => {
  const cidr = parseCidr('10.0.0.0/29')
  const occupancyOfFull = (text: string, now: Date) => {
    const b = decodeBlock(text)
    garbageCollect(b, 60, now)
    return {cidr: b.cidr, size: b.allocations.length, unallocated: b.unallocated}
  }

  test('equals the full decode (after its garbage collection) for blocks as Go writes them', () => {
    const b = newBlock(cidr, 'host:n1', CLAIM_TIME, SEQ)
    for (const text of [encodeBlock(b), REF_FRESH, REF_ALLOCATED]) {
      const o = blockOccupancy(text)
      assert.ok(o, text)
      assert.deepEqual(o, occupancyOfFull(text, CLAIM_TIME))
    }
    takeOrdinals(b, 3, {handle_id: 'h', secondary: {node: 'n1', note: '"attributes": "releasedAt"'}})
    assert.deepEqual(blockOccupancy(encodeBlock(b)), occupancyOfFull(encodeBlock(b), CLAIM_TIME))
    assert.deepEqual(blockOccupancy(encodeBlock(b))!.unallocated, [3, 4, 5, 6, 7])
  })

  test('the compact head read without parsing gives what the full decode gives, for many blocks; odd heads are parsed', () => {
    let n = 0
    for (const c of ['10.0.0.0/26', '10.0.0.8/29', '10.0.0.9/32', 'fd00::/122'])
      for (const affinity of [null, 'host:n1'])
        for (let taken = 0; taken <= 64; taken += 7) {
          const b = newBlock(parseCidr(c), affinity, CLAIM_TIME, SEQ)
          takeOrdinals(b, Math.min(taken, b.allocations.length), {handle_id: `h${taken}`, secondary: {node: 'n1'}})
          const text = encodeBlock(b)
          assert.deepEqual(blockOccupancy(text), occupancyOfFull(text, CLAIM_TIME), text)
          n++
        }
    assert.equal(n, 80)
    const text = encodeBlock(newBlock(parseCidr('10.0.0.0/29'), 'host:n1', CLAIM_TIME, SEQ))
    // Layouts the match does not take are parsed as before: the same result, or undefined where parsing fails.
    for (const odd of [
      text.replace('"unallocated":[', '"unallocated": ['),
      text.replace('"affinity":"host:n1"', '"affinity":"host:n\\u0031"'),
      text.replace('"unallocated":[0,', '"unallocated":[0.0,'),
    ])
      assert.deepEqual(blockOccupancy(odd), occupancyOfFull(odd, CLAIM_TIME), odd)
    assert.equal(blockOccupancy(text.replace('"unallocated":[0,', '"unallocated":[00,')), undefined)
    assert.equal(blockOccupancy(text.replace('"allocations":[null,', '"allocations":[nul,')), undefined)
  })

  test('leaves to the full decode what it cannot tell: cooling down, other field orders, malformed blocks', () => {
    const b = newBlock(cidr, 'host:n1', CLAIM_TIME, SEQ)
    takeOrdinals(b, 2, {handle_id: 'h'})
    markReleased(b, [0], RELEASE_TIME, 60, {recordSeq: false})
    // Cooling down: whether it is free depends on the time, which only the full decode's GC applies.
    assert.equal(blockOccupancy(encodeBlock(b)), undefined)
    const fresh = encodeBlock(newBlock(cidr, null, CLAIM_TIME, SEQ))
    const o = JSON.parse(fresh) as Record<string, unknown>
    const reordered = JSON.stringify({attributes: o.attributes, ...o})
    assert.equal(blockOccupancy(reordered), undefined)
    assert.equal(blockOccupancy(fresh.replace('"allocations":[null,', '"allocations":[')), undefined)
    assert.equal(blockOccupancy(fresh.replace('"cidr":"10.0.0.0/29"', '"cidr":"nonsense"')), undefined)
    assert.equal(blockOccupancy('{"cidr":'), undefined)
    assert.equal(blockOccupancy('[]'), undefined)
  })
})

test('hasReleasedAt answers as includes(\'"releasedAt"\') does, wherever and however often the token or its tail occurs', () => {
  const token = '"releasedAt"'
  const cases = [
    '',
    token,
    `${token}:"x"`,
    `x${token}`,
    'releasedAt"',
    '"releasedAt',
    '"releasedAT"',
    'At"At"At"',
    '"releasedXAt"',
    '{"secondary":{"createdAt":"1"}}',
    '{"a":"\\"releasedAt\\""}',
    `At"${token}`,
    `${'At"'.repeat(50)}${token.slice(0, 11)}`,
  ]
  // Random strings over the token's own characters, so that partial and overlapping matches are common.
  let seed = 7
  const rnd = (n: number) => {
    // xorshift32: every residue comes up (the low bits of a power-of-two LCG cycle)
    seed ^= seed << 13
    seed ^= seed >>> 17
    seed ^= seed << 5
    return (seed >>> 0) % n
  }
  const alphabet = ['"', 'r', 'e', 'l', 'a', 's', 'd', 'A', 't', token, 'At"']
  for (let k = 0; k < 2000; k++)
    cases.push(Array.from({length: rnd(12)}, () => alphabet[rnd(alphabet.length)]).join(''))
  let found = 0
  for (const text of cases) {
    assert.equal(hasReleasedAt(text), text.includes(token), JSON.stringify(text))
    if (text.includes(token)) found++
  }
  assert.ok(found > 100 && found < cases.length - 100, `both answers are exercised (${found} of ${cases.length})`)
})

test('sanitizeHandle cuts a handle ID at its first carriage return, as upstream does', () => {
  assert.equal(sanitizeHandle('k8s-pod-network.abc'), 'k8s-pod-network.abc')
  assert.equal(sanitizeHandle('k8s-pod-network.abc\r\neth0'), 'k8s-pod-network.abc')
  assert.equal(sanitizeHandle('a\rb\rc'), 'a')
  assert.equal(sanitizeHandle('\r'), '')
  assert.equal(sanitizeHandle(''), '')
})

describe('scanBlockSummary', () => {
  test('tells where each handle starts in the text, -1 for none', () => {
    const text =
      '{"cidr":"10.65.0.0/30","affinity":null,"allocations":[0,null,1,2],"unallocated":[1],"attributes":[' +
      '{"handle_id":"h-0","secondary":{"node":"n"}},{"secondary":{"node":"n"},"releasedAt":"2026-01-02T03:04:05Z"},' +
      '{"secondary":null,"handle_id":"k8s-pod-network.abc"}],"sequenceNumber":1,"sequenceNumberForAllocation":{}}'
    const at = [7, 7, 7, 7]
    const b = scanBlockSummary(text, at)
    assert.ok(b)
    assert.deepEqual(at, [text.indexOf('h-0'), -1, text.indexOf('k8s-pod-network.abc')])
    for (const [i, a] of b.attributes!.entries())
      if (a.handle_id !== undefined) assert.equal(text.slice(at[i], at[i]! + a.handle_id.length), a.handle_id)
  })

  const full = (text: string) => summarizeBlock(decodeBlock(text))
  /** What `ipam check` uses: the lean reader, the full decode when it declines. */
  const checkRead = (text: string) => scanBlockSummary(text) ?? full(text)

  /** Blocks as Go writes them: fresh, allocated, cooling down, alternate owners, IPv6, a Windows reservation. */
  function written(): string[] {
    const v4 = newBlock(parseCidr('10.0.0.0/29'), 'host:n1', CLAIM_TIME, SEQ)
    takeOrdinals(v4, 2, podAttr())
    takeOrdinals(v4, 1, {handle_id: 'windows-reserved-ipam-handle'})
    takeOrdinals(v4, 1, {
      handle_id: 'h2',
      secondary: {node: 'n2', pod: 'p', note: 'node: not this, {[ ]} ,:'},
      alternateOwnerAttrs: {node: 'n3', pod: 'q'},
    })
    takeOrdinals(v4, 1, {secondary: {pod: 'no node'}})
    const cooling = cloneBlock(v4)
    markReleased(cooling, [0], RELEASE_TIME, 60, {recordSeq: true})
    const v6 = newBlock(parseCidr('fd00:1::/125'), null, CLAIM_TIME, SEQ)
    takeOrdinals(v6, 3, {handle_id: 'h6', secondary: {node: 'n6'}})
    return [
      REF_FRESH,
      REF_ALLOCATED,
      REF_RELEASED_COOLDOWN,
      REF_RELEASED_NO_COOLDOWN,
      ...[v4, cooling, v6].map(encodeBlock),
    ]
  }

  test('reads what the full decode reads, for blocks as Go writes them and with members reordered', () => {
    for (const text of written()) {
      const lean = scanBlockSummary(text)
      assert.ok(lean, text)
      assert.deepEqual(lean, full(text), text)
      // The same members in reverse order, each attribute's too: JSON.parse does not care, nor may the reader.
      const o = JSON.parse(text.replace(/(-?\d{16,})/g, '"$1"')) as Record<string, unknown>
      const reversed = JSON.stringify(
        Object.fromEntries(
          Object.entries(o)
            .reverse()
            .map(([k, v]) => [
              k,
              k === 'attributes' && Array.isArray(v)
                ? v.map((a) => Object.fromEntries(Object.entries(a as object).reverse()))
                : v,
            ]),
        ),
      ).replace(/"(-?\d{16,})"/g, '$1')
      assert.ok(scanBlockSummary(reversed), reversed)
      assert.deepEqual(scanBlockSummary(reversed), full(text), reversed)
    }
  })

  test('declines escapes, whitespace, legacy and repeated members and other types; the full decode then gives the same', () => {
    const [, allocated] = written()
    const declined = [
      allocated!.replace('"web-0"', '"web\\u002d0"'),
      allocated!.replace('"pod":"web-0"', '"pod":"a\\"b"'),
      allocated!.replace(',"unallocated"', ',\n  "unallocated"'),
      allocated!.replace('"affinity":"host:node-1",', '"hostAffinity":"node-1",'),
      allocated!.replace('"deleted":false', '"deleted":false,"cidr":"10.65.0.0/29"'),
      allocated!.replace('"node":"node-1"', '"node":"node-1","node":"node-2"'),
      allocated!.replace('"node":"node-1"', '"node":5'),
      allocated!.replace('"handle_id":"k8s-pod-network.0123456789abcdef"', '"handle_id":null'),
      allocated!.replace('"attributes":[', '"attributes":[null,'),
      allocated!.replace('"allocations":[0,', '"allocations":["0",'),
      allocated!.replace('"unallocated":[1,', '"unallocated":[-1,'),
      allocated!.replace('"affinity":"host:node-1"', '"affinity":5'),
      allocated!.replace('"sequenceNumber":1767323045000000001', '"sequenceNumber":"1767323045000000001"'),
    ]
    for (const text of declined) {
      assert.equal(scanBlockSummary(text), undefined, text)
      assert.deepEqual(checkRead(text), full(text), text)
    }
    assert.equal(checkRead(declined[0]!).attributes![0]!.handle_id, 'k8s-pod-network.0123456789abcdef')
    assert.equal(checkRead(declined[5]!).attributes![0]!.node, 'node-2')
  })

  test('declines what decodeBlock refuses, which then makes the block invalid as before', () => {
    const [, allocated] = written()
    const refused = [
      '',
      '{',
      'null',
      '{"cidr":"10.65.0.0/29"}',
      allocated!.replace('"allocations":[0,null,', '"allocations":[0,'),
      allocated!.replace('"cidr":"10.65.0.0/29"', '"cidr":"10.65.0.0/99"'),
      allocated!.replace('"sequenceNumber":1767323045000000001', '"sequenceNumber":1.5'),
      allocated!.replace('{"0":1767323045000000000}', '{"0":"x"}'),
      allocated!.replace('"secondary":{', '"secondary":"x","s":{'),
      allocated!.replace('"pod":"web-0"', '"pod":"web\u00010"'),
    ]
    for (const text of refused) {
      assert.equal(scanBlockSummary(text), undefined, text)
      assert.throws(() => decodeBlock(text), text)
    }
  })
})
