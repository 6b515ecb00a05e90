import {describe, test} from 'node:test'
import assert from 'node:assert/strict'
import {ValidationError} from '../../../src/lib/errors.ts'
import {
  cidrSize,
  compareCidr,
  containsCidr,
  containsIp,
  formatCidr,
  formatIp,
  ipToString,
  lastAddress,
  maskIp,
  overlaps,
  parseCidr,
  parseCidrOrIp,
  parseIp,
  sameCidr,
  subnet,
  subnetCount,
  subnetIndex,
  tryParseIp,
  type Cidr,
} from '../../../src/lib/net/cidr.ts'

/** Build a v6 value from 8 groups so expectations are not derived from the code under test. */
const v6 = (...groups: number[]): bigint => {
  assert.equal(groups.length, 8)
  return groups.reduce((acc, g) => (acc << 16n) | BigInt(g), 0n)
}

function throwsValidation(fn: () => unknown, message?: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof ValidationError, `expected ValidationError, got ${String(err)}`)
    if (message) assert.match(err.message, message)
    return true
  })
}

const c = (text: string): Cidr => parseCidr(text)
const fmt = (x: Cidr): string => formatCidr(x)

// --- parseIp / tryParseIp: IPv4 --------------------------------------------

describe('parseIp IPv4', () => {
  test('parses dotted quads to exact values', () => {
    assert.deepEqual(parseIp('10.65.0.1'), {family: 4, value: 0x0a410001n})
    assert.deepEqual(parseIp('0.0.0.0'), {family: 4, value: 0n})
    assert.deepEqual(parseIp('255.255.255.255'), {family: 4, value: 0xffffffffn})
    assert.deepEqual(parseIp('192.168.100.200'), {family: 4, value: 0xc0a864c8n})
    assert.deepEqual(parseIp('1.2.3.4'), {family: 4, value: 0x01020304n})
  })

  test('accepts every octet boundary 0, 9, 10, 99, 100, 199, 200, 249, 250, 255', () => {
    for (const o of [0, 9, 10, 99, 100, 199, 200, 249, 250, 255]) {
      assert.equal(parseIp(`${o}.0.0.${o}`).value, (BigInt(o) << 24n) | BigInt(o), `octet ${o}`)
    }
  })

  test('rejects leading zeros (ambiguous octal), as Go does', () => {
    for (const bad of ['010.0.0.1', '1.2.3.04', '00.1.2.3', '1.02.3.4', '1.2.003.4', '0.0.0.00']) {
      assert.equal(tryParseIp(bad), undefined, bad)
      throwsValidation(() => parseIp(bad))
    }
  })

  test('rejects out-of-range octets and malformed quads', () => {
    const bad = [
      '256.0.0.1',
      '1.2.3.256',
      '1.2.3',
      '1.2.3.4.5',
      '1..2.3',
      '1.2.3.',
      '.1.2.3',
      '',
      'a.b.c.d',
      '1.2.3.-1',
      '1.2.3.4/24',
      '1.2.3.+4',
      '1.2.3.1e1',
      '999.1.1.1',
    ]
    for (const b of bad) assert.equal(tryParseIp(b), undefined, JSON.stringify(b))
  })

  test('parseIp error is a ValidationError that names the input', () => {
    throwsValidation(() => parseIp('10.0.0.300'), /10\.0\.0\.300/)
  })
})

// --- parseIp / tryParseIp: IPv6 --------------------------------------------

