// Entry of the `ipamctl-ipam` plugin process. Deliberately small: it must not pull in oclif, chalk,
// inquirer or cli-table3, and etcd3 only arrives through openStore's lazy import when the netconf selects
// etcdv3 — a plugin is exec'd once per pod operation, so start-up time is latency (docs/design.md#start-up-cost).
// The bins run these entries bundled (scripts/bundle-cni.mjs); BENCHMARKS.md has the numbers.
import fs from 'node:fs'
import {packageVersion} from '../../lib/package-root.js'
import {ipamPlugin} from './plugin.js'
import {type PluginInfo, type PluginIo, pluginMain, processIo} from '../../lib/cni/skel.js'
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
 * errors are the stream's.
 */
export function pluginProcessIo(): PluginIo {
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
      if (process.env.CNI_COMMAND === 'VERSION') return node().readStdin()
      const chunks: Buffer[] = []
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

/** The plugins' log: stderr and the netconf's log_file_path (src/lib/log/cni.ts). */
export const openPluginLog =
  (plugin: string): NonNullable<PluginInfo['openLog']> =>
  (config, io) =>
    cniLogger({config, getenv: (n) => io.getenv(n), plugin, stderr: {write: (line) => void io.stderr.write(line)}})

/** Run one invocation and return the exit code; the store is closed before this resolves. */
export async function main(io: PluginIo = pluginProcessIo()): Promise<number> {
  try {
    return await pluginMain(ipamPlugin(), io, {about: ABOUT, openLog: openPluginLog('ipamctl-ipam')})
  } finally {
    io.close?.()
  }
}
