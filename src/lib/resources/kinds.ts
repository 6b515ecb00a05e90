// The resource kinds the resource verbs (get, apply, create, replace, delete, patch, label) know, with calicoctl's
// names for them, so a calicoctl script's `get ippools` or `delete pool x` works unchanged.
import {ValidationError} from '../errors.js'
import {closest} from '../format/suggest.js'

export type KindName = 'IPPool' | 'IPReservation' | 'IPAMConfiguration' | 'Node' | 'BlockAffinity'

export interface KindInfo {
  kind: KindName
  /** Accepted on the command line, lower case; the first is the canonical one (`-o name`). */
  names: readonly string[]
  /** Shown by get, never written through the resource verbs (upstream's BlockAffinity is read-only too). */
  readOnly: boolean
}

export const KINDS: readonly KindInfo[] = [
  {kind: 'IPPool', names: ['ippool', 'ippools', 'ipp', 'ipps', 'pool', 'pools'], readOnly: false},
  {kind: 'IPReservation', names: ['ipreservation', 'ipreservations', 'ipr', 'iprs'], readOnly: false},
  {
    kind: 'IPAMConfiguration',
    names: ['ipamconfiguration', 'ipamconfigurations', 'ipamconfig', 'ipamconfigs'],
    readOnly: false,
  },
  {kind: 'Node', names: ['node', 'nodes', 'no', 'nos'], readOnly: false},
  {
    kind: 'BlockAffinity',
    names: ['blockaffinity', 'blockaffinities', 'affinity', 'affinities', 'aff', 'affs'],
    readOnly: true,
  },
]

export const kindNames = (): string[] => KINDS.map((k) => k.names[0]!)

/** A kind as typed on the command line (any alias, any case) or as a manifest's `kind:` (`IPPool`). */
export function resolveKind(text: string): KindInfo {
  const t = text.toLowerCase()
  const found = KINDS.find((k) => k.names.includes(t) || k.kind.toLowerCase() === t)
  if (found) return found
  const guess = closest(
    t,
    KINDS.flatMap((k) => k.names),
  )
  throw new ValidationError(
    `unknown resource kind ${JSON.stringify(text)}${guess ? `; did you mean "${guess}"?` : ''} (known: ${kindNames().join(', ')})`,
  )
}

/** A manifest's `kind:` exactly as Calico spells it. */
export function manifestKind(kind: unknown, where: string): KindInfo {
  const found = KINDS.find((k) => k.kind === kind)
  if (!found)
    throw new ValidationError(
      `${where}: unsupported kind ${JSON.stringify(kind)} (ipamctl manages ${KINDS.filter((k) => !k.readOnly)
        .map((k) => k.kind)
        .join(', ')})`,
    )
  return found
}
