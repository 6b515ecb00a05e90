// yamlListItem writes simple resources itself and must give exactly what the `yaml` package writes for the same
// item inside a List (datastore export's byte-identical output depends on it): compared here on strings near
// every quoting rule of YAML 1.2's core schema, and on shapes the direct writer leaves to the package.
import assert from 'node:assert/strict'
import {test} from 'node:test'
import {parseJson} from '../../../src/lib/codec/gojson.ts'
import {
  itemShapeCounts,
  loadYaml,
  parseSimpleYaml,
  yamlListItem,
  yamlListItemOfJson,
} from '../../../src/lib/codec/yaml.ts'

const HEAD = 'apiVersion: v\nitems:\n'
const TAIL = 'kind: L\nmetadata: {}\n'
function byPackage(item: unknown): string {
  const t = loadYaml().stringify({apiVersion: 'v', items: [item], kind: 'L', metadata: {}}, {lineWidth: 0})
  return t.slice(HEAD.length, t.length - TAIL.length)
}

const STRINGS = [
  'a',
  'default',
  'k8s',
  'a-b_c',
  'kns.default',
  '10.0.0.0/32',
  'fd00::1/128',
  'ee:ee:ee:ee:ee:ee',
  '2026-11-24T16:22:53Z',
  '000000000000cccc',
  '1234e',
  '1.2.3',
  'x'.repeat(300),
  'projectcalico.org/namespace',
  '12',
  '0',
  '-0',
  '00',
  '010',
  '+1',
  '1.',
  '.5',
  '1e5',
  '0.5e-3',
  '1e',
  '1_000',
  '0b101',
  '1:20',
  '0x1F',
  '0x',
  '0o17',
  '0o8',
  'inf',
  '.inf',
  '-.inf',
  'NaN',
  'nan',
  'yes',
  'Yes',
  'no',
  'on',
  'OFF',
  'y',
  'n',
  'true',
  'False',
  'null',
  'NULL',
  '~',
  '',
  ' a',
  'a ',
  'a b',
  'a:',
  'a: b',
  'a:b',
  '#a',
  'a#b',
  'a #b',
  '-a',
  '- a',
  '?a',
  '&a',
  '*a',
  '!a',
  '%a',
  '@a',
  '`a',
  '"a',
  "'a",
  'a,b',
  '[a]',
  '{a}',
  'a\nb',
  'a\tb',
  'é',
  '日本',
]

test('yamlListItem gives the yaml package bytes for every string as a value, a key, in a list and nested', () => {
  let fast = 0
  for (const s of STRINGS) {
    for (const item of [
      {k: s},
      {[s]: 'v'},
      {k: [s, 1, -3, null, true, false]},
      {k: {m: s, n: {o: [s]}}},
      {k: [{a: s, b: {c: []}}, {}], z: {}},
    ]) {
      assert.equal(yamlListItem(item), byPackage(item), JSON.stringify(item))
      fast++
    }
  }
  assert.ok(fast > 0)
})

test('yamlListItem: shapes left to the package come out the same', () => {
  for (const item of [
    {},
    [],
    'x',
    5,
    null,
    {a: {}},
    {a: []},
    {a: 1.5},
    {a: -0},
    {a: 2 ** 60},
    {a: 12345678901234567890n},
    {a: [[1]]},
    {a: [{}]},
    {a: 'two\nlines\n\nand a gap'},
  ])
    assert.equal(
      yamlListItem(item),
      byPackage(item),
      JSON.stringify(item, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v)),
    )
})

