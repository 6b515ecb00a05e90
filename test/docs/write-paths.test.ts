// docs/write-paths.md must match the code: every source file that writes or deletes (datastore transactions, host
// links and routes, sysctls, network namespaces, files) is listed there, and every test the table cites exists.
// A new write path in a file the table does not name fails here until its guard is written down.
import {test} from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

const root = fileURLToPath(new URL('../../', import.meta.url))
const doc = fs.readFileSync(path.join(root, 'docs/write-paths.md'), 'utf8')

/** Calls that change state outside the process. The store backends themselves implement txn and are the guard. */
const WRITE_PRIMITIVES: readonly RegExp[] = [
  /\.txn\(/,
  /\bnew WriteBatch\(/,
  /\bdeleteLink\(/,
  /\bdeleteHostRoute\(/,
  /\baddHostRoute\(/,
  /\bwriteSysctls?(In)?\(/,
  /\bfs\.(rmSync|unlinkSync|writeSync|writeFileSync|symlinkSync|linkSync|renameSync|mkdirSync|chmodSync|fchmodSync)\(/,
  /\b(rmSync|unlinkSync|writeFileSync|symlinkSync|linkSync|renameSync|mkdirSync)\(/,
  /execFileSync\('ip', \['netns'/,
]
const STORE_BACKENDS = new Set([
  'src/lib/store/sqlite.ts',
  'src/lib/store/etcd.ts',
  'src/lib/store/memory.ts',
  'src/lib/store/counted.ts',
  'src/lib/store/store.ts',
])

function sources(dir: string, out: string[] = []): string[] {
  for (const e of fs.readdirSync(dir, {withFileTypes: true})) {
    const p = path.join(dir, e.name)
    if (e.isDirectory()) sources(p, out)
    else if (e.name.endsWith('.ts')) out.push(path.relative(root, p).split(path.sep).join('/'))
  }
  return out
}

test('every source file with a write primitive is listed in docs/write-paths.md', () => {
  const writers = sources(path.join(root, 'src')).filter((f) => {
    if (STORE_BACKENDS.has(f)) return false
    const text = fs.readFileSync(path.join(root, f), 'utf8')
    return WRITE_PRIMITIVES.some((re) => re.test(text))
  })
  assert.ok(writers.length > 10, `expected many writers, found ${writers.length}`)
  const missing = writers.filter((f) => !doc.includes(`\`${f}\``))
  assert.deepEqual(
    missing,
    [],
    'these files write or delete but docs/write-paths.md does not name them (add a row with the guard and its test)',
  )
})

test('every source file docs/write-paths.md names exists', () => {
  const named = [...doc.matchAll(/`(src\/[^`\s]+\.ts)`/g)].map((m) => m[1]!)
  assert.ok(named.length > 10)
  for (const f of new Set(named))
    assert.ok(fs.existsSync(path.join(root, f)), `docs/write-paths.md names ${f}, which does not exist`)
})

test('every test docs/write-paths.md cites exists, under that name', () => {
  const cited = [...doc.matchAll(/`(test\/[^`\s]+\.ts)` › "([^"]+)"/g)].map((m) => ({file: m[1]!, name: m[2]!}))
  assert.ok(cited.length > 20, `expected the table to cite its tests, found ${cited.length}`)
  for (const {file, name} of cited) {
    const p = path.join(root, file)
    assert.ok(fs.existsSync(p), `docs/write-paths.md cites ${file}, which does not exist`)
    assert.ok(
      fs.readFileSync(p, 'utf8').includes(name),
      `docs/write-paths.md cites "${name}" in ${file}, which has no such test`,
    )
  }
})

test('every row of the write-path tables names a guard and a test', () => {
  const rows = doc.split('\n').filter((l) => /^\| `src\//.test(l))
  assert.ok(rows.length > 10)
  for (const row of rows) {
    const cells = row.split(' | ')
    assert.ok(cells.length >= 4, `row has fewer than four columns: ${row}`)
    assert.match(cells[cells.length - 1]!, /`test\/[^`]+` › "/, `row cites no test: ${row}`)
  }
})
