// better-sqlite3's `nativeBinding` option: the path of its compiled addon, so that opening a database does not
// run the `bindings` package's search (a dozen candidate paths stat'ed, a stack trace taken to find the caller).
// undefined (better-sqlite3 searches as usual) when the addon is not where a normal install puts it.
import fs from 'node:fs'
import {createRequire} from 'node:module'
import path from 'node:path'

let addon: string | null | undefined

export function sqliteNativeBinding(): string | undefined {
  if (addon === undefined) {
    try {
      const dir = path.dirname(createRequire(import.meta.url).resolve('better-sqlite3/package.json'))
      const file = path.join(dir, 'build', 'Release', 'better_sqlite3.node')
      addon = fs.existsSync(file) ? file : null
    } catch {
      addon = null
    }
  }
  return addon ?? undefined
}
