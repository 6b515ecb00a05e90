// Where the embedded datastore lives when nothing says otherwise. Its own module so that settings and netconf
// parsing do not load the SQLite store (and better-sqlite3) just to know a path.
import {homedir} from 'node:os'
import path from 'node:path'

/** `/var/lib/ipamctl/ipam.db` for root, else under $XDG_DATA_HOME (or ~/.local/share). */
export function defaultDatastorePath(env: NodeJS.ProcessEnv = process.env, uid = process.getuid?.() ?? 0): string {
  if (uid === 0) return '/var/lib/ipamctl/ipam.db'
  const base = env.XDG_DATA_HOME || path.join(env.HOME || homedir(), '.local', 'share')
  return path.join(base, 'ipamctl', 'ipam.db')
}
