// Progress of a long scan for a person at a terminal: one line on stderr, redrawn in place, with a bar and counts
// ("Checking blocks [########............] 4,096/10,000"). Nothing at all when stderr is not a terminal (a pipe or
// a log file gets only the command's output), and the line is erased before the output is printed.

export interface Progress {
  /** `total` 0: not known (yet); the bar is left out. */
  update(phase: string, done: number, total: number): void
  /** Erase the line. */
  clear(): void
}

const WIDTH = 24
/** Redraws at most this often: a scan visits thousands of keys a second. */
const EVERY_MS = 100

export function terminalProgress(stream: NodeJS.WriteStream = process.stderr): Progress | undefined {
  if (stream.isTTY !== true) return undefined
  let last = 0
  let shown = false
  return {
    update(phase, done, total) {
      const now = Date.now()
      if (now - last < EVERY_MS && done !== total) return
      last = now
      shown = true
      stream.write(`\r\u001b[K${progressText(phase, done, total)}`)
    },
    clear() {
      if (shown) stream.write('\r\u001b[K')
      shown = false
    },
  }
}

/** The progress line itself (without the terminal controls). */
export function progressText(phase: string, done: number, total: number): string {
  const n = (x: number) => x.toLocaleString('en-US')
  if (total <= 0) return `${phase}… ${n(done)}`
  const filled = Math.min(WIDTH, Math.floor((done / total) * WIDTH))
  return `${phase} [${'#'.repeat(filled)}${'.'.repeat(WIDTH - filled)}] ${n(done)}/${n(total)}`
}
