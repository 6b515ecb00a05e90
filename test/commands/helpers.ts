// Black-box helpers for the command tests: every test runs the REAL binary (`node bin/run.cjs …`) as a
// child process against its own SQLite datastore in a fresh temp dir, and reads that file directly (read
// only) to check what the command did or did not write.
//
// - ensureBuilt(): `npm run build` at most once per process, only when the bundles are stale: the tests run the
//   bundles users run.
// - Sandbox: a temp dir + store file, `run(...args)` and `dump()`.
// - fixture(): a store prepared once per process by running CLI commands, copied into each sandbox that
//   needs it (copying a file is far cheaper than re-running the setup commands).
import assert from 'node:assert/strict'
import {runProcess} from '../support/process.ts'
import {execFileSync} from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {fileURLToPath} from 'node:url'
import Database from 'better-sqlite3'

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')
const BIN = path.join(ROOT, 'bin', 'run.cjs')
const SRC = path.join(ROOT, 'src')

// ---------------------------------------------------------------------------------------------- build

function walk(dir: string, ext: string, out: string[] = []): string[] {
  let entries: fs.Dirent[]
  try {
    entries = fs.readdirSync(dir, {withFileTypes: true})
  } catch {
    return out
  }
  for (const e of entries) {
    const p = path.join(dir, e.name)
    if (e.isDirectory()) walk(p, ext, out)
    else if (e.name.endsWith(ext)) out.push(p)
  }
  return out
}

/** What the bins run, all made by `npm run build` (docs/startup.md#which-code-runs). */
const BUNDLES = [
  'dist/cni/ipamctl-ipam.cjs',
  'dist/cni/ipamctl-ipam-agent.cjs',
  'dist/cni/ipamctl-cni.cjs',
  'dist/cli-bundle/ipamctl.cjs',
].flatMap((f) => [path.join(ROOT, f), path.join(ROOT, `${f}.v8cache`)])
/** What the bundles are made from, and the tsc output the bins compare them with (bin/start.cjs). */
const inputs = () => [
  ...walk(SRC, '.ts'),
  ...walk(path.join(ROOT, 'bin'), '.cjs'),
  ...['scripts/bundle-cli.mjs', 'scripts/bundle-cni.mjs', 'scripts/builtin-shims.mjs', 'package.json', 'tsconfig.json']
    .concat('dist/lib/errors.js')
    .map((f) => path.join(ROOT, f)),
]
const mtime = (file: string) => fs.statSync(file, {throwIfNoEntry: false})?.mtimeMs

/** Why the bundles are stale (a missing one, or an input newer than the oldest), or undefined when they are not. */
export function bundlesStale(): string | undefined {
  let oldest = Infinity
  for (const f of BUNDLES) {
    const t = mtime(f)
    if (t === undefined) return `${path.relative(ROOT, f)} is missing`
    oldest = Math.min(oldest, t)
  }
  for (const f of inputs()) {
    const t = mtime(f)
    if (t === undefined) return `${path.relative(ROOT, f)} is missing`
    if (t > oldest) return `${path.relative(ROOT, f)} is newer than the bundles`
  }
  return undefined
}

const sleepSync = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)

let built = false

/**
 * Run `npm run build` when the bundles are stale, so the tests run what users run: the bundles with their code
 * caches, never a tsc-only build. Test files run in parallel processes, so the build is guarded by a lock
 * directory; whoever waits re-checks after the lock holder is done. A failed build fails the test.
 */
