/**
 * Calico label selector syntax, as used by IPPool `nodeSelector`.
 *
 * Grammar (&& binds tighter than ||; `!` applies to the following term):
 *   expr    := and ("||" and)*
 *   and     := unary ("&&" unary)*
 *   unary   := "!" unary | primary
 *   primary := "(" expr ")" | "all()" | "has(" key ")"
 *            | key ("==" | "!=" | "contains" | "starts with" | "ends with") string
 *            | key ["not"] "in" "{" [string ("," string)*] "}"
 */

export interface Selector {
  matches(labels: Readonly<Record<string, string>>): boolean
  readonly source: string
}

export class SelectorError extends Error {
  override name = 'SelectorError'
}

// Calico rejects longer nodeSelectors at admission; refusing them here keeps
// us from accepting pools the real datastore would not.
const MAX_LENGTH = 1024

type Node =
  | {kind: 'all'}
  | {kind: 'has'; key: string}
  | {kind: 'not'; expr: Node}
  | {kind: 'and' | 'or'; left: Node; right: Node}
  | {kind: 'eq' | 'contains' | 'starts' | 'ends'; key: string; value: string}
  | {kind: 'in'; key: string; values: ReadonlySet<string>}

interface Token {
  kind: 'key' | 'string' | 'punct' | 'end'
  text: string
  pos: number // 0-based offset; reported to users 1-based
}

const KEY_CHAR = /[A-Za-z0-9_./-]/
const TWO_CHAR = new Set(['==', '!=', '&&', '||'])
const ONE_CHAR = new Set(['!', '(', ')', '{', '}', ','])

// Parsed selectors by their text: a pool's selector is matched on every allocation, and pools seldom change.
// Emptied when full, so ever-changing selectors cost a parse, not memory.
const parsed = new Map<string, Selector>()
const PARSED_MAX = 256

export function parseSelector(text: string): Selector {
  const known = parsed.get(text)
  if (known) return known
  if (text.length > MAX_LENGTH) {
    throw new SelectorError(`invalid selector: ${text.length} characters exceeds the maximum of ${MAX_LENGTH}`)
  }
  const ast = new Parser(text).parse()
  const selector: Selector = {source: text, matches: (labels) => evaluate(ast, labels)}
  Object.freeze(selector)
  if (parsed.size >= PARSED_MAX) parsed.clear()
  parsed.set(text, selector)
  return selector
}

class Parser {
  private readonly tokens: Token[]
  private i = 0

  constructor(private readonly source: string) {
    this.tokens = this.tokenize()
  }

  parse(): Node {
    // Calico treats an empty selector as all(), and so do existing pools.
    if (this.peek().kind === 'end') return {kind: 'all'}
    const node = this.parseOr()
    const tok = this.peek()
    if (tok.kind !== 'end') this.fail(`unexpected ${JSON.stringify(tok.text)}`, tok.pos)
    return node
  }

  private parseOr(): Node {
    let left = this.parseAnd()
    while (this.accept('punct', '||')) left = {kind: 'or', left, right: this.parseAnd()}
    return left
  }

  private parseAnd(): Node {
    let left = this.parseUnary()
    while (this.accept('punct', '&&')) left = {kind: 'and', left, right: this.parseUnary()}
    return left
  }

  private parseUnary(): Node {
    if (this.accept('punct', '!')) return {kind: 'not', expr: this.parseUnary()}
    return this.parsePrimary()
  }

  private parsePrimary(): Node {
    const tok = this.next()
    if (tok.kind === 'punct' && tok.text === '(') {
      const inner = this.parseOr()
      this.expect('punct', ')', '")"')
      return inner
    }
    if (tok.kind !== 'key') this.fail('expected a label, function call or "("', tok.pos)
    if (this.accept('punct', '(')) return this.parseCall(tok)
    return this.parseComparison(tok.text)
  }

  private parseCall(name: Token): Node {
    switch (name.text) {
      case 'all':
        this.expect('punct', ')', '")" after "all("')
        return {kind: 'all'}
      case 'has': {
        const key = this.expect('key', undefined, 'a label key').text
        this.expect('punct', ')', '")" after the has() label')
        return {kind: 'has', key}
      }
      case 'global':
        // global() selects non-cluster endpoints; it is meaningless for nodes.
        return this.fail('global() is not allowed in a pool node selector', name.pos)
      default:
        return this.fail(`unknown function "${name.text}()"`, name.pos)
    }
  }

