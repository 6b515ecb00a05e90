// What both entries of the `ipamctl-ipam` process share (main.ts, and agent-main.ts, which starts every ADD and
// DEL): the process's I/O, the log, the version line and the handover between them. Only light modules here:
// agent-main.ts is bundled without the datastore and the IPAM core (docs/startup.md#the-agent-first-entry).
import fs from 'node:fs'
import {type PluginIo, processIo} from '../../lib/cni/skel.js'
import {ABOUT, type Handover, openPluginLog} from '../../lib/node-ipam/agent-first.js'

export {ABOUT, type Handover, openPluginLog}

/**
 * The plugin process's I/O: processIo()'s behaviour without its start-up cost. Creating `process.stdin` and
 * `process.stdout` for pipes loads Node's socket and stream machinery (~5 ms, a quarter of an IPAM ADD's
 * budget), so:
 * - stdin is read with a blocking read(2) loop on fd 0. Every command but VERSION waits for all of stdin
 *   anyway; VERSION keeps the stream, whose read the dispatcher abandons after a short wait (stdin is
 *   optional for it and a caller may never close it).
 * - stdout and stderr are written with write(2) on fds 1 and 2, so nothing is left unflushed at exit either.
 * Should an fd not take that (non-blocking and EAGAIN, or any other error), that direction switches to
 * processIo()'s Node stream for good, keeping what was already read or written: order is preserved and
 * errors are the stream's. `stdin`: what bin/start.cjs (or the agent-first entry, before a handover) already
 * read of it; when not `complete`, the rest is read here.
 */
export function pluginProcessIo(stdin?: ReadStdin): PluginIo {
  let streams: PluginIo | undefined
  const node = () => (streams ??= processIo())
  const writer = (fd: 1 | 2) => {
    let useStream = false
    return {
      write(chunk: string): boolean {
        const buf = Buffer.from(chunk, 'utf8')
        let off = 0
        if (!useStream) {
          try {
            while (off < buf.length) off += fs.writeSync(fd, buf, off)
            return true
          } catch {
            useStream = true
          }
        }
        const stream = fd === 1 ? node().stdout : node().stderr
        stream.write(buf.subarray(off).toString('utf8'))
        return true
      },
    }
  }
  return {
    getenv: (n) => process.env[n],
    // Only VERSION asks, and isatty() loads node:tty.
    get stdinIsTty() {
      return node().stdinIsTty
    },
    async readStdin() {
      if (stdin?.complete) return stdin.data
      if (process.env.CNI_COMMAND === 'VERSION') return node().readStdin()
      const chunks: Buffer[] = stdin ? [stdin.data] : []
      const buf = Buffer.allocUnsafe(64 * 1024)
      try {
        for (;;) {
          const n = fs.readSync(0, buf, 0, buf.length, null)
          if (n === 0) return Buffer.concat(chunks)
          chunks.push(Buffer.from(buf.subarray(0, n)))
        }
      } catch {
        const rest = await node().readStdin()
        return Buffer.concat([...chunks, typeof rest === 'string' ? Buffer.from(rest, 'utf8') : rest])
      }
    },
    stdout: writer(1),
    stderr: writer(2),
    close() {
      streams?.close?.()
    },
  }
}

/** Stdin as bin/start.cjs reads it before an ADD or DEL: `complete` unless fd 0 refused a blocking read. */
export interface ReadStdin {
  data: Buffer
  complete: boolean
}
