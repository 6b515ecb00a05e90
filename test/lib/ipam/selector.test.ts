import {test} from 'node:test'
import assert from 'node:assert/strict'
import {parseSelector, SelectorError} from '../../../src/lib/ipam/selector.ts'

const m = (sel: string, labels: Record<string, string>): boolean => parseSelector(sel).matches(labels)

function rejects(sel: string, message: RegExp): void {
  assert.throws(
    () => parseSelector(sel),
    (err: unknown) => {
      assert.ok(err instanceof SelectorError, `expected SelectorError, got ${String(err)}`)
      assert.match(err.message, message)
      assert.doesNotMatch(err.message, /\n/)
      return true
    },
  )
}

// --- matching ------------------------------------------------------------

test('all() matches any label set, including none', () => {
  assert.equal(m('all()', {}), true)
  assert.equal(m('all()', {a: 'b'}), true)
})

test('empty and whitespace-only selectors behave as all()', () => {
  assert.equal(m('', {}), true)
  assert.equal(m('   \t\n ', {zone: 'a'}), true)
})

test('source preserves the original text', () => {
  assert.equal(parseSelector('  zone == "a" ').source, '  zone == "a" ')
})

test('== matches only an equal value', () => {
  assert.equal(m('zone == "a"', {zone: 'a'}), true)
  assert.equal(m('zone == "a"', {zone: 'b'}), false)
  assert.equal(m('zone == "a"', {zone: 'ab'}), false)
})

test('== requires the label to be present', () => {
  assert.equal(m('zone == ""', {}), false)
  assert.equal(m('zone == ""', {zone: ''}), true)
})

test('!= matches a different value and not an equal one', () => {
  assert.equal(m('zone != "a"', {zone: 'b'}), true)
  assert.equal(m('zone != "a"', {zone: 'a'}), false)
})

test('!= matches when the label is absent', () => {
  assert.equal(m('zone != "a"', {}), true)
  assert.equal(m('zone != "a"', {other: 'a'}), true)
})

test('has() matches presence, even with an empty value', () => {
  assert.equal(m('has(zone)', {zone: ''}), true)
  assert.equal(m('has(zone)', {zonex: 'a'}), false)
})

test('!has() matches absence', () => {
  assert.equal(m('!has(zone)', {}), true)
  assert.equal(m('!has(zone)', {zone: 'a'}), false)
})

test('labels are not looked up through the object prototype', () => {
  assert.equal(m('has(constructor)', {}), false)
  assert.equal(m('toString contains "function"', {}), false)
  assert.equal(m('has(constructor)', {constructor: 'x'}), true)
})

test('in matches a member of the set', () => {
  assert.equal(m('zone in {"a", "b"}', {zone: 'b'}), true)
  assert.equal(m('zone in {"a", "b"}', {zone: 'c'}), false)
  assert.equal(m('zone in {"a", "b"}', {}), false)
})

test('not in excludes members and matches when absent', () => {
  assert.equal(m('zone not in {"a","b"}', {zone: 'a'}), false)
  assert.equal(m('zone not in {"a","b"}', {zone: 'c'}), true)
  assert.equal(m('zone not in {"a","b"}', {}), true)
})

test('in {} never matches and not in {} always matches', () => {
  assert.equal(m('zone in {}', {zone: ''}), false)
  assert.equal(m('zone in { }', {zone: 'a'}), false)
  assert.equal(m('zone not in {}', {zone: 'a'}), true)
})

test('in with a single value', () => {
  assert.equal(m("zone in {'a'}", {zone: 'a'}), true)
  assert.equal(m("zone in {'a'}", {zone: 'A'}), false)
})

test('contains matches substrings and requires presence', () => {
  assert.equal(m('host contains "rack2"', {host: 'node-rack2-7'}), true)
  assert.equal(m('host contains "rack2"', {host: 'node-rack3-7'}), false)
  assert.equal(m('host contains ""', {}), false)
})

test('starts with matches prefixes only', () => {
  assert.equal(m('host starts with "edge-"', {host: 'edge-1'}), true)
  assert.equal(m('host starts with "edge-"', {host: 'core-edge-1'}), false)
  assert.equal(m('host starts with "edge-"', {}), false)
})

test('ends with matches suffixes only', () => {
  assert.equal(m('host ends with ".lan"', {host: 'n1.lan'}), true)
  assert.equal(m('host ends with ".lan"', {host: 'n1.lan.example'}), false)
  assert.equal(m('host ends with ".lan"', {}), false)
})

