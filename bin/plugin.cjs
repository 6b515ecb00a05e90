'use strict'
// Shared start of the CNI plugin bins. CommonJS on purpose: an ES-module entry starts Node's ESM loader (and
// fs/promises with it), ~6 ms of a plugin's start-up, and a plugin is exec'd once per pod operation.
// Runs the bundle from scripts/bundle-cni.mjs through load-bundle.cjs (a V8 code cache made at build time), or
// the tsc output when that is newer (src/ rebuilt with tsc alone since the last `npm run build`) or the bundle is
// missing. No oclif here: see src/plugins/ipam/main.ts.
const {statSync} = require('node:fs')
const path = require('node:path')

const dist = path.join(__dirname, '..', 'dist')
const mtime = (file) => statSync(file, {throwIfNoEntry: false})?.mtimeMs ?? -1

/** Run plugin `name` (its bundle) or the tsc-compiled entry `compiled` (relative to dist/), and exit with its code. */
exports.run = async (name, compiled) => {
  const bundle = path.join(dist, 'cni', `${name}.cjs`)
  const fallback = path.join(dist, compiled)
  const {main} = mtime(bundle) >= mtime(fallback) ? require('./load-bundle.cjs').load(bundle) : await import(fallback)
  process.exitCode = await main()
  // Everything is closed by now, so the process ends on its own; should a library leave a handle open, do not
  // let it keep the runtime waiting.
  setTimeout(() => process.exit(), 2000).unref()
}
