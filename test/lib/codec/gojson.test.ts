import {describe, test} from 'node:test'
import assert from 'node:assert/strict'
import {
  asBigInt,
  compactJson,
  compareBytes,
  encodeJson,
  goMap,
  indentJson,
  parseJson,
  RawJson,
} from '../../../src/lib/codec/gojson.ts'
import {ValidationError} from '../../../src/lib/errors.ts'

// A block value exactly as Go's encoding/json writes it (docs/calico.md#block-json, after one allocation).
const GO_BLOCK =
  '{"cidr":"10.65.0.0/29","affinity":"host:node-1","affinity_claim_time":"2026-01-02T03:04:05Z","allocations":[0,null,null,null,null,null,null,null],"unallocated":[1,2,3,4,5,6,7],"attributes":[{"handle_id":"k8s-pod-network.0123456789abcdef","secondary":{"namespace":"default","node":"node-1","pod":"web-0","timestamp":"2026-01-02 03:04:06.123456789 +0000 UTC"}}],"sequenceNumber":1767323045000000001,"sequenceNumberForAllocation":{"0":1767323045000000000},"deleted":false}'

function rejects(text: string): void {
  assert.throws(
    () => parseJson(text),
    (err: unknown) => {
      assert.ok(
        err instanceof ValidationError,
        `expected ValidationError for ${JSON.stringify(text)}, got ${String(err)}`,
      )
      assert.match(err.message, /malformed JSON/)
      return true
    },
    JSON.stringify(text),
  )
}

// --- parseJson --------------------------------------------------------------

describe('parseJson numbers', () => {
  test('keeps a uint64 sequence number exact as bigint', () => {
    const v = parseJson('1767323045000000001')
    assert.equal(typeof v, 'bigint')
    assert.equal(v, 1767323045000000001n)
    // JSON.parse would have rounded it.
    assert.notEqual(BigInt(JSON.parse('1767323045000000001') as number), 1767323045000000001n)
  })

  test('keeps large integers exact inside objects and arrays', () => {
    const v = parseJson('{"sequenceNumber":1767323045000000001,"list":[18446744073709551615,-9223372036854775808]}')
    assert.deepEqual(v, {sequenceNumber: 1767323045000000001n, list: [18446744073709551615n, -9223372036854775808n]})
  })

  test('small integers are plain numbers', () => {
    assert.equal(parseJson('42'), 42)
    assert.equal(parseJson('0'), 0)
    assert.equal(parseJson('-7'), -7)
    assert.deepEqual(parseJson('[0,1,63]'), [0, 1, 63])
  })

  test('the safe-integer boundary: 2^53-1 is a number, 2^53 is a bigint', () => {
    assert.equal(parseJson('9007199254740991'), 9007199254740991)
    assert.equal(typeof parseJson('9007199254740991'), 'number')
    assert.equal(parseJson('9007199254740992'), 9007199254740992n)
    assert.equal(parseJson('-9007199254740991'), -9007199254740991)
    assert.equal(parseJson('-9007199254740993'), -9007199254740993n)
  })

  test('fractions and exponents are numbers', () => {
    assert.equal(parseJson('1.5'), 1.5)
    assert.equal(parseJson('-0.25'), -0.25)
    assert.equal(parseJson('1e3'), 1000)
    assert.equal(parseJson('2E-2'), 0.02)
  })
})

