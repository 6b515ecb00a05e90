// `ipamctl cni install|uninstall`: a self-contained plugin runtime under a prefix, switched atomically, and plugin
// entries in a CNI bin directory pointing at it (README.md "Installing on nodes"; docs/write-paths.md for the
// ownership rule). Layout under the prefix P:
//   P/<version>-<build id>/   one runtime per build (runtime.ts), complete before it gets its name (rename(2))
//   P/current -> <version>    the active one, replaced by rename(2) of a new symlink: an exec sees old or new
//   P/ipamctl-install.json    the manifest: what install wrote, so that uninstall removes exactly that
// and D/<plugin> -> P/current/bin/<plugin>, also made under a temporary name and renamed into place.
import fs from 'node:fs'
import path from 'node:path'
import {encodeJson, nativeParse} from '../codec/gojson.js'
import {ConflictError, NotFoundError, ValidationError} from '../errors.js'
import {randomHex} from '../random.js'
import {binScript, PLUGINS, type RuntimeFile, runtimeFiles, runtimeId, SHEBANG_MAX} from './runtime.js'

export const DEFAULT_PREFIX = '/opt/ipamctl'
export const MANIFEST = 'ipamctl-install.json'
/** How many runtimes stay under the prefix: the current one and the one before it (for --rollback). */
const KEEP = 2

/** What install wrote, kept in P/ipamctl-install.json. */
export interface Manifest {
  /** Runtimes under the prefix written by install, oldest first; the last one activated is `history`'s last. */
  versions: string[]
  /** Versions in the order they were made current (last = current), for --rollback. */
  history: string[]
  /** Plugin entries in CNI bin directories: path and the symlink target install gave it. */
  entries: {path: string; target: string}[]
  /** Directories install created (the prefix, CNI bin directories): removed by uninstall when empty. */
  createdDirs: string[]
}

const emptyManifest = (): Manifest => ({versions: [], history: [], entries: [], createdDirs: []})

