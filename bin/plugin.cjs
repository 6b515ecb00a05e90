'use strict'
// Shared start of the CNI plugin bins. CommonJS on purpose: an ES-module entry starts Node's ESM loader (and
// fs/promises with it), ~6 ms of a plugin's start-up, and a plugin is exec'd once per pod operation.
// Runs the bundle from scripts/bundle-cni.mjs through load-bundle.cjs (a V8 code cache made at build time); a
// missing or stale bundle stops with one line, and IPAMCTL_UNBUNDLED=1 runs the tsc output instead
// (docs/startup.md#which-code-runs). No oclif here: see src/plugins/ipam/main.ts.
const fs = require('node:fs')
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
 * Entries that start some invocations of a plugin before it: they do what they can with a fraction of the code,
 * and otherwise return a handover for the plugin's own entry (docs/startup.md#the-agent-first-entry). Started for
 * `commands` when stdin holds `netconfKey` or `defaultSocket` exists, i.e. when an agent could serve the
 * invocation; the values are AGENT_FIRST of src/plugins/ipam/agent-main.ts (a test keeps them equal).
 */
const FIRST = {
  'ipamctl-ipam': {
    entry: 'ipamctl-ipam-agent',
    commands: ['ADD', 'DEL'],
    netconfKey: 'ipamctl_agent_socket',
    defaultSocket: '/run/ipamctl/agent.sock',
  },
}
exports.FIRST = FIRST

/**
 * All of stdin, read as pluginProcessIo (src/plugins/ipam/process.ts) reads it: blocking read(2) on fd 0. Not
 * `complete` when fd 0 refuses that (non-blocking and empty, or an error): the entry reads the rest its own way.
 * Read straight into one buffer that doubles when full, without a copy per read and a concatenation: each Buffer
 * function a process calls for the first time costs it ~0.07 ms, and a netconf is one read.
 */
function readStdin() {
  let buf = Buffer.allocUnsafe(64 * 1024)
  let length = 0
  try {
    for (;;) {
      if (length === buf.length) {
        const bigger = Buffer.allocUnsafe(2 * buf.length)
        buf.copy(bigger, 0, 0, length)
        buf = bigger
      }
      const n = fs.readSync(0, buf, length, buf.length - length, null)
      if (n === 0) return {data: buf.subarray(0, length), complete: true}
      length += n
    }
  } catch {
    return {data: buf.subarray(0, length), complete: false}
  }
}

/** Run plugin `name` (dist/cni/<name>.cjs, or its tsc-compiled entry on request) and exit with its code. */
exports.run = async (name) => {
  const first = FIRST[name]
  let handover
  if (first?.commands.includes(process.env.CNI_COMMAND)) {
    const stdin = readStdin()
    if (!stdin.complete || stdin.data.includes(`"${first.netconfKey}"`) || fs.existsSync(first.defaultSocket)) {
      const r = await (await entry(first.entry)).main(undefined, stdin)
      // Finished there: it holds no handle by now (the agent exchange is over, the output written with write(2)),
      // so the process ends on its own without exit()'s guard timer, whose set-up is ~0.5 ms of CPU.
      if (typeof r === 'number') {
        process.exitCode = r
        return
      }
      handover = r
    } else handover = {stdin: stdin.data}
  }
  exit(await (await entry(name)).main(undefined, handover))
}

function exit(code) {
  process.exitCode = code
  // Everything is closed by now, so the process ends on its own; should a library leave a handle open, do not
  // let it keep the runtime waiting.
  setTimeout(() => process.exit(), 2000).unref()
}
