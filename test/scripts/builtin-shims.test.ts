// The built-in shims of the CNI plugin bundles (scripts/builtin-shims.mjs): the names they export are read from
// the built-ins at build time, every name src/ imports from them is there, and an import of a name a shim cannot
// give (a getter that would load the stream stack) fails the build instead of running without it.
import assert from 'node:assert/strict'
import {spawnSync} from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {after, describe, test} from 'node:test'
import {build} from 'esbuild'
import {builtinShims, LAZY_BUILTINS, REQUIRED_BUILTINS, shimExports} from '../../scripts/builtin-shims.mjs'
import {ROOT} from '../commands/helpers.ts'

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-shims-'))
after(() => fs.rmSync(tmp, {recursive: true, force: true}))

/** Bundle `source` (a .ts file, as src/ is) the way scripts/bundle-cni.mjs does: CommonJS, through the shims. */
async function bundle(source: string): Promise<string> {
  const base = path.join(tmp, Math.random().toString(16).slice(2))
  fs.writeFileSync(`${base}.ts`, source)
  const outfile = `${base}.cjs`
  await build({
    entryPoints: [`${base}.ts`],
    absWorkingDir: ROOT,
    outfile,
    bundle: true,
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    define: {'import.meta.url': '__ipamctl_url'},
    banner: {js: "const __ipamctl_url = require('node:url').pathToFileURL(__filename).href;"},
    plugins: [builtinShims],
    logLevel: 'silent',
  })
  return outfile
}

/** Every `import {a, b as c} from '<name>'` in src/: the names taken from each shimmed built-in. */
function namesSrcImports(): Map<string, Set<string>> {
  const found = new Map<string, Set<string>>()
  const files = fs
    .readdirSync(path.join(ROOT, 'src'), {recursive: true, encoding: 'utf8'})
    .filter((f) => f.endsWith('.ts'))
  for (const f of files) {
    const text = fs.readFileSync(path.join(ROOT, 'src', f), 'utf8')
    for (const m of text.matchAll(/^import\s+(?:type\s+)?(?:\w+\s*,\s*)?\{([^}]*)\}\s*from\s*'(node:[\w/]+)'/gm)) {
      if (/^import\s+type/.test(m[0])) continue
      const names = found.get(m[2]!) ?? new Set<string>()
      for (const part of m[1]!.split(',')) {
        const name = part.trim().replace(/^type\s+/, '')
        if (name && !part.trim().startsWith('type ')) names.add(name.split(/\s+as\s+/)[0]!)
      }
      found.set(m[2]!, names)
    }
  }
  return found
}

describe('built-in shims of the CNI bundles', () => {
  test('every name src/ imports from a shimmed built-in is one its shim exports', () => {
    const used = namesSrcImports()
    assert.ok(used.get('node:fs')?.has('readFileSync'), 'the scan of src/ found no node:fs import (broken scan?)')
    for (const name of [...LAZY_BUILTINS, ...REQUIRED_BUILTINS]) {
      const {values, calls} = shimExports(name)
      const missing = [...(used.get(name) ?? [])].filter((n) => !values.includes(n) && !calls.includes(n))
      assert.deepEqual(missing, [], `src/ imports ${missing.join(', ')} from ${name}, which its shim does not export`)
    }
  })

  test('node:fs: plain values read at load, getter functions called through, stream and promise getters left out', () => {
    const {values, calls} = shimExports('node:fs')
    for (const n of ['readFileSync', 'writeSync', 'statfsSync', 'constants', 'F_OK']) assert.ok(values.includes(n), n)
    assert.ok(calls.includes('opendirSync'), 'opendirSync is a getter on node:fs: called through')
    for (const n of ['promises', 'ReadStream', 'WriteStream', 'Dir'])
      assert.ok(!values.includes(n) && !calls.includes(n), n)
  })

  test('an import of a name the shim cannot give fails the build', async () => {
    await assert.rejects(bundle("import {promises} from 'node:fs'\nconsole.log(promises)"), /No matching export/)
    await assert.rejects(bundle("import {ReadStream} from 'node:tty'\nconsole.log(ReadStream)"), /No matching export/)
  })

  test('a bundle through the shims works, and loads neither the fs stream stack nor a lazy built-in until called', async () => {
    const file = await bundle(
      [
        "import fs, {existsSync, opendirSync, readFileSync} from 'node:fs'",
        "import {execFileSync} from 'node:child_process'",
        "import {isatty} from 'node:tty'",
        "import {createRequire} from 'node:module'",
        'const loaded = () => process.moduleLoadList.filter((m) => /fs\\/streams|child_process|\\btty\\b|^NativeModule module$/.test(m))',
        'const before = loaded()',
        'const dir = opendirSync(process.argv[2]!)',
        'dir.closeSync()',
        'const out = [before, existsSync(process.argv[2]!), fs.readFileSync === readFileSync, typeof isatty(1)]',
        "out.push(execFileSync(process.execPath, ['-e', 'process.stdout.write(\"child\")'], {encoding: 'utf8'}))",
        "out.push(createRequire(process.argv[2]! + '/x.js').resolve('node:path'))",
        'console.log(JSON.stringify(out))',
      ].join('\n'),
    )
    const r = spawnSync(process.execPath, [file, tmp], {encoding: 'utf8', env: {PATH: process.env.PATH}})
    assert.equal(r.status, 0, r.stderr)
    assert.deepEqual(JSON.parse(r.stdout), [[], true, true, 'boolean', 'child', 'node:path'])
  })
})
