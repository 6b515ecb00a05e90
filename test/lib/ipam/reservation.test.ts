// Unit tests of IPReservation: validation, the stored JSON, and the pure reserved-address matcher.
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'
import {ValidationError} from '../../../src/lib/errors.ts'
import {
  decodeReservation,
  encodeReservation,
  normalizeReservation,
  reservedMatcher,
} from '../../../src/lib/ipam/reservation.ts'
import {parseCidr, parseIp} from '../../../src/lib/net/cidr.ts'

describe('reservation validation', () => {
  test('bare addresses become /32 or /128; CIDRs are canonical', () => {
    assert.deepEqual(
      normalizeReservation({name: 'r1', reservedCIDRs: ['10.65.0.5', '10.65.1.0/24', 'FD80:0:0::1', 'fd80::/64']}),
      {
        name: 'r1',
        reservedCIDRs: ['10.65.0.5/32', '10.65.1.0/24', 'fd80::1/128', 'fd80::/64'],
      },
    )
  })

  test('rejects bad names, bad entries and an empty list', () => {
    for (const input of [
      {name: 'Bad_Name', reservedCIDRs: ['10.0.0.0/8']},
      {name: '', reservedCIDRs: ['10.0.0.0/8']},
      {name: 'ok', reservedCIDRs: []},
      {name: 'ok', reservedCIDRs: ['10.0.0.0/33']},
      {name: 'ok', reservedCIDRs: ['not-an-ip']},
      {name: 'ok', reservedCIDRs: ['10.0.0.256']},
      {name: 'ok', reservedCIDRs: ['10.65.1.7/24']},
      {name: 'ok', reservedCIDRs: ['fd80::1/64']},
    ]) {
      assert.throws(() => normalizeReservation(input), ValidationError, JSON.stringify(input))
    }
  })
})

describe('reservation encoding', () => {
  test('encodes the v3 resource in Go field order and decodes it back', () => {
    const r = {
      name: 'gw',
      uid: '0c3d6a1e-8f0b-4c63-9d4e-2f9c1b7a5e10',
      creationTimestamp: '2026-01-02T03:04:05Z',
      reservedCIDRs: ['10.65.0.0/30', 'fd80::1/128'],
    }
    const text = encodeReservation(r)
    assert.equal(
      text,
      '{"kind":"IPReservation","apiVersion":"projectcalico.org/v3","metadata":{"name":"gw","uid":"0c3d6a1e-8f0b-4c63-9d4e-2f9c1b7a5e10","creationTimestamp":"2026-01-02T03:04:05Z"},"spec":{"reservedCIDRs":["10.65.0.0/30","fd80::1/128"]}}',
    )
    assert.deepEqual(decodeReservation(text), r)
  })
})

describe('reservedMatcher', () => {
  const m = reservedMatcher([
    {name: 'a', reservedCIDRs: ['10.65.0.0/30', '10.65.0.2/31']},
    {name: 'b', reservedCIDRs: ['10.65.0.3/32', '10.65.1.0/26', 'fd80::/126']},
  ])

  test('isReserved and reservedBy (first reservation in name order)', () => {
    assert.equal(m.isReserved(parseIp('10.65.0.0')), true)
    assert.equal(m.isReserved(parseIp('10.65.0.4')), false)
    assert.equal(m.reservedBy(parseIp('10.65.0.3')), 'a')
    assert.equal(m.reservedBy(parseIp('10.65.1.63')), 'b')
    assert.equal(m.reservedBy(parseIp('10.65.1.64')), undefined)
    assert.equal(m.isReserved(parseIp('fd80::3')), true)
    assert.equal(m.isReserved(parseIp('fd80::4')), false)
    assert.equal(reservedMatcher([]).any, false)
  })

  test('blockWhollyReserved needs every address covered, possibly by several reservations', () => {
    assert.equal(m.blockWhollyReserved(parseCidr('10.65.1.0/26')), true)
    assert.equal(m.blockWhollyReserved(parseCidr('10.65.1.0/27')), true)
    assert.equal(m.blockWhollyReserved(parseCidr('10.65.0.0/26')), false)
    assert.equal(m.blockWhollyReserved(parseCidr('10.65.1.0/25')), false)
    const adjacent = reservedMatcher([
      {name: 'x', reservedCIDRs: ['10.0.0.0/27']},
      {name: 'y', reservedCIDRs: ['10.0.0.32/27']},
    ])
    assert.equal(adjacent.blockWhollyReserved(parseCidr('10.0.0.0/26')), true)
  })

  test('reservedInBlock counts overlaps once', () => {
    assert.equal(m.reservedInBlock(parseCidr('10.65.0.0/26')), 4)
    assert.equal(m.reservedInBlock(parseCidr('10.65.1.0/26')), 64)
    assert.equal(m.reservedInBlock(parseCidr('10.65.2.0/26')), 0)
    assert.equal(m.reservedIn(parseCidr('10.65.0.0/16')), 68n)
    assert.equal(m.reservedIn(parseCidr('fd80::/64')), 4n)
    assert.equal(m.skipFor(parseCidr('10.65.2.0/26')), undefined)
    const skip = m.skipFor(parseCidr('10.65.0.0/26'))!
    assert.deepEqual(
      [0, 1, 2, 3, 4, 5].filter((o) => skip(o)),
      [0, 1, 2, 3],
    )
  })
})
