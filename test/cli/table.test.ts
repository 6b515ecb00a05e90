import {test} from 'node:test'
import assert from 'node:assert/strict'
import {boxTable, plainTable, type Align} from '../../src/cli/table.js'

const HEAD = ['GROUPING', 'CIDR', 'IPS TOTAL', 'IPS IN USE', 'IPS RESERVED', 'IPS FREE']
const ALIGN: Align[] = ['left', 'left', 'right', 'right', 'right', 'right']

test('boxTable reproduces calicoctl ipam show (go-pretty StyleDefault)', () => {
  const rows = [
    ['IP Pool', '10.65.0.0/16', '65536', '5 (0%)', '0 (0%)', '65531 (100%)'],
    ['Block', '10.65.79.0/26', '64', '5 (8%)', '0 (0%)', '59 (92%)'],
    ['Block', '10.65.100.128/26', '64', '0 (0%)', '0 (0%)', '64 (100%)'],
  ]
  const expected = [
    '+----------+------------------+-----------+------------+--------------+--------------+',
    '| GROUPING | CIDR             | IPS TOTAL | IPS IN USE | IPS RESERVED | IPS FREE     |',
    '+----------+------------------+-----------+------------+--------------+--------------+',
    '| IP Pool  | 10.65.0.0/16     |     65536 |     5 (0%) |       0 (0%) | 65531 (100%) |',
    '| Block    | 10.65.79.0/26    |        64 |     5 (8%) |       0 (0%) |     59 (92%) |',
    '| Block    | 10.65.100.128/26 |        64 |     0 (0%) |       0 (0%) |    64 (100%) |',
    '+----------+------------------+-----------+------------+--------------+--------------+',
    '',
  ].join('\n')
  assert.equal(boxTable(HEAD, rows, ALIGN), expected)
})

test('boxTable with zero rows prints the header box only', () => {
  const expected = [
    '+----------+------+-----------+------------+--------------+----------+',
    '| GROUPING | CIDR | IPS TOTAL | IPS IN USE | IPS RESERVED | IPS FREE |',
    '+----------+------+-----------+------------+--------------+----------+',
    '+----------+------+-----------+------------+--------------+----------+',
    '',
  ].join('\n')
  assert.equal(boxTable(HEAD, [], ALIGN), expected)
})

test('boxTable defaults to left alignment and keeps headers left when body is right-aligned', () => {
  const rows = [
    ['1', 'x'],
    ['22222', 'yy'],
  ]
  assert.equal(
    boxTable(['N', 'NAME'], rows),
    [
      '+-------+------+',
      '| N     | NAME |',
      '+-------+------+',
      '| 1     | x    |',
      '| 22222 | yy   |',
      '+-------+------+',
      '',
    ].join('\n'),
  )
  assert.equal(
    boxTable(['N', 'NAME'], rows, ['right', 'right']),
    [
      '+-------+------+',
      '| N     | NAME |',
      '+-------+------+',
      '|     1 |    x |',
      '| 22222 |   yy |',
      '+-------+------+',
      '',
    ].join('\n'),
  )
})

test('boxTable never emits colour codes of its own', () => {
  const out = boxTable(['A'], [['b']])
  assert.ok(!out.includes('\u001b'), JSON.stringify(out))
})

test('boxTable measures ANSI-coloured cells by their visible width', () => {
  const red = '\u001b[31mred\u001b[39m'
  const out = boxTable(['A', 'B'], [[red, 'x']], ['right', 'left'])
  assert.equal(out, ['+-----+---+', '| A   | B |', '+-----+---+', `| ${red} | x |`, '+-----+---+', ''].join('\n'))
  // Right alignment pads by visible width too.
  const out2 = boxTable(['LONGER'], [[red]], ['right'])
  assert.equal(out2, ['+--------+', '| LONGER |', '+--------+', `|    ${red} |`, '+--------+', ''].join('\n'))
})

test('boxTable pads short rows with empty cells', () => {
  assert.equal(
    boxTable(['A', 'B'], [['1']]),
    ['+---+---+', '| A | B |', '+---+---+', '| 1 |   |', '+---+---+', ''].join('\n'),
  )
})

