import {ValidationError} from '../errors.js'
import type {DatastoreSettings, DatastoreType, Source} from '../store/settings.js'
import {defaultDatastorePath} from '../store/default-path.js'
import {type NetConf, PLUGIN_DATASTORE_TIMEOUT_MS} from './netconf.js'

const ETCD_ENDPOINT = /^https?:\/\/[^/\s]+:\d+\/?$/

function endpointsFrom(text: string, where: string): string[] {
  const list = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
  if (list.length === 0) throw new ValidationError(`${where}: no etcd endpoint given`)
  for (const e of list) {
    if (!ETCD_ENDPOINT.test(e))
      throw new ValidationError(`${where}: invalid etcd endpoint ${JSON.stringify(e)}: expected http(s)://HOST:PORT`)
  }
  return list.map((e) => e.replace(/\/$/, ''))
}

function datastoreTypeOf(v: string, where: string): DatastoreType {
  if (v === 'etcdv3' || v === 'embedded') return v
  if (v === 'kubernetes')
    throw new ValidationError(`${where}: the kubernetes datastore is not supported; use etcdv3 or embedded`)
  throw new ValidationError(`${where}: unknown datastore type ${JSON.stringify(v)}: use etcdv3 or embedded`)
}

/**
 * The datastore the plugin uses, from the netconf, then (as upstream, which exports the netconf values to
 * the environment before loading its client config) the environment: DATASTORE_TYPE, ETCD_ENDPOINTS,
 * ETCD_KEY_FILE, ETCD_CERT_FILE, ETCD_CA_CERT_FILE, ETCD_USERNAME, ETCD_PASSWORD, IPAMCTL_DATASTORE_PATH.
 *
 * Decisions:
 * - /etc/ipamctl/ipamctl.cfg is NOT read: a plugin's datastore must be fully described by its netconf (the
 *   runtime's environment is rarely under the operator's control). `ipamctl_config: <file>` opts in to a
 *   calicoctl-style file; netconf fields then override it field by field.
 * - Without `datastore_type`, a netconf that names etcd (`etcd_endpoints` or `etcd_authority`) means
 *   etcdv3, as it always did for Calico (whose default datastore is etcdv3); otherwise embedded.
 * - `etcd_authority` (host:port, deprecated) with `etcd_scheme` (default http) is turned into an endpoint.
 *   `etcd_discovery_srv` (DNS SRV discovery) is not supported and is rejected unless endpoints are given.
 */
export async function datastoreSettingsFor(
  conf: NetConf,
  env: (name: string) => string | undefined,
): Promise<DatastoreSettings> {
  const sources: Record<string, Source> = {}
  let base: DatastoreSettings | undefined
  if (conf.ipamctlConfig) {
    // Loaded only when asked for: settings.ts pulls in the YAML parser.
    const {resolveSettings} = await import('../store/settings.js')
    base = resolveSettings({config: conf.ipamctlConfig}, envRecord(env))
  }
  const pick = (name: string, fromConf: string | undefined, envName: string, fallback?: string): string | undefined => {
    for (const [src, v] of [
      ['file', fromConf],
      ['env', env(envName)],
    ] as const) {
      if (v !== undefined && v !== '') {
        sources[name] = src
        return v
      }
    }
    if (fallback !== undefined) sources[name] = base?.sources[name] ?? 'default'
    return fallback
  }
  let authorityEndpoint: string | undefined
  if (conf.etcdAuthority) authorityEndpoint = `${conf.etcdScheme || 'http'}://${conf.etcdAuthority}`
  const endpointsConf = conf.etcdEndpoints || authorityEndpoint
  if (conf.etcdDiscoverySrv && !endpointsConf) {
    throw new ValidationError(
      'etcd_discovery_srv is not supported by ipamctl: list the etcd endpoints in etcd_endpoints',
    )
  }
  const impliedType = endpointsConf ? 'etcdv3' : undefined
  const typeText = pick('datastoreType', conf.datastoreType || impliedType, 'DATASTORE_TYPE', base?.type ?? 'embedded')!
  const type = datastoreTypeOf(typeText, `datastore type (${sources.datastoreType})`)
  const endpointsText = pick('etcdEndpoints', endpointsConf, 'ETCD_ENDPOINTS')
  const settings: DatastoreSettings = {
    type,
    path: pick(
      'datastorePath',
      conf.datastorePath,
      'IPAMCTL_DATASTORE_PATH',
      base?.path ?? defaultDatastorePath(envRecord(env)),
    )!,
    etcdEndpoints:
      endpointsText !== undefined
        ? endpointsFrom(endpointsText, `etcd endpoints (${sources.etcdEndpoints})`)
        : (base?.etcdEndpoints ?? ['http://127.0.0.1:2379']),
    etcdKeyFile: pick('etcdKeyFile', conf.etcdKeyFile, 'ETCD_KEY_FILE', base?.etcdKeyFile),
    etcdCertFile: pick('etcdCertFile', conf.etcdCertFile, 'ETCD_CERT_FILE', base?.etcdCertFile),
    etcdCaCertFile: pick('etcdCaCertFile', conf.etcdCaCertFile, 'ETCD_CA_CERT_FILE', base?.etcdCaCertFile),
    etcdUsername: pick('etcdUsername', undefined, 'ETCD_USERNAME', base?.etcdUsername),
    etcdPassword: pick('etcdPassword', undefined, 'ETCD_PASSWORD', base?.etcdPassword),
    timeoutMs: base?.timeoutMs ?? PLUGIN_DATASTORE_TIMEOUT_MS,
    sources: {...base?.sources, ...sources},
    configFile: base?.configFile,
  }
  if (Boolean(settings.etcdKeyFile) !== Boolean(settings.etcdCertFile)) {
    throw new ValidationError('etcd client TLS needs both etcd_key_file and etcd_cert_file')
  }
  return settings
}

function envRecord(env: (name: string) => string | undefined): NodeJS.ProcessEnv {
  return new Proxy({} as NodeJS.ProcessEnv, {get: (_t, k) => (typeof k === 'string' ? env(k) : undefined)})
}
