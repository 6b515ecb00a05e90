// JsonCursor: it steps over every kind of JSON value, hands over the members it is asked for, and refuses (NOT_LEAN)
// whatever is not JSON, so that a lean reader built on it leaves such text to the full decoder.
import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {JsonCursor, NOT_LEAN, once} from '../../../src/lib/codec/json-scan.ts'

/** The `pick` member of a top-level object, read as a string; every other member skipped. */
function pick(text: string, name: string): string | undefined {
  const c = JsonCursor.over(text)
  if (!c) return undefined
  let out: string | undefined
  if (c.openObject())
    do {
      c.name()
      if (c.is(name)) out = c.string()
      else c.skip()
    } while (c.nextMember())
  c.end()
  return out
}

describe('JsonCursor', () => {
  it('steps over strings, numbers, literals, nested objects and arrays, with or without whitespace', () => {
    const values = [
      '"x"',
      '""',
      '"{[}],:"',
      '0',
      '-1.5e+10',
      '12E3',
      'true',
      'false',
      'null',
      '{}',
      '[]',
      '{"a":[1,{"b":null}],"c":{"d":"}"}}',
      ' [ 1 , "two" , { "three" : [ ] } ] ',
    ]
    for (const v of values) {
      const text = `{"before":${v},"want":"yes","after":${v}}`
      assert.equal(pick(text, 'want'), 'yes', text)
      assert.deepEqual(JSON.parse(text).want, 'yes')
    }
    assert.equal(pick('\n{ "want" :\t"yes" }\r\n', 'want'), 'yes')
  })

  it('refuses what JSON.parse refuses in the structure it walks', () => {
    const bad = [
      '',
      '{',
      '{"want":"yes",}',
      '{"want":"yes"} x',
      '{"want" "yes"}',
      '{"want":"yes" "more":1}',
      '{"n":01,"want":"yes"}',
      '{"n":1.,"want":"yes"}',
      '{"n":tru,"want":"yes"}',
      '{"n":[1,],"want":"yes"}',
      '{"n":-,"want":"yes"}',
      '{"want":"unterminated}',
    ]
    for (const text of bad) {
      assert.throws(() => JSON.parse(text), SyntaxError, text)
      assert.throws(
        () => pick(text, 'want'),
        (e) => e === NOT_LEAN,
        text,
      )
    }
    // Valid JSON, but not the object the reader expects.
    assert.throws(
      () => pick('["want"]', 'want'),
      (e) => e === NOT_LEAN,
    )
  })

  it('leaves text with a backslash to the full decoder', () => {
    assert.equal(JsonCursor.over('{"want":"a\\"b"}'), undefined)
    assert.equal(JsonCursor.over('{"w\\u0061nt":"yes"}'), undefined)
    assert.ok(JsonCursor.over('{"want":"yes"}'))
  })

  it('reads small integers and whole integers of any length, nothing else', () => {
    const ints = (text: string) => {
      const c = JsonCursor.over(text)!
      const out: number[] = []
      if (c.openArray())
        do out.push(c.smallInt())
        while (c.nextElement())
      c.end()
      return out
    }
    assert.deepEqual(ints('[0,7,63,4095]'), [0, 7, 63, 4095])
    for (const bad of ['[-1]', '[1.5]', '[1e3]', '[07]', '[1234567890]', '["1"]', '[null]'])
      assert.throws(
        () => ints(bad),
        (e) => e === NOT_LEAN,
        bad,
      )
    const c = JsonCursor.over('[1767323045000000000123,-5,0]')!
    c.openArray()
    c.skipInteger()
    assert.ok(c.nextElement())
    c.skipInteger()
    assert.ok(c.nextElement())
    c.skipInteger()
    assert.equal(c.nextElement(), false)
    for (const bad of ['1.5', '1e9', '"1"', '-', '00'])
      assert.throws(
        () => JsonCursor.over(bad)!.skipInteger(),
        (e) => e === NOT_LEAN,
        bad,
      )
  })

  it('skipString steps over a string as string reads it, and refuses anything else', () => {
    const c = JsonCursor.over(' "abc" , "" ,"x"')!
    c.skipString()
    assert.equal(c.pos, 6)
    assert.equal(c.nextElement(), true)
    c.skipString()
    assert.equal(c.nextElement(), true)
    assert.equal(c.string(), 'x')
    c.end()
    for (const text of ['1', 'null', '{}', '"open', ''])
      assert.throws(() => JsonCursor.over(text)!.skipString(), NOT_LEAN, text)
  })

  it('once marks a member read and refuses it the second time', () => {
    const seen = once(0, 4)
    assert.equal(seen, 4)
    assert.equal(once(seen, 1), 5)
    assert.throws(
      () => once(seen, 4),
      (e) => e === NOT_LEAN,
    )
  })
})
