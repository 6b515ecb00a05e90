// The plugin log file (netconf log_file_path, Calico's /var/log/calico/cni/cni.log) with size rotation that is
// safe when many plugin processes append at once. The reasoning, and the ownership rule for the files it
// touches, are in docs/logging.md#the-log-file and docs/write-paths.md.
import fs from 'node:fs'
import path from 'node:path'
import type {LogSink} from './logger.js'

export interface LogFileOptions {
  /** Rotate once the file reaches this size. */
  maxBytes: number
  /** Rotated files older than this are deleted at the next rotation. */
  maxAgeMs: number
  /** Rotated files kept: `<path>.1` (newest) to `<path>.<maxCount>`. At least 1. */
  maxCount: number
  /** Called once when the file cannot be written (or rotated) any more; the caller warns on stderr. */
  onFailure?: (what: string) => void
  now?: () => number
}

/** A lock left by a process that died mid-rotation (a rotation takes milliseconds) is removed after this. */
export const STALE_ROTATE_LOCK_MS = 30_000

/** `<file>.<n>`: the exact names of the rotations this file owns. */
export const rotatedName = (file: string, n: number): string => `${file}.${n}`
export const rotateLockName = (file: string): string => `${file}.rotate-lock`

// Never through a symbolic link: the file at the configured path is the one owned (docs/write-paths.md).
const APPEND = fs.constants.O_WRONLY | fs.constants.O_APPEND | fs.constants.O_CREAT | fs.constants.O_NOFOLLOW

const code = (err: unknown): string => (err as NodeJS.ErrnoException).code ?? (err as Error).message

/**
 * Append-only writer of one log file. Each line is one write(2) on an O_APPEND descriptor: the kernel moves to
 * the end and writes under the file's lock, so lines of concurrent processes never interleave on a local
 * filesystem. After each line the path is stat'ed: if it names another file (rotated by another process), the
 * path is opened again; if the file reached maxBytes, it is rotated (rotate()).
 */
export class LogFile implements LogSink {
  private fd = -1
  private ino = -1
  private dev = -1
  private failed = false

  private constructor(
    readonly file: string,
    private readonly opts: LogFileOptions,
  ) {}

  /** Opens (creating the file 0600 and a missing directory 0700); throws when it cannot. */
  static open(file: string, opts: LogFileOptions): LogFile {
    const f = new LogFile(file, {...opts, maxCount: Math.max(1, Math.floor(opts.maxCount))})
    f.reopen()
    return f
  }

  private reopen(): void {
    if (this.fd >= 0) fs.closeSync(this.fd)
    this.fd = -1
    let fd: number
    try {
      fd = fs.openSync(this.file, APPEND, 0o600)
    } catch (err) {
      if (code(err) !== 'ENOENT') throw err
      fs.mkdirSync(path.dirname(this.file), {recursive: true, mode: 0o700})
      fd = fs.openSync(this.file, APPEND, 0o600)
    }
    const st = fs.fstatSync(fd)
    if (!st.isFile()) {
      fs.closeSync(fd)
      throw new Error(`${this.file} is not a regular file`)
    }
    this.fd = fd
    this.ino = st.ino
    this.dev = st.dev
  }

  write(line: string): void {
    if (this.failed) return
    try {
      const buf = Buffer.from(line, 'utf8')
      let off = 0
      while (off < buf.length) off += fs.writeSync(this.fd, buf, off)
    } catch (err) {
      this.fail(`cannot write the log file ${this.file}: ${code(err)}`)
      return
    }
    try {
      const st = fs.statSync(this.file, {throwIfNoEntry: false})
      if (!st || st.ino !== this.ino || st.dev !== this.dev) this.reopen()
      else if (st.size >= this.opts.maxBytes) this.rotate()
    } catch (err) {
      this.fail(`cannot rotate the log file ${this.file}: ${code(err)}`)
    }
  }

  private fail(what: string): void {
    this.failed = true
    this.close()
    this.opts.onFailure?.(what)
  }

  /**
   * Rotation under a lock file created with O_EXCL (`<file>.rotate-lock`): whoever creates it rotates, everyone
   * else goes on appending (no waiting). Under the lock the size is checked again by path (another process may
   * just have rotated), then `<file>.<n>` becomes `<file>.<n+1>` from the oldest down (the oldest is replaced by
   * the rename), `<file>` becomes `<file>.1`, and rotated files past maxAgeMs are deleted. A line written by a
   * process still holding the old descriptor lands in `<file>.1`: renamed, not lost; that process opens the new
   * file after its write.
   */
  private rotate(): void {
    const lock = rotateLockName(this.file)
    const now = (this.opts.now ?? Date.now)()
    let lfd: number
    try {
      lfd = fs.openSync(lock, 'wx', 0o600)
    } catch (err) {
      if (code(err) !== 'EEXIST') throw err
      const st = fs.statSync(lock, {throwIfNoEntry: false})
      if (st && now - st.mtimeMs > STALE_ROTATE_LOCK_MS) fs.rmSync(lock, {force: true})
      return
    }
    try {
      const st = fs.statSync(this.file, {throwIfNoEntry: false})
      if (!st || st.size < this.opts.maxBytes) return
      for (let n = this.opts.maxCount - 1; n >= 1; n--) {
        try {
          fs.renameSync(rotatedName(this.file, n), rotatedName(this.file, n + 1))
        } catch (err) {
          if (code(err) !== 'ENOENT') throw err
        }
      }
      fs.renameSync(this.file, rotatedName(this.file, 1))
      for (let n = 1; n <= this.opts.maxCount; n++) {
        const r = rotatedName(this.file, n)
        const rs = fs.statSync(r, {throwIfNoEntry: false})
        if (rs?.isFile() && now - rs.mtimeMs > this.opts.maxAgeMs) fs.rmSync(r, {force: true})
      }
    } finally {
      fs.closeSync(lfd)
      fs.rmSync(lock, {force: true})
    }
    this.reopen()
  }

  /** Never throws: logging never fails the caller. */
  close(): void {
    try {
      if (this.fd >= 0) fs.closeSync(this.fd)
    } catch {
      /* already gone */
    }
    this.fd = -1
  }
}
