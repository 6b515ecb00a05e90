'use strict'
// Runs a CommonJS bundle made by scripts/bundle-*.mjs with the V8 code cache made next to it at build time
// (`<bundle>.v8cache`), so most of its functions are neither parsed nor compiled on an exec: for a process that
// lives a few tens of milliseconds, compiling its JavaScript is a large part of its life. V8 checks the cache
// against the source and its own version and flags; a rejected or missing cache only means compiling from
// source, as without one. docs/startup.md says why the bundles exist, what each trick gains and how to remove one.
const fs = require('node:fs')
const {isAscii} = require('node:buffer')
const path = require('node:path')
const vm = require('node:vm')
// The CommonJS loader's Module class, which require('node:module') also returns: taken from this module rather than
// required, because a plugin process would otherwise load and compile the public node:module built-in (~0.2 ms).
const Module = module.constructor

function run(file, withCache) {
  const bytes = fs.readFileSync(file)
  // The bundles are ASCII (scripts/bundle-cli.mjs escapes the rest): read as Latin-1, the same string several times
  // faster than decoding UTF-8 (~5 ms of the CLI's 1.6 MB). Anything else is decoded as UTF-8.
  const source = bytes.toString(isAscii(bytes) ? 'latin1' : 'utf8')
  let cachedData
  if (withCache) {
    try {
      cachedData = fs.readFileSync(`${file}.v8cache`)
    } catch {}
  }
  const script = new vm.Script(`(function (exports, require, module, __filename, __dirname, __import) {${source}\n})`, {
    filename: file,
    cachedData,
  })
  if (process.env.IPAMCTL_DEBUG_BUNDLE)
    process.stderr.write(
      `${file}: code cache ${cachedData ? (script.cachedDataRejected ? 'rejected' : 'used') : 'absent'}\n`,
    )
  const mod = new Module(file, module)
  mod.filename = file
  mod.paths = Module._nodeModulePaths(path.dirname(file))
  // `__import`: the bundle's way to import() an ES module (see scripts/bundle-cli.mjs), from this real module
  // because functions compiled by vm.Script have no dynamic-import hook.
  script.runInThisContext()(
    mod.exports,
    Module.createRequire(file),
    mod,
    file,
    path.dirname(file),
    (specifier) => import(specifier),
  )
  mod.loaded = true
  // Registered like a require()d module, so that a later require(file) (oclif loading its explicit command
  // target) gets these exports instead of evaluating the bundle a second time.
  require.cache[file] = mod
  return {script, exports: mod.exports}
}

/** The bundle's exports. */
exports.load = (file) => run(file, true).exports

const dist = path.join(__dirname, '..', 'dist')
// Any file tsc emits will do: every tsc run rewrites them all, so one newer than a bundle means src/ was compiled
// again without `npm run build` (test/scripts/startup-bins.test.ts checks that tsc emits it).
const TSC_STAMP = path.join(dist, 'lib', 'errors.js')
exports.TSC_STAMP = TSC_STAMP
const mtime = (file) => fs.statSync(file, {throwIfNoEntry: false})?.mtimeMs

/**
 * Whether to run bundle `file`: true, or false when IPAMCTL_UNBUNDLED=1 asks for the tsc output instead. A
 * missing bundle, or one older than the tsc output, ends the process with one line on stderr rather than run
 * code other than what ships (docs/startup.md#which-code-runs). Equal times pass.
 */
exports.useBundle = (file) => {
  if (process.env.IPAMCTL_UNBUNDLED === '1') return false
  const built = mtime(file)
  if (built === undefined) exports.stop(`the bundle ${file} is missing: run npm run build`)
  // Only a checkout (with src/) can have a stale bundle: npm may give the files of an installed package any order
  // of times as it extracts them, and the package has no src/ to have compiled from.
  if (built < (mtime(TSC_STAMP) ?? -1) && mtime(path.join(dist, '..', 'src')) !== undefined)
    exports.stop(
      `the bundle ${file} is stale (older than the tsc output): run npm run build, or set IPAMCTL_UNBUNDLED=1 to run the tsc output`,
    )
  return true
}

/** End the process with exit status 1 and `message` as one line on stderr. */
exports.stop = (message) => {
  process.stderr.write(`Error: ${message}\n`)
  process.exit(1)
}

/** Build time: run `use(exports)` with a fresh compile, then save the cache of everything compiled by then. */
exports.train = async (file, use) => {
  const {script, exports: m} = run(file, false)
  await use(m)
  fs.writeFileSync(`${file}.v8cache`, script.createCachedData())
}
