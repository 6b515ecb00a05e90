// The file `ipam check -o` writes its report to: created 0600 before the scan, and never a file that is not an
// earlier report (docs/write-paths.md lists this guard).
import fs from 'node:fs'
import {ValidationError} from '../errors.js'
import {looksLikeReport, type Report, reportJson} from './check-report.js'

export interface ReportFile {
  write(report: Report): void
}

/**
 * Create (or truncate) the report file, mode 0600 before any byte is in it: the report names every
 * allocation's owner and handle, so it is readable by its owner only (upstream uses 0777). Opened before the
 * scan so that a bad path fails first, as bad input, without output.
 */
export function openReport(file: string): ReportFile {
  refuseToOverwrite(file)
  let fd: number
  try {
    fd = fs.openSync(file, 'w', 0o600)
    // An existing report keeps its mode on open; tighten it before writing anything. Only a regular file: a
    // device, pipe or terminal named as the output (`-o /dev/stdout`, /dev/null) is not ours to change, and
    // fchmod would change the node itself for every user of the machine (/dev/null at 0600 breaks apt's sandbox).
    if (fs.fstatSync(fd).isFile()) fs.fchmodSync(fd, 0o600)
  } catch (err) {
    throw new ValidationError(
      `cannot write the report to ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    )
  }
  return {
    write(report) {
      try {
        fs.writeSync(fd, reportJson(report))
      } finally {
        fs.closeSync(fd)
      }
    },
  }
}

/**
 * `-o` may replace an earlier report, but not any other file: a slip such as `-o /var/lib/ipamctl/ipam.db` would
 * otherwise truncate the datastore itself. Empty files and non-regular files (`/dev/stdout`, a pipe) are fine.
 */
function refuseToOverwrite(file: string): void {
  let fd: number
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK)
  } catch {
    return // absent (created below) or unreadable (the open for writing reports it)
  }
  try {
    const st = fs.fstatSync(fd)
    if (!st.isFile() || st.size === 0) return
    const head = Buffer.alloc(256)
    const n = fs.readSync(fd, head, 0, head.length, 0)
    if (!looksLikeReport(head.subarray(0, n).toString('utf8'))) {
      throw new ValidationError(
        `${file} exists and is not an ipam check report; refusing to overwrite it (remove it or choose another path)`,
      )
    }
  } finally {
    fs.closeSync(fd)
  }
}

export function writeReport(file: string, report: Report): void {
  openReport(file).write(report)
}
