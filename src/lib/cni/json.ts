// JSON text the way the CNI Go library writes it, so runtimes and golden tests see the same bytes as from a
// Go plugin: json.MarshalIndent(v, "", "    ") for results and errors (no trailing newline), and
// json.NewEncoder(w).Encode(v) for VERSION (compact, one trailing newline). Go's encoder escapes <, > and &
// (HTML-safe) and U+2028/U+2029; those characters can only occur inside strings, so a textual replace of
// JSON.stringify's output is exact.

const GO_ESCAPES: Record<string, string> = {
  '<': '\\u003c',
  '>': '\\u003e',
  '&': '\\u0026',
  '\u2028': '\\u2028',
  '\u2029': '\\u2029',
}

function goEscape(text: string): string {
  return text.replace(/[<>&\u2028\u2029]/g, (c) => GO_ESCAPES[c]!)
}

/** Go's json.MarshalIndent(v, "", "    "). Key order is the object's insertion order. */
export function goIndent(value: unknown): string {
  return goEscape(JSON.stringify(value, null, 4))
}

/** Go's json.NewEncoder(w).Encode(v): compact, newline-terminated. */
export function goEncodeLine(value: unknown): string {
  return goEscape(JSON.stringify(value)) + '\n'
}

/** Go's %q for a string (strconv.Quote), close enough for messages: JSON quoting with Go's escapes. */
export function goQuote(text: string): string {
  return goEscape(JSON.stringify(text))
}

/** Go's %q for a []string: `["a" "b"]`. */
export function goQuoteList(items: readonly string[]): string {
  return `[${items.map(goQuote).join(' ')}]`
}
