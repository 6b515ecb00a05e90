// Calico manifests (YAML or JSON, several documents, a List or a top-level sequence) → v3 objects, and IPPool
// objects → pool inputs. Strict: an unknown field is almost always a typo that would otherwise silently become a
// default.
import {loadYaml} from '../codec/yaml.js'
import {ValidationError} from '../errors.js'
import type {PoolInput} from './pool.js'

const SPEC_FIELDS = new Set([
  'cidr',
  'vxlanMode',
  'ipipMode',
  'natOutgoing',
  'disabled',
  'disableBGPExport',
  'blockSize',
  'nodeSelector',
  'namespaceSelector',
  'allowedUses',
  'assignmentMode',
])
const METADATA_FIELDS = new Set(['name', 'labels', 'annotations', 'uid', 'creationTimestamp', 'resourceVersion'])

export type Obj = Record<string, unknown>
export const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)

export function poolFrom(doc: unknown, where: string): PoolInput {
  if (!isObj(doc)) throw new ValidationError(`${where}: expected an IPPool object`)
  if (doc.kind !== 'IPPool')
    throw new ValidationError(`${where}: kind must be IPPool (got ${JSON.stringify(doc.kind)})`)
  if (doc.apiVersion !== undefined && doc.apiVersion !== 'projectcalico.org/v3') {
    throw new ValidationError(
      `${where}: apiVersion must be projectcalico.org/v3 (got ${JSON.stringify(doc.apiVersion)})`,
    )
  }
  const md = doc.metadata
  if (!isObj(md) || typeof md.name !== 'string') throw new ValidationError(`${where}: metadata.name is required`)
  for (const k of Object.keys(md))
    if (!METADATA_FIELDS.has(k)) throw new ValidationError(`${where}: unknown field metadata.${k}`)
  const spec = doc.spec
  if (!isObj(spec)) throw new ValidationError(`${where}: spec is required`)
  for (const k of Object.keys(spec))
    if (!SPEC_FIELDS.has(k)) throw new ValidationError(`${where}: unknown field spec.${k}`)
  if (typeof spec.cidr !== 'string') throw new ValidationError(`${where}: spec.cidr is required`)
  const types: Record<string, string> = {
    natOutgoing: 'boolean',
    disabled: 'boolean',
    disableBGPExport: 'boolean',
    blockSize: 'number',
    nodeSelector: 'string',
    namespaceSelector: 'string',
    vxlanMode: 'string',
    ipipMode: 'string',
    assignmentMode: 'string',
  }
  for (const [k, t] of Object.entries(types)) {
    if (spec[k] !== undefined && typeof spec[k] !== t) throw new ValidationError(`${where}: spec.${k} must be a ${t}`)
  }
  if (
    spec.allowedUses !== undefined &&
    !(Array.isArray(spec.allowedUses) && spec.allowedUses.every((u) => typeof u === 'string'))
  ) {
    throw new ValidationError(`${where}: spec.allowedUses must be a list of strings`)
  }
  const labels = md.labels
  if (labels !== undefined && !(isObj(labels) && Object.values(labels).every((v) => typeof v === 'string'))) {
    throw new ValidationError(`${where}: metadata.labels must map strings to strings`)
  }
  return {
    ...(spec as Partial<PoolInput>),
    cidr: spec.cidr,
    name: md.name,
    labels: labels as Record<string, string> | undefined,
  }
}

/** One object of a manifest, with where it came from for error messages (`FILE document 2 item 3`). */
export interface ManifestObject {
  obj: Obj
  where: string
}

/**
 * Every object of a manifest, in order: several YAML documents, JSON, `kind: List` or `kind: <Kind>List` with
 * `items`, or a top-level sequence (what `pool list -o yaml` prints). Objects are not checked beyond being maps.
 */
export function parseManifest(text: string, source = 'manifest'): ManifestObject[] {
  const docs = loadYaml().parseAllDocuments(text)
  const out: ManifestObject[] = []
  docs.forEach((d, i) => {
    const where = docs.length > 1 ? `${source} document ${i + 1}` : source
    if (d.errors.length > 0) throw new ValidationError(`${where}: ${d.errors[0]!.message.split('\n')[0]}`)
    let v: unknown
    try {
      v = d.toJS()
    } catch (err) {
      // yaml refuses documents whose aliases expand too far ("billion laughs"): bad input, not an internal error.
      throw new ValidationError(`${where}: ${(err as Error).message.split('\n')[0]}`)
    }
    if (v === null || v === undefined) return
    const items = (list: unknown[], at: string) =>
      list.forEach((item, j) => {
        const w = `${at} item ${j + 1}`
        if (!isObj(item)) throw new ValidationError(`${w}: expected a resource object`)
        out.push({obj: item, where: w})
      })
    if (Array.isArray(v)) items(v, where)
    else if (isObj(v) && typeof v.kind === 'string' && v.kind.endsWith('List')) {
      if (!Array.isArray(v.items)) throw new ValidationError(`${where}: a ${v.kind} needs items`)
      items(v.items, where)
    } else if (isObj(v)) out.push({obj: v, where})
    else throw new ValidationError(`${where}: expected a resource object`)
  })
  return out
}

export function parsePoolManifest(text: string, source = 'manifest'): PoolInput[] {
  const out = parseManifest(text, source).map((m) => poolFrom(m.obj, m.where))
  if (out.length === 0) throw new ValidationError(`${source}: no IPPool found`)
  return out
}
