// The plugins' logger from the netconf's Calico logging keys (docs/logging.md#netconf-keys): log_level,
// log_file_path, log_file_max_size (MB), log_file_max_age (days), log_file_max_count. Lines always go to
// stderr and, with log_file_path, to that file too. Logging never fails a pod: a bad value is a warning and its
// default, an unwritable file is one warning and stderr only.
import {LogFile} from './file.js'
import {
  createLogger,
  type Fields,
  type Level,
  type Logger,
  type LogSink,
  parseLevel,
  redactSecrets,
  secretValues,
} from './logger.js'

/** Where Calico's installer points log_file_path, and `ipamctl cni logs` looks by default. */
export const DEFAULT_CNI_LOG_FILE = '/var/log/calico/cni/cni.log'
export const DEFAULT_LOG_MAX_SIZE_MB = 100
export const DEFAULT_LOG_MAX_AGE_DAYS = 30
export const DEFAULT_LOG_MAX_COUNT = 10

export interface LogSettings {
  level: Level
  file?: string
  maxSizeMb: number
  maxAgeDays: number
  maxCount: number
  /** Values that were not understood (each becomes a warning line; its default is used). */
  problems: string[]
}

type Obj = Record<string, unknown>
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)

/** The logging keys: top level first, then the `ipam` section (where an IPAM-only netconf may put them). */
export function logSettingsFrom(config: Obj): LogSettings {
  const ipam = isObj(config.ipam) ? config.ipam : {}
  const problems: string[] = []
  const pick = (key: string): unknown => config[key] ?? ipam[key] ?? undefined
  const num = (key: string, def: number): number => {
    const v = pick(key)
    if (v === undefined || v === null) return def
    if (typeof v === 'number' && Number.isFinite(v) && v > 0) return v
    problems.push(`netconf ${key} ${JSON.stringify(v)} is not a positive number; using ${def}`)
    return def
  }
  const rawLevel = pick('log_level')
  let level: Level = 'info'
  if (rawLevel !== undefined && rawLevel !== null && rawLevel !== '') {
    const l = typeof rawLevel === 'string' ? parseLevel(rawLevel) : undefined
    if (l) level = l
    else problems.push(`netconf log_level ${JSON.stringify(rawLevel)} is not error, warning, info or debug; using info`)
  }
  const rawFile = pick('log_file_path')
  let file: string | undefined
  if (typeof rawFile === 'string' && rawFile !== '') file = rawFile
  else if (rawFile !== undefined && rawFile !== null && rawFile !== '')
    problems.push(`netconf log_file_path ${JSON.stringify(rawFile)} is not a string; logging to stderr only`)
  return {
    level,
    file,
    maxSizeMb: num('log_file_max_size', DEFAULT_LOG_MAX_SIZE_MB),
    maxAgeDays: num('log_file_max_age', DEFAULT_LOG_MAX_AGE_DAYS),
    maxCount: num('log_file_max_count', DEFAULT_LOG_MAX_COUNT),
    problems,
  }
}

/**
 * Environment variables whose secret-named values are kept out of the log (ETCD_PASSWORD…). Prefixes, not a
 * regular expression: every plugin exec tests each variable, and compiling one is a cost of its own (isSecretName).
 */
const SECRET_ENV_PREFIXES = ['ETCD_', 'IPAMCTL_', 'CALICO_', 'DATASTORE_', 'K8S_', 'KUBE']

export function envSecrets(env: NodeJS.ProcessEnv | Record<string, string | undefined>): string[] {
  const picked: Record<string, string> = {}
  for (const [k, v] of Object.entries(env)) if (v && SECRET_ENV_PREFIXES.some((p) => k.startsWith(p))) picked[k] = v
  return secretValues(picked)
}

/** K8S_POD_NAMESPACE and K8S_POD_NAME from CNI_ARGS, read leniently: the log must not fail on what CNI_ARGS holds. */
export function podOf(cniArgs: string | undefined): string | undefined {
  let ns = ''
  let name = ''
  for (const pair of (cniArgs ?? '').split(';')) {
    const i = pair.indexOf('=')
    if (pair.slice(0, i) === 'K8S_POD_NAMESPACE') ns = pair.slice(i + 1)
    else if (pair.slice(0, i) === 'K8S_POD_NAME') name = pair.slice(i + 1)
  }
  return ns && name ? `${ns}/${name}` : undefined
}

export interface CniLoggerOptions {
  config: Obj
  getenv: (name: string) => string | undefined
  /** The plugin's name, e.g. ipamctl-cni. */
  plugin: string
  stderr: LogSink
  env?: Record<string, string | undefined>
  /** The plugin process's pid, when another process (the agent, src/lib/node-ipam/agent-first.ts) logs for it. */
  pid?: number
  now?: () => Date
  /**
   * Lines for the log file wait in memory until commit() (close() without it drops them): an invocation that
   * may yet be handed over and done again from the start (src/plugins/ipam/agent-main.ts) leaves no trace.
   */
  held?: boolean
}

/** The logger of one plugin invocation, with its context (command, container, netns, pod) on every line. */
export function cniLogger(o: CniLoggerOptions): {logger: Logger; close(): void; commit(): void} {
  const s = logSettingsFrom(o.config)
  const sinks: LogSink[] = [o.stderr]
  let held: string[] | undefined = o.held ? [] : undefined
  let problem: string | undefined
  let file: LogFile | undefined
  // Set once the logger exists: a write failure later warns through it (on stderr; the file has given up).
  let warn: (what: string) => void = (what) => (problem = what)
  if (s.file) {
    try {
      file = LogFile.open(s.file, {
        maxBytes: s.maxSizeMb * 1024 * 1024,
        maxAgeMs: s.maxAgeDays * 86_400_000,
        maxCount: s.maxCount,
        onFailure: (what) => warn(what),
      })
      const f = file
      sinks.push({write: (line) => (held ? held.push(line) : f.write(line))})
    } catch (err) {
      problem = `cannot open the log file ${s.file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`
    }
  }
  const context: Fields = {
    container: o.getenv('CNI_CONTAINERID'),
    netns: o.getenv('CNI_NETNS'),
    pod: podOf(o.getenv('CNI_ARGS')),
  }
  const logger = createLogger({
    level: s.level,
    component: `${o.plugin} ${o.getenv('CNI_COMMAND') ?? ''}`.trim(),
    context,
    sinks,
    secrets: [...secretValues(o.config), ...envSecrets(o.env ?? process.env)],
    now: o.now,
    pid: o.pid,
  })
  warn = (what) => logger.warn(`${what}; logging to stderr only`)
  if (problem) warn(problem)
  for (const p of s.problems) logger.warn(p)
  if (logger.enabled('debug')) {
    // Secret-named values are replaced before the text is made; createLogger scrubs the line once more.
    logger.debug('network configuration', {config: JSON.stringify(redactSecrets(o.config))})
    logger.debug('CNI environment', {ifname: o.getenv('CNI_IFNAME'), args: o.getenv('CNI_ARGS')})
  }
  return {
    logger,
    close: () => file?.close(),
    commit() {
      const lines = held ?? []
      held = undefined
      for (const line of lines) file?.write(line)
    },
  }
}
