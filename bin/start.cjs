'use strict'
// How the bins start (docs/startup.md): each runs a CommonJS bundle made by scripts/bundle-*.mjs with the V8 code
// cache made next to it at build time (`<bundle>.v8cache`), so most of its functions are neither parsed nor
// compiled on an exec: for a process that lives a few tens of milliseconds, compiling its JavaScript is a large
// part of its life. V8 checks the cache against the source and its own version and flags; a rejected or missing
// cache only means compiling from source, as without one. The CNI plugins' start (stdin, the agent-first entry)
// is here too, so that a plugin exec loads one file of ours besides its bin: the first require() of a file costs
// a process the loader's resolution code, compiled on first use, and each file after it its own resolution.
//
// CommonJS on purpose: an ES-module entry starts Node's ESM loader (and fs/promises with it), ~6 ms of a plugin's
// start-up, and a plugin is exec'd once per pod operation. A missing or stale bundle stops with one line, and
// IPAMCTL_UNBUNDLED=1 runs the tsc output instead (docs/startup.md#which-code-runs). No oclif in the plugins:
// see src/plugins/ipam/main.ts.
const fs = require('node:fs')
const {isAscii} = require('node:buffer')
const path = require('node:path')
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
  // node:vm here, not at the top: a plugin exec the agent runs whole (`forward`) loads no bundle.
  const script = new (require('node:vm').Script)(
    `(function (exports, require, module, __filename, __dirname, __import) {${source}\n})`,
    {
      filename: file,
      cachedData,
    },
  )
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

// path.resolve rather than path.join on the way to a plugin's bundle: Node's own start has compiled resolve and
// dirname already, and join would be compiled for these calls alone.
const dist = path.resolve(__dirname, '../dist')
// Any file tsc emits will do: every tsc run rewrites them all, so one newer than a bundle means src/ was compiled
// again without `npm run build` (test/scripts/startup-bins.test.ts checks that tsc emits it).
const TSC_STAMP = path.resolve(dist, 'lib/errors.js')
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
  if (built < (mtime(TSC_STAMP) ?? -1) && mtime(path.resolve(dist, '../src')) !== undefined)
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

// The CNI plugins.

const cni = path.resolve(dist, 'cni')

/** The tsc output of the entry that bundle `name` was made from, as scripts/bundle-cni.mjs recorded it. */
function compiledEntry(name) {
  const file = path.resolve(cni, 'entries.json')
  let entries
  try {
    entries = require(file)
  } catch {
    exports.stop(`${file} is missing: run npm run build`)
  }
  return path.resolve(dist, entries[name])
}

/** The exports of entry `name`: dist/cni/<name>.cjs, or its tsc-compiled entry on request. */
async function entry(name) {
  const bundle = path.resolve(cni, `${name}.cjs`)
  return exports.useBundle(bundle) ? exports.load(bundle) : await import(compiledEntry(name))
}

/**
 * Entries that start some invocations of a plugin before it: they do what they can with a fraction of the code,
 * and otherwise return a handover for the plugin's own entry (docs/startup.md#the-agent-first-entry). Started for
 * `commands` when stdin holds `netconfKey` or `defaultSocket` exists, i.e. when an agent could serve the
 * invocation; the values are AGENT_FIRST of src/plugins/ipam/agent-main.ts (a test keeps them equal). `forward`
 * (below) goes first: it asks the agent to run the whole invocation, and `entry` runs it here when the agent does not.
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
exports.runPlugin = async (name) => {
  const first = FIRST[name]
  let handover
  if (first?.commands.includes(process.env.CNI_COMMAND)) {
    const stdin = readStdin()
    if (!stdin.complete || stdin.data.includes(`"${first.netconfKey}"`) || fs.existsSync(first.defaultSocket)) {
      // The agent runs it, or hands it over, or leaves it to the agent-first entry (undefined).
      const f = stdin.complete ? await forward(stdin.data, first) : undefined
      if (f && 'exit' in f) {
        process.exitCode = f.exit
        return
      }
      const r = f ? f.handover : await (await entry(first.entry)).main(undefined, stdin)
      // Finished there: it holds no handle by now (the agent exchange is over, the output written with write(2)),
      // so the process ends on its own without exit()'s guard timer, whose set-up is ~0.5 ms of CPU.
      if (typeof r === 'number') {
        process.exitCode = r
        return
      }
      handover = r
    } else handover = {stdin: stdin.data}
  }
  exitPlugin(await (await entry(name)).main(undefined, handover))
}

// Forwarding an invocation to the agent (docs/startup.md#the-agent-runs-the-invocation). Here rather than in a bundle
// of its own: loading any bundle (the staleness check, reading it and its code cache, compiling them) cost a plugin
// process about 5.7 million instructions, more than all of this path (about 3.6 million). It speaks one request of
// the agent's protocol (src/lib/agent-client/protocol.ts `InvokeRequest`, `InvokeReply`) on the same native exchange
// as the agent client (src/lib/agent-client/client.ts `agentRequest`). test/plugins/ipam/agent-main.test.ts holds it
// to each answer the agent may give, and test/lib/agent/invoke.test.ts to the agent-first entry's output.

/** agentRequest's bounds (src/lib/agent-client/client.ts): the whole exchange, the largest reply taken. */
const AGENT_REQUEST_TIMEOUT_MS = 5000
const AGENT_MAX_REPLY_BYTES = 4 << 20
const ADDON = 'unix-exchange/build/Release/unix_exchange.node'