describe('parseJson values', () => {
  test('literals, strings with escapes and nesting', () => {
    assert.equal(parseJson('true'), true)
    assert.equal(parseJson('false'), false)
    assert.equal(parseJson('null'), null)
    assert.equal(parseJson('"a\\u003cb\\n\\"\\\\\\/"'), 'a<b\n"\\/')
    assert.equal(parseJson('"\\ud83d\\ude00"'), '\u{1f600}')
    assert.deepEqual(parseJson('{"a":{"b":[null,true,"x"]},"c":[]}'), {a: {b: [null, true, 'x']}, c: []})
  })

  test('insignificant whitespace is allowed everywhere JSON allows it', () => {
    assert.deepEqual(parseJson(' \t\n{ "a" : [ 1 , 2 ] ,\r\n "b":{ } } \n'), {a: [1, 2], b: {}})
  })

  test('parses a Go-encoded block with exact sequence numbers', () => {
    const v = parseJson(GO_BLOCK) as Record<string, unknown>
    assert.equal(v.sequenceNumber, 1767323045000000001n)
    assert.deepEqual(v.sequenceNumberForAllocation, {'0': 1767323045000000000n})
    assert.deepEqual(v.unallocated, [1, 2, 3, 4, 5, 6, 7])
    assert.equal(v.affinity, 'host:node-1')
  })

  test('rejects trailing data', () => {
    rejects('{"a":1} x')
    rejects('{"a":1}}')
    rejects('1 2')
    rejects('nullnull')
    rejects('01')
    rejects('1.')
  })

  test('rejects malformed input', () => {
    for (const bad of [
      '',
      '   ',
      '[1,2',
      '{"a" 1}',
      '{a:1}',
      "'x'",
      '-',
      '[1,]',
      '{"a":1,}',
      'tru',
      'nul',
      'NaN',
      '+1',
      '"\u0001"', // raw control character inside a string
      '"\\x"',
      '"\\u12"',
      '"unterminated',
      '{"a":1',
      '[',
      '.5',
    ]) {
      rejects(bad)
    }
  })

  test('a __proto__ member is kept as an ordinary own key', () => {
    const v = parseJson('{"__proto__":{"a":1}}') as Record<string, unknown>
    assert.deepEqual(Object.keys(v), ['__proto__'])
    assert.equal(Object.getPrototypeOf(v), Object.prototype)
  })
})

describe('round trip', () => {
  test('encodeJson(parseJson(go bytes)) reproduces the bytes', () => {
    assert.equal(encodeJson(parseJson(GO_BLOCK)), GO_BLOCK)
    for (const s of [
      'null',
      'true',
      '[]',
      '{}',
      '[1,-2,1.5,"x",null,{"k":[18446744073709551615]}]',
      '"\\u003cscript\\u003e"',
    ]) {
      assert.equal(encodeJson(parseJson(s)), s)
    }
  })

  test('parseJson(encodeJson(v)) gives back v', () => {
    const v = {
      s: 'a<b>&c\u2028\n\u0001é\u{1f600}',
      n: 3,
      big: 1767323045000000001n,
      neg: -1,
      arr: [null, false, true, [1, [2]]],
      o: {x: {}},
    }
    assert.deepEqual(parseJson(encodeJson(v)), v)
  })
})

// --- encodeJson -------------------------------------------------------------

describe('encodeJson strings (Go escaping)', () => {
  test('escapes <, > and & as \\u003c, \\u003e, \\u0026', () => {
    assert.equal(encodeJson('<a href="x">&amp;</a>'), '"\\u003ca href=\\"x\\"\\u003e\\u0026amp;\\u003c/a\\u003e"')
  })

  test('escapes U+2028 and U+2029', () => {
    assert.equal(encodeJson('a\u2028b\u2029c'), '"a\\u2028b\\u2029c"')
  })

  test('short escapes for \\n \\r \\t, quote and backslash', () => {
    assert.equal(encodeJson('\n'), '"\\n"')
    assert.equal(encodeJson('a\r\nb\tc'), '"a\\r\\nb\\tc"')
    assert.equal(encodeJson('say "hi" \\ bye'), '"say \\"hi\\" \\\\ bye"')
  })

  test('other control characters as lower-case \\u00XX', () => {
    assert.equal(encodeJson('\u0001'), '"\\u0001"')
    assert.equal(encodeJson('\u0000'), '"\\u0000"')
    assert.equal(encodeJson('\u001b[0m'), '"\\u001b[0m"')
    assert.equal(encodeJson('\u001f'), '"\\u001f"')
  })

  test('does not escape /, DEL or non-ASCII text', () => {
    assert.equal(encodeJson('a/b'), '"a/b"')
    assert.equal(encodeJson('\u007f'), '"\u007f"')
    assert.equal(encodeJson('héllo ☃ \u{1f600}'), '"héllo ☃ \u{1f600}"')
  })

  test('object keys are escaped the same way', () => {
    assert.equal(encodeJson(new Map([['<k>', 1]])), '{"\\u003ck\\u003e":1}')
    assert.equal(encodeJson({'a&b': 'x'}), '{"a\\u0026b":"x"}')
  })
})

