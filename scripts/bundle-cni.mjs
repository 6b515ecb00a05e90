// Bundle the two CNI plugin entries into dist/cni/ (part of `npm run build`, after tsc).
//
// A CNI plugin is exec'd once per pod operation, so its start-up is pod-start latency (the target: IPAM ADD within
// 20 ms of `node -e 0`, docs/design.md#performance-targets). Loading many small modules one by one, and parsing
// and compiling them on every exec, costs more than the plugin's work. So each entry becomes one CommonJS bundle,
// run by bin/start.cjs with a V8 code cache made here from a training ADD (see the end of this file). The
// bins (bin/ipamctl-ipam.cjs, bin/ipamctl-cni.cjs) run only the bundle: a missing or stale one stops them with a
// one-line error. docs/startup.md has the measured gain of each trick below, and how to rebuild or remove one.
//
// - The JavaScript of better-sqlite3 and netlink is compiled in (INLINED; their native addons still load from
//   node_modules). Every other npm package stays external and is require()d from node_modules. Of netlink,
//   src/ imports only the socket layer (netlink/dist/netlink.js); the rtnetlink messages are its own
//   (src/lib/dataplane/rtnl-codec.ts), without the package's ~240 KB of generated struct tables.
// - Lazy imports stay lazy: esbuild turns each `import()` (store/etcd.ts → etcd3, store/settings.ts → yaml) into
//   an init function run on first use. Checked below on the training runs: the build fails if etcd3, cockatiel or
//   yaml is loaded by an embedded-store ADD.
// - Node built-ins the plugin rarely or never needs on its path are loaded on first use, and node:fs is taken with
//   require() (scripts/builtin-shims.mjs says why; the names the shims export are read from the built-ins at build
//   time). src/ does not use node:crypto at all (random.ts, codec/sha1.ts): loading it was ~5 ms of a full-wiring ADD.
// - The version string is compiled in, so the plugin does not read package.json at start.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {spawn} from 'node:child_process'
import {createRequire} from 'node:module'
import {fileURLToPath} from 'node:url'
import {build} from 'esbuild'
import {builtinShims} from './builtin-shims.mjs'

/**
 * The plugins: bundle name (dist/cni/<name>.cjs, run by bin/<name>.cjs) → its entry under src/. The only place
 * that names the entries: dist/cni/entries.json records their tsc output for IPAMCTL_UNBUNDLED=1 (bin/start.cjs).
 */
const ENTRIES = {
  'ipamctl-ipam': 'src/plugins/ipam/main.ts',
  'ipamctl-cni': 'src/plugins/main/main.ts',
  // Started first for ipamctl-ipam's ADD and DEL (bin/start.cjs): the agent path alone, without the datastore.
  'ipamctl-ipam-agent': 'src/plugins/ipam/agent-main.ts',
}

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const OUT = path.join(ROOT, 'dist', 'cni')
const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'))

/** npm packages compiled into the bundle (their JavaScript; native addons are still loaded from node_modules). */
const INLINED = /^(better-sqlite3|bindings|file-uri-to-path|netlink)(\/|$)/
/** @type {Record<string, string>} What the inlined packages' addon finders are replaced with: the addon path is known. */
const ADDON_SHIMS = {
  // better-sqlite3 only calls bindings() when no `nativeBinding` is given (src/lib/store/sqlite-addon.ts).
  bindings: `module.exports = function bindings(name) { const r = require; return r(r.resolve('better-sqlite3/package.json').replace(/package\\.json$/, 'build/Release/' + name)) }`,
  // node-gyp-build searches prebuilds/ and build/ for a match on every start (~1.5 ms with the stream modules its
  // search loads); the build already knows which file it picks on this machine, and asks it again only if that
  // file is gone (node_modules rebuilt for another platform without rebuilding dist/).
  'node-gyp-build': `const path = require('node:path')
module.exports = function load() {
  const r = require
  const dir = path.dirname(r.resolve('netlink/package.json'))
  try { return r(path.join(dir, ${JSON.stringify(netlinkAddon())})) } catch (e) { if (e.code !== 'MODULE_NOT_FOUND') throw e }
  return r('node-gyp-build')(dir)
}`,
}

/** netlink's native addon, relative to its package directory, as node-gyp-build resolves it here. */
function netlinkAddon() {
  const req = createRequire(path.join(ROOT, 'package.json'))
  const dir = path.dirname(req.resolve('netlink/package.json'))
  return path.relative(dir, req('node-gyp-build').path(dir))
}
/** @type {import('esbuild').Plugin} */
const packages = {
  name: 'packages',
  setup(b) {
    b.onResolve({filter: /^[^./]/}, (a) => {
      if (a.path.startsWith('node:') || a.namespace === 'addon-shim') return undefined
      if (ADDON_SHIMS[a.path]) return {path: a.path, namespace: 'addon-shim'}
      if (INLINED.test(a.path)) return undefined
      return {path: a.path, external: true}
    })
    b.onLoad({filter: /.*/, namespace: 'addon-shim'}, (a) => ({
      contents: ADDON_SHIMS[a.path],
      loader: 'js',
      resolveDir: ROOT,
    }))
  },
}

