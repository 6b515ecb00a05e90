'use strict'
// Shared start of the CNI plugin bins. CommonJS on purpose: an ES-module entry starts Node's ESM loader (and
// fs/promises with it), ~6 ms of a plugin's start-up, and a plugin is exec'd once per pod operation.
// Runs the bundle from scripts/bundle-cni.mjs through load-bundle.cjs (a V8 code cache made at build time); a
// missing or stale bundle stops with one line, and IPAMCTL_UNBUNDLED=1 runs the tsc output instead
// (docs/startup.md#which-code-runs). No oclif here: see src/plugins/ipam/main.ts.
const path = require('node:path')
const loader = require('./load-bundle.cjs')

const cni = path.join(__dirname, '..', 'dist', 'cni')

/** The tsc output of the entry that bundle `name` was made from, as scripts/bundle-cni.mjs recorded it. */
function compiledEntry(name) {
  const file = path.join(cni, 'entries.json')
  let entries
  try {
    entries = require(file)
  } catch {
    loader.stop(`${file} is missing: run npm run build`)
  }
  return path.join(cni, '..', entries[name])
}

/** The exports of entry `name`: dist/cni/<name>.cjs, or its tsc-compiled entry on request. */
async function entry(name) {
  const bundle = path.join(cni, `${name}.cjs`)
  return loader.useBundle(bundle) ? loader.load(bundle) : await import(compiledEntry(name))
}

/**
 * Entries that start the given commands of a plugin before it: they do what they can with a fraction of the
 * code, and otherwise return a handover for the plugin's own entry (src/plugins/ipam/agent-main.ts,
 * docs/startup.md#the-agent-first-entry). That entry hands any other command over as well; the list only
 * spares loading it where it would.
 */
const FIRST = {'ipamctl-ipam': {entry: 'ipamctl-ipam-agent', commands: ['ADD', 'DEL']}}

/** Run plugin `name` (dist/cni/<name>.cjs, or its tsc-compiled entry on request) and exit with its code. */
exports.run = async (name) => {
  const first = FIRST[name]
  let handover
  if (first?.commands.includes(process.env.CNI_COMMAND)) {
    const r = await (await entry(first.entry)).main()
    if (typeof r === 'number') return exit(r)
    handover = r
  }
  exit(await (await entry(name)).main(undefined, handover))
}

function exit(code) {
  process.exitCode = code
  // Everything is closed by now, so the process ends on its own; should a library leave a handle open, do not
  // let it keep the runtime waiting.
  setTimeout(() => process.exit(), 2000).unref()
}