describe('encodeJson values', () => {
  test('scalars', () => {
    assert.equal(encodeJson(null), 'null')
    assert.equal(encodeJson(true), 'true')
    assert.equal(encodeJson(false), 'false')
    assert.equal(encodeJson(0), '0')
    assert.equal(encodeJson(-12), '-12')
    assert.equal(encodeJson(1.5), '1.5')
  })

  test('bigint is written as plain digits', () => {
    assert.equal(encodeJson(1767323045000000001n), '1767323045000000001')
    assert.equal(encodeJson({sequenceNumber: 18446744073709551615n}), '{"sequenceNumber":18446744073709551615}')
    assert.equal(encodeJson([-5n]), '[-5]')
  })

  test('no whitespace; object members in insertion order', () => {
    assert.equal(
      encodeJson({cidr: 'x', affinity: null, allocations: [null, 0], deleted: false}),
      '{"cidr":"x","affinity":null,"allocations":[null,0],"deleted":false}',
    )
    assert.equal(encodeJson({z: 1, a: 2}), '{"z":1,"a":2}')
  })

  test('undefined members are omitted (omitempty); null is kept', () => {
    assert.equal(encodeJson({a: 1, b: undefined, c: null, d: undefined}), '{"a":1,"c":null}')
    assert.equal(encodeJson({only: undefined}), '{}')
  })

  test('empty containers', () => {
    assert.equal(encodeJson([]), '[]')
    assert.equal(encodeJson({}), '{}')
    assert.equal(encodeJson(new Map()), '{}')
  })

  test('RawJson is spliced verbatim', () => {
    assert.equal(
      encodeJson({attributes: new RawJson('null'), x: new RawJson('[ 1 , 2 ]')}),
      '{"attributes":null,"x":[ 1 , 2 ]}',
    )
    assert.equal(encodeJson([new RawJson('{"k":"<"}')]), '[{"k":"<"}]')
  })

  test('a Map keeps insertion order, even for integer-like keys', () => {
    const m = new Map<string, unknown>([
      ['b', 1],
      ['a', 2],
      ['10', 3],
      ['2', 4],
    ])
    assert.equal(encodeJson(m), '{"b":1,"a":2,"10":3,"2":4}')
  })

  test('non-finite numbers and unsupported types throw', () => {
    assert.throws(() => encodeJson(Number.NaN), TypeError)
    assert.throws(() => encodeJson(Number.POSITIVE_INFINITY), TypeError)
    assert.throws(() => encodeJson({f: () => 1}), TypeError)
    assert.throws(() => encodeJson(Symbol('s')), TypeError)
  })
})

describe('encodeJson layout (MarshalIndent) and escapeHtml', () => {
  const sample = {
    name: 'p1',
    empty: [],
    none: {},
    nested: {list: [1, 'two', null, {deep: true}], n: -1.5},
    gone: undefined,
  }

  test('indented as MarshalIndent(v, "", "  "), which is also what JSON.stringify(v, null, 2) writes', () => {
    assert.equal(encodeJson(sample, {indent: '  '}), JSON.stringify(sample, null, 2))
    assert.equal(encodeJson([[]], {indent: '\t'}), '[\n\t[]\n]')
    assert.equal(encodeJson('x', {indent: '  '}), '"x"')
  })

  test('bigints of either sign, in objects, arrays and Maps, are plain integers', () => {
    const v = {a: 18446744073709551615n, b: [-1767323045000000001n], m: new Map([['k', -5n]])}
    assert.equal(
      encodeJson(v, {indent: '  '}),
      '{\n  "a": 18446744073709551615,\n  "b": [\n    -1767323045000000001\n  ],\n  "m": {\n    "k": -5\n  }\n}',
    )
  })

  test('escapeHtml false leaves <, > and & alone and escapes everything else as before', () => {
    assert.equal(encodeJson('<a&b>', {escapeHtml: false}), '"<a&b>"')
    assert.equal(encodeJson({'<k>': 'a\n"\u0001'}, {escapeHtml: false}), '{"<k>":"a\\n\\"\\u0001"}')
    assert.equal(encodeJson('<a&b>', {indent: '  '}), '"\\u003ca\\u0026b\\u003e"')
  })
})

describe('goMap', () => {
  test('sorts keys bytewise: "10" before "2"', () => {
    const m = goMap({'2': 2n, '10': 10n, '1': 1n, '0': 0n})
    assert.deepEqual([...m.keys()], ['0', '1', '10', '2'])
    assert.equal(encodeJson(m), '{"0":0,"1":1,"10":10,"2":2}')
  })

  test('sorts a Map too, upper-case before lower-case, prefixes first', () => {
    const m = goMap(
      new Map([
        ['pod', 'p'],
        ['namespace', 'n'],
        ['Node', 'N'],
        ['node', 'x'],
        ['no', 'y'],
        ['timestamp', 't'],
      ]),
    )
    assert.equal(encodeJson(m), '{"Node":"N","namespace":"n","no":"y","node":"x","pod":"p","timestamp":"t"}')
  })

  test('does not mutate its input', () => {
    const input = new Map([
      ['b', 1],
      ['a', 2],
    ])
    goMap(input)
    assert.deepEqual([...input.keys()], ['b', 'a'])
  })

  test('orders by UTF-8 bytes, not UTF-16 code units', () => {
    const m = goMap({'\u{10000}': 2, '\uffff': 1})
    assert.deepEqual([...m.keys()], ['\uffff', '\u{10000}'])
  })
})