fs.rmSync(OUT, {recursive: true, force: true})
const result = await build({
  absWorkingDir: ROOT,
  entryPoints: ENTRIES,
  outdir: OUT,
  outExtension: {'.js': '.cjs'},
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  // import.meta.url on first use: most execs never read it, and node:url's pathToFileURL is ~0.3 ms.
  define: {__IPAMCTL_VERSION__: JSON.stringify(pkg.version), 'import.meta.url': '__ipamctl_meta.url'},
  banner: {
    js: "let __ipamctl_href; const __ipamctl_meta = {get url() { return (__ipamctl_href ??= require('node:url').pathToFileURL(__filename).href) }};",
  },
  plugins: [builtinShims, packages],
  legalComments: 'none',
  // A quarter less source to read and hash on every exec (~1 ms); names are kept, so error stacks stay readable.
  minifyWhitespace: true,
  minifySyntax: true,
  metafile: true,
  logLevel: 'warning',
})

fs.writeFileSync(
  path.join(OUT, 'entries.json'),
  `${JSON.stringify(Object.fromEntries(Object.entries(ENTRIES).map(([n, src]) => [n, src.replace(/^src\/(.*)\.ts$/, '$1.js')])), null, 2)}\n`,
)

// Lazy imports stay lazy: esbuild wraps a module reached only through import() (store/etcd.ts → etcd3, cockatiel;
// store/settings.ts → yaml) in an init function run on the first import(). Checked on the training runs below:
// the build fails if etcd3, cockatiel or yaml is loaded by an embedded-store ADD.
const LAZY = /\/node_modules\/(etcd3|cockatiel|yaml)\//

// Only the packages named in INLINED may be compiled in; everything else is require()d from node_modules, where
// the plugin process test's module trace sees it (that test proves an ADD loads neither oclif nor etcd3).
for (const input of Object.keys(result.metafile.inputs)) {
  const dep = /(?:^|\/)node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(input)?.[1]
  if (dep !== undefined && !INLINED.test(dep)) {
    fs.rmSync(OUT, {recursive: true, force: true})
    throw new Error(`bundle-cni: ${input} was compiled into a bundle; only ${INLINED} may be`)
  }
}

// The bins run a bundle through bin/start.cjs, with the V8 code cache the training runs below make.
const LOADER = path.join(ROOT, 'bin', 'start.cjs')

