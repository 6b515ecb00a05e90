/**
 * Table rendering compatible with calicoctl's output.
 *
 * - `boxTable` reproduces go-pretty v6 `table.StyleDefault` as used by
 *   `calicoctl ipam show`: `+---+` borders, `|` column separators, a
 *   separator under the header, no separators between body rows.
 * - `plainTable` reproduces the Go `text/tabwriter` layout calicoctl uses for
 *   `get -o wide` (`tabwriter.NewWriter(w, 5, 1, 3, ' ', 0)`).
 */
import Table from 'cli-table3'

export type Align = 'left' | 'right'

// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const ANSI_RE = /\u001b\[[0-9;?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)/g

/** Strip ANSI escape sequences (CSI such as SGR colours, and OSC such as hyperlinks). */
export function stripAnsi(s: string): string {
  return s.replace(ANSI_RE, '')
}

/** Number of columns: the widest of the header and every row. */
function columnCount(head: string[], rows: string[][]): number {
  return rows.reduce((n, r) => Math.max(n, r.length), head.length)
}

/** Pad `row` with empty cells up to `n` columns (go-pretty does the same). */
function fill(row: string[], n: number): string[] {
  return row.length >= n ? row : [...row, ...Array<string>(n - row.length).fill('')]
}

/**
 * go-pretty v6 StyleDefault box table. Header cells are always left-aligned;
 * body cells follow `align` (default left). Column width is the widest visible
 * text in the column (ANSI escapes are not counted), plus one space of padding
 * each side. With no rows the header box is still printed, closed by a header
 * separator and the bottom border. The result ends with a newline.
 */
export function boxTable(head: string[], rows: string[][], align: Align[] = []): string {
  const n = columnCount(head, rows)
  if (n === 0) return ''
  const filled = rows.map((r) => fill(r, n))
  if (isNarrow(head) && filled.every(isNarrow)) return drawBox(fill(head, n), filled, align)
  return cliTable3Box(fill(head, n), filled, align)
}

/**
 * A cell without ANSI escapes (nearly every cell) as it is, else stripped of them: a table of 10,000 rows looks
 * at 60,000 cells several times, and a cell with no escape character needs no regular-expression pass.
 */
const visible = (c: string): string => (c.includes('\u001b') ? stripAnsi(c) : c)

/** Printable ASCII, box drawing and block elements (bars): one column each, as cli-table3 counts them. */
const NARROW = /^[\x20-\x7e\u2500-\u259f]*$/
/** Whether every cell is narrow (tested cell by cell: no joined copy of each of 10,000 rows). */
const isNarrow = (cells: string[]) => {
  for (const c of cells) if (!NARROW.test(visible(c))) return false
  return true
}

/**
 * The same box as cli-table3 draws, for cells whose width is their length (without ANSI escapes). cli-table3 lays
 * out every cell against every earlier row (for row and column spans), quadratic in the rows: 3,000 rows took
 * ~1.2 s, the 10,000 blocks of 550,000 allocations ~13 s. This is linear.
 */
function drawBox(head: string[], rows: string[][], align: Align[]): string {
  const n = head.length
  // Each cell's visible length, measured once: the widths and the padding both need it.
  const lengths = new Int32Array((rows.length + 1) * n)
  const widths = head.map((c, i) => {
    lengths[i] = visible(c).length
    return lengths[i]!
  })
  for (let r = 0; r < rows.length; r++) {
    const row = rows[r]!
    const at = (r + 1) * n
    for (let i = 0; i < n; i++) {
      const w = visible(row[i]!).length
      lengths[at + i] = w
      if (w > widths[i]!) widths[i] = w
    }
  }
  const spaces = ' '.repeat(Math.max(0, ...widths))
  const rule = `+${widths.map((w) => '-'.repeat(w + 2)).join('+')}+`
  const line = (cells: string[], at: number, right: readonly boolean[]) => {
    let s = '|'
    for (let i = 0; i < n; i++) {
      const c = cells[i]!
      const pad = spaces.slice(0, widths[i]! - lengths[at + i]!)
      s += right[i] ? ` ${pad}${c} |` : ` ${c}${pad} |`
    }
    return s
  }
  const right = head.map((_, i) => align[i] === 'right')
  const lines = [rule, line(head, 0, []), rule]
  for (let r = 0; r < rows.length; r++) lines.push(line(rows[r]!, (r + 1) * n, right))
  lines.push(rule)
  return `${lines.join('\n')}\n`
}

function cliTable3Box(head: string[], rows: string[][], align: Align[]): string {
  const n = head.length
  const table = new Table({
    // Header cells take the column alignment, so columns default to left and
    // body cells carry their own alignment.
    head,
    colAligns: Array.from({length: n}, () => 'left' as const),
    chars: {
      top: '-',
      'top-mid': '+',
      'top-left': '+',
      'top-right': '+',
      bottom: '-',
      'bottom-mid': '+',
      'bottom-left': '+',
      'bottom-right': '+',
      left: '|',
      'left-mid': '+',
      mid: '-',
      'mid-mid': '+',
      right: '|',
      'right-mid': '+',
      middle: '|',
    },
    // `compact` drops the separators between body rows but cli-table3 still
    // draws the one under the header; empty style arrays disable colouring.
    style: {head: [], border: [], compact: true, 'padding-left': 1, 'padding-right': 1},
  })
  for (const r of rows) table.push(r.map((content, i) => ({content, hAlign: align[i] ?? 'left'})))
  const lines = table.toString().split('\n')
  if (rows.length === 0) {
    // cli-table3 closes a header-only table right under the header; go-pretty
    // draws the header separator first. In StyleDefault all three horizontal
    // rules are identical, so repeat the bottom border.
    lines.push(lines[lines.length - 1]!)
  }
  return `${lines.join('\n')}\n`
}

/** tabwriter parameters used by calicoctl: minwidth 5, padding 3, pad char ' '. */
const TAB_MINWIDTH = 5
const TAB_PADDING = 3

/** Visible width as Go's tabwriter counts it: Unicode code points, ANSI escapes excluded. */
function runeCount(s: string): number {
  let n = 0
  for (const _ of stripAnsi(s)) n++
  return n
}

/**
 * calicoctl `get -o wide` layout (Go tabwriter with minwidth 5, padding 3):
 * header row then rows, every column left-aligned and as wide as
 * max(5, widest cell + 3) — i.e. three spaces between columns whenever a
 * column's widest cell is at least two characters. The last column is not
 * padded, trailing spaces are trimmed from every line, and the result ends
 * with a newline.
 */
export function plainTable(head: string[], rows: string[][]): string {
  const n = columnCount(head, rows)
  if (n === 0) return ''
  const all = [fill(head, n), ...rows.map((r) => fill(r, n))]
  const widths = Array.from({length: n}, (_, c) =>
    all.reduce((w, r) => Math.max(w, runeCount(r[c]!) + TAB_PADDING), TAB_MINWIDTH),
  )
  return `${all
    .map((r) =>
      r
        .map((cell, c) => (c === n - 1 ? cell : cell + ' '.repeat(widths[c]! - runeCount(cell))))
        .join('')
        .trimEnd(),
    )
    .join('\n')}\n`
}