export function readManifest(prefix: string): Manifest | undefined {
  let text: string
  try {
    text = fs.readFileSync(path.join(prefix, MANIFEST), 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw err
  }
  const m = nativeParse(text) as unknown as Partial<Manifest>
  const bad = () => new ValidationError(`${path.join(prefix, MANIFEST)} is not an ipamctl install manifest`)
  if (!Array.isArray(m.versions) || !Array.isArray(m.entries) || !Array.isArray(m.history)) throw bad()
  // uninstall deletes what the manifest names: a version must be a plain name inside the prefix, and an entry or a
  // created directory an absolute path, so an edited manifest cannot point it anywhere else.
  const plainName = (v: unknown) => typeof v === 'string' && /^[A-Za-z0-9_+-][A-Za-z0-9._+-]*$/.test(v) && v !== '..'
  const absolute = (p: unknown) => typeof p === 'string' && path.isAbsolute(p) && path.normalize(p) === p
  if (
    !m.versions.every(plainName) ||
    !m.history.every(plainName) ||
    !m.entries.every((e) => absolute(e?.path) && typeof e.target === 'string') ||
    !(m.createdDirs ?? []).every(absolute)
  )
    throw bad()
  return {createdDirs: [], ...m} as Manifest
}

/** A file made under a temporary name next to `dest`, then renamed over it: readers see the old or the new one. */
export function replaceAtomically(dest: string, make: (tmp: string) => void): void {
  const tmp = path.join(path.dirname(dest), `.${path.basename(dest)}.ipamctl-${randomHex(6)}`)
  try {
    make(tmp)
    fs.renameSync(tmp, dest)
  } catch (err) {
    fs.rmSync(tmp, {force: true})
    throw err
  }
}

function writeManifest(prefix: string, m: Manifest): void {
  replaceAtomically(path.join(prefix, MANIFEST), (tmp) => fs.writeFileSync(tmp, `${encodeJson(m, {indent: '  '})}\n`))
}

const readlink = (p: string): string | undefined => {
  try {
    return fs.readlinkSync(p)
  } catch {
    return undefined
  }
}
const exists = (p: string): boolean => fs.lstatSync(p, {throwIfNoEntry: false}) !== undefined

/** Make `dir` and its missing parents, returning the ones made (outermost first). */
function mkdirs(dir: string): string[] {
  const made: string[] = []
  for (let d = dir; !exists(d); d = path.dirname(d)) made.unshift(d)
  for (const d of made) fs.mkdirSync(d)
  return made
}

export interface InstallOptions {
  /** The installation whose runtime is copied (its package root). */
  source: string
  version: string
  prefix: string
  /** CNI bin directory. */
  dir: string
  asCalico: boolean
  /** Replace plugin entries of those names that are not ours. */
  force: boolean
  /** The node binary to copy (process.execPath). */
  node: string
}

export interface InstallResult {
  version: string
  /** The runtime directory was already there (same build installed before). */
  reused: boolean
  previous?: string
  entries: {path: string; target: string; written: boolean}[]
}

export const entryNames = (asCalico: boolean): Record<(typeof PLUGINS)[number], string> =>
  asCalico
    ? {'ipamctl-cni': 'calico', 'ipamctl-ipam': 'calico-ipam'}
    : {'ipamctl-cni': 'ipamctl-cni', 'ipamctl-ipam': 'ipamctl-ipam'}

/** Plugin entries for `dir`, and which of them already exist as something else (not install's own symlink). */
function planEntries(prefix: string, dir: string, asCalico: boolean) {
  const names = entryNames(asCalico)
  const plan = PLUGINS.map((p) => ({path: path.join(dir, names[p]), target: path.join(prefix, 'current', 'bin', p)}))
  const foreign = plan.filter((e) => exists(e.path) && readlink(e.path) !== e.target).map((e) => e.path)
  return {plan, foreign}
}

/** Copy the runtime into P/<id> unless it is there already; the directory appears complete or not at all. */
function placeRuntime(prefix: string, id: string, files: readonly RuntimeFile[], node: string): boolean {
  const dest = path.join(prefix, id)
  if (exists(dest)) return true
  const tmp = path.join(prefix, `.${id}.ipamctl-${randomHex(6)}`)
  try {
    for (const f of files) {
      fs.mkdirSync(path.dirname(path.join(tmp, f.to)), {recursive: true})
      fs.copyFileSync(f.from, path.join(tmp, f.to))
    }
    fs.copyFileSync(node, path.join(tmp, 'node'))
    fs.chmodSync(path.join(tmp, 'node'), 0o755)
    // No package.json above the bins may make Node read them as ES modules.
    fs.writeFileSync(
      path.join(tmp, 'package.json'),
      `${encodeJson({name: 'ipamctl-runtime', version: id, private: true, type: 'commonjs'}, {indent: '  '})}\n`,
    )
    for (const p of PLUGINS) {
      fs.writeFileSync(path.join(tmp, 'bin', p), binScript(dest, p))
      fs.chmodSync(path.join(tmp, 'bin', p), 0o755)
    }
    fs.renameSync(tmp, dest)
  } catch (err) {
    fs.rmSync(tmp, {recursive: true, force: true})
    throw err
  }
  return false
}

/** P/current -> id, by rename(2) of a new symlink over the old one. */
function switchCurrent(prefix: string, id: string): void {
  replaceAtomically(path.join(prefix, 'current'), (tmp) => fs.symlinkSync(id, tmp))
}

const currentOf = (prefix: string): string | undefined => readlink(path.join(prefix, 'current'))

/** Remove runtimes install wrote beyond the newest KEEP of its history (never the current one). */
function prune(prefix: string, m: Manifest): void {
  const keep = new Set<string>()
  for (let i = m.history.length - 1; i >= 0 && keep.size < KEEP; i--) keep.add(m.history[i]!)
  const current = currentOf(prefix)
  if (current) keep.add(current)
  for (const v of m.versions.filter((x) => !keep.has(x)))
    fs.rmSync(path.join(prefix, v), {recursive: true, force: true})
  m.versions = m.versions.filter((x) => keep.has(x))
  m.history = m.history.filter((x) => keep.has(x)).slice(-10)
}

function checkPrefix(prefix: string): void {
  if (!path.isAbsolute(prefix)) throw new ValidationError(`--prefix must be an absolute path, not ${prefix}`)
  if (`#!${prefix}/${'0'.repeat(40)}/node`.length > SHEBANG_MAX)
    throw new ValidationError(`--prefix ${prefix} is too long for a #! line (the kernel reads ${SHEBANG_MAX} bytes)`)
  const m = readManifest(prefix)
  const current = path.join(prefix, 'current')
  if (!m && exists(prefix) && fs.readdirSync(prefix).includes('current'))
    throw new ConflictError(`${current} exists but ${path.join(prefix, MANIFEST)} does not: not an ipamctl prefix`)
}

export function install(o: InstallOptions): InstallResult {
  const prefix = path.resolve(o.prefix)
  const dir = path.resolve(o.dir)
  checkPrefix(prefix)
  const {plan, foreign} = planEntries(prefix, dir, o.asCalico)
  // Everything is checked before anything is written: a refusal leaves both directories as they were.
  if (foreign.length > 0 && !o.force)
    throw new ConflictError(
      `${foreign.join(' and ')} already exist${foreign.length === 1 ? 's' : ''} and ${foreign.length === 1 ? 'is' : 'are'} not ipamctl's; pass --force to replace ${foreign.length === 1 ? 'it' : 'them'}`,
    )
  const files = runtimeFiles(o.source)
  const id = runtimeId(o.version, files)
  const m = readManifest(prefix) ?? emptyManifest()
  m.createdDirs.push(...mkdirs(prefix))
  writeManifest(prefix, m)
  const reused = placeRuntime(prefix, id, files, o.node)
  if (!m.versions.includes(id)) m.versions.push(id)
  writeManifest(prefix, m)
  const previous = currentOf(prefix)
  switchCurrent(prefix, id)
  if (m.history.at(-1) !== id) m.history.push(id)
  m.createdDirs.push(...mkdirs(dir))
  const entries = plan.map((e) => {
    const written = readlink(e.path) !== e.target
    if (written) replaceAtomically(e.path, (tmp) => fs.symlinkSync(e.target, tmp))
    if (!m.entries.some((x) => x.path === e.path)) m.entries.push({path: e.path, target: e.target})
    return {...e, written}
  })
  prune(prefix, m)
  writeManifest(prefix, m)
  return {version: id, reused, previous: previous === id ? undefined : previous, entries}
}

/** Make the runtime activated before the current one current again. */
export function rollback(prefixArg: string): {from: string; to: string} {
  const prefix = path.resolve(prefixArg)
  const m = readManifest(prefix)
  if (!m) throw new NotFoundError(`nothing installed by ipamctl under ${prefix} (no ${MANIFEST})`)
  const from = currentOf(prefix)
  const to = [...m.history].reverse().find((v) => v !== from && exists(path.join(prefix, v)))
  if (!from || !to) throw new NotFoundError(`no earlier version under ${prefix} to roll back to`)
  switchCurrent(prefix, to)
  m.history.push(to)
  writeManifest(prefix, m)
  return {from, to}
}

export interface UninstallResult {
  removed: string[]
  /** Plugin entries left in other CNI bin directories (uninstall --dir): the runtime stays for them. */
  kept: string[]
}

/**
 * Remove what install wrote: the plugin entries that are still the symlinks install made (anything else at those
 * names is someone else's and stops uninstall before it removes anything), then, once no entry is left, the
 * runtimes, `current`, the manifest, and the directories install created, when empty. With `dir`, only the entries
 * in that directory.
 */
export function uninstall(prefixArg: string, dirArg?: string): UninstallResult {
  const prefix = path.resolve(prefixArg)
  const m = readManifest(prefix)
  if (!m) throw new NotFoundError(`nothing installed by ipamctl under ${prefix} (no ${MANIFEST})`)
  const dir = dirArg === undefined ? undefined : path.resolve(dirArg)
  const mine = m.entries.filter((e) => dir === undefined || path.dirname(e.path) === dir)
  if (dir !== undefined && mine.length === 0)
    throw new NotFoundError(`ipamctl cni install wrote no plugin entry in ${dir} for prefix ${prefix}`)
  const foreign = mine.filter((e) => exists(e.path) && readlink(e.path) !== e.target).map((e) => e.path)
  if (foreign.length > 0)
    throw new ConflictError(
      `${foreign.join(' and ')} ${foreign.length === 1 ? 'is' : 'are'} no longer the link ipamctl cni install wrote; move ${foreign.length === 1 ? 'it' : 'them'} away and run uninstall again`,
    )
  const current = path.join(prefix, 'current')
  const kept = m.entries.filter((e) => !mine.includes(e))
  if (kept.length === 0 && exists(current) && !m.versions.includes(readlink(current) ?? ''))
    throw new ConflictError(`${current} does not point at a version ipamctl installed; remove it by hand`)
  const removed: string[] = []
  const rm = (p: string, recursive = false) => {
    if (!exists(p)) return
    fs.rmSync(p, {recursive, force: true})
    removed.push(p)
  }
  for (const e of mine) rm(e.path)
  if (kept.length > 0) {
    m.entries = kept
    writeManifest(prefix, m)
    return {removed, kept: kept.map((e) => e.path)}
  }
  rm(current)
  for (const v of m.versions) rm(path.join(prefix, v), true)
  rm(path.join(prefix, MANIFEST))
  for (const d of [...m.createdDirs].reverse())
    if (exists(d) && fs.readdirSync(d).length === 0) {
      fs.rmdirSync(d)
      removed.push(d)
    }
  return {removed, kept: []}
}