describe('parseIp IPv6', () => {
  test(':: is zero and ::1 is one', () => {
    assert.deepEqual(parseIp('::'), {family: 6, value: 0n})
    assert.deepEqual(parseIp('::1'), {family: 6, value: 1n})
  })

  test('fe80::1 and 1:: expand around the ellipsis', () => {
    assert.equal(parseIp('fe80::1').value, v6(0xfe80, 0, 0, 0, 0, 0, 0, 1))
    assert.equal(parseIp('1::').value, v6(1, 0, 0, 0, 0, 0, 0, 0))
    assert.equal(parseIp('2001:db8::8:800:200c:417a').value, v6(0x2001, 0xdb8, 0, 0, 8, 0x800, 0x200c, 0x417a))
    assert.equal(parseIp('fd80:24e2:f998:72d6::').value, v6(0xfd80, 0x24e2, 0xf998, 0x72d6, 0, 0, 0, 0))
  })

  test('full 8 groups, with leading zeros in groups and mixed case', () => {
    assert.equal(parseIp('1:2:3:4:5:6:7:8').value, v6(1, 2, 3, 4, 5, 6, 7, 8))
    assert.equal(
      parseIp('2001:0db8:0000:0000:0000:ff00:0042:8329').value,
      v6(0x2001, 0xdb8, 0, 0, 0, 0xff00, 0x42, 0x8329),
    )
    assert.equal(parseIp('FFFF:ffff:FfFf:ffff:ffff:ffff:ffff:ffff').value, (1n << 128n) - 1n)
  })

  test('an ellipsis standing for a single group is accepted', () => {
    assert.equal(parseIp('1:2:3::5:6:7:8').value, v6(1, 2, 3, 0, 5, 6, 7, 8))
  })

  test('embedded IPv4 tail', () => {
    assert.deepEqual(parseIp('::ffff:1.2.3.4'), {family: 6, value: 0xffff01020304n})
    assert.equal(parseIp('64:ff9b::192.0.2.33').value, v6(0x64, 0xff9b, 0, 0, 0, 0, 0xc000, 0x0221))
    assert.equal(parseIp('1:2:3:4:5:6:10.0.0.1').value, v6(1, 2, 3, 4, 5, 6, 0x0a00, 0x0001))
    assert.equal(parseIp('::1.2.3.4').value, 0x01020304n)
  })

  test('rejects malformed IPv6', () => {
    const bad = [
      '1:2:3:4:5:6:7:8:9', // nine groups
      '1::2::3', // two ellipses
      '12345::', // group too long
      ':::',
      ':1',
      '1:',
      ':',
      '1:2:3:4:5:6:7', // seven groups, no ellipsis
      '1:2:3:4:5:6:7::8', // ellipsis standing for zero groups
      '::1:2:3:4:5:6:7:8',
      'g::1',
      '::ffff:1.2.3.256',
      '::ffff:01.2.3.4',
      '::1.2.3',
      '1.2.3.4::',
      '::1.2.3.4:5',
      '1:2:3:4:5:6:7:1.2.3.4', // embedded v4 makes nine groups
      'fe80::1%eth0',
      '[::1]',
    ]
    for (const b of bad) {
      assert.equal(tryParseIp(b), undefined, b)
      throwsValidation(() => parseIp(b))
    }
  })
})

// --- formatIp ---------------------------------------------------------------

describe('formatIp', () => {
  test('IPv4 dotted quad without leading zeros', () => {
    assert.equal(formatIp(4, 0x0a410001n), '10.65.0.1')
    assert.equal(formatIp(4, 0n), '0.0.0.0')
    assert.equal(formatIp(4, 0xffffffffn), '255.255.255.255')
    assert.equal(formatIp(4, 0x0a000a00n), '10.0.10.0')
  })

  test('all-zero and loopback', () => {
    assert.equal(formatIp(6, 0n), '::')
    assert.equal(formatIp(6, 1n), '::1')
    assert.equal(formatIp(6, v6(1, 0, 0, 0, 0, 0, 0, 0)), '1::')
    assert.equal(formatIp(6, v6(0xfe80, 0, 0, 0, 0, 0, 0, 1)), 'fe80::1')
  })

  test('compresses the longest zero run', () => {
    assert.equal(formatIp(6, v6(0x2001, 0, 0, 1, 0, 0, 0, 1)), '2001:0:0:1::1')
    assert.equal(formatIp(6, v6(0, 0, 1, 0, 0, 0, 1, 0)), '0:0:1::1:0')
  })

  test('on a tie the first run is compressed', () => {
    assert.equal(formatIp(6, v6(0x2001, 0xdb8, 0, 0, 1, 0, 0, 1)), '2001:db8::1:0:0:1')
    assert.equal(formatIp(6, v6(1, 0, 0, 2, 3, 0, 0, 4)), '1::2:3:0:0:4')
  })

  test('a single zero group is not compressed', () => {
    assert.equal(formatIp(6, v6(0x2001, 0xdb8, 0, 1, 1, 1, 1, 1)), '2001:db8:0:1:1:1:1:1')
    assert.equal(formatIp(6, v6(1, 0, 2, 0, 3, 0, 4, 0)), '1:0:2:0:3:0:4:0')
    assert.equal(formatIp(6, v6(0, 1, 2, 3, 4, 5, 6, 7)), '0:1:2:3:4:5:6:7')
  })

  test('no zeros: plain groups', () => {
    assert.equal(formatIp(6, v6(1, 2, 3, 4, 5, 6, 7, 8)), '1:2:3:4:5:6:7:8')
  })

  test('lower-case hex with leading zeros dropped', () => {
    assert.equal(ipToString(parseIp('2001:0DB8:0000:0000:0000:FF00:0042:8329')), '2001:db8::ff00:42:8329')
    assert.equal(ipToString(parseIp('FD80:24E2:F998:72D6:0:0:0:ABCD')), 'fd80:24e2:f998:72d6::abcd')
  })

  test('canonical text round-trips through parseIp', () => {
    for (const s of [
      '10.65.79.5',
      '::',
      '::1',
      'fe80::1',
      '2001:db8::1:0:0:1',
      '1:0:2:0:3:0:4:0',
      'fd80:24e2:f998:72d6::40',
      '::ffff:102:304',
    ]) {
      assert.equal(ipToString(parseIp(s)), s)
    }
  })
})