export function ensureBuilt(): void {
  if (built) return
  if (process.env.IPAMCTL_UNBUNDLED)
    throw new Error('IPAMCTL_UNBUNDLED is set: the tests run the bundles users run; unset it')
  if (bundlesStale()) {
    const lock = path.join(os.tmpdir(), `ipamctl-test-build-${Buffer.from(ROOT).toString('hex').slice(-24)}.lock`)
    const deadline = Date.now() + 300_000
    for (;;) {
      try {
        fs.mkdirSync(lock)
        break
      } catch {
        // Another test process is building; a lock left by a killed run is broken after four minutes.
        try {
          if (Date.now() - fs.statSync(lock).mtimeMs > 240_000) fs.rmSync(lock, {recursive: true, force: true})
        } catch {
          /* lock vanished: retry */
        }
        if (Date.now() > deadline) throw new Error(`timed out waiting for the build lock ${lock}`)
        sleepSync(100)
      }
    }
    try {
      const why = bundlesStale()
      if (why) {
        const env: NodeJS.ProcessEnv = {...process.env}
        delete env.NODE_OPTIONS // the test runner's --import tsx must not leak into the build
        try {
          execFileSync('npm', ['run', 'build'], {cwd: ROOT, env, stdio: 'pipe'})
        } catch (err) {
          const e = err as {stdout?: Buffer; stderr?: Buffer}
          throw new Error(`npm run build failed (${why}):\n${e.stdout ?? ''}${e.stderr ?? err}`)
        }
        const still = bundlesStale()
        if (still) throw new Error(`the bundles are still stale after npm run build: ${still}`)
      }
    } finally {
      fs.rmSync(lock, {recursive: true, force: true})
    }
  }
  built = true
}

// ---------------------------------------------------------------------------------------------- running

export interface RunResult {
  stdout: string
  stderr: string
  status: number | null
}

export interface RunOptions {
  /** Written to the child's stdin, which is then closed (stdin is always a pipe, never a TTY). */
  input?: string
  /** Extra environment; a value of `undefined` removes the variable. */
  env?: Record<string, string | undefined>
}

let spawns = 0
/** How many CLI processes this test process has started (to keep the suite's cost in check). */
export const spawnCount = () => spawns

/** Run `node bin/run.cjs ...args` with the given datastore file. */
export function runCli(db: string, args: readonly string[], opts: RunOptions = {}): Promise<RunResult> {
  ensureBuilt()
  spawns++
  // IPAMCTL_CNI_LOG_FILE: `cni add` without --conf logs into the sandbox, not /var/log (docs/logging.md).
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    IPAMCTL_DATASTORE_PATH: db,
    IPAMCTL_CNI_LOG_FILE: path.join(path.dirname(db), 'cni', 'cni.log'),
    NO_COLOR: '1',
  }
  delete env.FORCE_COLOR
  delete env.DEBUG
  delete env.NODE_OPTIONS // the test runner's --import tsx must not leak into the child
  for (const [k, v] of Object.entries(opts.env ?? {})) {
    if (v === undefined) delete env[k]
    else env[k] = v
  }
  return runProcess(process.execPath, [BIN, ...args], {cwd: ROOT, env, stdin: opts.input}).then((r) => ({
    stdout: r.stdout,
    stderr: r.stderr,
    status: r.code,
  }))
}

// ---------------------------------------------------------------------------------------------- sandboxes

const tempDirs: string[] = []
process.on('exit', () => {
  for (const d of tempDirs) fs.rmSync(d, {recursive: true, force: true})
  if (process.env.IPAMCTL_TEST_SPAWNS)
    process.stderr.write(
      `[test/commands] ${process.argv[1] ? path.basename(process.argv.at(-1)!) : ''} spawned ${spawns} CLI processes\n`,
    )
})

function tempDir(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-cmd-'))
  tempDirs.push(d)
  return d
}

export interface Sandbox {
  dir: string
  /** The datastore file (IPAMCTL_DATASTORE_PATH). */
  db: string
  run(...args: string[]): Promise<RunResult>
  runWith(opts: RunOptions, ...args: string[]): Promise<RunResult>
  /** Run and assert exit status 0 (showing stderr on failure); returns stdout. */
  ok(...args: string[]): Promise<string>
  /** Every key, value and mod_revision plus the global revision: equal dumps = unchanged datastore. */
  dump(): string
  /** The stored value of one key, read directly from the SQLite file. */
  value(key: string): string | undefined
  keys(prefix?: string): string[]
  /** Write a file into the sandbox dir and return its path. */
  file(name: string, text: string): string
}

