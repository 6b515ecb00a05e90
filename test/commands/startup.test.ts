// What the CLI loads to start: bin/run.cjs runs the one-file bundle (scripts/bundle-cli.mjs) and each command
// pulls in only its own packages, so `--help` and `--version` never load the datastore, netlink, YAML or etcd
// code. Proven with a module trace of the real binary (every require() and import() it resolves).
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {after, describe, test} from 'node:test'
import {SqliteStore} from '../../src/lib/store/sqlite.ts'
import {runProcess} from '../support/process.ts'
import {ROOT, bundlesStale, ensureBuilt} from './helpers.ts'

const TRACE = path.join(ROOT, 'test', 'support', 'trace-modules.mjs')
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-startup-'))
after(() => fs.rmSync(tmp, {recursive: true, force: true}))

async function traced(...args: string[]): Promise<{stdout: string; modules: string[]}> {
  return tracedWith({}, ...args)
}

async function tracedWith(extra: NodeJS.ProcessEnv, ...args: string[]): Promise<{stdout: string; modules: string[]}> {
  ensureBuilt()
  const file = path.join(tmp, `trace-${Math.random().toString(16).slice(2)}.txt`)
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    IPAMCTL_TRACE_MODULES: file,
    NO_COLOR: '1',
    IPAMCTL_DATASTORE_PATH: path.join(tmp, 'ipam.db'),
    ...extra,
  }
  delete env.NODE_OPTIONS
  const r = await runProcess(process.execPath, ['--import', TRACE, path.join(ROOT, 'bin', 'run.cjs'), ...args], {
    cwd: tmp,
    env,
  })
  assert.equal(r.code, 0, r.stderr)
  return {
    stdout: r.stdout,
    modules: fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean) : [],
  }
}

const HEAVY = /\/node_modules\/(better-sqlite3|netlink|netns|yaml|etcd3|@grpc|@inquirer|cli-table3)\//
const BUNDLE = path.join(ROOT, 'dist', 'cli-bundle', 'ipamctl.cjs')

describe('CLI start-up', {concurrency: true}, () => {
  // `--version x` is still oclif's version output (it looks at the first argument only): the reference.
  for (const args of [['--help'], ['--version', 'x']]) {
    test(`ipamctl ${args.join(' ')} runs the bundle and loads no datastore, netlink, YAML or prompt code`, async () => {
      const {stdout, modules} = await traced(...args)
      assert.match(stdout, /ipamctl/)
      assert.ok(modules.includes(path.join(ROOT, 'bin', 'start.cjs')), 'bin/run.cjs did not run the bundle')
      assert.ok(
        !modules.some((m) => m.includes('/node_modules/@oclif/core/')),
        'oclif came from node_modules, not the bundle',
      )
      assert.deepEqual(
        modules.filter((m) => HEAVY.test(m)),
        [],
      )
    })
  }

  test('ipamctl --version alone prints what oclif prints, without loading the bundle or oclif', async () => {
    const fast = await traced('--version')
    assert.equal(fast.stdout, (await traced('--version', 'x')).stdout)
    assert.match(fast.stdout, /^ipamctl\/\d+\.\d+\.\d+ linux-\w+ node-v\d+\.\d+\.\d+\n$/)
    assert.deepEqual(
      fast.modules.filter((m) => /bin\/start\.cjs|cli-bundle|@oclif/.test(m)),
      [],
    )
  })

  test('a command loads its own packages only: pool list opens SQLite, but loads no netlink, YAML or etcd3', async () => {
    // pool list reads and never creates a store: give it an existing (empty) one.
    await SqliteStore.open(path.join(tmp, 'ipam.db')).close()
    const {modules} = await traced('pool', 'list')
    assert.ok(
      modules.some((m) => m.includes('/node_modules/better-sqlite3/')),
      'pool list must have opened the embedded store',
    )
    assert.deepEqual(
      modules.filter((m) => /\/node_modules\/(netlink|yaml|etcd3)\//.test(m)),
      [],
    )
  })

  test('an ES-module plugin command runs from the bundle: ipamctl autocomplete bash (oclif imports it via __import)', async () => {
    const home = path.join(tmp, 'home')
    const {stdout, modules} = await tracedWith(
      {HOME: home, XDG_CACHE_HOME: path.join(home, '.cache')},
      'autocomplete',
      'bash',
    )
    assert.match(stdout, /Setup Instructions for IPAMCTL CLI Autocomplete/)
    assert.ok(modules.includes(path.join(ROOT, 'bin', 'start.cjs')), 'bin/run.cjs did not run the bundle')
  })

  test('IPAMCTL_UNBUNDLED=1 runs plain oclif on the tsc output, with the same help', async () => {
    const plain = await tracedWith({IPAMCTL_UNBUNDLED: '1'}, '--help')
    assert.equal(plain.stdout, (await traced('--help')).stdout)
    assert.ok(
      plain.modules.some((m) => m.includes('/node_modules/@oclif/core/')),
      'oclif did not come from node_modules',
    )
    assert.deepEqual(
      plain.modules.filter((m) => m.includes('/dist/cli-bundle/')),
      [],
    )
  })

  test('bin/run.cjs ends the process once the command is done, with its exit status, unless output is still queued', async () => {
    // exitWhenDone on its own, in a process that then says whether it went on: with nothing queued it ends at once
    // (the status the command set stands); with stdout still holding output it lets the output drain first.
    const run = (queued: number) =>
      runProcess(
        process.execPath,
        [
          '-e',
          `Object.defineProperty(process.stdout, 'writableLength', {get: () => ${queued}})
           process.exitCode = 7
           require(${JSON.stringify(path.join(ROOT, 'bin', 'run.cjs'))}).exitWhenDone()
           setTimeout(() => process.stderr.write('went on'), 10)`,
        ],
        {env: process.env},
      )
    const idle = await run(0)
    assert.deepEqual([idle.code, idle.stderr], [7, ''])
    const busy = await run(1)
    assert.deepEqual([busy.code, busy.stderr], [7, 'went on'])
    // And a real command: its whole table through a pipe, and the exit status of a failure.
    const db = path.join(tmp, 'exit.db')
    await SqliteStore.open(db).close()
    const ok = await traced('ipam', 'show', '--datastore-path', db)
    assert.match(ok.stdout, /^\+-+\+.*\nNodes that can still claim a block .*\n$/s)
    const missing = await runProcess(
      process.execPath,
      [path.join(ROOT, 'bin', 'run.cjs'), 'ipam', 'show', '--datastore-path', path.join(tmp, 'none.db')],
      {env: process.env},
    )
    assert.equal(missing.code, 3, missing.stderr)
  })

  test('the tests run fresh bundles: built by npm run build after everything they are made from', () => {
    assert.equal(bundlesStale(), undefined)
    assert.ok(fs.existsSync(`${BUNDLE}.v8cache`), 'no V8 code cache next to the bundle')
  })
})
