// `-o custom-columns=NAME:.metadata.name,CIDR:.spec.cidr`, as kubectl and calicoctl read it: a header and a
// field path per column; a path through a missing field prints `<none>`.
import {ValidationError} from '../errors.js'
import {isObj} from '../ipam/manifest.js'

export interface Column {
  header: string
  path: (string | number)[]
}

export function parseCustomColumns(spec: string): Column[] {
  const cols = spec.split(',').map((part) => {
    const colon = part.indexOf(':')
    if (colon <= 0)
      throw new ValidationError(`custom-columns: expected HEADER:.field.path, got ${JSON.stringify(part)}`)
    const header = part.slice(0, colon)
    let path = part.slice(colon + 1).trim()
    if (path.startsWith('{') && path.endsWith('}')) path = path.slice(1, -1)
    if (!/^(\.[A-Za-z0-9_-]+|\[\d+\])+$/.test(path))
      throw new ValidationError(
        `custom-columns: invalid field path ${JSON.stringify(path)} for ${header} (e.g. .metadata.name, .spec.allowedUses[0])`,
      )
    const steps = [...path.matchAll(/\.([A-Za-z0-9_-]+)|\[(\d+)\]/g)].map((m) =>
      m[1] !== undefined ? m[1] : Number(m[2]),
    )
    return {header, path: steps}
  })
  if (cols.length === 0) throw new ValidationError('custom-columns: give at least one HEADER:.field.path')
  return cols
}

export function columnValue(obj: unknown, path: readonly (string | number)[]): string {
  let v: unknown = obj
  for (const step of path) {
    if (typeof step === 'number') v = Array.isArray(v) ? v[step] : undefined
    else v = isObj(v) ? v[step] : undefined
    if (v === undefined || v === null) return '<none>'
  }
  if (Array.isArray(v)) return v.map((x) => (typeof x === 'object' ? JSON.stringify(x) : String(x))).join(',')
  if (isObj(v))
    return Object.entries(v)
      .map(([k, x]) => `${k}=${typeof x === 'object' ? JSON.stringify(x) : String(x)}`)
      .join(',')
  return String(v)
}
