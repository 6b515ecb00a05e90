// One way for tests to run a child process: given env and stdin, collect stdout, stderr, status and time;
// killed after a bound so a hanging child fails its test instead of the run.
import {spawn} from 'node:child_process'

export interface ProcResult {
  code: number | null
  stdout: string
  stderr: string
  ms: number
}

export function runProcess(
  cmd: string,
  args: readonly string[],
  opts: {env: NodeJS.ProcessEnv; cwd?: string; stdin?: string; killAfterMs?: number},
): Promise<ProcResult> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now()
    const child = spawn(cmd, args, {cwd: opts.cwd, env: opts.env, stdio: ['pipe', 'pipe', 'pipe']})
    const out: Buffer[] = []
    const err: Buffer[] = []
    child.stdout.on('data', (b: Buffer) => out.push(b))
    child.stderr.on('data', (b: Buffer) => err.push(b))
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.killAfterMs ?? 30_000)
    child.on('error', reject)
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({
        code,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
        ms: performance.now() - t0,
      })
    })
    child.stdin.on('error', () => {}) // the child may exit without reading stdin
    child.stdin.end(opts.stdin ?? '')
  })
}
