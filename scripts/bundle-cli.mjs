// Bundle the ipamctl CLI into dist/cli-bundle/ipamctl.cjs (part of `npm run build`, after tsc and `oclif manifest`).
//
// Started the usual way, an oclif CLI resolves, reads and compiles a few hundred CommonJS and ES modules of
// @oclif/core and its dependencies on every run: 2.5–3× a bare `node -e 0` for `ipamctl --help` (the target is
// at most 2.5×, docs/design.md#performance-targets). So bin/run.cjs runs this one-file bundle through
// bin/start.cjs with a V8 code cache trained here on a few commands; a missing or stale bundle stops it with
// a one-line error. docs/startup.md has the measured gain of each trick below, and how to rebuild or remove one.
//
// - Commands are found the `explicit` way (an object of command classes, see bin/run.cjs), with one getter per
//   command that require()s its module on first use: esbuild then initialises a command's modules, and requires
//   the packages they import (yaml, better-sqlite3, netlink, inquirer…), only when that command runs. oclif reads
//   which commands exist from oclif.manifest.json, so `--help` loads none of them.
// - @oclif/core, chalk, cli-table3 and the other pure-JavaScript packages are compiled in. Packages with native
//   addons, and etcd3, yaml and prom-client (reached through import() or only by some commands), stay in node_modules.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {spawnSync} from 'node:child_process'
import {fileURLToPath} from 'node:url'
import {build} from 'esbuild'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const OUT = path.join(ROOT, 'dist', 'cli-bundle')
const BUNDLE = path.join(OUT, 'ipamctl.cjs')
const LOADER = path.join(ROOT, 'bin', 'start.cjs')

/** Loaded from node_modules: native addons, packages only some commands need, and what oclif must never bundle. */
const EXTERNAL = [
  'better-sqlite3',
  'netlink',
  'netns',
  'unix-exchange',
  'etcd3',
  'yaml',
  'prom-client',
  '@oclif/plugin-autocomplete',
  'typescript',
  'ts-node',
  'tsx',
  'esbuild',
]

const commandFiles = fs
  .readdirSync(path.join(ROOT, 'src', 'commands'), {recursive: true, encoding: 'utf8'})
  .filter((f) => f.endsWith('.ts'))
  .map((f) => f.split(path.sep).join('/'))
  .sort()
/** @param {string} f a command's file under src/commands */
const commandId = (f) =>
  f
    .replace(/\.ts$/, '')
    .replace(/\/index$/, '')
    .split('/')
    .join(':')
const entry = [
  "export {execute} from '@oclif/core'",
  'export const COMMANDS = {',
  ...commandFiles.map(
    (f) => `  get ${JSON.stringify(commandId(f))}() { return require('./src/commands/${f}').default },`,
  ),
  '}',
].join('\n')

/**
 * Source patches applied while bundling, each required to match exactly `count` times (a new @oclif/core version
 * that changed the code fails the build instead of silently running unpatched).
 * - oclif sorts the command list with String#localeCompare, whose first call builds an ICU collator: 6–15 ms of
 *   every run here, a quarter of `node -e 0`, to order ASCII command ids that a code-unit comparison orders the
 *   same way.
 * - oclif renders every help string through ejs (`ejs.render`), which compiles each string into a new function:
 *   ~7 ms of `--help` for the ~50 command descriptions, none of which has a tag. Strings without `<%` are returned
 *   as they are (what ejs returns for them); the few examples with `<%= config.bin %>` still go through ejs.
 * - oclif's import() of ES-module plugins (@oclif/plugin-autocomplete) goes through `__import`, a function from
 *   bin/start.cjs: code compiled by vm.Script from a code cache has no dynamic-import hook of its own.
 *
 * @type {{file: RegExp, from: string, to: string, count: number, applied?: boolean}[]}
 */
