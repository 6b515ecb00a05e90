// Result formats per cniVersion, byte for byte as the Go library prints them, and parsing of any version.
import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {CniError} from '../../../src/lib/cni/errors.ts'
import {
  type CniResult,
  encodeResult,
  formatResult,
  hostCidr,
  ipamResult,
  parseResult,
} from '../../../src/lib/cni/result.ts'
import type {AssignedIp} from '../../../src/lib/ipam/autoassign.ts'

const v4: AssignedIp = {address: '10.65.79.5', family: 4, cidr: '10.65.79.5/26', block: '10.65.79.0/26'}
const v6: AssignedIp = {address: 'fd00:65::7', family: 6, cidr: 'fd00:65::7/122', block: 'fd00:65::/122'}

// calico-ipam's result for one address (0.3.1, docs/calico.md#ipam-plugin-result), laid out the way Go's json.MarshalIndent(r, "", "    ") writes it.
const REF_031 = `{
    "cniVersion": "0.3.1",
    "ips": [
        {
            "version": "4",
            "address": "10.65.79.5/26"
        }
    ],
    "routes": [
        {
            "dst": "10.65.79.5/26"
        }
    ],
    "dns": {}
}`

describe('formatResult: IPAM results', () => {
  it('0.3.1 matches the reference example byte for byte (no trailing newline)', () => {
    assert.equal(formatResult(ipamResult([v4]), '0.3.1'), REF_031)
    // Same value as the reference's compact rendering.
    assert.deepEqual(
      JSON.parse(REF_031),
      JSON.parse(
        '{"cniVersion": "0.3.1", "ips": [ { "version": "4", "address": "10.65.79.5/26" } ], "routes": [ { "dst": "10.65.79.5/26" } ], "dns": {} }',
      ),
    )
  })

  it('0.3.0 and 0.4.0 have the same layout', () => {
    assert.equal(formatResult(ipamResult([v4]), '0.4.0'), REF_031.replace('0.3.1', '0.4.0'))
    assert.equal(formatResult(ipamResult([v4]), '0.3.0'), REF_031.replace('0.3.1', '0.3.0'))
  })

  it('1.0.0 and 1.1.0 drop ips[].version', () => {
    const want = `{
    "cniVersion": "1.0.0",
    "ips": [
        {
            "address": "10.65.79.5/26"
        }
    ],
    "routes": [
        {
            "dst": "10.65.79.5/26"
        }
    ],
    "dns": {}
}`
    assert.equal(formatResult(ipamResult([v4]), '1.0.0'), want)
    assert.equal(formatResult(ipamResult([v4]), '1.1.0'), want.replace('1.0.0', '1.1.0'))
  })

  it('0.2.0 and 0.1.0 use ip4/ip6 with the routes inside', () => {
    const want = `{
    "cniVersion": "0.2.0",
    "ip4": {
        "ip": "10.65.79.5/26",
        "routes": [
            {
                "dst": "10.65.79.5/26"
            }
        ]
    },
    "dns": {}
}`
    assert.equal(formatResult(ipamResult([v4]), '0.2.0'), want)
    assert.equal(formatResult(ipamResult([v4]), '0.1.0'), want.replace('0.2.0', '0.1.0'))
  })

  it('dual stack in every layout', () => {
    const r = ipamResult([v4, v6])
    assert.deepEqual(encodeResult(r, '0.4.0'), {
      cniVersion: '0.4.0',
      ips: [
        {version: '4', address: '10.65.79.5/26'},
        {version: '6', address: 'fd00:65::7/122'},
      ],
      routes: [{dst: '10.65.79.5/26'}, {dst: 'fd00:65::7/122'}],
      dns: {},
    })
    assert.deepEqual(encodeResult(r, '1.0.0'), {
      cniVersion: '1.0.0',
      ips: [{address: '10.65.79.5/26'}, {address: 'fd00:65::7/122'}],
      routes: [{dst: '10.65.79.5/26'}, {dst: 'fd00:65::7/122'}],
      dns: {},
    })
    assert.deepEqual(encodeResult(r, '0.2.0'), {
      cniVersion: '0.2.0',
      ip4: {ip: '10.65.79.5/26', routes: [{dst: '10.65.79.5/26'}]},
      ip6: {ip: 'fd00:65::7/122', routes: [{dst: 'fd00:65::7/122'}]},
      dns: {},
    })
  })

  it('an IP=-style result has no routes', () => {
    const r: CniResult = {ips: [{address: '10.65.3.3/32'}], dns: {}}
    assert.equal(
      formatResult(r, '1.0.0'),
      '{\n    "cniVersion": "1.0.0",\n    "ips": [\n        {\n            "address": "10.65.3.3/32"\n        }\n    ],\n    "dns": {}\n}',
    )
  })

  it('0.2.0 keeps only the first address of each family', () => {
    const r: CniResult = {ips: [{address: '10.0.0.1/24'}, {address: '10.0.0.2/24'}], dns: {}}
    assert.deepEqual(encodeResult(r, '0.2.0'), {cniVersion: '0.2.0', ip4: {ip: '10.0.0.1/24'}, dns: {}})
    assert.throws(() => encodeResult({ips: []}, '0.2.0'), /cannot convert: no valid IP addresses/)
  })
})

