// Create <n> new embedded stores under <dir> (each in its own new subdirectory), as fast as possible.
import path from 'node:path'
import {fileURLToPath} from 'node:url'

const DIST = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'dist', 'lib')
/** @type {typeof import('../../../src/lib/store/sqlite.ts')} */
const {SqliteStore} = await import(path.join(DIST, 'store', 'sqlite.js'))
const [dir, n] = process.argv.slice(2)
if (!dir) throw new Error('usage: create-stores.mjs <dir> <n>')
for (let i = 0; i < Number(n); i++) {
  const s = SqliteStore.open(path.join(dir, `s${i}`, 'deeper', 'ipam.db'))
  await s.close()
}
