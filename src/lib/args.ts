// Parsing of small user-supplied values shared by commands and the CNI plugin.
import {ValidationError} from './errors.js'

/**
 * `k=v` pairs (flags like --attr and --label); a repeated key is an error, not a silent overwrite. `sep`: the
 * character between key and value where `=` cannot be used (CNI_ARGS values cannot contain one).
 */
export function parseKeyValues(items: readonly string[] | undefined, what: string, sep = '='): Record<string, string> {
  const out: Record<string, string> = {}
  for (const item of items ?? []) {
    const eq = item.indexOf(sep)
    if (eq <= 0) throw new ValidationError(`invalid ${what} ${JSON.stringify(item)}: expected KEY${sep}VALUE`)
    const k = item.slice(0, eq)
    if (k in out) throw new ValidationError(`${what} ${k} given twice`)
    out[k] = item.slice(eq + 1)
  }
  return out
}

/** Go's strconv.ParseBool, which calicoctl uses for --strictaffinity. */
export function parseGoBool(text: string): boolean | undefined {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(text)) return true
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(text)) return false
  return undefined
}

export function parseNonNegativeInt(text: string, what: string, max = Number.MAX_SAFE_INTEGER): number {
  if (!/^\d+$/.test(text) || Number(text) > max)
    throw new ValidationError(`invalid ${what} ${JSON.stringify(text)}: expected a whole number from 0 to ${max}`)
  return Number(text)
}