// --- parseCidr ----------------------------------------------------------------

describe('parseCidr', () => {
  test('parses a masked v4 CIDR', () => {
    assert.deepEqual(c('10.65.0.0/16'), {family: 4, base: 0x0a410000n, prefix: 16})
  })

  test('parses a masked v6 CIDR', () => {
    assert.deepEqual(c('fd80:24e2:f998:72d6::/122'), {
      family: 6,
      base: v6(0xfd80, 0x24e2, 0xf998, 0x72d6, 0, 0, 0, 0),
      prefix: 122,
    })
  })

  test('non-strict parsing masks host bits (like Go net.ParseCIDR)', () => {
    assert.deepEqual(c('10.65.1.2/16'), {family: 4, base: 0x0a410000n, prefix: 16})
    assert.equal(fmt(c('10.65.79.77/26')), '10.65.79.64/26')
    assert.equal(fmt(c('fd00::1/64')), 'fd00::/64')
    assert.equal(fmt(c('ffff::1/0')), '::/0')
    assert.equal(fmt(c('255.255.255.255/0')), '0.0.0.0/0')
  })

  test('strict parsing accepts masked CIDRs', () => {
    assert.equal(fmt(parseCidr('10.65.0.0/16', {strict: true})), '10.65.0.0/16')
    assert.equal(fmt(parseCidr('fd00::/64', {strict: true})), 'fd00::/64')
    assert.equal(fmt(parseCidr('10.0.0.1/32', {strict: true})), '10.0.0.1/32')
  })

  test('strict parsing rejects host bits and suggests the masked CIDR', () => {
    throwsValidation(() => parseCidr('10.65.1.2/16', {strict: true}), /10\.65\.0\.0\/16/)
    throwsValidation(() => parseCidr('fd00::1/64', {strict: true}), /fd00::\/64/)
    throwsValidation(() => parseCidr('10.0.0.1/24', {strict: true}), /10\.0\.0\.0\/24/)
  })

  test('prefix range for IPv4 is 0..32', () => {
    assert.equal(c('0.0.0.0/0').prefix, 0)
    assert.equal(c('10.0.0.1/32').prefix, 32)
    throwsValidation(() => c('10.0.0.0/33'), /0-32/)
  })

  test('prefix range for IPv6 is 0..128', () => {
    assert.equal(c('::/0').prefix, 0)
    assert.equal(c('::1/128').prefix, 128)
    assert.equal(c('fd00::/33').prefix, 33)
    throwsValidation(() => c('fd00::/129'), /0-128/)
  })

  test('rejects malformed prefix lengths', () => {
    for (const bad of [
      '10.0.0.0/-1',
      '10.0.0.0/abc',
      '10.0.0.0/',
      '10.0.0.0/1000',
      '10.0.0.0/ 8',
      '10.0.0.0/8/8',
      '10.0.0.0/+8',
      '10.0.0.0/8.0',
    ]) {
      throwsValidation(() => c(bad))
    }
  })

  test('missing slash is a ValidationError naming the input', () => {
    throwsValidation(() => c('10.0.0.0'), /10\.0\.0\.0/)
    throwsValidation(() => c('fd00::'), /fd00::/)
  })

  test('invalid address part is a ValidationError', () => {
    throwsValidation(() => c('300.0.0.0/8'), /300\.0\.0\.0/)
    throwsValidation(() => c('010.0.0.0/8'))
    throwsValidation(() => c('1::2::3/64'))
    throwsValidation(() => c('/24'))
  })
})

