// WorkloadEndpoint decoding: the native-parser decoder gives exactly what the former lossless-parser decoder
// gave, on endpoints as ipamctl writes them, as Calico writes them, and on damaged ones.
import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {parseJson} from '../../../src/lib/codec/gojson.ts'
import {
  decodeWorkloadEndpoint,
  type EndpointAddresses,
  encodeWorkloadEndpoint,
  NETNS_ANNOTATION,
  newWorkloadEndpoint,
  scanEndpointAddresses,
  type WorkloadEndpoint,
  workloadEndpointFrom,
} from '../../../src/lib/workload/endpoint.ts'

/** The decoder before it switched to the native parser: the same field mapping over the lossless parser. */
const formerDecode = (text: string): WorkloadEndpoint => workloadEndpointFrom(parseJson(text))

const now = new Date('2026-11-22T10:00:00Z')

const written = [
  newWorkloadEndpoint(
    {
      name: 'node--1-k8s-web--0-eth0',
      namespace: 'default',
      orchestrator: 'k8s',
      node: 'node-1',
      // 16+ decimal digits in a row: the former decoder took its slow, tagging path for this one.
      containerID: '1234567890123456789012cccccccccccccccccccccccccccccccccccccccccc',
      pod: 'web-0',
      endpoint: 'eth0',
      ipNetworks: ['10.65.0.5/32'],
      interfaceName: 'cali1234567890a',
      netns: '/var/run/netns/cni-1234',
    },
    now,
  ),
  newWorkloadEndpoint(
    {
      name: 'node--2-cni-abc-eth1',
      namespace: 'ns-ü',
      orchestrator: 'cni',
      node: 'node-2',
      containerID: 'abc',
      endpoint: 'eth1',
      ipNetworks: ['fd00:1::5/128', '10.65.0.6/32'],
      interfaceName: 'eth1',
      mac: 'ee:ee:ee:ee:ee:ee',
    },
    now,
  ),
].map(encodeWorkloadEndpoint)

// As Calico's own components write them: more metadata and spec members, numbers (some beyond 2^53, where
// the two parsers differ) in members the decoder does not read, escapes in strings.
const calico = JSON.stringify({
  kind: 'WorkloadEndpoint',
  apiVersion: 'projectcalico.org/v3',
  metadata: {
    name: 'k8s--node-k8s-api--7f9c-eth0',
    generateName: 'api-7f9c-',
    namespace: 'prod',
    uid: 'e3b0c442-98fc-1c14-9afb-f4c8996fb924',
    resourceVersion: '18446744073709551615',
    // biome-ignore lint/correctness/noPrecisionLoss: any integer above 2^53 will do; it must take the bigint path
    generation: 12345678901234567890,
    creationTimestamp: '2026-01-02T03:04:05Z',
    labels: {
      app: 'api',
      'projectcalico.org/namespace': 'prod',
      'projectcalico.org/orchestrator': 'k8s',
      quote: 'a"b\\c<&>\u2028',
    },
    annotations: {[NETNS_ANNOTATION]: '/proc/1234/ns/net', other: 'x'},
  },
  spec: {
    orchestrator: 'k8s',
    node: 'k8s-node',
    containerID: '9999999999999999999999999999999999999999999999999999999999999999',
    pod: 'api-7f9c',
    endpoint: 'eth0',
    serviceAccountName: 'default',
    ipNetworks: ['10.65.1.2/32', 'fd00::0001/128'],
    ipNATs: [{internalIP: '10.65.1.2', externalIP: '1.2.3.4'}],
    profiles: ['kns.prod', 'ksa.prod.default'],
    interfaceName: 'calie3b0c44298f',
    mac: '0a:58:0a:41:01:02',
    ports: [{name: 'http', port: 8080, protocol: 'TCP', hostPort: 0}],
    allowSpoofedSourcePrefixes: [],
  },
})

const damaged = [
  '{}',
  'null',
  '[]',
  '{"metadata":null,"spec":null}',
  '{"metadata":{"name":5,"namespace":["x"],"labels":null},"spec":{"orchestrator":"cni","ipNetworks":"10.0.0.1/32","profiles":null,"pod":7,"mac":false}}',
  '{"spec":{"ipNetworks":[1,"10.0.0.1/32",null,true],"profiles":[2]}}',
  '{"metadata":{"annotations":{"ipamctl.io/netns":""}},"spec":{"node":"n"}}',
  '{"metadata":{"name":"dup","name":"last wins"}}',
]

