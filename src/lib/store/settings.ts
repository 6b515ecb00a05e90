// Which datastore to use and how to reach it, resolved the way calicoctl users expect:
// flag > environment > config file (calicoctl.cfg shape) > embedded default, field by field.
import fs from 'node:fs'
import {loadYaml, parseSimpleYaml} from '../codec/yaml.js'
import {ValidationError} from '../errors.js'
import {readTextFile} from '../files.js'
import {defaultDatastorePath} from './default-path.js'

export type DatastoreType = 'embedded' | 'etcdv3'
export type Source = 'flag' | 'env' | 'file' | 'default'

export interface DatastoreSettings {
  type: DatastoreType
  /** Embedded store file. */
  path: string
  etcdEndpoints: string[]
  etcdKeyFile?: string
  etcdCertFile?: string
  etcdCaCertFile?: string
  etcdUsername?: string
  etcdPassword?: string
  /** Bound on every datastore request. */
  timeoutMs: number
  /** Where each setting came from, for `datastore status`. */
  sources: Record<string, Source>
  configFile?: string
}

export interface DatastoreFlags {
  datastore?: string
  etcdEndpoints?: string
  config?: string
  timeout?: number
  datastorePath?: string
}

export const DEFAULT_CONFIG_FILE = '/etc/ipamctl/ipamctl.cfg'
export const DEFAULT_TIMEOUT_MS = 10_000

type FileSpec = Partial<
  Record<
    | 'datastoreType'
    | 'etcdEndpoints'
    | 'etcdKeyFile'
    | 'etcdCertFile'
    | 'etcdCACertFile'
    | 'etcdUsername'
    | 'etcdPassword'
    | 'datastorePath',
    string
  >
>

/** Read a calicoctl-style config file. A missing default file is fine; a missing explicit one is an error. */
export function readConfigFile(file: string, explicit: boolean): FileSpec | undefined {
  if (!explicit && !fs.existsSync(file)) return undefined
  const text = readTextFile(file, 'config file')
  let doc: unknown
  try {
    // Most config files are a few `key: value` lines: read without loading the YAML package (parseSimpleYaml).
    doc = parseSimpleYaml(text) ?? loadYaml().parse(text)
  } catch (err) {
    throw new ValidationError(`config file ${file}: ${(err as Error).message.split('\n')[0]}`)
  }
  const d = doc as {apiVersion?: unknown; kind?: unknown; spec?: unknown} | null
  if (!d || typeof d !== 'object') throw new ValidationError(`config file ${file}: expected a CalicoAPIConfig document`)
  if (d.kind !== 'CalicoAPIConfig') throw new ValidationError(`config file ${file}: kind must be CalicoAPIConfig`)
  if (d.apiVersion !== 'projectcalico.org/v3')
    throw new ValidationError(`config file ${file}: apiVersion must be projectcalico.org/v3`)
  const spec = (d.spec ?? {}) as Record<string, unknown>
  const out: FileSpec = {}
  for (const k of [
    'datastoreType',
    'etcdEndpoints',
    'etcdKeyFile',
    'etcdCertFile',
    'etcdCACertFile',
    'etcdUsername',
    'etcdPassword',
    'datastorePath',
  ] as const) {
    const v = spec[k]
    if (v === undefined || v === null || v === '') continue
    if (typeof v !== 'string') throw new ValidationError(`config file ${file}: spec.${k} must be a string`)
    out[k] = v
  }
  return out
}

function datastoreType(v: string, where: string): DatastoreType {
  if (v === 'etcdv3' || v === 'embedded') return v
  if (v === 'kubernetes')
    throw new ValidationError(`${where}: the kubernetes datastore is not supported; use etcdv3 or embedded`)
  throw new ValidationError(`${where}: unknown datastore type ${JSON.stringify(v)}: use etcdv3 or embedded`)
}

export function parseEndpoints(v: string, where: string): string[] {
  const list = v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
  if (list.length === 0) throw new ValidationError(`${where}: no etcd endpoint given`)
  for (const e of list) {
    // Never echoed: user:password@ would put the password in every error message and in `datastore status`.
    if (e.includes('@'))
      throw new ValidationError(
        `${where}: an etcd endpoint must not contain credentials (user:password@); use ETCD_USERNAME and ETCD_PASSWORD or the config file`,
      )
    if (!/^https?:\/\/[^/\s]+:\d+\/?$/.test(e))
      throw new ValidationError(`${where}: invalid etcd endpoint ${JSON.stringify(e)}: expected http(s)://HOST:PORT`)
  }
  return list.map((e) => e.replace(/\/$/, ''))
}