test('parseSimpleYaml reads what the yaml package reads, or leaves the document to it', () => {
  const simple = [
    'apiVersion: projectcalico.org/v3\nkind: CalicoAPIConfig\nspec: {}\n',
    'apiVersion: projectcalico.org/v3\nkind: CalicoAPIConfig\nmetadata:\n  name: x\nspec:\n  datastoreType: etcdv3\n  etcdEndpoints: http://127.0.0.1:2379,http://10.0.0.2:2379\n  etcdKeyFile: /etc/calico/key.pem\n',
    'a:\n    b:\n        c: d\n    e: f\ng: h',
    'spec:\n  datastorePath: /var/lib/ipamctl/ipam.db\n',
    'a: 1,2\nb: x,\nc: 1.5,2\nd: /\ne: //x:1\n',
  ]
  const left = [
    '',
    '# comment\nkind: X\n',
    'kind: X # comment\n',
    "kind: 'X'\n",
    'kind: "X"\n',
    'spec:\n',
    'spec:\nkind: X\n',
    'a: 1\n',
    'a: true\n',
    'a: null\n',
    'a: yes\n',
    'a: ~\n',
    'a: []\n',
    'a: {b: c}\n',
    'a: b\na: c\n',
    'a: b\r\n',
    '---\na: b\n',
    '  a: b\n',
    'a:\n  b: c\n d: e\n',
    'a:\n  - b\n',
    'a: &x b\n',
    'a: b: c\n',
    'a:b\n',
    'a:  b\n',
    '\ta: b\n',
    'a: b \n',
    'a: |\n  b\n',
    'a: ,b\n',
    'a: b,:\n',
  ]
  for (const text of simple) {
    const got = parseSimpleYaml(text)
    assert.ok(got, text)
    assert.deepEqual(got, loadYaml().parse(text), text)
  }
  for (const text of left) {
    const got = parseSimpleYaml(text)
    if (got !== undefined) assert.deepEqual(got, loadYaml().parse(text), text)
    assert.equal(got, undefined, text)
  }
})

// yamlListItemOfJson: datastore export writes most resources straight from their stored JSON text. Whatever it
// writes must be what parsing the text, dropping the local metadata and calling yamlListItem gives; where it cannot
// be sure (or the text is not JSON at all) it must give undefined, never other bytes.
const DROP = {member: 'metadata', keys: ['uid', 'resourceVersion', 'creationTimestamp']}

/** What the export writes for `text` without the direct path, or 'refused' when the text is not JSON. */
function viaParse(text: string): string {
  let obj: unknown
  try {
    obj = parseJson(text)
  } catch {
    return 'refused'
  }
  const md = (obj as {metadata?: unknown} | null)?.metadata
  if (typeof md === 'object' && md !== null && !Array.isArray(md))
    for (const k of DROP.keys) delete (md as Record<string, unknown>)[k]
  return yamlListItem(obj)
}

/** Asserts the direct path agrees with viaParse on `text`; true when it wrote the item itself. */
function agrees(text: string): boolean {
  const direct = yamlListItemOfJson(text, DROP)
  if (direct === undefined) return false
  assert.equal(direct, viaParse(text), text)
  return true
}

const RESOURCE = {
  kind: 'WorkloadEndpoint',
  apiVersion: 'projectcalico.org/v3',
  metadata: {
    name: 'node--0-k8s-pod--0-eth0',
    namespace: 'default',
    uid: '821e90e0-f2c9-4da3-86e2-fc7f33a9a039',
    resourceVersion: '17',
    creationTimestamp: '2026-11-24T22:30:59Z',
    labels: {'projectcalico.org/namespace': 'default', 'projectcalico.org/orchestrator': 'k8s'},
  },
  spec: {
    orchestrator: 'k8s',
    node: 'node-0',
    containerID: '1234567890123456789012cccccccccccccccccccccccccccccccccccccccccc',
    pod: 'pod-0',
    endpoint: 'eth0',
    ipNetworks: ['10.0.0.0/32', 'fd00::1/128'],
    profiles: ['kns.default'],
    interfaceName: 'cali00000000000',
    mac: 'ee:ee:ee:ee:ee:ee',
    ports: [{name: 'http', port: 80, protocol: 'TCP', hostPort: 0}],
    allowSpoofedSourcePrefixes: [],
    qos: {},
    flags: [true, false, null, -3],
  },
}

test('yamlListItemOfJson writes a typical resource itself, as parse + yamlListItem does, compact or spaced', () => {
  for (const text of [
    JSON.stringify(RESOURCE),
    JSON.stringify(RESOURCE, null, 2),
    ` \t\r\n${JSON.stringify(RESOURCE, null, '\t')}\n `,
    JSON.stringify({...RESOURCE, metadata: {uid: 'u', resourceVersion: '1', creationTimestamp: 't'}}),
    JSON.stringify({metadata: {name: 'a', uid: 'u'}, spec: {metadata: {uid: 'kept'}}, uid: 'kept'}),
  ])
    assert.ok(agrees(text), text)
})

