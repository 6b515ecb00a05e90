// The CNI dispatcher (the Go library's pkg/skel, spec 1.1): environment and stdin in, one JSON value or an
// error object on stdout, an exit code out. Everything it touches is injected, so it is unit-testable
// without a process, and it is the only writer of stdout: handlers return values, never print.
import {isatty} from 'node:tty'
import {CNI_ERR, CniError, formatCniError, toCniError} from './errors.js'
import {goEncodeLine, goQuote, goQuoteList} from '../codec/gojson.js'
import {type CniResult, formatResult} from './result.js'
import {lineLogger, type Logger} from '../log/logger.js'
import {CURRENT_VERSION, DEFAULT_CONFIG_VERSION, isSupported, SUPPORTED_VERSIONS, versionAtLeast} from './version.js'

export type CniCommand = 'ADD' | 'DEL' | 'CHECK' | 'VERSION' | 'STATUS' | 'GC'
export const CNI_COMMANDS: readonly CniCommand[] = ['ADD', 'DEL', 'CHECK', 'VERSION', 'STATUS', 'GC']

/** The variables the dispatcher reads, in the order missing ones are reported. */
export const CNI_ENV_VARS = [
  'CNI_COMMAND',
  'CNI_CONTAINERID',
  'CNI_NETNS',
  'CNI_IFNAME',
  'CNI_ARGS',
  'CNI_PATH',
] as const
export type CniEnvVar = (typeof CNI_ENV_VARS)[number]

/**
 * Required variables per command (docs/cni.md#required-environment-variables). CNI_PATH is only required for GC: an IPAM plugin
 * needs no search path, and a main plugin that execs its IPAM plugin can require it via `requiredEnv`.
 */
export const REQUIRED_ENV: Readonly<Record<CniCommand, readonly CniEnvVar[]>> = {
  ADD: ['CNI_COMMAND', 'CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME'],
  DEL: ['CNI_COMMAND', 'CNI_CONTAINERID', 'CNI_IFNAME'],
  CHECK: ['CNI_COMMAND', 'CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME'],
  VERSION: ['CNI_COMMAND'],
  STATUS: ['CNI_COMMAND'],
  GC: ['CNI_COMMAND', 'CNI_PATH'],
}

/** Minimum config version per command (the skel refuses older configs with code 1). */
const MIN_VERSION: Partial<Record<CniCommand, string>> = {CHECK: '0.4.0', STATUS: '1.1.0', GC: '1.1.0'}

export interface CmdArgs {
  command: Exclude<CniCommand, 'VERSION'>
  containerId: string
  /** '' when unset (DEL, STATUS, GC). */
  netns: string
  ifName: string
  /** CNI_ARGS as given. */
  args: string
  path: string
  stdinData: Buffer
  /** The decoded config object. */
  config: Record<string, unknown>
  /** The config's cniVersion, DEFAULT_CONFIG_VERSION when absent. */
  cniVersion: string
  /** The plugin's environment (handlers that delegate pass it on; datastore settings fall back to it). */
  getenv(name: string): string | undefined
  /** One line at info level: to stderr, and to the plugin's log file when it has one. */
  log(line: string): void
  /** The invocation's logger (levels, fields); `log` is its info. Absent: loggerOf() wraps `log`. */
  logger?: Logger
}

/** The invocation's logger, or `log` as one (CmdArgs made by hand). */
export function loggerOf(a: Pick<CmdArgs, 'log' | 'logger'>): Logger {
  return a.logger ?? lineLogger(a.log)
}

export interface PluginFuncs {
  add(a: CmdArgs): Promise<CniResult>
  del(a: CmdArgs): Promise<void>
  /** Missing → CHECK succeeds (as the Go skel does for a nil Check). */
  check?(a: CmdArgs): Promise<void>
  status?(a: CmdArgs): Promise<void>
  gc?(a: CmdArgs): Promise<void>
}

export interface PluginIo {
  getenv(name: string): string | undefined
  /** All of stdin. Not called for VERSION when `stdinIsTty`. */
  readStdin(): Promise<Buffer | string>
  stdinIsTty?: boolean
  stdout: {write(chunk: string): unknown}
  stderr: {write(chunk: string): unknown}
  /** Release what reading stdin holds open (called by the entry once the invocation is done). */
  close?(): void
  /**
   * The plugin process's whole environment and pid when the invocation runs in another process (the agent runs
   * one whole for a plugin process, src/lib/node-ipam/agent-first.ts); absent: this process's own.
   */
  env?: Record<string, string | undefined>
  pid?: number
}

