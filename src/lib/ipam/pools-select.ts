// Which pools an allocation may use (upstream determinePools): requested pools in the order given, or
// the enabled Automatic pools whose nodeSelector matches the node, filtered by intended use.
import {NotFoundError, ValidationError} from '../errors.js'
import {type Family, parseCidr, sameCidr} from '../net/cidr.js'
import type {AllowedUse, Pool} from './pool.js'
import {parseSelector} from './selector.js'

const usable = (p: Pool, family: Family) => p.cidr.family === family && !p.spec.disabled

/** Resolve a pool given by name or CIDR among `pools`; undefined if none matches. */
export function findPool(pools: readonly Pool[], ref: string): Pool | undefined {
  const byName = pools.find((p) => p.name === ref)
  if (byName) return byName
  if (!ref.includes('/')) return undefined
  let c
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
  nodeLabels: Readonly<Record<string, string>>
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
        throw new ValidationError(`pool ${p.name} (${p.spec.cidr}) is not allowed for use "${use}" (allowedUses: [${p.spec.allowedUses.join(' ')}])`)
      }
      return p
    })
  }
  const matching = pools.filter(
    (p) => usable(p, family) && p.spec.assignmentMode === 'Automatic' && parseSelector(p.spec.nodeSelector).matches(args.nodeLabels),
  )
  if (matching.length === 0) throw new NotFoundError(`no configured Calico pools for node ${args.host} (IPv${family})`)
  const forUse = matching.filter((p) => p.spec.allowedUses.includes(use))
  if (forUse.length === 0) throw new NotFoundError(`cannot find a qualified ippool, no pools match the required use (${use})`)
  return forUse
}