const PATCHES = [
  {
    file: /node_modules\/@oclif\/core\/lib\/config\/plugin\.js$/,
    from: '.sort((a, b) => a.id.localeCompare(b.id))',
    to: '.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))',
    count: 1,
  },
  {
    file: /node_modules\/@oclif\/core\/lib\/help\/util\.js$/,
    from: 'return ejs_1.default.render(t, context);',
    to: "return t.includes('<%') ? ejs_1.default.render(t, context) : t;",
    count: 1,
  },
  {file: /node_modules\/@oclif\/core\/lib\/module-loader\.js$/, from: 'await import(', to: 'await __import(', count: 3},
]
/** @type {import('esbuild').Plugin} */
const patches = {
  name: 'patches',
  setup(b) {
    for (const p of PATCHES) {
      b.onLoad({filter: p.file}, (args) => {
        const source = fs.readFileSync(args.path, 'utf8')
        if (source.split(p.from).length !== p.count + 1)
          throw new Error(`bundle-cli: expected ${p.count} × ${JSON.stringify(p.from)} in ${args.path}`)
        p.applied = true
        return {contents: source.split(p.from).join(p.to), loader: 'js'}
      })
    }
  },
}

fs.rmSync(OUT, {recursive: true, force: true})
await build({
  plugins: [patches],
  stdin: {contents: entry, resolveDir: ROOT, loader: 'ts', sourcefile: 'cli-entry.ts'},
  absWorkingDir: ROOT,
  outfile: BUNDLE,
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  define: {'import.meta.url': '__ipamctl_url'},
  banner: {js: "const __ipamctl_url = require('node:url').pathToFileURL(__filename).href;"},
  external: EXTERNAL,
  legalComments: 'none',
  logLevel: 'warning',
})
for (const p of PATCHES)
  if (!p.applied) throw new Error(`bundle-cli: ${p.file} was not bundled; patch ${JSON.stringify(p.from)} not applied`)

// esbuild writes strings ASCII-only but leaves comments and regular-expression literals as they are; the few
// characters above U+007F there (an ellipsis in a comment, `µs` in a pattern) become \u escapes, which mean the
// same in both. An ASCII bundle is read as Latin-1 by bin/start.cjs: ~5 ms less per exec than decoding
// UTF-8 (docs/startup.md#the-bundles).
const text = fs.readFileSync(BUNDLE, 'utf8')
fs.writeFileSync(
  BUNDLE,
  text.replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`),
)

// Training: run a few common commands in one process against a scratch datastore; the cache holds what they
// compiled. Output is discarded; a failing command fails the build (the bundle would be broken).
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-cli-bundle-'))
try {
  const db = ['--datastore-path', path.join(scratch, 'ipam.db')]
  const runs = [
    ['--help'],
    ['--version'],
    ['autocomplete', '--help'],
    ['ipam', 'show', '--help'],
    ['pool', 'create', 'train', '--cidr', '10.255.0.0/16', ...db],
    ['ipam', 'show', ...db],
    ['pool', 'list', '-o', 'json', ...db],
  ]
  const code = `
    const {loadOptions} = require(${JSON.stringify(path.join(ROOT, 'bin', 'run.cjs'))})
    require(${JSON.stringify(LOADER)}).train(${JSON.stringify(BUNDLE)}, async (m) => {
      for (const args of ${JSON.stringify(runs)}) {
        process.exitCode = 0
        await m.execute({args, loadOptions: loadOptions()})
        if (process.exitCode) throw new Error('ipamctl ' + args.join(' ') + ' exited ' + process.exitCode)
      }
    }).catch((e) => { console.error(e); process.exit(1) })`
  const r = spawnSync(process.execPath, ['-e', code], {
    cwd: scratch,
    env: {...process.env, NO_COLOR: '1'},
    encoding: 'utf8',
  })
  if (r.status !== 0 || !fs.existsSync(`${BUNDLE}.v8cache`))
    throw new Error(`bundle-cli: training run failed (exit ${r.status}):\n${r.stdout}${r.stderr}`)
} catch (err) {
  fs.rmSync(OUT, {recursive: true, force: true}) // bin/run.cjs then says the bundle is missing
  throw err
} finally {
  fs.rmSync(scratch, {recursive: true, force: true})
}