test('&& requires both sides', () => {
  const sel = 'a == "1" && b == "2"'
  assert.equal(m(sel, {a: '1', b: '2'}), true)
  assert.equal(m(sel, {a: '1', b: '3'}), false)
  assert.equal(m(sel, {a: '0', b: '2'}), false)
})

test('|| requires either side', () => {
  const sel = 'a == "1" || b == "2"'
  assert.equal(m(sel, {b: '2'}), true)
  assert.equal(m(sel, {a: '1'}), true)
  assert.equal(m(sel, {a: '2', b: '1'}), false)
})

test('&& binds tighter than || (right-hand side)', () => {
  const sel = 'a == "1" || b == "2" && c == "3"'
  // a || (b && c): a alone is enough; b without c is not.
  assert.equal(m(sel, {a: '1'}), true)
  assert.equal(m(sel, {b: '2'}), false)
  assert.equal(m(sel, {b: '2', c: '3'}), true)
})

test('&& binds tighter than || (left-hand side)', () => {
  const sel = 'a == "1" && b == "2" || c == "3"'
  // (a && b) || c: c alone is enough.
  assert.equal(m(sel, {c: '3'}), true)
  assert.equal(m(sel, {a: '1'}), false)
})

test('parentheses override precedence', () => {
  const sel = '(a == "1" || b == "2") && c == "3"'
  assert.equal(m(sel, {a: '1'}), false)
  assert.equal(m(sel, {a: '1', c: '3'}), true)
  assert.equal(m(sel, {b: '2', c: '3'}), true)
})

test('nested parentheses', () => {
  const sel = '((a == "1") && ((b == "2" || (c == "3"))))'
  assert.equal(m(sel, {a: '1', c: '3'}), true)
  assert.equal(m(sel, {a: '1'}), false)
  assert.equal(m(sel, {b: '2', c: '3'}), false)
})

test('! negates a comparison', () => {
  assert.equal(m('!a == "1"', {a: '1'}), false)
  assert.equal(m('!a == "1"', {a: '2'}), true)
})

test('! negates a parenthesised group', () => {
  const sel = '!(a == "1" || b == "2")'
  assert.equal(m(sel, {a: '1'}), false)
  assert.equal(m(sel, {b: '2'}), false)
  assert.equal(m(sel, {a: '2', b: '1'}), true)
})

test('! binds tighter than &&', () => {
  const sel = '!has(a) && has(b)'
  assert.equal(m(sel, {b: 'x'}), true)
  assert.equal(m(sel, {}), false)
  assert.equal(m(sel, {a: 'x', b: 'x'}), false)
})

test('double negation cancels out', () => {
  assert.equal(m('!!has(a)', {a: 'x'}), true)
  assert.equal(m('!!has(a)', {}), false)
})

test('keys may contain /, ., - and _', () => {
  assert.equal(m('kubernetes.io/hostname == "node-1"', {'kubernetes.io/hostname': 'node-1'}), true)
  assert.equal(m('kubernetes.io/hostname == "node-1"', {hostname: 'node-1'}), false)
  assert.equal(m('has(projectcalico.org/zone)', {'projectcalico.org/zone': 'z'}), true)
  assert.equal(m('my_label-2 in {"x"}', {'my_label-2': 'x'}), true)
})

test('single and double quotes are interchangeable and may contain the other kind', () => {
  assert.equal(m("zone == 'a'", {zone: 'a'}), true)
  assert.equal(m('zone == "it\'s"', {zone: "it's"}), true)
  assert.equal(m('zone == \'say "hi"\'', {zone: 'say "hi"'}), true)
  assert.equal(m('zone in {\'a\', "b"}', {zone: 'b'}), true)
})

test('quoted values are taken literally, including spaces and operators', () => {
  assert.equal(m('x == " a && b "', {x: ' a && b '}), true)
  assert.equal(m('x == " a && b "', {x: 'a && b'}), false)
})

test('whitespace between tokens is insignificant', () => {
  const labels = {a: '1', b: '2'}
  assert.equal(m('a=="1"&&b!="3"', labels), true)
  assert.equal(m('  a  ==  "1"  \n\t&&\n  b  in  {  "2"  ,  "4"  }  ', labels), true)
  assert.equal(m('has( a )&&!has(c)', labels), true)
  assert.equal(m('a in{"1"}||b==\'9\'', labels), true)
  assert.equal(m('a=="2"||b=="9"', labels), false)
})

