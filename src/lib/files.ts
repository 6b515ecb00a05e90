// Reading files the user names (manifests, config files, reports, netconfs). A bound on the size keeps a
// mistaken or hostile path (/dev/zero, a multi-gigabyte log) from hanging the command or exhausting memory:
// every file ipamctl reads is small.
import fs from 'node:fs'
import {ValidationError} from './errors.js'

/** Far above any real manifest, config file or netconf; reports of huge clusters fit in REPORT_MAX_BYTES. */
export const TEXT_MAX_BYTES = 4 * 1024 * 1024
export const REPORT_MAX_BYTES = 256 * 1024 * 1024

const PAUSE = new Int32Array(new SharedArrayBuffer(4))

/**
 * The file's text, read through at most `maxBytes` (so a device or FIFO that never ends is cut off); `-` is
 * stdin. Any failure is a ValidationError naming the file as `what`.
 */
export function readTextFile(file: string, what: string, maxBytes = TEXT_MAX_BYTES): string {
  let fd: number
  try {
    fd = file === '-' ? 0 : fs.openSync(file, 'r')
  } catch (err) {
    throw new ValidationError(
      `cannot read ${what} ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    )
  }
  const chunks: Buffer[] = []
  let total = 0
  try {
    const buf = Buffer.alloc(64 * 1024)
    for (;;) {
      let n: number
      try {
        n = fs.readSync(fd, buf, 0, buf.length, null)
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code
        if (code === 'EAGAIN') {
          // A non-blocking stdin pipe with nothing yet: wait a little rather than spin on the CPU.
          Atomics.wait(PAUSE, 0, 0, 5)
          continue
        }
        if (code === 'EOF') break
        throw new ValidationError(`cannot read ${what} ${file}: ${code ?? (err as Error).message}`)
      }
      if (n === 0) break
      total += n
      if (total > maxBytes) throw new ValidationError(`${what} ${file} is larger than ${maxBytes / (1024 * 1024)} MiB`)
      chunks.push(Buffer.from(buf.subarray(0, n)))
    }
  } finally {
    if (fd !== 0) fs.closeSync(fd)
  }
  return Buffer.concat(chunks).toString('utf8')
}
