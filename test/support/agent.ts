// Tests of the per-node agent: start the REAL `ipamctl agent run` as a child process and wait for its readiness
// line, and run the REAL `ipamctl-ipam` plugin against it the way a runtime does (clean env, netconf on stdin).
import {type ChildProcess, spawn} from 'node:child_process'
import http from 'node:http'
import path from 'node:path'
import {type RunningAgent, startAgent} from '../../src/lib/agent/agent.ts'
import type {DatastoreSettings} from '../../src/lib/store/settings.ts'
import type {Store} from '../../src/lib/store/store.ts'
import {type ProcResult, runProcess} from './process.ts'

const ROOT = path.resolve(import.meta.dirname, '..', '..')
const RUN = path.join(ROOT, 'bin', 'run.cjs')
const IPAM = path.join(ROOT, 'bin', 'ipamctl-ipam.cjs')

const live = new Set<ChildProcess>()
process.on('exit', () => {
  for (const p of live) p.kill('SIGKILL')
})

export interface AgentProc {
  proc: ChildProcess
  socket: string
  metricsUrl?: string
  log(): string
  /** Resolves with the exit code (or signal name). */
  exited: Promise<number | string>
}

/** `ipamctl agent run …args`; resolves once the agent logged its readiness line (rejects if it exits first). */
export function startAgentProc(
  args: readonly string[],
  env: Record<string, string | undefined> = {},
): Promise<AgentProc> {
  const childEnv: NodeJS.ProcessEnv = {...process.env, NO_COLOR: '1', ...env}
  delete childEnv.NODE_OPTIONS
  const proc = spawn(process.execPath, [RUN, 'agent', 'run', ...args], {
    cwd: ROOT,
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  live.add(proc)
  let log = ''
  proc.stdout!.on('data', (b: Buffer) => (log += b.toString()))
  const exited = new Promise<number | string>((resolve) =>
    proc.on('exit', (code, signal) => {
      live.delete(proc)
      resolve(code ?? signal ?? -1)
    }),
  )
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`agent not ready within 20 s:\n${log}`)), 20_000)
    proc.stderr!.on('data', (b: Buffer) => {
      log += b.toString()
      const m = /ready on (\S+) (.*)\n/.exec(log)
      if (m) {
        clearTimeout(timer)
        resolve({
          proc,
          socket: m[1]!,
          metricsUrl: /metrics (http:\/\/\S+?)[,)]/.exec(m[2]!)?.[1],
          log: () => log,
          exited,
        })
      }
    })
    void exited.then((code) => {
      clearTimeout(timer)
      reject(Object.assign(new Error(`agent exited (${code}) before it was ready:\n${log}`), {code, log}))
    })
  })
}

/** One `ipamctl-ipam` run with exactly the CNI env (plus PATH) and the netconf on stdin. */
export function ipamPluginProc(
  env: Record<string, string | undefined>,
  netconf: object,
  nodeArgs: string[] = [],
): Promise<ProcResult> {
  const clean: NodeJS.ProcessEnv = {PATH: process.env.PATH}
  for (const [k, v] of Object.entries(env)) if (v !== undefined) clean[k] = v
  return runProcess(process.execPath, [...nodeArgs, IPAM], {cwd: ROOT, env: clean, stdin: JSON.stringify(netconf)})
}

export const addEnv = (cid: string, command = 'ADD') => ({
  CNI_COMMAND: command,
  CNI_CONTAINERID: cid,
  CNI_NETNS: `/var/run/netns/${cid}`,
  CNI_IFNAME: 'eth0',
  CNI_PATH: '/opt/cni/bin',
})

/** The one address of an IPAM ADD result (exit 0 asserted by the caller). */
export const resultIp = (stdout: string): string =>
  (JSON.parse(stdout) as {ips: {address: string}[]}).ips[0]!.address.split('/')[0]!

/** Prometheus text → "name{labels}" → value (comments skipped). */
export function parseMetrics(text: string): Map<string, number> {
  const out = new Map<string, number>()
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const i = line.lastIndexOf(' ')
    out.set(line.slice(0, i), Number(line.slice(i + 1)))
  }
  return out
}

/** An HTTP request to the agent on its unix socket (a JSON body when given): the status and the JSON reply. */
export function agentHttp(
  socket: string,
  method: 'GET' | 'POST',
  route: string,
  body?: unknown,
): Promise<{status: number; body: Record<string, unknown>}> {
  const text = body === undefined ? '' : JSON.stringify(body)
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        socketPath: socket,
        method,
        path: route,
        headers: {'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text)},
      },
      (res) => {
        const parts: Buffer[] = []
        res.on('data', (b: Buffer) => parts.push(b))
        res.on('end', () => resolve({status: res.statusCode!, body: JSON.parse(Buffer.concat(parts).toString())}))
      },
    )
    req.on('error', reject)
    req.end(text)
  })
}

/** An agent in this process for node `node-1` on `store` (standing for `settings`' datastore), without its loops. */
export function startAgentOn(store: Store, settings: DatastoreSettings, socket: string): Promise<RunningAgent> {
  return startAgent({
    node: 'node-1',
    settings,
    socket,
    metricsAddress: '',
    gcIntervalMs: 0,
    gcGraceMs: 0,
    leakScanIntervalMs: 0,
    version: 'test',
    log: () => {},
    openStore: async () => store,
  })
}
