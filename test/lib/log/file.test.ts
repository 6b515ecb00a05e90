// The plugin log file (src/lib/log/file.ts): real child processes append to one file while it rotates; every
// line arrives whole, exactly once. Plus its permissions, and which files rotation may touch.
import assert from 'node:assert/strict'
import {spawn} from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {after, test} from 'node:test'
import {fileURLToPath} from 'node:url'
import {LogFile, rotatedName, rotateLockName, STALE_ROTATE_LOCK_MS} from '../../../src/lib/log/file.ts'

const WRITER = fileURLToPath(new URL('../../support/log-writer.ts', import.meta.url))
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-logfile-'))
after(() => fs.rmSync(tmp, {recursive: true, force: true}))
let dirs = 0
const dir = () => fs.mkdtempSync(path.join(tmp, `d${++dirs}-`))

function writer(file: string, id: number, count: number, maxBytes: number, maxCount: number): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', WRITER, file, String(id), String(count), String(maxBytes), String(maxCount)],
      {stdio: ['ignore', 'ignore', 'inherit']},
    )
    child.on('error', reject)
    child.on('close', resolve)
  })
}

/** Every line of the file and its rotations (<file>.1 … <file>.<n>). */
function allLines(file: string): string[] {
  const files = fs.readdirSync(path.dirname(file)).filter((f) => f === path.basename(file) || /\.\d+$/.test(f))
  return files.flatMap((f) =>
    fs
      .readFileSync(path.join(path.dirname(file), f), 'utf8')
      .split('\n')
      .slice(0, -1),
  )
}

const LINE = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \[INFO\]\[\d+\] writer writer=(\d+): line seq=(\d+) pad=(x+|"")$/

test('rotation under 6 concurrent writers loses no line and never splits one', async () => {
  const file = path.join(dir(), 'cni.log')
  const writers = 6
  const count = 400
  const codes = await Promise.all(Array.from({length: writers}, (_, i) => writer(file, i, count, 4096, 1000)))
  assert.deepEqual(codes, Array(writers).fill(0))
  const lines = allLines(file)
  const seen = new Set<string>()
  for (const l of lines) {
    const m = LINE.exec(l)
    assert.ok(m, `not a whole line: ${JSON.stringify(l)}`)
    const key = `${m[1]}/${m[2]}`
    assert.ok(!seen.has(key), `line ${key} written twice`)
    seen.add(key)
  }
  assert.equal(seen.size, writers * count, 'every line of every writer is in the file or one of its rotations')
  const rotations = fs.readdirSync(path.dirname(file)).filter((f) => /^cni\.log\.\d+$/.test(f)).length
  // How many rotations happen depends on timing: a writer that finds the rotation lock taken does not wait, and
  // each rotation renames every earlier one (up to maxCount), so a loaded machine sees fewer, longer ones (6 seen
  // in CI, 40+ on a quiet machine). The point is that lines survive rotations made while others write.
  assert.ok(rotations >= 3, `expected the file to have rotated several times, got ${rotations} rotations`)
  assert.ok(!fs.existsSync(rotateLockName(file)), 'the rotation lock is gone')
})

test('creates the file 0600 in a directory made 0700; an existing directory keeps its mode', () => {
  const base = dir()
  const file = path.join(base, 'calico', 'cni', 'cni.log')
  const f = LogFile.open(file, {maxBytes: 1 << 20, maxAgeMs: 1e9, maxCount: 3})
  f.write('one\n')
  f.close()
  assert.equal(fs.statSync(file).mode & 0o777, 0o600)
  assert.equal(fs.statSync(path.dirname(file)).mode & 0o777, 0o700)
  assert.equal(fs.statSync(path.join(base, 'calico')).mode & 0o777, 0o700)
  fs.chmodSync(path.dirname(file), 0o755)
  LogFile.open(path.join(path.dirname(file), 'other.log'), {maxBytes: 1 << 20, maxAgeMs: 1e9, maxCount: 3}).close()
  assert.equal(fs.statSync(path.dirname(file)).mode & 0o777, 0o755)
})