  private parseComparison(key: string): Node {
    const op = this.next()
    const word = op.kind === 'key' ? op.text : op.kind === 'punct' ? op.text : ''
    switch (word) {
      case '==':
        return {kind: 'eq', key, value: this.value()}
      case '!=':
        // Calico: != matches when the label is absent, which is exactly !(==).
        return {kind: 'not', expr: {kind: 'eq', key, value: this.value()}}
      case 'contains':
        return {kind: 'contains', key, value: this.value()}
      case 'starts':
      case 'ends':
        this.expect('key', 'with', `"with" after "${word}"`)
        return {kind: word, key, value: this.value()}
      case 'in':
        return {kind: 'in', key, values: this.valueSet()}
      case 'not':
        this.expect('key', 'in', '"in" after "not"')
        // Likewise "not in" matches absent labels.
        return {kind: 'not', expr: {kind: 'in', key, values: this.valueSet()}}
      default:
        return this.fail(`expected an operator after label "${key}"`, op.pos)
    }
  }

  private value(): string {
    return this.expect('string', undefined, 'a quoted value').text
  }

  private valueSet(): Set<string> {
    this.expect('punct', '{', '"{"')
    const values = new Set<string>()
    if (this.accept('punct', '}')) return values
    do {
      values.add(this.value())
    } while (this.accept('punct', ','))
    this.expect('punct', '}', '"," or "}"')
    return values
  }

  private peek(): Token {
    return this.tokens[this.i]!
  }

  private next(): Token {
    const tok = this.peek()
    if (tok.kind !== 'end') this.i++
    return tok
  }

  private accept(kind: Token['kind'], text: string): boolean {
    const tok = this.peek()
    if (tok.kind !== kind || tok.text !== text) return false
    this.i++
    return true
  }

  private expect(kind: Token['kind'], text: string | undefined, what: string): Token {
    const tok = this.peek()
    if (tok.kind !== kind || (text !== undefined && tok.text !== text)) {
      this.fail(`expected ${what}`, tok.pos)
    }
    return this.next()
  }

  private fail(message: string, pos: number): never {
    // JSON.stringify keeps the message on one line even if the input has newlines.
    throw new SelectorError(`invalid selector ${JSON.stringify(this.source)}: ${message} at position ${pos + 1}`)
  }

  private tokenize(): Token[] {
    const s = this.source
    const tokens: Token[] = []
    let i = 0
    while (i < s.length) {
      const c = s[i]!
      if (/\s/.test(c)) {
        i++
      } else if (c === '"' || c === "'") {
        // Calico strings have no escapes: the value runs to the next matching quote.
        const close = s.indexOf(c, i + 1)
        if (close < 0) this.fail('unterminated string', i)
        tokens.push({kind: 'string', text: s.slice(i + 1, close), pos: i})
        i = close + 1
      } else if (TWO_CHAR.has(s.slice(i, i + 2))) {
        tokens.push({kind: 'punct', text: s.slice(i, i + 2), pos: i})
        i += 2
      } else if (ONE_CHAR.has(c)) {
        tokens.push({kind: 'punct', text: c, pos: i})
        i++
      } else if (KEY_CHAR.test(c)) {
        const start = i
        while (i < s.length && KEY_CHAR.test(s[i]!)) i++
        tokens.push({kind: 'key', text: s.slice(start, i), pos: start})
      } else {
        this.fail(`unexpected character ${JSON.stringify(c)}`, i)
      }
    }
    tokens.push({kind: 'end', text: '', pos: s.length})
    return tokens
  }
}

function evaluate(node: Node, labels: Readonly<Record<string, string>>): boolean {
  // hasOwn so that keys like "constructor" never resolve through the prototype.
  const get = (key: string) => (Object.hasOwn(labels, key) ? labels[key] : undefined)
  switch (node.kind) {
    case 'all':
      return true
    case 'has':
      return get(node.key) !== undefined
    case 'not':
      return !evaluate(node.expr, labels)
    case 'and':
      return evaluate(node.left, labels) && evaluate(node.right, labels)
    case 'or':
      return evaluate(node.left, labels) || evaluate(node.right, labels)
    case 'eq':
      return get(node.key) === node.value
    case 'contains':
      return get(node.key)?.includes(node.value) ?? false
    case 'starts':
      return get(node.key)?.startsWith(node.value) ?? false
    case 'ends':
      return get(node.key)?.endsWith(node.value) ?? false
    case 'in': {
      const v = get(node.key)
      return v !== undefined && node.values.has(v)
    }
  }
}