/**
 * The unix-exchange addon by its file, found as loadAddon (src/lib/native-addon.ts) finds it for the bundles in
 * dist/cni: the first node_modules/<addon> in that folder or above it, skipping folders that are node_modules.
 */
function exchangeAddon() {
  for (let at = cni; ; ) {
    const candidate = `${at}/node_modules/${ADDON}`
    if (!at.endsWith('/node_modules') && fs.existsSync(candidate)) {
      const m = {exports: {}}
      process.dlopen(m, candidate)
      return m.exports
    }
    const up = path.dirname(at)
    if (up === at) return undefined
    at = up
  }
}

/** The socket the netconf names, or the default one when it names none and it exists; else undefined. */
function socketFor(stdin, first) {
  let conf
  try {
    // toString() without arguments goes straight to the UTF-8 decoder (an encoding name is looked up first).
    conf = JSON.parse(stdin.toString())
  } catch {
    return undefined
  }
  if (typeof conf !== 'object' || conf === null || Array.isArray(conf)) return undefined
  const named = conf[first.netconfKey]
  if (named === undefined) return fs.existsSync(first.defaultSocket) ? first.defaultSocket : undefined
  return typeof named === 'string' && named.startsWith('/') ? named : undefined
}

/** Write `text` to fd 1 or 2 with write(2), or through Node's stream where the fd refuses that (pluginProcessIo). */
function writeOut(fd, text) {
  const buf = Buffer.from(text, 'utf8')
  let off = 0
  try {
    while (off < buf.length) off += fs.writeSync(fd, buf, off)
  } catch {
    ;(fd === 1 ? process.stdout : process.stderr).write(buf.subarray(off))
  }
}

/**
 * Ask the agent to run this ADD or DEL whole. Returns {exit} once its output is written; {handover} for the full
 * plugin (src/plugins/ipam/main.ts `main`): the agent handed it over, or its fate is unknown (sent, no complete
 * reply, or an answer not understood), which only the full plugin's idempotent path may finish; or undefined when
 * nothing was done (no socket, nothing sent, or the agent refused with `direct`: one without /v1/invoke, one that
 * may not run it for this process, one shutting down) and the agent-first entry is to do the invocation in this process.
 */
async function forward(stdin, first) {
  const socket = socketFor(stdin, first)
  if (socket === undefined) return undefined
  let request
  let exchange
  try {
    // Who this process is, the agent asks the kernel (src/lib/agent/peer.ts); the pid is for the log lines.
    const body = JSON.stringify({env: process.env, stdin: stdin.toString('latin1'), pid: process.pid})
    request = Buffer.from(
      `POST /v1/invoke HTTP/1.1\r\nHost: ipamctl-agent\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    )
    exchange = exchangeAddon()?.exchange
  } catch {}
  if (!exchange) return undefined
  let r
  try {
    // Blocking: this process has nothing else to do (a promise all the same when the agent's backlog is full).
    r = await exchange(socket, request, AGENT_REQUEST_TIMEOUT_MS, AGENT_MAX_REPLY_BYTES, true)
  } catch {
    return undefined
  }
  if (!r.connected) return undefined
  const unknown = (reason) => ({handover: {stdin, agent: {socket, outcome: {kind: 'unknown', reason}}}})
  // The agent always sends a Content-Length (src/lib/agent/server.ts `send`). String functions rather than regular
  // expressions: V8 compiles each expression on its first use, a cost this path would pay on every exec.
  const end = r.reply.indexOf('\r\n\r\n')
  const head = end < 0 ? '' : r.reply.subarray(0, end).toString('latin1').toLowerCase()
  const status = head.startsWith('http/1.') ? head.slice(9, 12) : undefined
  const at = head.indexOf('\r\ncontent-length:')
  const length = at < 0 ? Number.NaN : Number.parseInt(head.slice(at + 17), 10)
  if (status === undefined || !(length >= 0) || r.reply.length < end + 4 + length) {
    if (r.timedOut) return unknown(`no reply within ${AGENT_REQUEST_TIMEOUT_MS / 1000} s`)
    return unknown(
      r.errno ? `the connection failed: errno ${r.errno}` : 'the connection closed before a complete reply',
    )
  }
  let b
  try {
    b = JSON.parse(r.reply.subarray(end + 4, end + 4 + length).toString('utf8'))
  } catch (err) {
    return unknown(`unreadable reply: ${err.message}`)
  }
  if (typeof b !== 'object' || b === null) return unknown('the reply is not a JSON object')
  if (b.error?.direct === true) return undefined
  if (status === '200' && Number.isInteger(b.exit) && Array.isArray(b.output)) {
    for (const [fd, text] of b.output) writeOut(fd === 1 ? 1 : 2, String(text))
    return {exit: b.exit}
  }
  if (status === '200' && b.handover === null) return {handover: {stdin}}
  if (status === '200' && typeof b.handover?.socket === 'string' && typeof b.handover.outcome?.kind === 'string')
    return {handover: {stdin, agent: b.handover}}
  return unknown(`/v1/invoke: ${typeof b.error?.message === 'string' ? b.error.message : `HTTP ${status}`}`)
}
exports.forward = forward

function exitPlugin(code) {
  process.exitCode = code
  // Everything is closed by now, so the process ends on its own; should a library leave a handle open, do not
  // let it keep the runtime waiting.
  setTimeout(() => process.exit(), 2000).unref()
}
