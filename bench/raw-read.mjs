// The floor of a whole-store command for bench/scale.bench.ts: a process that reads exactly the keys the command
// reads, with their values, and nothing else (no decoding), the plainest way each store allows.
//
// argv: etcd <endpoints a,b,c> <prefix>... | sqlite <file> <prefix>...
// Prints "<keys> <bytes>" on stdout. etcd: pages of ~4 MiB at one revision, each over the bounded key window
// the store's scans use (nextWindow, docs/etcd-paging.md; ascending key order, no sort options); SQLite: range
// queries on the kv table in pages of VISIT_PAGE rows as arrays, as the store's visits read them (one call per
// page is cheaper than stepping row by row), in one read transaction.
import {createRequire} from 'node:module'
import path from 'node:path'
import {fileURLToPath} from 'node:url'
import {FIRST_PAGE, nextWindow, pageLimit, windowPage} from '../dist/lib/store/key-windows.js'
import {VISIT_PAGE} from '../dist/lib/store/sqlite.js'

const require = createRequire(path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'package.json'))
const [kind, where, ...prefixes] = process.argv.slice(2)

/** @param {Buffer} prefix */
function rangeEnd(prefix) {
  const end = Buffer.from(prefix)
  for (let i = end.length - 1; i >= 0; i--) {
    if (/** @type {number} */ (end[i]) < 0xff) {
      end[i] = /** @type {number} */ (end[i]) + 1
      return end.subarray(0, i + 1)
    }
  }
  return Buffer.from([0])
}

let keys = 0
let bytes = 0
if (kind === 'etcd') {
  const {Etcd3} = require('etcd3')
  const client = new Etcd3({
    hosts: /** @type {string} */ (where).split(','),
    grpcOptions: {'grpc.max_receive_message_length': 64 * 1024 * 1024},
  })
  /** @type {string | undefined} */
  let revision
  for (const p of prefixes) {
    const prefix = Buffer.from(p)
    const end = rangeEnd(prefix)
    /** @type {import('../dist/lib/store/key-windows.js').KeyWindow | undefined} */
    let win = {from: prefix}
    let limit = FIRST_PAGE
    while (win) {
      const r = await client.kv.range({key: win.from, range_end: win.end ?? end, limit, revision})
      revision ??= r.header.revision
      for (const kv of r.kvs) bytes += kv.key.length + kv.value.length
      keys += r.kvs.length
      if (keys > 0) limit = pageLimit(bytes, keys)
      win = nextWindow(prefix, win, windowPage(r), limit)
    }
  }
  client.close()
} else if (kind === 'sqlite') {
  const Database = require('better-sqlite3')
  const db = new Database(where, {readonly: true})
  const page = (op) =>
    db.prepare(`SELECT key, value FROM kv WHERE key ${op} ? AND key < ? ORDER BY key LIMIT ${VISIT_PAGE}`).raw(true)
  const first = page('>=')
  const next = page('>')
  db.prepare('BEGIN').run()
  for (const p of prefixes) {
    const end = rangeEnd(Buffer.from(p)).toString()
    for (let rows = first.all(p, end); ; rows = next.all(rows[rows.length - 1][0], end)) {
      for (const row of rows) {
        bytes += row[0].length + row[1].length
        keys++
      }
      if (rows.length < VISIT_PAGE) break
    }
  }
  db.prepare('COMMIT').run()
  db.close()
} else {
  throw new Error('usage: raw-read.mjs etcd|sqlite <endpoints|file> <prefix>...')
}
process.stdout.write(`${keys} ${bytes}\n`)
