// Which code the bins run (docs/startup.md#which-code-runs): the bundle, and never something else without being
// asked. Each case runs the real bin/*.cjs, copied into a scratch package whose dist/ holds stand-in bundles and
// tsc output, so the times of its files can be set freely.
import assert from 'node:assert/strict'
import {isAscii} from 'node:buffer'
import {spawnSync} from 'node:child_process'
import fs from 'node:fs'
import {createRequire} from 'node:module'
import os from 'node:os'
import path from 'node:path'
import {after, describe, test} from 'node:test'
import {ROOT} from '../commands/helpers.ts'

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-bins-'))
after(() => fs.rmSync(tmp, {recursive: true, force: true}))

const BUNDLES = {
  'ipamctl-ipam': 'dist/cni/ipamctl-ipam.cjs',
  'ipamctl-cni': 'dist/cni/ipamctl-cni.cjs',
  run: 'dist/cli-bundle/ipamctl.cjs',
} as const
type Bin = keyof typeof BUNDLES
const STAMP = 'dist/lib/errors.js'

/**
 * A scratch checkout: the real bins, stand-in bundles that say who ran, a tsc output with its own entry, and a src/
 * (an installed package has none: see "an installed package").
 */
function pkg(): string {
  const dir = fs.mkdtempSync(path.join(tmp, 'pkg-'))
  fs.cpSync(path.join(ROOT, 'bin'), path.join(dir, 'bin'), {recursive: true})
  const files: Record<string, string> = {
    'package.json': JSON.stringify({name: 'ipamctl', version: '0.0.0', type: 'module', oclif: {}}),
    'src/lib/errors.ts': 'export class IpamError extends Error {}\n',
    [STAMP]: 'export class IpamError extends Error {}\n',
    'dist/lib/main.js': "export async function main() { process.stdout.write('tsc output\\n'); return 0 }\n",
    'dist/cni/entries.json': JSON.stringify({'ipamctl-ipam': 'lib/main.js', 'ipamctl-cni': 'lib/main.js'}),
    [BUNDLES['ipamctl-ipam']]: "exports.main = async () => { process.stdout.write('bundle\\n'); return 0 }\n",
    [BUNDLES['ipamctl-cni']]: "exports.main = async () => { process.stdout.write('bundle\\n'); return 0 }\n",
    [BUNDLES.run]: "exports.execute = async () => { process.stdout.write('bundle\\n') }\n",
  }
  for (const [f, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, f)), {recursive: true})
    fs.writeFileSync(path.join(dir, f), text)
  }
  return dir
}

/** Give `files` (relative to `dir`) the time `t` (seconds since the epoch). */
const setTime = (dir: string, t: number, ...files: string[]) => {
  for (const f of files) fs.utimesSync(path.join(dir, f), t, t)
}

function run(dir: string, bin: Bin, env: Record<string, string> = {}) {
  const file = path.join(dir, 'bin', bin === 'run' ? 'run.cjs' : `${bin}.cjs`)
  const r = spawnSync(process.execPath, [file, ...(bin === 'run' ? ['--help'] : [])], {
    encoding: 'utf8',
    env: {PATH: process.env.PATH, ...env},
  })
  return {status: r.status, stdout: r.stdout, stderr: r.stderr}
}

const ALL = Object.keys(BUNDLES) as Bin[]

describe('which code the bins run', () => {
  test('a bundle built after the tsc output runs', () => {
    const dir = pkg()
    setTime(dir, 1_000_000, STAMP)
    for (const bin of ALL) assert.deepEqual(run(dir, bin), {status: 0, stdout: 'bundle\n', stderr: ''}, bin)
  })

  test('an installed package (npm gives every file the same time) runs the bundle', () => {
    const dir = pkg()
    setTime(dir, 499_162_500, STAMP, ...Object.values(BUNDLES))
    for (const bin of ALL) assert.deepEqual(run(dir, bin), {status: 0, stdout: 'bundle\n', stderr: ''}, bin)
  })

  test('a bundle older than the tsc output stops the bin with one line, and runs nothing', () => {
    const dir = pkg()
    setTime(dir, 1_000_000, ...Object.values(BUNDLES))
    for (const bin of ALL) {
      const r = run(dir, bin)
      assert.equal(r.status, 1, bin)
      assert.equal(r.stdout, '', bin)
      assert.equal(
        r.stderr,
        `Error: the bundle ${path.join(dir, BUNDLES[bin])} is stale (older than the tsc output): run npm run build, ` +
          'or set IPAMCTL_UNBUNDLED=1 to run the tsc output\n',
      )
    }
  })

  test('an installed package (no src/) runs its bundles whatever order of times npm extracted them in', () => {
    const dir = pkg()
    fs.rmSync(path.join(dir, 'src'), {recursive: true})
    setTime(dir, 1_000_000, ...Object.values(BUNDLES))
    for (const bin of ALL) assert.deepEqual(run(dir, bin), {status: 0, stdout: 'bundle\n', stderr: ''}, bin)
  })

  test('a missing bundle stops the bin with one line', () => {
    const dir = pkg()
    for (const f of Object.values(BUNDLES)) fs.rmSync(path.join(dir, f))
    for (const bin of ALL)
      assert.deepEqual(
        run(dir, bin),
        {
          status: 1,
          stdout: '',
          stderr: `Error: the bundle ${path.join(dir, BUNDLES[bin])} is missing: run npm run build\n`,
        },
        bin,
      )
  })

  test('IPAMCTL_UNBUNDLED=1 runs the tsc entry that dist/cni/entries.json names, stale bundle or not', () => {
    const dir = pkg()
    setTime(dir, 1_000_000, ...Object.values(BUNDLES))
    for (const bin of ['ipamctl-ipam', 'ipamctl-cni'] as const)
      assert.deepEqual(run(dir, bin, {IPAMCTL_UNBUNDLED: '1'}), {status: 0, stdout: 'tsc output\n', stderr: ''}, bin)
    fs.rmSync(path.join(dir, 'dist/cni/entries.json'))
    assert.deepEqual(run(dir, 'ipamctl-ipam', {IPAMCTL_UNBUNDLED: '1'}), {
      status: 1,
      stdout: '',
      stderr: `Error: ${path.join(dir, 'dist/cni/entries.json')} is missing: run npm run build\n`,
    })
  })

  test('the time the bins compare with is a file tsc emits from src/', () => {
    const {TSC_STAMP} = createRequire(import.meta.url)(path.join(ROOT, 'bin', 'start.cjs')) as {TSC_STAMP: string}
    assert.equal(path.relative(ROOT, TSC_STAMP), STAMP)
    assert.ok(fs.existsSync(path.join(ROOT, 'src', 'lib', 'errors.ts')), 'src/lib/errors.ts moved: move TSC_STAMP too')
  })

  test('the built bundles are ASCII, so the loader reads them as Latin-1 (the fast path)', () => {
    for (const f of Object.values(BUNDLES)) assert.ok(isAscii(fs.readFileSync(path.join(ROOT, f))), `${f} is not ASCII`)
  })

  test('a bundle that is not ASCII still runs, its text decoded as UTF-8', () => {
    const dir = pkg()
    fs.writeFileSync(
      path.join(dir, BUNDLES['ipamctl-ipam']),
      "exports.main = async () => { process.stdout.write('bündle → µs\\n') /* … */; return 0 }\n",
    )
    const r = run(dir, 'ipamctl-ipam')
    assert.equal(r.status, 0, r.stderr)
    assert.equal(r.stdout, 'bündle → µs\n')
  })
})