describe('compareBytes', () => {
  test('orders exactly as the UTF-8 bytes do, in place or not', () => {
    // Pairs that differ below U+D800 (compared in place), at surrogates, above U+E000, lone surrogates and prefixes.
    const words = ['', 'a', 'ab', 'b', '10', '2', 'Z', '\u00e9', '\u07ff', '\u0800', '\ud7ff', '\ue000', '\uffff']
    words.push('\u{10000}', '\u{1f600}', 'a\u{10000}', 'a\uffff', '\ud800', '\udc00x', 'x\ud800', 'x\ufffd', '\ufffd')
    for (const a of words)
      for (const b of words) {
        const want = Math.sign(Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')))
        assert.equal(Math.sign(compareBytes(a, b)), want, `${JSON.stringify(a)} vs ${JSON.stringify(b)}`)
      }
  })
})

describe('asBigInt', () => {
  test('accepts bigints and integral numbers', () => {
    assert.equal(asBigInt(5, 'x'), 5n)
    assert.equal(asBigInt(1767323045000000001n, 'x'), 1767323045000000001n)
    // Digit strings come from the block fast path, which quotes sequence numbers before JSON.parse.
    assert.equal(asBigInt('1767323045000000001', 'x'), 1767323045000000001n)
  })

  test('rejects non-integers with a ValidationError naming the field', () => {
    for (const bad of [1.5, '5x', '', '1.5', null, undefined, [1]] as const) {
      assert.throws(
        () => asBigInt(bad as never, 'sequenceNumber'),
        (err: unknown) => err instanceof ValidationError && /sequenceNumber/.test(err.message),
      )
    }
  })
})

test('compactJson drops whitespace outside strings only; indentJson lays out as json.Indent, with its prefix', () => {
  assert.equal(compactJson(' { "a" : [ 1 , 2 ] ,\n\t"b" : "x y\\" ,: " } '), '{"a":[1,2],"b":"x y\\" ,: "}')
  const compact = '{"a":{},"b":[1,{"c":"x,y:{}[]\\"q"},[]],"d":null}'
  assert.equal(compactJson(compact), compact)
  const laidOut = [
    '{',
    '  "a": {},',
    '  "b": [',
    '    1,',
    '    {',
    '      "c": "x,y:{}[]\\"q"',
    '    },',
    '    []',
    '  ],',
    '  "d": null',
    '}',
  ]
  assert.equal(indentJson(compact), laidOut.join('\n'))
  assert.equal(indentJson(compact, '  ', '>>'), laidOut.join('\n>>'))
  assert.equal(indentJson('[]'), '[]')
  assert.equal(indentJson('"s"'), '"s"')
})

test('compactJson and indentJson find each string end past runs of backslashes, and keep what strings hold', () => {
  // Strings ending in escaped backslashes (even runs end the string) or escaped quotes (odd runs do not).
  const values = ['\\', '\\\\', '"', '\\"', 'a\\', 'x"y', ' { } [ ] , : ', '\n\t', '', 'é日本', '\\\\\\"']
  for (const v of values) {
    const obj = {k: v, l: [v, {m: v, n: [1, v]}], [v]: {}, o: []}
    const compact = JSON.stringify(obj)
    assert.equal(compactJson(JSON.stringify(obj, null, 2)), compact, compact)
    assert.equal(compactJson(compact), compact)
    // JSON.stringify lays out as json.Indent does for keys that are not integers and integer numbers.
    assert.equal(indentJson(compact), JSON.stringify(obj, null, 2), compact)
    assert.equal(indentJson(compact, '\t', '> '), JSON.stringify(obj, null, '\t').replaceAll('\n', '\n> '), compact)
  }
  // An unterminated string runs to the end of the text, as before.
  assert.equal(indentJson('{"a":"x\\"'), '{\n  "a": "x\\"')
})