test('rotation touches only the file and its numbered rotations; keeps max count; deletes rotations past max age', () => {
  const d = dir()
  const file = path.join(d, 'cni.log')
  // Files that are not this log's own rotations: never renamed or deleted.
  const others = ['cni.log.bak', 'cni.log.1.gz', 'cni.logx', 'other.log', 'cni.log.9']
  for (const o of others) fs.writeFileSync(path.join(d, o), 'keep\n')
  let now = Date.now()
  const f = LogFile.open(file, {maxBytes: 10, maxAgeMs: 60_000, maxCount: 3, now: () => now})
  for (let i = 0; i < 5; i++) f.write(`rotation ${i} line\n`)
  assert.deepEqual(
    fs.readdirSync(d).sort(),
    ['cni.log', 'cni.log.1', 'cni.log.2', 'cni.log.3', ...others].sort(),
    'three rotations kept; the oldest went by being renamed over',
  )
  assert.equal(fs.readFileSync(rotatedName(file, 1), 'utf8'), 'rotation 4 line\n')
  assert.equal(fs.readFileSync(rotatedName(file, 3), 'utf8'), 'rotation 2 line\n')
  // Past max age: rotations go at the next rotation, the others stay.
  const old = new Date(Date.now() - 120_000)
  fs.utimesSync(rotatedName(file, 2), old, old)
  fs.utimesSync(path.join(d, 'cni.log.9'), old, old)
  now = Date.now()
  f.write('rotation 5 line\n')
  f.close()
  assert.deepEqual(fs.readdirSync(d).sort(), ['cni.log', 'cni.log.1', 'cni.log.2', ...others].sort())
  for (const o of others) assert.equal(fs.readFileSync(path.join(d, o), 'utf8'), 'keep\n')
})

test('a rotation lock held by another process is left alone; a stale one is removed', () => {
  const d = dir()
  const file = path.join(d, 'cni.log')
  fs.writeFileSync(rotateLockName(file), '')
  const f = LogFile.open(file, {maxBytes: 10, maxAgeMs: 1e9, maxCount: 3})
  f.write('a line longer than ten bytes\n')
  assert.deepEqual(fs.readdirSync(d).sort(), ['cni.log', 'cni.log.rotate-lock'], 'someone else is rotating')
  const stale = new Date(Date.now() - STALE_ROTATE_LOCK_MS - 5000)
  fs.utimesSync(rotateLockName(file), stale, stale)
  f.write('another line\n')
  f.write('and one more\n')
  f.close()
  assert.ok(!fs.existsSync(rotateLockName(file)))
  assert.ok(fs.existsSync(rotatedName(file, 1)), 'rotated once the stale lock was gone')
  assert.equal(allLines(file).length, 3)
})

test('never writes through a symbolic link or into a non-regular file', () => {
  const d = dir()
  const target = path.join(d, 'target')
  fs.writeFileSync(target, '')
  fs.symlinkSync(target, path.join(d, 'cni.log'))
  assert.throws(() => LogFile.open(path.join(d, 'cni.log'), {maxBytes: 100, maxAgeMs: 1e9, maxCount: 1}), /ELOOP/)
  assert.equal(fs.readFileSync(target, 'utf8'), '')
  assert.throws(() => LogFile.open(d, {maxBytes: 100, maxAgeMs: 1e9, maxCount: 1}))
})

test('a file that cannot be written any more reports once and then drops lines', () => {
  const d = dir()
  const file = path.join(d, 'cni.log')
  const failures: string[] = []
  const f = LogFile.open(file, {maxBytes: 1 << 20, maxAgeMs: 1e9, maxCount: 1, onFailure: (w) => failures.push(w)})
  f.write('first\n')
  // The descriptor goes bad under it (as when the filesystem goes away).
  fs.closeSync((f as unknown as {fd: number}).fd)
  f.write('second\n')
  f.write('third\n')
  assert.equal(failures.length, 1)
  assert.match(failures[0]!, /cannot write the log file .*cni\.log: EBADF/)
})
