// The host-wide IPAM lock (calico's `ipam_lock_file`): serialises this host's IPAM ADD/DEL/GC so concurrent
// plugin runs queue instead of racing each other for the same block (fewer CAS retries, less datastore load).
// It is best effort, as upstream's: if the lock cannot be set up the plugin goes on without it, and unlike
// upstream's blocking flock it never waits longer than `waitMs` either.
//
// Node has no flock(2) and we add no native code for it. Instead the lock is an EXCLUSIVE transaction on a
// small SQLite file through better-sqlite3, which the embedded datastore loads anyway: SQLite's POSIX
// (fcntl) record locks are released by the kernel when the process dies, so a crashed plugin can never
// leave a stale lock behind, and the wait is SQLite's busy timeout. (fcntl and flock locks do not see each
// other on Linux, so this does not exclude a real calico-ipam using the same path; it need not.)
import fs from 'node:fs'
import path from 'node:path'
import Database from 'better-sqlite3'
import {sqliteNativeBinding} from '../store/sqlite-addon.js'

/** Longest wait for the lock before going on without it. */
export const DEFAULT_LOCK_WAIT_MS = 30_000

export type Unlock = () => void

export interface HostLockOptions {
  waitMs?: number
  log?: (line: string) => void
}

export function acquireHostLock(file: string, opts: HostLockOptions = {}): Unlock {
  const log = opts.log ?? (() => {})
  let db: Database.Database | undefined
  try {
    try {
      makeDirs(path.dirname(file))
    } catch (err) {
      // As upstream: still a chance the file is usable.
      log(`warning: cannot create the directory of the IPAM lock ${file}: ${(err as Error).message}`)
    }
    db = new Database(file, {timeout: opts.waitMs ?? DEFAULT_LOCK_WAIT_MS, nativeBinding: sqliteNativeBinding()})
    db.exec('BEGIN EXCLUSIVE')
  } catch (err) {
    log(`warning: failed to take the host-wide IPAM lock ${file} (${(err as Error).message}); going on without it`)
    try {
      db?.close()
    } catch {
      /* already unusable */
    }
    return () => {}
  }
  const held = db
  return () => {
    try {
      held.exec('ROLLBACK')
    } catch {
      /* closing releases it anyway */
    }
    try {
      held.close()
    } catch (err) {
      log(`warning: failed to release the IPAM lock ${file}: ${(err as Error).message}`)
    }
  }
}

/**
 * mkdir -p, walking the missing ancestors ourselves: Node 20's recursive mkdirSync spins forever on some
 * paths (e.g. under /proc), and a plugin must never hang.
 */
function makeDirs(dir: string): void {
  const missing: string[] = []
  for (let d = path.resolve(dir); !fs.existsSync(d); d = path.dirname(d)) {
    missing.unshift(d)
    if (path.dirname(d) === d) break
  }
  for (const m of missing) fs.mkdirSync(m, {mode: 0o755})
}