/** A sandbox with an empty datastore (the file is created by the first command). */
export function sandbox(): Sandbox {
  const dir = tempDir()
  const db = path.join(dir, 'ipam.db')
  const sb: Sandbox = {
    dir,
    db,
    run: (...args) => runCli(db, args),
    runWith: (opts, ...args) => runCli(db, args, opts),
    async ok(...args) {
      const r = await runCli(db, args)
      assert.equal(r.status, 0, `ipamctl ${args.join(' ')} failed (${r.status}):\n${r.stderr}${r.stdout}`)
      return r.stdout
    },
    dump: () => dumpStore(db),
    value(key) {
      return withDb(
        db,
        (d) => (d.prepare('SELECT value FROM kv WHERE key = ?').pluck().get(key) as string | undefined) ?? undefined,
      )
    },
    keys(prefix = '') {
      return withDb(db, (d) => d.prepare('SELECT key FROM kv ORDER BY key').pluck().all() as string[]).filter((k) =>
        k.startsWith(prefix),
      )
    },
    file(name, text) {
      const p = path.join(dir, name)
      fs.writeFileSync(p, text)
      return p
    },
  }
  return sb
}

function withDb<T>(file: string, fn: (d: Database.Database) => T): T {
  const d = new Database(file, {readonly: true, fileMustExist: true})
  try {
    return fn(d)
  } finally {
    d.close()
  }
}

export function dumpStore(file: string): string {
  if (!fs.existsSync(file)) return '<no datastore file>'
  return withDb(file, (d) => {
    const rows = d.prepare('SELECT key, value, mod_revision FROM kv ORDER BY key').safeIntegers(true).all() as {
      key: string
      value: string
      mod_revision: bigint
    }[]
    const rev = d.prepare("SELECT value FROM meta WHERE name = 'revision'").safeIntegers(true).pluck().get() as
      | bigint
      | undefined
    return [`revision ${rev}`, ...rows.map((r) => `${r.key} @${r.mod_revision} ${r.value}`)].join('\n')
  })
}

const fixtures = new Map<string, Promise<string>>()

/**
 * A datastore prepared once per process by running `steps` (each an argv) in order; every call returns a
 * new sandbox holding a private copy of it.
 */
export async function fixture(name: string, steps: readonly (readonly string[])[]): Promise<Sandbox> {
  let ready = fixtures.get(name)
  if (!ready) {
    ready = (async () => {
      const base = sandbox()
      for (const s of steps) await base.ok(...s)
      return base.db
    })()
    fixtures.set(name, ready)
  }
  const src = await ready
  const sb = sandbox()
  for (const suffix of ['', '-wal', '-shm']) {
    if (fs.existsSync(src + suffix)) fs.copyFileSync(src + suffix, sb.db + suffix)
  }
  return sb
}

// ---------------------------------------------------------------------------------------------- assertions

// biome-ignore lint/suspicious/noControlCharactersInRegex: the escape character is what it looks for
export const ANSI = /\u001b\[|\u001b\]/

/**
 * A clean failure: the given exit status, nothing on stdout, and exactly one stderr line that starts with
 * `Error: ` (matching `message` if given) with no stack trace.
 */
export function assertCleanError(r: RunResult, status: number, message?: RegExp | string): void {
  const ctx = `status ${r.status}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`
  assert.equal(r.status, status, ctx)
  assert.equal(r.stdout, '', ctx)
  assert.ok(r.stderr.startsWith('Error: '), ctx)
  assert.ok(r.stderr.endsWith('\n'), ctx)
  assert.equal(r.stderr.trimEnd().split('\n').length, 1, `expected one stderr line\n${ctx}`)
  assert.doesNotMatch(r.stderr, /^\s+at /m, ctx)
  assert.doesNotMatch(r.stderr, ANSI, ctx)
  if (typeof message === 'string') assert.ok(r.stderr.includes(message), `expected ${JSON.stringify(message)}\n${ctx}`)
  else if (message) assert.match(r.stderr, message, ctx)
}

/** Run a command that must fail cleanly and must leave the datastore byte-for-byte unchanged. */
export async function assertRejected(
  sb: Sandbox,
  args: readonly string[],
  status: number,
  message?: RegExp | string,
  opts: RunOptions = {},
): Promise<RunResult> {
  const before = sb.dump()
  const r = await runCli(sb.db, args, opts)
  assertCleanError(r, status, message)
  assert.equal(sb.dump(), before, `ipamctl ${args.join(' ')} changed the datastore`)
  return r
}

export const lines = (s: string): string[] => s.split('\n').filter((l) => l !== '')
