// Which pools an allocation may use (upstream determinePools): requested pools in the order given, or
// the enabled Automatic pools whose nodeSelector matches the node and whose namespaceSelector matches the
// namespace's labels, filtered by intended use. The rule is written up in docs/pool-selection.md.
import {parseKeyValues} from '../args.js'
import {NotFoundError, ValidationError} from '../errors.js'
import {type Cidr, type Family, parseCidr, sameCidr} from '../net/cidr.js'
import {validateLabels} from './node.js'
import type {AllowedUse, Pool} from './pool.js'
import {parseSelector} from './selector.js'

export type Labels = Readonly<Record<string, string>>

/**
 * Namespace labels as a list `k=v,k2=v2` (`sep` "="), or `k:v,k2:v2` (`sep` ":") where "=" cannot be used
 * (CNI_ARGS). Keys and values follow Kubernetes label syntax, which has neither ",", "=" nor ":", so both
 * forms parse unambiguously. An empty text is the empty label set.
 */
export function parseNamespaceLabels(text: string, sep: '=' | ':' = '='): Record<string, string> {
  const labels = text === '' ? {} : parseKeyValues(text.split(','), 'namespace label', sep)
  validateLabels(labels, 'namespace label')
  return labels
}

/**
 * Upstream's SelectsNamespace: an empty namespaceSelector selects every request; any other selects the
 * requests whose namespace labels it matches, where no labels given is the empty label set.
 */
export function selectsNamespace(pool: Pool, labels: Labels | undefined): boolean {
  return pool.spec.namespaceSelector === '' || parseSelector(pool.spec.namespaceSelector).matches(labels ?? {})
}

const formatLabels = (labels: Labels | undefined): string => {
  const pairs = Object.entries(labels ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  return pairs.length ? `{${pairs.map(([k, v]) => `${k}=${v}`).join(', ')}}` : 'none'
}

const usable = (p: Pool, family: Family) => p.cidr.family === family && !p.spec.disabled

/** Resolve a pool given by name or CIDR among `pools`; undefined if none matches. */
export function findPool(pools: readonly Pool[], ref: string): Pool | undefined {
  const byName = pools.find((p) => p.name === ref)
  if (byName) return byName
  if (!ref.includes('/')) return undefined
  let c: Cidr
  try {
    c = parseCidr(ref)
  } catch {
    return undefined
  }
  return pools.find((p) => sameCidr(p.cidr, c))
}

export function selectPools(args: {
  pools: readonly Pool[]
  family: Family
  requested?: readonly string[]
  nodeLabels: Labels
  /** The labels of the request's namespace; undefined is the empty set. Ignored for requested pools. */
  namespaceLabels?: Labels
  host: string
  use: AllowedUse
}): Pool[] {
  const {pools, family, use} = args
  if (args.requested && args.requested.length > 0) {
    return args.requested.map((ref) => {
      const p = findPool(pools, ref)
      if (p && p.cidr.family !== family) {
        const [want, got] = family === 4 ? ['IPv4', 'IPv6'] : ['IPv6', 'IPv4']
        throw new ValidationError(`provided ${want} IPPools list contains one or more ${got} IPPools (${ref})`)
      }
      if (!p || !usable(p, family)) throw new NotFoundError(`the given pool (${ref}) does not exist, or is not enabled`)
      if (!p.spec.allowedUses.includes(use)) {
        throw new ValidationError(
          `pool ${p.name} (${p.spec.cidr}) is not allowed for use "${use}" (allowedUses: [${p.spec.allowedUses.join(' ')}])`,
        )
      }
      return p
    })
  }
  const forNode = pools.filter(
    (p) =>
      usable(p, family) &&
      p.spec.assignmentMode === 'Automatic' &&
      parseSelector(p.spec.nodeSelector).matches(args.nodeLabels),
  )
  const matching = forNode.filter((p) => selectsNamespace(p, args.namespaceLabels))
  if (matching.length === 0) {
    // Say so when it is the namespace that rules the node's pools out: the fix is a label, not a node.
    const why =
      forNode.length > 0
        ? `: the namespaceSelector of ${forNode.map((p) => p.name).join(', ')} does not match the namespace labels ${formatLabels(args.namespaceLabels)}`
        : ''
    throw new NotFoundError(`no configured Calico pools for node ${args.host} (IPv${family})${why}`)
  }
  const forUse = matching.filter((p) => p.spec.allowedUses.includes(use))
  if (forUse.length === 0)
    throw new NotFoundError(`cannot find a qualified ippool, no pools match the required use (${use})`)
  return forUse
}
