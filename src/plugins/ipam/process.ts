// What both entries of the `ipamctl-ipam` process share (main.ts, and agent-main.ts, which starts every ADD and
// DEL): the process's I/O, the log, the version line and the handover between them. Only light modules here:
// agent-main.ts is bundled without the datastore and the IPAM core (docs/startup.md#the-agent-first-entry).
import fs from 'node:fs'
import {packageVersion} from '../../lib/package-root.js'
import type {AgentReplay} from '../../lib/node-ipam/agent-path.js'
import {type PluginIo, processIo} from '../../lib/cni/skel.js'
import {cniLogger} from '../../lib/log/cni.js'

/** Compiled in by scripts/bundle-cni.mjs; the plain tsc output reads package.json instead. */
declare const __IPAMCTL_VERSION__: string | undefined

const version = (): string => (typeof __IPAMCTL_VERSION__ === 'string' ? __IPAMCTL_VERSION__ : packageVersion())

export const ABOUT = `ipamctl-ipam v${version()}: Calico-compatible CNI IPAM plugin (drop-in for calico-ipam)`

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

/** The plugins' log: stderr and the netconf's log_file_path (src/lib/log/cni.ts); `held`: see cniLogger. */
export const openPluginLog =
  (plugin: string, held = false) =>
  (config: Record<string, unknown>, io: PluginIo): ReturnType<typeof cniLogger> =>
    cniLogger({
      config,
      getenv: (n) => io.getenv(n),
      plugin,
      stderr: {write: (line) => void io.stderr.write(line)},
      held,
    })

/** Stdin as bin/start.cjs reads it before an ADD or DEL: `complete` unless fd 0 refused a blocking read. */
export interface ReadStdin {
  data: Buffer
  complete: boolean
}

/**
 * An invocation the agent-first entry hands over to the full plugin, as plain data (the two are separate
 * bundles): all of stdin, and when the agent was asked, its socket and answer. Nothing it did is visible yet.
 */
export interface Handover {
  stdin: Buffer
  agent?: AgentReplay
}
