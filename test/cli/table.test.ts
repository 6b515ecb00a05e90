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