test('keywords are only operators in operator position', () => {
  assert.equal(m('in == "x" && has(has)', {in: 'x', has: ''}), true)
  assert.equal(m('all == "1"', {all: '1'}), true)
})

test('a 1024-character selector is accepted', () => {
  const sel = `a == "${'v'.repeat(1024 - 7)}"`
  assert.equal(sel.length, 1024)
  assert.equal(m(sel, {a: 'v'.repeat(1017)}), true)
})

// --- rejection -----------------------------------------------------------

test('error messages name the selector and a 1-based position', () => {
  rejects('foo ==', /^invalid selector "foo ==": expected a quoted value at position 7$/)
})

test('rejects selectors longer than 1024 characters', () => {
  const sel = `a == "${'v'.repeat(1024 - 6)}"`
  assert.equal(sel.length, 1025)
  rejects(sel, /1025 characters exceeds the maximum of 1024/)
})

test('rejects global()', () => {
  rejects('global()', /global\(\) is not allowed .* at position 1/)
  rejects('has(a) && global()', /global\(\) is not allowed .* at position 11/)
})

test('rejects unknown functions', () => {
  rejects('hasnt(a)', /unknown function "hasnt\(\)" at position 1/)
  rejects('!exists(zone)', /unknown function "exists\(\)" at position 2/)
})

test('rejects unterminated strings of either quote kind', () => {
  rejects('zone == "abc', /unterminated string at position 9/)
  rejects('zone == \'abc"', /unterminated string at position 9/)
})

test('rejects unbalanced parentheses', () => {
  rejects('(a == "1"', /expected "\)" at position 10/)
  rejects('((has(a))', /expected "\)"/)
  rejects('a == "1")', /unexpected "\)" at position 9/)
  rejects('has(a', /expected "\)" after the has\(\) label at position 6/)
})

test('rejects trailing garbage', () => {
  rejects('a == "1" b == "2"', /unexpected "b" at position 10/)
  rejects('all() all()', /unexpected "all" at position 7/)
})

test('rejects missing operands', () => {
  rejects('a == "1" &&', /expected a label, function call or "\(" at position 12/)
  rejects('|| a == "1"', /expected a label, function call or "\(" at position 1/)
  rejects('!', /expected a label/)
  rejects('()', /expected a label/)
  rejects('has()', /expected a label key at position 5/)
})

test('rejects a bare label with no operator', () => {
  rejects('zone', /expected an operator after label "zone" at position 5/)
  rejects('zone && has(a)', /expected an operator after label "zone" at position 6/)
})

test('rejects unquoted values', () => {
  rejects('zone == a', /expected a quoted value at position 9/)
  rejects('zone in {a}', /expected a quoted value at position 10/)
})

test('rejects malformed multi-word operators', () => {
  rejects('zone not {"a"}', /expected "in" after "not"/)
  rejects('zone starts "a"', /expected "with" after "starts"/)
  rejects('zone ends in "a"', /expected "with" after "ends"/)
})

test('rejects malformed sets', () => {
  rejects('zone in "a"', /expected "\{"/)
  rejects('zone in {"a" "b"}', /expected "," or "}" at position 14/)
  rejects('zone in {"a",}', /expected a quoted value at position 14/)
  rejects('zone in {"a"', /expected "," or "}"/)
})

test('rejects single = & | and other stray characters', () => {
  rejects('zone = "a"', /unexpected character "=" at position 6/)
  rejects('has(a) & has(b)', /unexpected character "&" at position 8/)
  rejects('has(a) | has(b)', /unexpected character "\|"/)
  rejects('zone == "a" ; drop', /unexpected character ";"/)
})

test('messages stay on one line when the input has newlines', () => {
  rejects('a == "1"\n&&', /^invalid selector "a == \\"1\\"\\n&&": expected a label/)
})

test('a selector parsed before is the same object; an invalid one is refused every time', () => {
  const a = parseSelector('zone == "a" && !has(gpu)')
  assert.equal(parseSelector('zone == "a" && !has(gpu)'), a)
  assert.equal(a.matches({zone: 'a'}), true)
  assert.equal(a.matches({zone: 'a', gpu: 'x'}), false)
  assert.ok(Object.isFrozen(a))
  for (let i = 0; i < 2; i++) assert.throws(() => parseSelector('zone == '), SelectorError)
})
