// Running another IPAM plugin the way a runtime would (CNI spec "delegation"): found on CNI_PATH, given the
// whole network config on stdin and our own environment, with CNI_COMMAND set to the operation.
import {spawn} from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import {CNI_ERR, CniError} from './errors.js'
import {type CniResult, parseResult} from './result.js'
import type {CmdArgs} from './skel.js'

export function findPlugin(type: string, cniPath: string): string {
  if (!/^[A-Za-z0-9_.-]+$/.test(type))
    throw new CniError(CNI_ERR.invalidConfig, `invalid plugin type ${JSON.stringify(type)}`)
  for (const dir of cniPath.split(':').filter(Boolean)) {
    const file = path.join(dir, type)
    try {
      fs.accessSync(file, fs.constants.X_OK)
      return file
    } catch {
      // try the next directory
    }
  }
  throw new CniError(
    CNI_ERR.internal,
    `failed to find plugin "${type}" in path [${cniPath.split(':').filter(Boolean).join(' ')}]`,
  )
}

const ENV_NAMES = ['CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME', 'CNI_ARGS', 'CNI_PATH'] as const

/** Run the delegate; its stdout is its result (or its CNI error, which we rethrow as is). */
export async function execDelegate(
  a: CmdArgs,
  type: string,
  command: 'ADD' | 'DEL' | 'CHECK' | 'STATUS' | 'GC',
): Promise<CniResult | undefined> {
  const file = findPlugin(type, a.path)
  const env: NodeJS.ProcessEnv = {...process.env, CNI_COMMAND: command}
  for (const k of ENV_NAMES) env[k] = a.getenv(k) ?? ''
  const {code, stdout, stderr} = await new Promise<{code: number; stdout: string; stderr: string}>(
    (resolve, reject) => {
      const child = spawn(file, [], {env, stdio: ['pipe', 'pipe', 'pipe']})
      let out = ''
      let err = ''
      child.stdout.on('data', (d) => (out += d))
      child.stderr.on('data', (d) => (err += d))
      child.on('error', reject)
      child.on('close', (c) => resolve({code: c ?? 1, stdout: out, stderr: err}))
      child.stdin.end(a.stdinData)
    },
  )
  if (stderr.trim()) a.log(`${type}: ${stderr.trim()}`)
  if (code !== 0) {
    let e: {code?: number; msg?: string; details?: string} = {}
    try {
      e = JSON.parse(stdout) as typeof e
    } catch {
      // not a CNI error object: report what we have
    }
    throw new CniError(
      e.code ?? CNI_ERR.internal,
      e.msg ?? `${type} ${command} failed (exit ${code}): ${(stdout || stderr).trim().split('\n')[0]}`,
      e.details,
    )
  }
  if (command !== 'ADD') return undefined
  try {
    return parseResult(JSON.parse(stdout), a.cniVersion)
  } catch (err) {
    throw new CniError(CNI_ERR.decoding, `${type} returned an unreadable result: ${(err as Error).message}`)
  }
}
