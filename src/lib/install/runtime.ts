// The self-contained plugin runtime that `ipamctl cni install` copies under its prefix (README.md "Installing on nodes"): the
// plugin bundles with their code caches, the two bin scripts that load them, the npm packages the bundles still
// require() at run time (native addons and the lazily loaded datastore client), and the node binary. Nothing in it
// refers back to the installation it was copied from.
import {createHash} from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import {ValidationError} from '../errors.js'

/** One file of the runtime: copied from `from` to `to` (relative to the version directory). */
export interface RuntimeFile {
  from: string
  to: string
}

/** The plugins, by the name of their bin (bin/<name>.cjs in the package, bin/<name> in a version directory). */
export const PLUGINS = ['ipamctl-cni', 'ipamctl-ipam'] as const

/**
 * The bundles under dist/cni/ (each with its code cache): the plugins', and ipamctl-ipam's agent-first entry, in
 * which bin/start.cjs starts its ADD and DEL (docs/startup.md#the-agent-first-entry).
 */
export const BUNDLES = [...PLUGINS, 'ipamctl-ipam-agent'] as const

/**
 * Packages whose JavaScript scripts/bundle-cni.mjs compiles into the bundles (or loads through a small index.js)
 * but whose native addons are loaded from node_modules: only package.json (the bundles find the package directory
 * through it) and the listed files, not their sources and build trees.
 */
const ADDON_FILES: Record<string, readonly string[]> = {
  'better-sqlite3': ['build/Release/better_sqlite3.node'],
  netlink: [`prebuilds/${process.platform}-${process.arch}`, 'build/Release/netlink.node'],
  netns: ['index.js', 'build/Release/netns.node'],
  'unix-exchange': ['index.js', 'build/Release/unix_exchange.node'],
}
/** Packages the bundles require() as they are (scripts/bundle-cni.mjs keeps them external): copied whole, with their dependencies. */
const WHOLE_PACKAGES = ['cockatiel', 'etcd3', 'yaml'] as const

/** The directory of package `name` as Node resolves it from `fromDir` (node_modules of it and its parents). */
function findPackage(name: string, fromDir: string, root: string): string {
  for (let dir = fromDir; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'node_modules', name)
    if (fs.existsSync(path.join(candidate, 'package.json'))) return candidate
    if (dir === root || path.dirname(dir) === dir)
      throw new ValidationError(`${name} is not installed under ${root}/node_modules: run npm ci there first`)
  }
}

function filesUnder(dir: string, rel: string, out: RuntimeFile[], to: string, skipNodeModules: boolean): void {
  const full = path.join(dir, rel)
  const st = fs.statSync(full, {throwIfNoEntry: false})
  if (!st) return
  if (st.isDirectory()) {
    for (const e of fs.readdirSync(full).sort()) {
      if (skipNodeModules && e === 'node_modules') continue
      filesUnder(dir, path.join(rel, e), out, to, skipNodeModules)
    }
  } else if (st.isFile()) out.push({from: full, to: path.join(to, rel)})
}

/**
 * Every file of the runtime taken from the installation at `root` (the bins written per version come from
 * `binScript`, and the node binary is added by the installer). Paths under node_modules keep their place
 * (a nested node_modules stays nested) so that Node resolves them as it did in `root`.
 */
export function runtimeFiles(root: string): RuntimeFile[] {
  const out: RuntimeFile[] = []
  out.push({from: path.join(root, 'bin', 'start.cjs'), to: 'bin/start.cjs'})
  for (const name of BUNDLES)
    for (const f of [`${name}.cjs`, `${name}.cjs.v8cache`]) {
      const from = path.join(root, 'dist', 'cni', f)
      if (!fs.existsSync(from)) throw new ValidationError(`${from} is missing: run npm run build in ${root}`)
      out.push({from, to: `dist/cni/${f}`})
    }
  const seen = new Set<string>()
  for (const [name, files] of Object.entries(ADDON_FILES)) {
    // Resolved as the bundles resolve it: a packed package carries these in dist/node_modules (scripts/vendor-addons.mjs).
    const dir = findPackage(name, path.join(root, 'dist', 'cni'), root)
    const to = path.relative(root, dir)
    seen.add(dir)
    out.push({from: path.join(dir, 'package.json'), to: path.join(to, 'package.json')})
    for (const f of files) filesUnder(dir, f, out, to, true)
  }
  const queue: [string, string][] = WHOLE_PACKAGES.map((n) => [n, path.join(root, 'dist', 'cni')])
  while (queue.length > 0) {
    const [name, from] = queue.shift()!
    const dir = findPackage(name, from, root)
    if (seen.has(dir)) continue
    seen.add(dir)
    filesUnder(dir, '.', out, path.relative(root, dir), true)
    const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>
      optionalDependencies?: Record<string, string>
    }
    for (const dep of Object.keys({...pkg.dependencies, ...pkg.optionalDependencies})) {
      try {
        findPackage(dep, dir, root)
      } catch (err) {
        if (pkg.optionalDependencies?.[dep] !== undefined) continue
        throw err
      }
      queue.push([dep, dir])
    }
  }
  return out
}

/**
 * The id of a runtime: package version and a build id, a hash of every file's place and content and of the node
 * version (its code caches are only valid for it). A rebuild that changes anything is a new directory; installing
 * the same build again finds its directory already there. node:crypto here is fine: this is the CLI, not a plugin.
 */
export function runtimeId(version: string, files: readonly RuntimeFile[]): string {
  const h = createHash('sha256')
  h.update(`${process.version} ${process.platform}-${process.arch}\n`)
  for (const f of [...files].sort((a, b) => (a.to < b.to ? -1 : a.to > b.to ? 1 : 0))) {
    h.update(`${f.to}\n`)
    h.update(fs.readFileSync(f.from))
  }
  return `${version}-${h.digest('hex').slice(0, 12)}`
}

/**
 * bin/<plugin> of a version directory: run by that directory's own node (an absolute shebang, so PATH does not
 * matter and a CNI runtime can exec it directly), loading bin/start.cjs next to it. Node resolves the symlinks the
 * plugin was exec'd through (the CNI bin entry, then `current`), so one exec runs one version throughout.
 */
export function binScript(versionDir: string, plugin: string): string {
  return `#!${path.join(versionDir, 'node')}\n'use strict'\n// Installed by ipamctl cni install (README.md "Installing on nodes").\nrequire('./start.cjs').runPlugin(${JSON.stringify(plugin)})\n`
}

/** Linux reads at most this many bytes of a `#!` line (BINPRM_BUF_SIZE, including `#!`). */
export const SHEBANG_MAX = 255