// Training runs: an ADD each in a scratch datastore with one pool, lock and datastore in a temporary directory;
// the IPAM plugin also does a second ADD through a per-node agent (started here) on the same store, so that
// the agent client is in its cache as well as the direct path. What they compiled is what the cache holds.
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-bundle-'))
let agent
try {
  const {SqliteStore} = await import(path.join(ROOT, 'dist/lib/store/sqlite.js'))
  const {makeCtx} = await import(path.join(ROOT, 'dist/lib/ipam/context.js'))
  const {createPools} = await import(path.join(ROOT, 'dist/lib/ipam/pool-admin.js'))
  const {startAgent} = await import(path.join(ROOT, 'dist/lib/agent/agent.js'))
  const db = path.join(scratch, 'ipam.db')
  const store = SqliteStore.open(db)
  await createPools(makeCtx(store), [{name: 'train', cidr: '10.255.0.0/16', blockSize: 26}])
  await store.close()
  const agentSocket = path.join(scratch, 'agent.sock')
  agent = await startAgent({
    node: 'train-node',
    socket: agentSocket,
    metricsAddress: '',
    gcIntervalMs: 0,
    gcGraceMs: 0,
    version: pkg.version,
    log: () => {},
    settings: {type: 'embedded', path: db, etcdEndpoints: [], timeoutMs: 10_000, sources: {}},
  })
  for (const name of Object.keys(ENTRIES)) {
    /** @param {Record<string, unknown>} extra */
    const netconf = (extra) =>
      JSON.stringify({
        cniVersion: '1.0.0',
        name: 'train',
        type: name === 'ipamctl-cni' ? name : 'ipamctl-ipam',
        nodename: 'train-node',
        mtu: 1500,
        datastore_path: db,
        ipam_lock_file: path.join(scratch, 'ipam.lock'),
        ipam: {type: 'ipamctl-ipam', ipv4_pools: ['10.255.0.0/16']},
        ...extra,
      })
    const conf = netconf({})
    const env = {
      PATH: process.env.PATH,
      CNI_COMMAND: 'ADD',
      CNI_CONTAINERID: 'train',
      CNI_NETNS: path.join(scratch, 'no-netns'),
      CNI_IFNAME: 'eth0',
      CNI_PATH: scratch,
    }
    // An in-memory io for `command` of another container, through the agent.
    /** @param {string} command */
    const agentIo = (command) =>
      `{getenv: (n) => ({...process.env, CNI_CONTAINERID: 'train-agent', CNI_COMMAND: '${command}'})[n], readStdin: async () => ${JSON.stringify(netconf({ipamctl_agent_socket: agentSocket}))}, stdout: {write() {}}, stderr: {write: (s) => process.stderr.write('agent ${command}: ' + s)}}`
    // The IPAM plugin: the direct ADD (process stdin/env), then the same ADD through the agent. The agent-first
    // entry: ADD and DEL through the agent, each of which it must finish itself (exit code 0, no handover), the
    // way a plugin process runs them (main() without an io: stdin as bin/start.cjs hands it over, output written
    // to fds 1 and 2, the wait for the agent on the main thread), so that its cache holds the functions an exec
    // runs; trained on in-memory ios instead, an exec compiled ~0.5 million instructions more (docs/startup.md).
    const agentStdin = `{data: Buffer.from(${JSON.stringify(netconf({ipamctl_agent_socket: agentSocket}))}), complete: true}`
    const use =
      {
        'ipamctl-ipam': `async (m) => { await m.main(); if (await m.main(${agentIo('ADD')}) !== 0) throw new Error('agent ADD failed') }`,
        'ipamctl-ipam-agent': `async (m) => { for (const c of ['ADD', 'DEL']) { Object.assign(process.env, {CNI_COMMAND: c, CNI_CONTAINERID: 'train-agent'}); if (await m.main(undefined, ${agentStdin}) !== 0) throw new Error('agent-first ' + c + ' failed') } }`,
      }[name] ?? '(m) => m.main()'
    const code = `require(${JSON.stringify(LOADER)}).train(${JSON.stringify(path.join(OUT, `${name}.cjs`))}, ${use}).then(() => console.error('LOADED ' + JSON.stringify(Object.keys(require.cache))))`
    let r
    if (name === 'ipamctl-cni') {
      // Full wiring, inside a network namespace of its own (unshare(1)) that is also the "pod" netns: links,
      // routes and sysctls are made there and vanish with it. Where that is not possible (no unshare, no user
      // namespaces), the ADD stops at the missing netns and the cache holds less of the wiring code.
      const unshare = process.getuid?.() === 0 ? ['-n'] : ['-r', '-n']
      r = await run(
        'unshare',
        [...unshare, process.execPath, '-e', code],
        {...env, CNI_NETNS: '/proc/self/ns/net'},
        conf,
      )
      if (process.env.BUNDLE_CNI_VERBOSE) console.error(name, 'in a netns:', r.error ?? r.status, r.stdout, r.stderr)
      if (r.error || r.status !== 0 || !r.stdout.includes('"ips"')) r = undefined
    }
    // Not spawnSync: the agent answering the IPAM plugin's second ADD runs in this process.
    r ??= await run(process.execPath, ['-e', code], env, conf)
    if (process.env.BUNDLE_CNI_VERBOSE) console.error(name, r.status, r.stdout, r.stderr)
    /** @type {string[]} */
    const loaded = JSON.parse(/^LOADED (.*)$/m.exec(r.stderr)?.[1] ?? '[]')
    if (loaded.some((f) => LAZY.test(f)))
      throw new Error(
        `bundle-cni: an embedded ${name} ADD loaded ${loaded.filter((f) => LAZY.test(f))}; it must stay behind import()`,
      )
    if (!fs.existsSync(path.join(OUT, `${name}.cjs.v8cache`)))
      throw new Error(`bundle-cni: no code cache for ${name}:\n${r.stdout}${r.stderr}`)
  }
} catch (err) {
  fs.rmSync(OUT, {recursive: true, force: true}) // the bins then say the bundle is missing
  throw err
} finally {
  await agent?.stop()
  fs.rmSync(scratch, {recursive: true, force: true})
}

/**
 * A child process with `env` and `input` on stdin, awaited without blocking this one's event loop.
 * @param {string} cmd
 * @param {string[]} args
 * @param {NodeJS.ProcessEnv} env
 * @param {string} input
 * @returns {Promise<{error?: Error, status: number | null, stdout: string, stderr: string}>}
 */
function run(cmd, args, env, input) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, {env, stdio: ['pipe', 'pipe', 'pipe']})
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (b) => (stdout += b))
    child.stderr.on('data', (b) => (stderr += b))
    child.on('error', (error) => resolve({error, status: null, stdout, stderr}))
    child.on('close', (status) => resolve({status, stdout, stderr}))
    child.stdin.end(input)
  })
}