// --- containment ---------------------------------------------------------------

describe('containsIp', () => {
  test('inclusive of the first and last address, exclusive outside', () => {
    const net = c('10.0.0.0/24')
    assert.equal(containsIp(net, parseIp('10.0.0.0')), true)
    assert.equal(containsIp(net, parseIp('10.0.0.255')), true)
    assert.equal(containsIp(net, parseIp('10.0.1.0')), false)
    assert.equal(containsIp(net, parseIp('9.255.255.255')), false)
  })

  test('never matches across families', () => {
    assert.equal(containsIp(c('0.0.0.0/0'), parseIp('::a00:1')), false)
    assert.equal(containsIp(c('::/0'), parseIp('10.0.0.1')), false)
  })

  test('/0 contains every address of its family; /32 and /128 only themselves', () => {
    assert.equal(containsIp(c('0.0.0.0/0'), parseIp('255.255.255.255')), true)
    assert.equal(containsIp(c('::/0'), parseIp('ffff::1')), true)
    assert.equal(containsIp(c('10.0.0.1/32'), parseIp('10.0.0.1')), true)
    assert.equal(containsIp(c('10.0.0.1/32'), parseIp('10.0.0.2')), false)
    assert.equal(containsIp(c('fd00::1/128'), parseIp('fd00::1')), true)
    assert.equal(containsIp(c('fd00::1/128'), parseIp('fd00::')), false)
  })

  test('v6 /122 block boundaries', () => {
    const b = c('fd80:24e2:f998:72d6::/122')
    assert.equal(containsIp(b, parseIp('fd80:24e2:f998:72d6::3f')), true)
    assert.equal(containsIp(b, parseIp('fd80:24e2:f998:72d6::40')), false)
  })
})

describe('containsCidr and overlaps', () => {
  test('outer contains a nested inner, not the reverse', () => {
    assert.equal(containsCidr(c('10.65.0.0/16'), c('10.65.79.0/26')), true)
    assert.equal(containsCidr(c('10.65.79.0/26'), c('10.65.0.0/16')), false)
  })

  test('a CIDR contains itself', () => {
    assert.equal(containsCidr(c('10.65.0.0/16'), c('10.65.0.0/16')), true)
  })

  test('siblings and disjoint ranges are not contained', () => {
    assert.equal(containsCidr(c('10.0.0.0/25'), c('10.0.0.128/25')), false)
    assert.equal(containsCidr(c('10.0.0.0/24'), c('10.0.1.0/26')), false)
  })

  test('different families never contain each other', () => {
    assert.equal(containsCidr(c('0.0.0.0/0'), c('::/0')), false)
    assert.equal(containsCidr(c('::/0'), c('0.0.0.0/0')), false)
  })

  test('overlaps is symmetric for nesting and false for adjacent ranges', () => {
    assert.equal(overlaps(c('10.0.0.0/8'), c('10.1.2.0/24')), true)
    assert.equal(overlaps(c('10.1.2.0/24'), c('10.0.0.0/8')), true)
    assert.equal(overlaps(c('10.0.0.0/24'), c('10.0.1.0/24')), false)
    assert.equal(overlaps(c('10.0.1.0/24'), c('10.0.0.0/24')), false)
    assert.equal(overlaps(c('fd00::/48'), c('fd00:0:0:1::/64')), true)
    assert.equal(overlaps(c('fd00::/64'), c('fd00:0:0:1::/64')), false)
    assert.equal(overlaps(c('0.0.0.0/0'), c('::/0')), false)
  })

  test('sameCidr compares family, base and prefix', () => {
    assert.equal(sameCidr(c('10.0.0.0/24'), c('10.0.0.7/24')), true)
    assert.equal(sameCidr(c('10.0.0.0/24'), c('10.0.0.0/25')), false)
    assert.equal(sameCidr(c('0.0.0.0/0'), c('::/0')), false)
  })
})

