import {validateSocketPath} from '../agent-client/protocol.js'
import {ValidationError} from '../errors.js'
import {validateLabels} from '../ipam/node.js'
import {DEFAULT_CONFIG_VERSION} from '../cni/version.js'

export const DEFAULT_NODENAME_FILE = '/var/lib/calico/nodename'
export const DEFAULT_IPAM_LOCK_FILE = '/var/run/calico/ipam.lock'
export const DEFAULT_MTU_FILE = '/var/lib/calico/mtu'
/** Bound on every datastore request made by the plugins (the CLI's default too). */
export const PLUGIN_DATASTORE_TIMEOUT_MS = 10_000

export const NETWORK_NAME_ERROR =
  'invalid characters detected in the given network name. Only letters a-z, numbers 0-9, and symbols _.- are supported'

export interface IpamConf {
  type: string
  /** A string, as upstream: only "false" disables IPv4. */
  assignIpv4?: string
  /** A string, as upstream: only "true" enables IPv6. */
  assignIpv6?: string
  ipv4Pools: string[]
  ipv6Pools: string[]
  /**
   * ipamctl extension `ipam.namespace_labels`: the labels of the namespace the network's workloads are in, for
   * pools' namespaceSelector (docs/pool-selection.md). CNI_ARGS IPAMCTL_NAMESPACE_LABELS replaces them.
   */
  namespaceLabels?: Record<string, string>
  subnet?: string
  /** The whole `ipam` object, for IPAM plugins with other fields (host-local's ranges, routes…). */
  raw: Record<string, unknown>
}

export interface NetConf {
  /** The config's version; DEFAULT_CONFIG_VERSION when absent. */
  cniVersion: string
  name: string
  type: string
  ipam: IpamConf
  nodename?: string
  nodenameFile?: string
  nodenameFileOptional: boolean
  /** Deprecated upstream; still the third choice for the node name. */
  hostname?: string
  datastoreType?: string
  etcdEndpoints?: string
  etcdDiscoverySrv?: string
  etcdScheme?: string
  etcdAuthority?: string
  etcdKeyFile?: string
  etcdCertFile?: string
  etcdCaCertFile?: string
  /** ipamctl extension: the embedded datastore file. */
  datastorePath?: string
  /** ipamctl extension: a calicoctl-style config file to take datastore settings from. */
  ipamctlConfig?: string
  ipamLockFile?: string
  /** ipamctl extension: the per-node agent's socket; '' turns the agent off (default /run/ipamctl/agent.sock). */
  ipamctlAgentSocket?: string
  logLevel?: string
  logFilePath?: string
  // Fields of the main (calico) plugin, parsed here so it shares one reader.
  mtu: number
  numQueues: number
  deviceType: string
  requireMtuFile: boolean
  includeDefaultRoutes: boolean
  containerSettings: {allowIpForwarding: boolean}
  featureControl: {ipAddrsNoIpam: boolean; floatingIps: boolean}
  policy: {type?: string; k8sApiRoot?: string; k8sAuthToken?: string}
  kubernetes: {kubeconfig?: string; k8sApiRoot?: string; nodeName?: string}
  policySetupTimeoutSeconds: number
  endpointStatusDir?: string
  readinessGates: string[]
  windowsUseSingleNetwork: boolean
  runtimeConfig: Record<string, unknown>
  /** Left raw: result.ts parses it (CHECK, DEL, chained ADD). */
  prevResult?: unknown
  /** The whole config object, unchanged (for delegation and pass-through of unknown keys). */
  raw: Record<string, unknown>
}

type Obj = Record<string, unknown>

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)

function typeName(v: unknown): string {
  if (Array.isArray(v)) return 'array'
  if (v === null) return 'null'
  return typeof v === 'object' ? 'object' : typeof v
}

function bad(path: string, want: string, v: unknown): ValidationError {
  return new ValidationError(
    `failed to load netconf: field "${path}" must be ${want}, got ${typeName(v)} ${JSON.stringify(v)}`,
  )
}

// JSON null leaves a Go field at its zero value, so null counts as absent everywhere.
function str(o: Obj, key: string, path = key): string | undefined {
  const v = o[key]
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'string') throw bad(path, 'a string', v)
  return v
}

function bool(o: Obj, key: string, path = key): boolean {
  const v = o[key]
  if (v === undefined || v === null) return false
  if (typeof v !== 'boolean') throw bad(path, 'true or false', v)
  return v
}

function int(o: Obj, key: string, path = key): number {
  const v = o[key]
  if (v === undefined || v === null) return 0
  if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw bad(path, 'an integer', v)
  return v
}

function strList(o: Obj, key: string, path = key): string[] {
  const v = o[key]
  if (v === undefined || v === null) return []
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw bad(path, 'a list of strings', v)
  return v as string[]
}

function strMap(o: Obj, key: string, path = key): Record<string, string> | undefined {
  const v = o[key]
  if (v === undefined || v === null) return undefined
  if (!isObj(v) || !Object.values(v).every((x) => typeof x === 'string')) throw bad(path, 'an object of strings', v)
  try {
    validateLabels(v as Record<string, string>, 'namespace label')
  } catch (err) {
    throw new ValidationError(`failed to load netconf: field "${path}": ${(err as Error).message}`)
  }
  return v as Record<string, string>
}

function obj(o: Obj, key: string, path = key): Obj {
  const v = o[key]
  if (v === undefined || v === null) return {}
  if (!isObj(v)) throw bad(path, 'an object', v)
  return v
}