/**
 * `opts.bothTypes`: the caller uses the etcd endpoints whatever the type says (datastore migrate, whose source and
 * target are one of each), so --etcd-endpoints next to an embedded type is not a contradiction there.
 */
function sourceName(s: Source): string {
  return s === 'flag' ? '--datastore flag' : s === 'env' ? 'DATASTORE_TYPE environment variable' : 'config file'
}

export function resolveSettings(
  flags: DatastoreFlags,
  env: NodeJS.ProcessEnv = process.env,
  opts: {bothTypes?: boolean} = {},
): DatastoreSettings {
  const configFile = flags.config ?? env.IPAMCTL_CONFIG ?? DEFAULT_CONFIG_FILE
  const file = readConfigFile(configFile, flags.config !== undefined || env.IPAMCTL_CONFIG !== undefined) ?? {}
  const sources: Record<string, Source> = {}
  const pick = (
    name: string,
    flag: string | undefined,
    envName: string,
    fileValue: string | undefined,
  ): string | undefined => {
    for (const [src, v] of [
      ['flag', flag],
      ['env', env[envName]],
      ['file', fileValue],
    ] as const) {
      if (v !== undefined && v !== '') {
        sources[name] = src
        return v
      }
    }
    sources[name] = 'default'
    return undefined
  }
  const typeText = pick('datastoreType', flags.datastore, 'DATASTORE_TYPE', file.datastoreType)
  let type = typeText === undefined ? 'embedded' : datastoreType(typeText, `datastore type (${sources.datastoreType})`)
  // --etcd-endpoints on the command line is never ignored: with no type chosen anywhere it selects etcd v3, as it
  // does in calicoctl; next to a type that says embedded it is a mistake to report (ETCD_ENDPOINTS in the
  // environment stays ambient, and does not select anything).
  if (flags.etcdEndpoints !== undefined && !opts.bothTypes) {
    if (typeText === undefined) {
      type = 'etcdv3'
      sources.datastoreType = 'flag'
    } else if (type === 'embedded')
      throw new ValidationError(
        `--etcd-endpoints is for the etcdv3 datastore, but the ${sourceName(sources.datastoreType!)} selects the embedded one; drop one of them`,
      )
  }
  const endpointsText = pick('etcdEndpoints', flags.etcdEndpoints, 'ETCD_ENDPOINTS', file.etcdEndpoints)
  const path =
    pick('datastorePath', flags.datastorePath, 'IPAMCTL_DATASTORE_PATH', file.datastorePath) ??
    defaultDatastorePath(env)
  if (flags.timeout !== undefined && (!(flags.timeout > 0) || flags.timeout > 3600))
    throw new ValidationError('--timeout must be between 1 and 3600 seconds')
  const settings: DatastoreSettings = {
    type,
    path,
    etcdEndpoints:
      endpointsText === undefined
        ? ['http://127.0.0.1:2379']
        : parseEndpoints(endpointsText, `etcd endpoints (${sources.etcdEndpoints})`),
    etcdKeyFile: pick('etcdKeyFile', undefined, 'ETCD_KEY_FILE', file.etcdKeyFile),
    etcdCertFile: pick('etcdCertFile', undefined, 'ETCD_CERT_FILE', file.etcdCertFile),
    etcdCaCertFile: pick('etcdCaCertFile', undefined, 'ETCD_CA_CERT_FILE', file.etcdCACertFile),
    etcdUsername: pick('etcdUsername', undefined, 'ETCD_USERNAME', file.etcdUsername),
    etcdPassword: pick('etcdPassword', undefined, 'ETCD_PASSWORD', file.etcdPassword),
    timeoutMs: flags.timeout !== undefined ? flags.timeout * 1000 : DEFAULT_TIMEOUT_MS,
    sources,
    configFile: fs.existsSync(configFile) ? configFile : undefined,
  }
  sources.timeout = flags.timeout !== undefined ? 'flag' : 'default'
  if (Boolean(settings.etcdKeyFile) !== Boolean(settings.etcdCertFile)) {
    throw new ValidationError(
      'etcd client TLS needs both a key file and a certificate file (ETCD_KEY_FILE and ETCD_CERT_FILE)',
    )
  }
  return settings
}