describe('formatResult: main-plugin results', () => {
  const main: CniResult = {
    interfaces: [
      {name: 'cali82111e10a96', mac: 'ee:ee:ee:ee:ee:ee'},
      {name: 'eth0', mac: '1a:b9:69:4d:7f:a0', mtu: 1440, sandbox: '/var/run/netns/x'},
    ],
    ips: [{address: '10.65.79.5/32', interface: 1, gateway: '169.254.1.1'}],
    routes: [{dst: '0.0.0.0/0', gw: '169.254.1.1'}],
    dns: {nameservers: ['10.96.0.10'], search: ['svc.cluster.local']},
  }

  it('1.0.0 keeps interface indexes, mtu, gateways and dns', () => {
    assert.deepEqual(encodeResult(main, '1.0.0'), {
      cniVersion: '1.0.0',
      interfaces: [
        {name: 'cali82111e10a96', mac: 'ee:ee:ee:ee:ee:ee'},
        {name: 'eth0', mac: '1a:b9:69:4d:7f:a0', mtu: 1440, sandbox: '/var/run/netns/x'},
      ],
      ips: [{interface: 1, address: '10.65.79.5/32', gateway: '169.254.1.1'}],
      routes: [{dst: '0.0.0.0/0', gw: '169.254.1.1'}],
      dns: {nameservers: ['10.96.0.10'], search: ['svc.cluster.local']},
    })
    // Field order as Go writes it: version, interface, address, gateway.
    assert.match(
      formatResult(main, '0.4.0'),
      /"version": "4",\n\s+"interface": 1,\n\s+"address": "10\.65\.79\.5\/32",\n\s+"gateway": "169\.254\.1\.1"/,
    )
  })

  it('0.4.0 drops the 1.x interface fields', () => {
    const e = encodeResult(main, '0.4.0') as {interfaces: Record<string, unknown>[]}
    assert.deepEqual(e.interfaces[1], {name: 'eth0', mac: '1a:b9:69:4d:7f:a0', sandbox: '/var/run/netns/x'})
  })
})

describe('parseResult', () => {
  const roundTrip = (r: CniResult, v: string) => parseResult(JSON.parse(formatResult(r, v)), v)

  it('reads back every version into the internal form', () => {
    const r = ipamResult([v4, v6])
    for (const v of ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0', '0.2.0', '0.1.0'])
      assert.deepEqual(roundTrip(r, v), r, v)
  })

  it('reads interfaces and indexes', () => {
    const r: CniResult = {
      interfaces: [{name: 'veth1'}, {name: 'eth0', mac: 'aa:bb:cc:dd:ee:ff', sandbox: '/ns'}],
      ips: [{address: '10.0.0.5/32', interface: 1}],
      routes: [{dst: '0.0.0.0/0', gw: '169.254.1.1'}],
      dns: {},
    }
    assert.deepEqual(roundTrip(r, '1.0.0'), r)
    assert.deepEqual(roundTrip(r, '0.4.0'), r)
  })

  it('uses the config version when the result has none, and canonicalises addresses', () => {
    const r = parseResult({ips: [{address: 'FD00::0:7/122'}]}, '1.0.0')
    assert.deepEqual(r.ips, [{address: 'fd00::7/122'}])
    const old = parseResult({ip4: {ip: '10.1.1.1/24', gateway: '10.1.1.254'}}, '0.2.0')
    assert.deepEqual(old.ips, [{address: '10.1.1.1/24', gateway: '10.1.1.254'}])
  })

  it('rejects malformed results with a decoding error', () => {
    const bad = (raw: unknown, re: RegExp) =>
      assert.throws(
        () => parseResult(raw, '1.0.0'),
        (e: unknown) => e instanceof CniError && e.code === 6 && re.test(e.msg),
      )
    bad('x', /must be a JSON object/)
    bad({ips: [{address: '10.0.0.1'}]}, /invalid CIDR address: 10\.0\.0\.1/)
    bad({ips: [{address: '10.0.0.1/33'}]}, /invalid CIDR address/)
    bad({ips: {}}, /ips must be a list/)
    bad({ips: [{address: '10.0.0.1/24', interface: 2}]}, /does not index an interface/)
    bad({routes: [{dst: 'nope'}]}, /invalid CIDR address: nope/)
  })
})

describe('hostCidr', () => {
  it('narrows to /32 or /128', () => {
    assert.equal(hostCidr('10.65.79.5/26'), '10.65.79.5/32')
    assert.equal(hostCidr('fd00:65:0::7/122'), 'fd00:65::7/128')
    assert.equal(hostCidr('10.0.0.1'), '10.0.0.1/32')
  })
})
