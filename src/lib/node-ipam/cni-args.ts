// CNI_ARGS: `K=V;K=V`, parsed the way the Go library's types.LoadArgs does (exact key names, unknown keys
// are an error unless IgnoreUnknown is true, one `=` per pair). Upstream reports these as plain errors,
// which the skel turns into code 999 with the message; we do the same.
import {parseNamespaceLabels} from '../ipam/pools-select.js'
import {formatIp, tryParseIp} from '../net/cidr.js'
import {CNI_ERR, CniError} from '../cni/errors.js'
import {goQuote, goQuoteList} from '../codec/gojson.js'

/**
 * Keys the Calico plugins read (the union of upstream's K8sArgs, ipamArgs and CNITestArgs, plus K8S_POD_UID),
 * and ipamctl's IPAMCTL_NAMESPACE_LABELS and IPAMCTL_IPS.
 */
export const KNOWN_CNI_ARGS = [
  'IgnoreUnknown',
  'IP',
  'K8S_POD_NAMESPACE',
  'K8S_POD_NAME',
  'K8S_POD_INFRA_CONTAINER_ID',
  'K8S_POD_UID',
  'CNI_TEST_NAMESPACE',
  'IPAMCTL_NAMESPACE_LABELS',
  'IPAMCTL_IPS',
] as const

export interface CniArgs {
  ignoreUnknown: boolean
  /** `IP=`: a specific address to assign, canonical text; undefined when absent or empty. */
  ip?: string
  podNamespace: string
  podName: string
  podInfraContainerId: string
  podUid: string
  testNamespace: string
  /**
   * `IPAMCTL_NAMESPACE_LABELS=k:v,k2:v2` (":" because a CNI_ARGS value cannot hold "="): the labels of the
   * workload's namespace, for pools' namespaceSelector. Undefined when absent.
   */
  namespaceLabels?: Record<string, string>
  /**
   * `IPAMCTL_IPS=10.65.0.10,fd00::10`: fixed addresses, at most one per family, canonical text (the main plugin
   * assigns each as it would an `IP=`). Undefined when absent or empty.
   */
  ips?: string[]
  /** Pairs with unknown keys that IgnoreUnknown let through, as given. */
  ignored: string[]
  /** Every pair in order, as given. */
  pairs: Array<[string, string]>
}

function argsError(msg: string): CniError {
  return new CniError(CNI_ERR.internal, msg)
}

/** Go's UnmarshallableBool: 1/true/0/false, case-insensitive. */
function parseBool(pair: string, value: string): boolean {
  const v = value.toLowerCase()
  if (v === '1' || v === 'true') return true
  if (v === '0' || v === 'false') return false
  throw argsError(`ARGS: error parsing value of pair ${goQuote(pair)}: boolean unmarshal error: invalid input ${v})`)
}

export function parseCniArgs(text: string | undefined, known: readonly string[] = KNOWN_CNI_ARGS): CniArgs {
  const out: CniArgs = {
    ignoreUnknown: false,
    podNamespace: '',
    podName: '',
    podInfraContainerId: '',
    podUid: '',
    testNamespace: '',
    ignored: [],
    pairs: [],
  }
  if (!text) return out
  const unknown: string[] = []
  for (const pair of text.split(';')) {
    const kv = pair.split('=')
    if (kv.length !== 2) throw argsError(`ARGS: invalid pair ${goQuote(pair)}`)
    const [key, value] = kv as [string, string]
    out.pairs.push([key, value])
    if (!known.includes(key)) {
      unknown.push(pair)
      continue
    }
    switch (key) {
      case 'IgnoreUnknown':
        out.ignoreUnknown = parseBool(pair, value)
        break
      case 'IP': {
        // Go's net.IP.UnmarshalText: empty means "no address".
        if (value === '') {
          out.ip = undefined
          break
        }
        const ip = tryParseIp(value)
        if (!ip || value.trim() !== value)
          throw argsError(`ARGS: error parsing value of pair ${goQuote(pair)}: invalid IP address: ${value})`)
        out.ip = formatIp(ip.family, ip.value)
        break
      }
      case 'K8S_POD_NAMESPACE':
        out.podNamespace = value
        break
      case 'K8S_POD_NAME':
        out.podName = value
        break
      case 'K8S_POD_INFRA_CONTAINER_ID':
        out.podInfraContainerId = value
        break
      case 'K8S_POD_UID':
        out.podUid = value
        break
      case 'CNI_TEST_NAMESPACE':
        out.testNamespace = value
        break
      case 'IPAMCTL_IPS': {
        if (value === '') {
          out.ips = undefined
          break
        }
        const ips = value.split(',').map((text) => tryParseIp(text))
        const bad = value.split(',').find((_, i) => ips[i] === undefined)
        if (bad !== undefined)
          throw argsError(`ARGS: error parsing value of pair ${goQuote(pair)}: invalid IP address: ${bad})`)
        if (new Set(ips.map((ip) => ip!.family)).size !== ips.length)
          throw argsError(`ARGS: error parsing value of pair ${goQuote(pair)}: at most one address per family`)
        out.ips = ips.map((ip) => formatIp(ip!.family, ip!.value))
        break
      }
      case 'IPAMCTL_NAMESPACE_LABELS':
        try {
          out.namespaceLabels = parseNamespaceLabels(value, ':')
        } catch (err) {
          throw argsError(`ARGS: error parsing value of pair ${goQuote(pair)}: ${(err as Error).message}`)
        }
        break
    }
  }
  if (unknown.length > 0 && !out.ignoreUnknown) throw argsError(`ARGS: unknown args ${goQuoteList(unknown)}`)
  out.ignored = unknown
  return out
}

/** Calico's AddIgnoreUnknownArgs: what the main plugin passes to its IPAM plugin. */
export function withIgnoreUnknown(args: string | undefined): string {
  return args ? `IgnoreUnknown=1;${args}` : 'IgnoreUnknown=1'
}

/** Append `K=V` (the main plugin adds `IP=<ip>` for the ipAddrs annotation). */
export function withArg(args: string | undefined, key: string, value: string): string {
  return args ? `${args};${key}=${value}` : `${key}=${value}`
}
