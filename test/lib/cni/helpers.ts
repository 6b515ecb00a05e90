// Shared fixtures for the CNI unit tests: an in-memory PluginIo (env, stdin, captured stdout/stderr) and a
// runner that drives the dispatcher exactly as a process entry would.
import {type PluginFuncs, type PluginInfo, type PluginIo, pluginMain} from '../../../src/lib/cni/skel.ts'

export interface FakeIo extends PluginIo {
  stdoutText(): string
  stderrText(): string
  stdinReads(): number
}

export function fakeIo(
  env: Record<string, string | undefined>,
  stdin: string | Buffer | Error = '',
  opts: {tty?: boolean} = {},
): FakeIo {
  let out = ''
  let err = ''
  let reads = 0
  return {
    getenv: (n) => env[n],
    stdinIsTty: opts.tty ?? false,
    async readStdin() {
      reads++
      if (stdin instanceof Error) throw stdin
      return stdin
    },
    stdout: {write: (s: string) => (out += s)},
    stderr: {write: (s: string) => (err += s)},
    stdoutText: () => out,
    stderrText: () => err,
    stdinReads: () => reads,
  }
}

export interface RunOutcome {
  code: number
  stdout: string
  stderr: string
}

export const ABOUT = 'test-plugin v0: about line'

export async function runSkel(
  funcs: PluginFuncs,
  env: Record<string, string | undefined>,
  stdin: string | Buffer | Error = '',
  info: Partial<PluginInfo> = {},
): Promise<RunOutcome> {
  const io = fakeIo(env, stdin)
  const code = await pluginMain(funcs, io, {about: ABOUT, ...info})
  return {code, stdout: io.stdoutText(), stderr: io.stderrText()}
}

/** The parsed error object of a failed run (asserting the exit code and that stdout is exactly one JSON value). */
export function errorOf(r: RunOutcome): {cniVersion: string; code: number; msg: string; details?: string} {
  if (r.code !== 1) throw new Error(`expected exit 1, got ${r.code}; stdout: ${r.stdout}`)
  return JSON.parse(r.stdout)
}

/** Base env of an ADD. */
export function addEnv(extra: Record<string, string | undefined> = {}): Record<string, string | undefined> {
  return {
    CNI_COMMAND: 'ADD',
    CNI_CONTAINERID: 'c0ffee',
    CNI_NETNS: '/var/run/netns/x',
    CNI_IFNAME: 'eth0',
    CNI_PATH: '/opt/cni/bin',
    ...extra,
  }
}