export interface PluginInfo {
  /** Printed to stderr when CNI_COMMAND is not set, e.g. "ipamctl-ipam v0.1.0: …". */
  about: string
  supportedVersions?: readonly string[]
  requiredEnv?: Partial<Record<CniCommand, readonly CniEnvVar[]>>
  /**
   * The invocation's logger once the config is decoded (the plugins' come from its log_* keys,
   * src/lib/log/cni.ts); `close` runs when the invocation ends. Absent: plain lines on stderr.
   */
  openLog?: (config: Record<string, unknown>, io: PluginIo) => {logger: Logger; close(): void}
}

/** How long VERSION waits for its (optional) stdin. */
const VERSION_STDIN_WAIT_MS = 250

const CONTAINER_ID = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/
const MAX_IFNAME = 15

/** libcni's ValidateContainerID. */
export function validateContainerId(id: string): void {
  if (id === '') throw new CniError(CNI_ERR.unknownContainer, 'missing containerID')
  if (!CONTAINER_ID.test(id)) throw new CniError(CNI_ERR.invalidEnv, 'invalid characters in containerID', id)
}

/** libcni's ValidateInterfaceName: non-empty, < 16 bytes, not . or .., no / : or whitespace. */
export function validateIfName(name: string): void {
  if (name.length === 0) throw new CniError(CNI_ERR.invalidEnv, 'interface name is empty')
  if (Buffer.byteLength(name) > MAX_IFNAME) {
    throw new CniError(
      CNI_ERR.invalidEnv,
      'interface name is too long',
      `interface name should be less than ${MAX_IFNAME + 1} characters`,
    )
  }
  if (name === '.' || name === '..') throw new CniError(CNI_ERR.invalidEnv, 'interface name is . or ..')
  if (/[/:\s]/u.test(name))
    throw new CniError(CNI_ERR.invalidEnv, 'interface name contains / or : or whitespace characters')
}

/** Decode the config; any failure is code 6 (7 for a missing name), as the Go skel's validateConfig. */
function decodeConfig(data: Buffer): Record<string, unknown> {
  let v: unknown
  try {
    v = JSON.parse(data.toString('utf8'))
  } catch (err) {
    const msg = data.length === 0 ? 'unexpected end of JSON input' : (err as Error).message
    throw new CniError(CNI_ERR.decoding, `error unmarshall network config: ${msg}`)
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    throw new CniError(
      CNI_ERR.decoding,
      'error unmarshall network config: the network configuration must be a JSON object',
    )
  }
  const conf = v as Record<string, unknown>
  if (conf.name !== undefined && conf.name !== null && typeof conf.name !== 'string') {
    throw new CniError(CNI_ERR.decoding, 'error unmarshall network config: "name" must be a string')
  }
  if (!conf.name) throw new CniError(CNI_ERR.invalidConfig, 'missing network name')
  return conf
}

function configVersion(conf: Record<string, unknown>): string {
  const v = conf.cniVersion
  if (v === undefined || v === null || v === '') return DEFAULT_CONFIG_VERSION
  if (typeof v !== 'string')
    throw new CniError(CNI_ERR.decoding, 'decoding version from network config: "cniVersion" must be a string')
  return v
}

function toBuffer(b: Buffer | string): Buffer {
  return typeof b === 'string' ? Buffer.from(b, 'utf8') : b
}

/**
 * Run one CNI invocation. Returns the exit code (0, or 1 after printing an error object on stdout). Never
 * throws: any failure, including a handler's, ends up as an error object.
 */
export async function pluginMain(funcs: PluginFuncs, io: PluginIo, info: PluginInfo): Promise<number> {
  const opened: {log?: {logger: Logger; close(): void}} = {}
  try {
    return await dispatch(funcs, io, info, opened)
  } finally {
    opened.log?.close()
  }
}

