// A tmpfs a test mounts under its own temp directory and always unmounts (root only): for storage faults such as a
// full disk or a read-only file system, without touching anything outside the test's directory.
import {execFileSync} from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'

export interface TestTmpfs {
  /** The mount point (inside `dir`). */
  readonly mnt: string
  /** Why the tests must skip (not root, mount refused), or false when mounted. */
  readonly skip: string | false
  /** Unmount (lazily if busy) and remove `dir`. */
  cleanup(): void
}

export function mountTestTmpfs(dir: string, opts: {size: string; source: string}): TestTmpfs {
  const mnt = path.join(dir, 'mnt')
  let mounted = false
  let skip: string | false = false
  if (process.getuid?.() !== 0) skip = 'needs root (mounts a tmpfs)'
  else {
    try {
      fs.mkdirSync(mnt)
      execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${opts.size},mode=0755`, opts.source, mnt], {stdio: 'pipe'})
      mounted = true
    } catch (err) {
      skip = `cannot mount a tmpfs here: ${(err as Error).message.split('\n')[0]}`
    }
  }
  return {
    mnt,
    skip,
    cleanup() {
      if (mounted) {
        try {
          execFileSync('umount', [mnt], {stdio: 'pipe'})
        } catch {
          execFileSync('umount', ['-l', mnt], {stdio: 'pipe'})
        }
      }
      fs.rmSync(dir, {recursive: true, force: true})
    },
  }
}
