// Bundle the two CNI plugin entries into dist/cni/ (part of `npm run build`, after tsc).
//
// A CNI plugin is exec'd once per pod operation, so its start-up is pod-start latency (issue 4: IPAM ADD within
// 20 ms of `node -e 0`). Loading ~50 small ES modules one by one costs more than the plugin's work; a bundle
// per entry (plus a few chunks the two share) is read, parsed and linked in a fraction of that. The bins
// (bin/ipamctl-ipam.js, bin/ipamctl-cni.js) import these bundles, falling back to the tsc output when a bundle
// is missing or older than it (a tsc-only rebuild after editing src/).
//
// - Every npm package stays external (native addons and CJS: better-sqlite3, netlink, netns, etcd3, yaml…) and is
//   loaded from node_modules as before.
// - Lazy imports stay lazy: `splitting` turns each `import()` (store/etcd.ts → etcd3, store/settings.ts → yaml)
//   into a separate chunk loaded only when reached. Checked below: the build fails if etcd3, cockatiel or yaml
//   becomes statically reachable from an entry.
// - `netlink` resolves to a shim that requires only the rtnetlink part of the package: its index also loads the
//   nl80211, genl and WireGuard families (~270 KB of JS we never use) and makes the ESM loader lex all of it
//   for named exports. Same objects as the package index exports; an import the shim lacks fails the build.
// - Node built-ins the plugin rarely or never needs on its path are loaded on first use: node:crypto (random UUIDs
//   for new records, the veth name hash), node:child_process (delegating to another IPAM plugin) and node:tty
//   (VERSION only) cost 1–3 ms each to load, crypto alone ~20 internal modules. node:fs is taken with require():
//   an ES import of a built-in builds an ES facade that reads every export, and fs's lazy ReadStream/WriteStream/
//   promises getters then load the whole stream stack. The shims export exactly the names src/ imports; a new
//   name fails the build until it is added here.
// - The version string is compiled in, so the plugin does not read package.json at start.
import fs from 'node:fs'
import path from 'node:path'
import {fileURLToPath} from 'node:url'
import {build} from 'esbuild'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const OUT = path.join(ROOT, 'dist', 'cni')
const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'))

/** What src/lib/dataplane imports from 'netlink', taken from the modules that define it in netlink 0.3.0. */
const NETLINK_SHIM = `
import {createRequire} from 'node:module'
const require = createRequire(import.meta.url)
export const {FlagsNew} = require('netlink/dist/constants.js')
export const {AttrStream} = require('netlink/dist/structs.js')
export const {createRtNetlink} = require('netlink/dist/rt/rt.js')
export const rt = require('netlink/dist/rt/structs.js')
export const ifla = require('netlink/dist/rt/ifla.js')
`

/** Built-ins loaded on first call: module → the functions src/ imports from it. */
const LAZY_BUILTINS = {
  'node:crypto': ['createHash', 'randomBytes', 'randomUUID'],
  'node:child_process': ['execFileSync', 'spawn'],
  'node:tty': ['isatty'],
}
/** Built-ins taken with require() (no ES facade): module → the named imports src/ uses (plus the default). */
const REQUIRED_BUILTINS = {
  'node:fs': ['closeSync', 'existsSync', 'openSync', 'readFileSync', 'readSync', 'statfsSync', 'statSync', 'writeFileSync', 'writeSync'],
}

function builtinShim(name) {
  const head = `import {createRequire} from 'node:module'\nconst require = createRequire(import.meta.url)\n`
  if (LAZY_BUILTINS[name]) {
    const fns = LAZY_BUILTINS[name].map((f) => `export function ${f}(...args) { return (m ??= require(${JSON.stringify(name)})).${f}(...args) }`)
    return `${head}let m\n${fns.join('\n')}\n`
  }
  return `${head}const m = require(${JSON.stringify(name)})\nexport default m\nexport const {${REQUIRED_BUILTINS[name].join(', ')}} = m\n`
}

const builtinShims = {
  name: 'builtin-shims',
  setup(b) {
    const names = [...Object.keys(LAZY_BUILTINS), ...Object.keys(REQUIRED_BUILTINS)]
    const filter = new RegExp(`^(${names.map((n) => n.replace(/[.:/]/g, '\\$&')).join('|')})$`)
    // Only src/'s imports are redirected; the shims' own require() calls are left alone.
    b.onResolve({filter}, (a) => (a.namespace === 'file' ? {path: a.path, namespace: 'builtin-shim'} : undefined))
    b.onLoad({filter: /.*/, namespace: 'builtin-shim'}, (a) => ({contents: builtinShim(a.path), loader: 'js', resolveDir: ROOT}))
  },
}

const netlinkShim = {
  name: 'netlink-rtnl-only',
  setup(b) {
    b.onResolve({filter: /^netlink$/}, () => ({path: 'netlink', namespace: 'netlink-shim'}))
    b.onLoad({filter: /.*/, namespace: 'netlink-shim'}, () => ({contents: NETLINK_SHIM, loader: 'js', resolveDir: ROOT}))
  },
}

fs.rmSync(OUT, {recursive: true, force: true})
const ENTRIES = {'ipamctl-ipam': 'src/lib/cni/ipam-main.ts', 'ipamctl-cni': 'src/lib/cni/cni-main.ts'}
const result = await build({
  absWorkingDir: ROOT,
  entryPoints: ENTRIES,
  outdir: OUT,
  outExtension: {'.js': '.mjs'},
  chunkNames: 'chunks/[name]-[hash]',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  packages: 'external',
  define: {__IPAMCTL_VERSION__: JSON.stringify(pkg.version)},
  plugins: [netlinkShim, builtinShims],
  legalComments: 'none',
  metafile: true,
  logLevel: 'warning',
})

// Lazy-import check: walk the static imports of each entry; none may reach a lazily loaded package.
const LAZY = /^(etcd3|cockatiel|yaml)(\/|$)/
const outputs = result.metafile.outputs
try {
  checkLazy()
} catch (err) {
  fs.rmSync(OUT, {recursive: true, force: true}) // the bins fall back to the tsc output rather than run this
  throw err
}

function checkLazy() {
  for (const [file, out] of Object.entries(outputs)) {
    // (import() targets are entry points too in the metafile: only the plugin entries are checked.)
    if (!Object.values(ENTRIES).includes(out.entryPoint)) continue
    const seen = new Set()
    const walk = (f, via) => {
      if (seen.has(f)) return
      seen.add(f)
      for (const imp of outputs[f]?.imports ?? []) {
        if (imp.kind !== 'import-statement' && imp.kind !== 'require-call') continue
        if (imp.external) {
          if (LAZY.test(imp.path)) throw new Error(`bundle-cni: ${file} loads ${imp.path} eagerly (via ${[...via, f].join(' → ')}); it must stay behind import()`)
        } else walk(imp.path, [...via, f])
      }
    }
    walk(file, [])
  }
}