test('yamlListItemOfJson agrees with parse + yamlListItem on every string near a quoting rule, or leaves it', () => {
  let direct = 0
  for (const s of STRINGS)
    for (const item of [
      {k: s},
      {[s]: 'v'},
      {k: [s, 1, -3, null, true, false]},
      {k: {m: s, n: {o: [s]}}},
      {k: [{a: s, b: {c: []}}, {}], z: {}},
      {metadata: {uid: s, name: s}},
    ])
      if (agrees(JSON.stringify(item))) direct++
  assert.ok(direct > STRINGS.length, `${direct} written directly`)
})

test('yamlListItemOfJson leaves to the parser what JSON.parse reads differently or refuses', () => {
  const left = [
    '{"a":"x","a":"y"}',
    '{"b":"x","1":"y"}',
    '{"0a":"x"}',
    '{"__proto__":"x"}',
    '{"a":"\\u0041"}',
    '{"a":"x\\"y"}',
    '{"a\\"b":"x"}',
    '{"a":1.0}',
    '{"a":1e2}',
    '{"a":1E2}',
    '{"a":-0}',
    '{"a":01}',
    '{"a":1234567890123456}',
    '{"a":9007199254740993}',
    '{"a":-}',
    '{"a":+1}',
    '{"a":1,}',
    '{"a":1 "b":2}',
    '{"a":1}x',
    '{"a":1}}',
    '\uFEFF{"a":1}',
    '{"a":[1,[2]]}',
    '{"a":"x',
    '{"a":"x"',
    '{"a"',
    '{"a":tru}',
    '{"a":truex}',
    '{"a":nul}',
    '{"a":True}',
    '{}',
    '[]',
    '"x"',
    'null',
    '',
    '{"metadata":{"uid":5}}',
    '{"metadata":{"uid":"a\\"b"}}',
    '{"metadata":{"uid":"u","uid":"v"}}',
    '{"a":"x\ny"}',
    '{"a":"\u0001"}',
    '{"a\nb":"x"}',
    "{'a':'x'}",
    '{a:"x"}',
    '{"a":"x"} {"b":"y"}',
  ]
  for (const text of left) {
    assert.equal(yamlListItemOfJson(text, DROP), undefined, text)
    // Whatever the parser makes of it is unchanged: the export's fallback is the only writer here.
    viaParse(text)
  }
  for (const text of [
    '{"metadata":{"uid":"u"}}',
    '{"metadata":[1]}',
    '{"a":[{}],"b":{"c":{}}}',
    '{"a":[ ],"b":{ },"c":[ {} , { "d" : [ ] } ]}',
    '{"a":-5,"b":0,"c":123456789012345,"d":-123456789012345}',
  ])
    assert.ok(agrees(text), text)
})

test('yamlListItemOfJson on thousands of generated and mutated texts: the same bytes or undefined', () => {
  let seed = 7
  const rnd = (n: number) => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff
    return seed % n
  }
  const pick = <T>(xs: readonly T[]): T => xs[rnd(xs.length)]!
  const KEYS = [
    'a',
    'name',
    'metadata',
    'uid',
    'resourceVersion',
    'spec',
    'x.y/z',
    '1',
    'a b',
    'é',
    '',
    'creationTimestamp',
  ]
  const SCALARS: unknown[] = [...STRINGS, 0, 1, -1, 15, 2 ** 53, 1.5, -0, true, false, null]
  const key = () => (rnd(40) === 0 ? pick(KEYS) : pick(['a', 'b', 'spec', 'c.d/e']))
  const COMMON: unknown[] = ['default', 'k8s', '10.0.0.0/32', 'fd00::1/128', 'x', 7, -2, true, null]
  const value = (depth: number): unknown => {
    const r = rnd(10)
    // Mostly what the direct path writes, so that the comparisons reach deep into the generated shapes.
    if (depth > 3 || r < 5) return rnd(40) === 0 ? pick(SCALARS) : pick(COMMON)
    if (r < 7) return Array.from({length: rnd(4)}, () => (rnd(3) === 0 ? {} : value(depth + 1)))
    const o: Record<string, unknown> = {}
    for (let i = rnd(5); i > 0; i--) o[key()] = value(depth + 1)
    return o
  }
  let direct = 0
  let mutatedDirect = 0
  for (let n = 0; n < 3000; n++) {
    const o: Record<string, unknown> = {}
    for (let i = 1 + rnd(5); i > 0; i--) o[key()] = value(0)
    if (rnd(2) === 0) o.metadata = {uid: 'u', name: pick(STRINGS), resourceVersion: '3', labels: value(2)}
    const text = JSON.stringify(o, null, rnd(3) === 0 ? 1 : undefined)
    if (agrees(text)) direct++
    // One character removed, doubled or replaced: mostly not JSON any more, sometimes other JSON.
    const at = rnd(text.length)
    const ch = pick(['"', ',', ':', '{', '}', '[', ']', '\\', ' ', '0', '-', 'e', '.', 'a'])
    for (const mutated of [
      text.slice(0, at) + text.slice(at + 1),
      text.slice(0, at) + text[at] + text.slice(at),
      text.slice(0, at) + ch + text.slice(at + 1),
    ])
      if (agrees(mutated)) mutatedDirect++
  }
  assert.ok(direct > 400, `${direct} written directly`)
  assert.ok(mutatedDirect > 0, `${mutatedDirect} mutated texts written directly`)
})