// --- subnets -----------------------------------------------------------------

describe('subnet / subnetCount / subnetIndex', () => {
  test('v4 /16 pool with /26 blocks', () => {
    const pool = c('10.65.0.0/16')
    assert.equal(subnetCount(pool, 26), 1024n)
    assert.equal(fmt(subnet(pool, 26, 0n)), '10.65.0.0/26')
    assert.equal(fmt(subnet(pool, 26, 1n)), '10.65.0.64/26')
    assert.equal(fmt(subnet(pool, 26, 4n)), '10.65.1.0/26')
    assert.equal(fmt(subnet(pool, 26, 1023n)), '10.65.255.192/26')
    assert.equal(subnetIndex(pool, 26, c('10.65.3.128/26')), 14n)
  })

  test('v4 round trip for every block of a /24 with /28 blocks', () => {
    const pool = c('192.168.7.0/24')
    const n = subnetCount(pool, 28)
    assert.equal(n, 16n)
    const seen = new Set<string>()
    for (let i = 0n; i < n; i++) {
      const s = subnet(pool, 28, i)
      assert.equal(s.prefix, 28)
      assert.ok(containsCidr(pool, s), fmt(s))
      assert.equal(subnetIndex(pool, 28, s), i)
      seen.add(fmt(s))
    }
    assert.equal(seen.size, 16)
  })

  test('subnetCount with equal prefix is 1', () => {
    assert.equal(subnetCount(c('10.0.0.0/26'), 26), 1n)
    assert.equal(fmt(subnet(c('10.0.0.0/26'), 26, 0n)), '10.0.0.0/26')
  })

  test('v6 /48 pool with /122 blocks: 2^74 blocks, exact', () => {
    const pool = c('fd80:24e2:f998::/48')
    const n = subnetCount(pool, 122)
    assert.equal(n, 2n ** 74n)
    assert.equal(n, 18889465931478580854784n)
    assert.equal(fmt(subnet(pool, 122, 0n)), 'fd80:24e2:f998::/122')
    assert.equal(fmt(subnet(pool, 122, 1n)), 'fd80:24e2:f998::40/122')
    const last = subnet(pool, 122, n - 1n)
    assert.equal(fmt(last), 'fd80:24e2:f998:ffff:ffff:ffff:ffff:ffc0/122')
    assert.equal(subnetIndex(pool, 122, last), n - 1n)
    for (const i of [0n, 1n, 2n ** 53n + 1n, 0x123456789abcdefn, 2n ** 73n, n - 2n]) {
      const s = subnet(pool, 122, i)
      assert.ok(containsCidr(pool, s), fmt(s))
      assert.equal(subnetIndex(pool, 122, s), i, `index ${i}`)
      assert.equal(subnetIndex(pool, 122, parseCidr(fmt(s))), i, `reparsed index ${i}`)
    }
  })

  test('subnetIndex of the block containing a given address', () => {
    const pool = c('fd80:24e2:f998::/48')
    const block = parseCidr('fd80:24e2:f998:72d6::1234/122')
    assert.equal(fmt(block), 'fd80:24e2:f998:72d6::1200/122')
    assert.equal(subnetIndex(pool, 122, block), (0x72d6n << 58n) | 0x48n)
  })
})

// --- sizes and ordering -----------------------------------------------------------