describe('decodeWorkloadEndpoint', () => {
  for (const [what, texts] of [
    ['as ipamctl writes them', written],
    ['as Calico writes them', [calico]],
    ['damaged', damaged],
  ] as const) {
    it(`decodes exactly as the former lossless decoder did: endpoints ${what}`, () => {
      for (const text of texts) assert.deepEqual(decodeWorkloadEndpoint(text), formerDecode(text), text)
    })
  }

  it('round-trips what ipamctl writes', () => {
    const w = newWorkloadEndpoint(
      {
        name: 'n-k8s-p-eth0',
        namespace: 'default',
        orchestrator: 'k8s',
        node: 'n',
        containerID: 'c',
        pod: 'p',
        endpoint: 'eth0',
        ipNetworks: ['10.0.0.1/32'],
        interfaceName: 'cali0',
        netns: '/run/netns/x',
      },
      now,
    )
    assert.deepEqual(decodeWorkloadEndpoint(encodeWorkloadEndpoint(w)), {...w, mac: undefined})
  })

  it('rejects malformed JSON with the same error as before', () => {
    for (const text of ['', '{', '{"metadata":', 'not json']) {
      let former: unknown
      try {
        formerDecode(text)
      } catch (err) {
        former = err
      }
      assert.ok(former instanceof Error)
      assert.throws(
        () => decodeWorkloadEndpoint(text),
        (err: Error) => err.constructor === former.constructor && err.message === former.message,
      )
    }
  })
})

/** What the full decoder gives for the members the lean reader reads. */
function addressesOf(text: string): EndpointAddresses {
  const w = decodeWorkloadEndpoint(text)
  return {name: w.name, namespace: w.namespace, node: w.node, netns: w.netns, ipNetworks: w.ipNetworks}
}

/** What `ipam check` uses: the lean reader, the full decoder when it declines. */
const checkRead = (text: string): EndpointAddresses => scanEndpointAddresses(text) ?? addressesOf(text)

// Valid JSON in shapes Go does not write but may be read: members reordered, whitespace, extra members holding
// every kind of value, several and IPv6 addresses, members missing.
const plainVariants = [
  '{"spec":{"ipNetworks":["10.65.0.7/32","10.65.0.8/32"],"node":"n-1"},"metadata":{"namespace":"ns","name":"w"}}',
  ' {\n  "metadata" : { "name" : "w" , "namespace" : "ns" } ,\n\t"spec" : { "node" : "n" , "ipNetworks" : [ "fd00::5/128" ] }\n} ',
  '{"kind":"WorkloadEndpoint","x":[1,-2.5e3,true,false,null,{"a":{"b":[]}},"}{]["],"metadata":{"labels":{"k":"v{}"},"name":"w","annotations":{"ipamctl.io/netns":"/run/netns/a","other":{"n":1}}},"spec":{"ports":[{"port":80}],"ipNetworks":["10.0.0.1/32","fd00::1/128","10.0.0.2"]}}',
  '{"metadata":{},"spec":{}}',
  '{"metadata":{"name":"only-name"}}',
  '{"spec":{"ipNetworks":[]}}',
  '{}',
  '{"metadata":{"annotations":{"ipamctl.io/netns":""}},"spec":{"node":"n"}}',
]

describe('scanEndpointAddresses', () => {
  it('reads what the full decoder reads, for endpoints as ipamctl and as Calico write them', () => {
    for (const text of [...written, ...plainVariants]) {
      const lean = scanEndpointAddresses(text)
      assert.ok(lean, text)
      assert.deepEqual(lean, addressesOf(text), text)
    }
  })

  it('declines escaped strings, repeated members and members of another type; check then reads them in full', () => {
    const declined = [
      calico, // escapes in a label
      '{"metadata":{"name":"w\\u002dx","namespace":"ns"},"spec":{"ipNetworks":["10.0.0.1/32"]}}',
      '{"metadata":{"name":"a"},"metadata":{"namespace":"b"}}',
      '{"metadata":{"name":"dup","name":"last wins"}}',
      '{"spec":{"ipNetworks":["10.0.0.1/32"]},"spec":{"ipNetworks":["10.0.0.2/32"]}}',
      '{"metadata":null,"spec":null}',
      '{"metadata":{"name":5}}',
      '{"spec":{"ipNetworks":[1,"10.0.0.1/32",null,true]}}',
      '{"spec":{"ipNetworks":"10.0.0.1/32"}}',
      '{"metadata":{"annotations":{"ipamctl.io/netns":7}}}',
      'null',
      '[]',
    ]
    for (const text of declined) {
      assert.equal(scanEndpointAddresses(text), undefined, text)
      assert.deepEqual(checkRead(text), addressesOf(text), text)
    }
    assert.deepEqual(checkRead(calico).ipNetworks, ['10.65.1.2/32', 'fd00::0001/128'])
    assert.equal(checkRead('{"metadata":{"name":"dup","name":"last wins"}}').name, 'last wins')
  })

  it('declines malformed text, which the full decoder then refuses as before', () => {
    for (const text of ['', '{', '{"metadata":', 'not json', '{"spec":{"ipNetworks":["10.0.0.1/32",]}}', '{} {}']) {
      assert.equal(scanEndpointAddresses(text), undefined, text)
      assert.throws(() => decodeWorkloadEndpoint(text))
    }
  })
})
