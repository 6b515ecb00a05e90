// A process that allocates and releases addresses as fast as it can, for the crash and soak tests. It imports
// the compiled library (dist/) directly: no CLI and no TypeScript loader, so it starts in ~100 ms.
//
// argv: <store> <host> <handle prefix> <seed> <ops|0> [log file]
//   <store>  an embedded store file, or etcd:<endpoint>
//   <ops>    0: run until killed (crash tests); N: do N operations, then exit 0 (soak).
// Writes "ready\n" to stdout once its first operation is done (the store is open and, for etcd, connected),
// so a kill timed from then lands among operations rather than in start-up. With a log file, appends one line per completed
// operation ("+ <handle> <ip>" or "- <handle>") and fsyncs nothing: the soak test reads it after a clean exit.
// Each operation is a random choice (seeded, xorshift32) between assigning 1-2 addresses under a new handle
// and releasing one held handle, leaning toward assign while few are held.
import fs from 'node:fs'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

const DIST = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'dist', 'lib')
/** @type {typeof import('../../../src/lib/ipam/autoassign.ts')} */
const {autoAssign} = await import(path.join(DIST, 'ipam', 'autoassign.js'))
/** @type {typeof import('../../../src/lib/ipam/release.ts')} */
const {releaseByHandle} = await import(path.join(DIST, 'ipam', 'release.js'))
/** @type {typeof import('../../../src/lib/ipam/context.ts')} */
const {makeCtx} = await import(path.join(DIST, 'ipam', 'context.js'))
/** @type {typeof import('../../../src/lib/store/open.ts')} */
const {openStore} = await import(path.join(DIST, 'store', 'open.js'))

const [spec, host, prefix, seedText, opsText, logFile] = process.argv.slice(2)
if (!spec || !host || !prefix)
  throw new Error('usage: churn.mjs <store> <host> <handle prefix> <seed> <ops|0> [log file]')
let seed = Number(seedText) >>> 0 || 1
const rand = () => {
  seed ^= seed << 13
  seed >>>= 0
  seed ^= seed >>> 17
  seed ^= seed << 5
  seed >>>= 0
  return seed / 2 ** 32
}

const etcd = spec.startsWith('etcd:') ? spec.slice(5) : undefined
const store = await openStore(
  {type: etcd ? 'etcdv3' : 'embedded', path: spec, etcdEndpoints: etcd ? [etcd] : [], timeoutMs: 30_000, sources: {}},
  {mode: 'create'},
)
const ctx = makeCtx(store)
const held = []
const log = logFile ? fs.openSync(logFile, 'a') : undefined
const ops = Number(opsText)

for (let i = 0; ops === 0 || i < ops; i++) {
  if (held.length === 0 || rand() < 0.55 - held.length / 200) {
    const handle = `${prefix}-${i}`
    const r = await autoAssign(ctx, {host, num4: 1 + Math.floor(rand() * 2), num6: 0, handle})
    held.push(handle)
    if (log !== undefined) fs.writeSync(log, r.v4.ips.map((a) => `+ ${handle} ${a.address}\n`).join(''))
  } else {
    const [handle] = held.splice(Math.floor(rand() * held.length), 1)
    if (handle === undefined) throw new Error('release chosen with no handle held')
    await releaseByHandle(ctx, handle)
    if (log !== undefined) fs.writeSync(log, `- ${handle}\n`)
  }
  if (i === 0) process.stdout.write('ready\n')
}
await store.close()