describe('cidrSize and lastAddress', () => {
  test('exact bigint sizes', () => {
    assert.equal(cidrSize(c('::/0')), 340282366920938463463374607431768211456n)
    assert.equal(cidrSize(c('::/0')), 2n ** 128n)
    assert.equal(cidrSize(c('0.0.0.0/0')), 4294967296n)
    assert.equal(cidrSize(c('10.0.0.0/26')), 64n)
    assert.equal(cidrSize(c('fd00::/122')), 64n)
    assert.equal(cidrSize(c('fd00::/64')), 2n ** 64n)
    assert.equal(cidrSize(c('10.0.0.1/32')), 1n)
    assert.equal(cidrSize(c('::1/128')), 1n)
  })

  test('lastAddress', () => {
    assert.equal(formatIp(4, lastAddress(c('10.65.79.0/26'))), '10.65.79.63')
    assert.equal(formatIp(6, lastAddress(c('::/0'))), 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff')
  })
})

describe('compareCidr', () => {
  test('IPv4 sorts before IPv6', () => {
    assert.ok(compareCidr(c('255.0.0.0/8'), c('::/0')) < 0)
    assert.ok(compareCidr(c('::/0'), c('255.0.0.0/8')) > 0)
  })

  test('addresses compare numerically, not as strings', () => {
    assert.ok(compareCidr(c('10.0.0.64/26'), c('10.0.0.128/26')) < 0)
    assert.ok(compareCidr(c('10.0.0.128/26'), c('10.0.0.64/26')) > 0)
    assert.ok(compareCidr(c('9.0.0.0/8'), c('10.0.0.0/8')) < 0)
  })

  test('same base: shorter prefix first; identical compares 0', () => {
    assert.ok(compareCidr(c('10.0.0.0/16'), c('10.0.0.0/24')) < 0)
    assert.ok(compareCidr(c('10.0.0.0/24'), c('10.0.0.0/16')) > 0)
    assert.equal(compareCidr(c('10.0.0.0/24'), c('10.0.0.5/24')), 0)
  })

  test('sorting a mixed list', () => {
    const input = ['fd00::/64', '10.0.0.128/26', '10.0.0.0/24', '10.0.0.64/26', '::/0', '10.0.0.0/26', '9.9.9.0/24']
    const sorted = input.map(c).sort(compareCidr).map(fmt)
    assert.deepEqual(sorted, [
      '9.9.9.0/24',
      '10.0.0.0/24',
      '10.0.0.0/26',
      '10.0.0.64/26',
      '10.0.0.128/26',
      '::/0',
      'fd00::/64',
    ])
  })
})

describe('parseCidrOrIp', () => {
  test('bare addresses become host routes', () => {
    assert.deepEqual(parseCidrOrIp('10.0.0.1'), {family: 4, base: 0x0a000001n, prefix: 32})
    assert.deepEqual(parseCidrOrIp('fd00::1'), {family: 6, base: v6(0xfd00, 0, 0, 0, 0, 0, 0, 1), prefix: 128})
  })

  test('CIDRs are parsed (non-strict, masked)', () => {
    assert.equal(fmt(parseCidrOrIp('10.0.0.1/24')), '10.0.0.0/24')
    assert.equal(fmt(parseCidrOrIp('fd00::1/120')), 'fd00::/120')
  })

  test('garbage is a ValidationError', () => {
    throwsValidation(() => parseCidrOrIp('not-an-ip'))
    throwsValidation(() => parseCidrOrIp('10.0.0.1/40'))
    throwsValidation(() => parseCidrOrIp(''))
  })
})

test('IPv4 parsing and printing agree with the dotted-quad rules on every octet form', () => {
  // The reference: four parts, each 0-255 without leading zeros (Go's net.ParseIP).
  const part = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/
  const reference = (t: string) => {
    const ps = t.split('.')
    return ps.length === 4 && ps.every((p) => part.test(p))
  }
  const octets = [
    '0',
    '00',
    '01',
    '1',
    '9',
    '10',
    '99',
    '100',
    '199',
    '249',
    '250',
    '255',
    '256',
    '299',
    '1000',
    '',
    ' 1',
    '1 ',
    '+1',
    '-1',
    'a',
    '１',
  ]
  for (const a of octets)
    for (const b of ['0', '255', '07', ''])
      for (const t of [
        `${a}.1.2.${b}`,
        `1.${a}.${b}.4`,
        `${a}.${a}.${a}.${a}`,
        `${a}.1.2`,
        `${a}.1.2.3.4`,
        `1.2.3.${a}.`,
      ]) {
        const ip = tryParseIp(t)
        assert.equal(ip !== undefined, reference(t), t)
        if (ip) {
          assert.equal(
            ip.value,
            t.split('.').reduce((v, p) => (v << 8n) | BigInt(p), 0n),
            t,
          )
          assert.equal(formatIp(4, ip.value), t)
        }
      }
  assert.equal(formatIp(4, 0xffffffffn), '255.255.255.255')
  assert.equal(maskIp(4, parseIp('10.1.2.3').value, 8), parseIp('10.0.0.0').value)
  assert.equal(maskIp(6, parseIp('fd00::1:2').value, 112), parseIp('fd00::1:0').value)
})