test('plainTable reproduces calicoctl get -o wide (tabwriter 5,1,3)', () => {
  const out = plainTable(
    ['NAME', 'CIDR', 'SELECTOR'],
    [
      ['default-ipv4-ippool', '192.168.0.0/16', 'all()'],
      ['v6', 'fd00::/48', ''],
    ],
  )
  assert.equal(
    out,
    [
      'NAME                  CIDR             SELECTOR',
      'default-ipv4-ippool   192.168.0.0/16   all()',
      'v6                    fd00::/48',
      '',
    ].join('\n'),
  )
})

test('plainTable trims trailing spaces, even when inner cells are empty', () => {
  const out = plainTable(['NAME', 'A', 'B'], [['x', '', '']])
  for (const line of out.split('\n')) assert.equal(line, line.trimEnd())
  assert.equal(out, 'NAME   A    B\nx\n')
})

test('plainTable applies tabwriter minwidth 5 to very narrow columns', () => {
  // A column whose widest cell is one character is 5 wide (4-space gap), as
  // tabwriter.NewWriter(w, 5, 1, 3, ' ', 0) does; wider columns get 3 spaces.
  assert.equal(plainTable(['A', 'BB', 'C'], [['1', '22', '3']]), 'A    BB   C\n1    22   3\n')
})

test('plainTable measures ANSI-coloured cells by their visible width', () => {
  const green = '\u001b[32mok\u001b[39m'
  assert.equal(plainTable(['STATE', 'NAME'], [[green, 'n1']]), `STATE   NAME\n${green}      n1\n`)
})

test('plainTable with no rows prints the header', () => {
  assert.equal(plainTable(['NAME', 'CIDR'], []), 'NAME   CIDR\n')
})

// boxTable draws narrow cells itself (cli-table3's layout is quadratic in the rows): the drawing must equal
// cli-table3's, byte for byte, for every mix of alignment, ANSI colour, bars, empty cells and ragged rows.
test('boxTable draws exactly what cli-table3 draws, for narrow cells of every kind', async () => {
  const {default: Table} = await import('cli-table3')
  const dash = {top: '-', bottom: '-', mid: '-'}
  const plus = {
    'top-mid': '+',
    'top-left': '+',
    'top-right': '+',
    'bottom-mid': '+',
    'bottom-left': '+',
    'bottom-right': '+',
    'left-mid': '+',
    'mid-mid': '+',
    'right-mid': '+',
  }
  const oracle = (head: string[], rows: string[][], align: Align[]) => {
    const n = Math.max(head.length, ...rows.map((r) => r.length))
    const fill = (r: string[]) => [...r, ...Array<string>(n - r.length).fill('')]
    const t = new Table({
      head: fill(head),
      colAligns: Array.from({length: n}, () => 'left' as const),
      chars: {...dash, ...plus, left: '|', right: '|', middle: '|'},
      style: {head: [], border: [], compact: true, 'padding-left': 1, 'padding-right': 1},
    })
    for (const r of rows) t.push(fill(r).map((content, i) => ({content, hAlign: align[i] ?? 'left'})))
    const lines = t.toString().split('\n')
    if (rows.length === 0) lines.push(lines[lines.length - 1]!)
    return `${lines.join('\n')}\n`
  }
  let seed = 7
  const rand = (k: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31
    return seed % k
  }
  const cell = () =>
    [
      '',
      '10.65.79.0/26',
      String(rand(100000)),
      `${rand(64)} (${rand(100)}%)`,
      `\u001b[31m${rand(9)} (1%)\u001b[39m`,
      `${'█'.repeat(rand(10))}${'░'.repeat(rand(10))} ${rand(100)}%`,
      `\u001b[2m${'█'.repeat(3)}\u001b[22m${'░'.repeat(7)}`,
      'x'.repeat(rand(30)),
    ][rand(8)]!
  for (let k = 0; k < 200; k++) {
    const cols = 1 + rand(6)
    const head = Array.from({length: cols}, (_, i) => (rand(4) === 0 ? '' : `HEAD ${i}`))
    const rows = Array.from({length: rand(8)}, () => Array.from({length: 1 + rand(cols)}, cell))
    const align = Array.from({length: cols}, () => (rand(2) ? 'right' : 'left') as Align)
    assert.equal(boxTable(head, rows, align), oracle(head, rows, align), JSON.stringify({head, rows, align}))
  }
})