/** The netconf key naming the node agent's socket ('' for none); absent: DEFAULT_AGENT_SOCKET. */
export const AGENT_SOCKET_KEY = 'ipamctl_agent_socket'

function agentSocket(raw: Obj): string | undefined {
  const v = str(raw, AGENT_SOCKET_KEY)
  return v ? validateSocketPath(v, `failed to load netconf: field "${AGENT_SOCKET_KEY}"`) : v
}

/** Calico's ValidateNetworkName: the name becomes the handle prefix. */
export function validateNetworkName(name: string): void {
  if (!/^[a-zA-Z0-9_.-]+$/.test(name)) throw new ValidationError(NETWORK_NAME_ERROR)
}

/** Parse and type-check a netconf object (or its JSON text). */
export function parseNetConf(input: Obj | string): NetConf {
  let raw: unknown = input
  if (typeof input === 'string') {
    try {
      raw = JSON.parse(input)
    } catch (err) {
      throw new ValidationError(`failed to load netconf: ${(err as Error).message}`)
    }
  }
  if (!isObj(raw)) throw new ValidationError('failed to load netconf: the network configuration must be a JSON object')
  const name = str(raw, 'name') ?? ''
  validateNetworkName(name)
  const ipamRaw = obj(raw, 'ipam')
  const cs = obj(raw, 'container_settings')
  const fc = obj(raw, 'feature_control')
  const policy = obj(raw, 'policy')
  const k8s = obj(raw, 'kubernetes')
  return {
    cniVersion: str(raw, 'cniVersion') || DEFAULT_CONFIG_VERSION,
    name,
    type: str(raw, 'type') ?? '',
    ipam: {
      type: str(ipamRaw, 'type', 'ipam.type') ?? '',
      assignIpv4: str(ipamRaw, 'assign_ipv4', 'ipam.assign_ipv4'),
      assignIpv6: str(ipamRaw, 'assign_ipv6', 'ipam.assign_ipv6'),
      ipv4Pools: strList(ipamRaw, 'ipv4_pools', 'ipam.ipv4_pools'),
      ipv6Pools: strList(ipamRaw, 'ipv6_pools', 'ipam.ipv6_pools'),
      namespaceLabels: strMap(ipamRaw, 'namespace_labels', 'ipam.namespace_labels'),
      subnet: str(ipamRaw, 'subnet', 'ipam.subnet'),
      raw: ipamRaw,
    },
    nodename: str(raw, 'nodename'),
    nodenameFile: str(raw, 'nodename_file'),
    nodenameFileOptional: bool(raw, 'nodename_file_optional'),
    hostname: str(raw, 'hostname'),
    datastoreType: str(raw, 'datastore_type'),
    etcdEndpoints: str(raw, 'etcd_endpoints'),
    etcdDiscoverySrv: str(raw, 'etcd_discovery_srv'),
    etcdScheme: str(raw, 'etcd_scheme'),
    etcdAuthority: str(raw, 'etcd_authority'),
    etcdKeyFile: str(raw, 'etcd_key_file'),
    etcdCertFile: str(raw, 'etcd_cert_file'),
    etcdCaCertFile: str(raw, 'etcd_ca_cert_file'),
    datastorePath: str(raw, 'datastore_path'),
    ipamctlConfig: str(raw, 'ipamctl_config'),
    ipamLockFile: str(raw, 'ipam_lock_file'),
    ipamctlAgentSocket: agentSocket(raw),
    logLevel: str(raw, 'log_level'),
    logFilePath: str(raw, 'log_file_path'),
    mtu: int(raw, 'mtu'),
    numQueues: int(raw, 'num_queues'),
    deviceType: str(raw, 'device_type') ?? '',
    requireMtuFile: bool(raw, 'require_mtu_file'),
    includeDefaultRoutes: bool(raw, 'include_default_routes'),
    containerSettings: {allowIpForwarding: bool(cs, 'allow_ip_forwarding', 'container_settings.allow_ip_forwarding')},
    featureControl: {
      ipAddrsNoIpam: bool(fc, 'ip_addrs_no_ipam', 'feature_control.ip_addrs_no_ipam'),
      floatingIps: bool(fc, 'floating_ips', 'feature_control.floating_ips'),
    },
    policy: {
      type: str(policy, 'type', 'policy.type'),
      k8sApiRoot: str(policy, 'k8s_api_root', 'policy.k8s_api_root'),
      k8sAuthToken: str(policy, 'k8s_auth_token', 'policy.k8s_auth_token'),
    },
    kubernetes: {
      kubeconfig: str(k8s, 'kubeconfig', 'kubernetes.kubeconfig'),
      k8sApiRoot: str(k8s, 'k8s_api_root', 'kubernetes.k8s_api_root'),
      nodeName: str(k8s, 'node_name', 'kubernetes.node_name'),
    },
    policySetupTimeoutSeconds: int(raw, 'policy_setup_timeout_seconds'),
    endpointStatusDir: str(raw, 'endpoint_status_dir'),
    readinessGates: strList(raw, 'readiness_gates'),
    windowsUseSingleNetwork: bool(raw, 'windows_use_single_network'),
    runtimeConfig: obj(raw, 'runtimeConfig'),
    prevResult: raw.prevResult ?? undefined,
    raw,
  }
}

/** The main plugin's extra checks (the IPAM plugin, like calico-ipam, does not make them). */
export function validateMainPluginConf(conf: NetConf): void {
  if (conf.deviceType !== '' && conf.deviceType !== 'veth' && conf.deviceType !== 'netkit') {
    throw new ValidationError(`unknown device_type "${conf.deviceType}" in CNI config (supported: "veth", "netkit")`)
  }
}
