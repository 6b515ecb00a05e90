// yamlListItem writes simple resources itself and must give exactly what the `yaml` package writes for the same
// item inside a List (datastore export's byte-identical output depends on it): compared here on strings near
// every quoting rule of YAML 1.2's core schema, and on shapes the direct writer leaves to the package.
import assert from 'node:assert/strict'
import {test} from 'node:test'
import {loadYaml, parseSimpleYaml, yamlListItem} from '../../../src/lib/codec/yaml.ts'

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