// The shapes yamlListItemOfJson learns (ItemShapes): a text written from a learnt shape must be exactly what
// walking it gives, and a text a shape cannot be sure of must still be walked (or refused) as before.
test('yamlListItemOfJson from a learnt shape: every value near a quoting rule written as walking it writes, or left', () => {
  const items = (s: unknown) => [
    {kind: 'K', metadata: {name: s, uid: 'u', labels: {'a.b/c': s}}, spec: {v: s, list: [s, 's'], o: {}, e: []}},
    {k: [{a: s, b: {c: []}}, {}], z: {}, num: 5, t: true, u: null},
    {metadata: {uid: 'u', resourceVersion: '1'}, spec: {x: s}},
  ]
  const values: unknown[] = [...STRINGS, 0, -0, 7, -17, 1000, 1.5, 2 ** 53, 123456789012345, true, false, null]
  for (let shape = 0; shape < items(0).length; shape++) {
    const drop = {member: 'metadata', keys: ['uid', 'resourceVersion', 'creationTimestamp']}
    // The shape is learnt from a text with plain values, then tried first for every text after it.
    assert.ok(yamlListItemOfJson(JSON.stringify(items('plain')[shape]), drop) !== undefined)
    assert.equal(itemShapeCounts(drop).learnt, 1)
    let expectedWritten = 0
    for (const v of values) {
      const text = JSON.stringify(items(v)[shape])
      // The oracle: a fresh drop has no shape, so the text is walked.
      const walked = yamlListItemOfJson(text, {...drop})
      const before = itemShapeCounts(drop).written
      assert.equal(yamlListItemOfJson(text, drop), walked, text)
      if (itemShapeCounts(drop).written > before) expectedWritten++
      if (walked !== undefined) assert.equal(walked, viaParse(text), text)
    }
    // The plain strings keep the shape; the others changed the kind of a value, or were walked and refused.
    assert.ok(expectedWritten >= 20, `${expectedWritten} of ${values.length} written from the shape`)
  }
})

test('yamlListItemOfJson: a shape matches only compact texts of the same keys, and stops learning after its budget', () => {
  const drop = {member: 'metadata', keys: ['uid']}
  const base = {kind: 'K', metadata: {name: 'a', uid: 'u1'}, spec: {port: 80, ips: ['10.0.0.1/32']}}
  assert.ok(yamlListItemOfJson(JSON.stringify(base), drop))
  const variants = [
    JSON.stringify(base, null, 2),
    JSON.stringify({...base, spec: {port: 80, ips: ['10.0.0.1/32', 'fd00::1/128']}}),
    JSON.stringify({...base, spec: {ips: ['10.0.0.1/32'], port: 80}}),
    JSON.stringify({...base, metadata: {name: 'a', uid: 'with\\backslash'}}),
    JSON.stringify({...base, metadata: {name: 'a', uid: 'quote"inside'}}),
    JSON.stringify({...base, spec: {port: '80', ips: ['10.0.0.1/32']}}),
    JSON.stringify({...base, spec: {port: 80, ips: ['a b']}}),
  ]
  for (const text of variants) {
    const walked = yamlListItemOfJson(text, {...drop})
    assert.equal(yamlListItemOfJson(text, drop), walked, text)
    if (walked !== undefined) assert.equal(walked, viaParse(text).replace('    uid: u1\n', ''), text)
  }
  for (let i = 0; i < 100; i++) yamlListItemOfJson(JSON.stringify({[`key${i}`]: 'v'}), drop)
  assert.equal(itemShapeCounts(drop).learnt, 32)
})
