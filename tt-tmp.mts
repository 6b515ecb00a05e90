import Table from 'cli-table3'
import {boxTable} from './src/cli/table.ts'
const chars = {top: '-','top-mid': '+','top-left': '+','top-right': '+',bottom: '-','bottom-mid': '+','bottom-left': '+','bottom-right': '+',left: '|','left-mid': '+',mid: '-','mid-mid': '+',right: '|','right-mid': '+',middle: '|'}
function alt(head: string[], rows: string[][], align: ('left'|'right')[] = []) {
  const n = head.length
  const t = new Table({head, colAligns: Array.from({length: n}, () => 'left' as const), chars, style: {head: [], border: [], compact: true, 'padding-left': 1, 'padding-right': 1}})
  if (rows.length) t.push(Array.from({length: n}, (_, i) => ({content: rows.map(r => r[i] ?? '').join('\n'), hAlign: align[i] ?? 'left'})))
  return t.toString() + '\n'
}
const red = (s: string) => `\u001b[31m${s}\u001b[39m`
const rows = [['10.0.0.0/26', '64', red('12 (19%)'), '█████░░░'], ['10.0.0.64/26', '', '1', red('██')], ['a', 'bbbbbbbbbbbb', '', 'é漢字']]
const head = ['CIDR', 'TOTAL', 'USE', 'BAR']
const a = boxTable(head, rows, ['left','right','right','left']), b = alt(head, rows, ['left','right','right','left'])
console.log(a === b); if (a!==b) { console.log(a); console.log(b) }
const big = Array.from({length: 3000}, (_, i) => [`10.${i}.0.0/26`, String(i), `${i} (1%)`])
let t = Date.now(); const x = boxTable(['A','B','C'], big, ['left','right','right']); console.log('old', Date.now()-t)
t = Date.now(); const y = alt(['A','B','C'], big, ['left','right','right']); console.log('new', Date.now()-t, x===y)