async function dispatch(
  funcs: PluginFuncs,
  io: PluginIo,
  info: PluginInfo,
  opened: {log?: {logger: Logger; close(): void}},
): Promise<number> {
  const supported = info.supportedVersions ?? SUPPORTED_VERSIONS
  // The version errors are reported in: the config's, once known and supported.
  let errVersion = CURRENT_VERSION
  let log: {logger: Logger; close(): void} | undefined
  try {
    const command = io.getenv('CNI_COMMAND') ?? ''
    if (command === '') {
      io.stderr.write(`${info.about}\nCNI protocol versions supported: ${supported.join(', ')}\n`)
      return 0
    }
    if (!(CNI_COMMANDS as readonly string[]).includes(command)) {
      throw new CniError(CNI_ERR.invalidEnv, `unknown CNI_COMMAND: ${command}`)
    }
    const cmd = command as CniCommand
    const env = Object.fromEntries(CNI_ENV_VARS.map((n) => [n, io.getenv(n) ?? ''])) as Record<CniEnvVar, string>
    const required = info.requiredEnv?.[cmd] ?? REQUIRED_ENV[cmd]
    const missing = CNI_ENV_VARS.filter((n) => required.includes(n) && env[n] === '')
    if (missing.length > 0)
      throw new CniError(CNI_ERR.invalidEnv, `required env variables [${missing.join(',')}] missing`)

    if (cmd === 'VERSION') {
      // The spec echoes the caller's version; the Go skel ignores stdin. Echo it when it is one we speak.
      // Stdin is optional here, so a caller that never closes it must not make VERSION hang: wait briefly.
      let echo = CURRENT_VERSION
      if (!io.stdinIsTty) {
        let timer: NodeJS.Timeout | undefined
        try {
          const late = new Promise<never>(
            (_, reject) => (timer = setTimeout(() => reject(new Error('no input')), VERSION_STDIN_WAIT_MS)),
          )
          const v = (
            JSON.parse(toBuffer(await Promise.race([io.readStdin(), late])).toString('utf8')) as {cniVersion?: unknown}
          ).cniVersion
          if (typeof v === 'string' && supported.includes(v)) echo = v
        } catch {
          /* no, late or bad input: answer with our newest version */
        } finally {
          clearTimeout(timer)
        }
      }
      io.stdout.write(goEncodeLine({cniVersion: echo, supportedVersions: supported}))
      return 0
    }

    let stdinData: Buffer
    try {
      stdinData = toBuffer(await io.readStdin())
    } catch (err) {
      throw new CniError(CNI_ERR.io, `error reading from stdin: ${(err as Error).message}`)
    }
    const config = decodeConfig(stdinData)
    log = opened.log = info.openLog?.(config, io)
    if (cmd !== 'GC' && cmd !== 'STATUS') {
      validateContainerId(env.CNI_CONTAINERID)
      validateIfName(env.CNI_IFNAME)
    }
    const cniVersion = configVersion(config)
    const min = MIN_VERSION[cmd]
    if (min && !versionAtLeast(cniVersion, min))
      throw new CniError(CNI_ERR.incompatibleVersion, `config version does not allow ${cmd}`)
    if (!isSupported(cniVersion, supported)) {
      throw new CniError(
        CNI_ERR.incompatibleVersion,
        'incompatible CNI versions',
        `config is ${goQuote(cniVersion)}, plugin supports ${goQuoteList(supported)}`,
      )
    }
    errVersion = cniVersion

    const args: CmdArgs = {
      command: cmd,
      containerId: env.CNI_CONTAINERID,
      netns: env.CNI_NETNS,
      ifName: env.CNI_IFNAME,
      args: env.CNI_ARGS,
      path: env.CNI_PATH,
      stdinData,
      config,
      cniVersion,
      getenv: (n) => io.getenv(n),
      log: log
        ? (line) => log!.logger.info(line.endsWith('\n') ? line.slice(0, -1) : line)
        : (line) => void io.stderr.write(line.endsWith('\n') ? line : `${line}\n`),
      logger: log?.logger,
    }
    switch (cmd) {
      case 'ADD': {
        const result = await funcs.add(args)
        io.stdout.write(formatResult(result, cniVersion))
        return 0
      }
      case 'DEL':
        await funcs.del(args)
        return 0
      case 'CHECK':
        await funcs.check?.(args)
        return 0
      case 'STATUS':
        await funcs.status?.(args)
        return 0
      case 'GC':
        await funcs.gc?.(args)
        return 0
    }
  } catch (err) {
    const e = toCniError(err)
    // In the log before the runtime sees the error (it usually discards the plugin's stderr).
    log?.logger.error(e.details ? `${e.msg}: ${e.details}` : e.msg, {code: e.code})
    io.stdout.write(formatCniError(e, errVersion))
    return 1
  }
}

/** The real process's I/O, for the plugin entries. */
export function processIo(): PluginIo {
  let reading = false
  return {
    getenv: (n) => process.env[n],
    // isatty(0) rather than process.stdin.isTTY: the stream is only created when stdin is actually read.
    stdinIsTty: isatty(0),
    async readStdin() {
      reading = true
      const chunks: Buffer[] = []
      for await (const c of process.stdin) chunks.push(c as Buffer)
      return Buffer.concat(chunks)
    },
    stdout: process.stdout,
    stderr: process.stderr,
    close() {
      if (reading) process.stdin.destroy()
    },
  }
}
