// The text of `datastore export`'s bulk items, a page at a time: written on the main thread or on the export's
// writer thread (export-thread.ts), so both must write the same bytes from the same stored rows.
import {compactJson, encodeJson, indentJson, parseJson} from '../codec/gojson.js'
import {appendYamlListItemOfJson, yamlListItem} from '../codec/yaml.js'
import {isObj, type Obj} from '../ipam/manifest.js'

/** Metadata that only means something inside one datastore: stripped on export, as upstream does. */
export const LOCAL_METADATA = ['uid', 'resourceVersion', 'creationTimestamp']

const STRIPPED = {member: 'metadata', keys: LOCAL_METADATA}

/**
 * One v3 object of the export pushed onto `out`: its local metadata stripped, as upstream's export does. Written
 * from the stored text when appendYamlListItemOfJson can (the common resource), else parsed and written by
 * yamlListItem.
 */
function pushExportedItem(value: string, out: string[]): void {
  if (appendYamlListItemOfJson(value, STRIPPED, out)) return
  const obj = parseJson(value) as Obj
  if (isObj(obj.metadata)) for (const k of LOCAL_METADATA) delete obj.metadata[k]
  out.push(yamlListItem(obj))
}

/** One entry of the IPAM object's arrays, as calicoctl's export writes a key and its stored value (compact). */
export function ipamEntry(key: string, value: string): string {
  // Very old affinities have an empty value, which upstream reads as confirmed.
  const v = value.trim() === '' ? '{"state":"confirmed","deleted":false}' : compactJson(value)
  return `{"Key":${encodeJson(key)},"Value":${v},"TTL":0}`
}

/** Between two entries of an IPAM array (its entries are indented by 4 inside the object's 2). */
export const IPAM_SEPARATOR = ',\n    '

/**
 * Stored rows whose text is written together: v3 resources as YAML List items (values only), or entries of
 * one of the IPAM object's arrays (keys and values), joined by IPAM_SEPARATOR.
 */
export type Page =
  | {readonly kind: 'resources'; readonly values: readonly string[]}
  | {readonly kind: 'ipam'; readonly keys: readonly string[]; readonly values: readonly string[]}

/** Rows per Page: enough that handing a page to another thread costs little beside writing it. */
export const PAGE_ROWS = 256
/**
 * Characters of stored text per Page at most (a page of blocks, ~10 KB each, ends early): what a page holds
 * outlives young-generation collections while it fills, and the collector copies what survives each time.
 */
export const PAGE_CHARS = 1 << 16

export function formatPage(p: Page): string {
  if (p.kind === 'resources') {
    const out: string[] = []
    for (const v of p.values) pushExportedItem(v, out)
    return out.join('')
  }
  let out = ''
  for (let i = 0; i < p.values.length; i++)
    out += `${i === 0 ? '' : IPAM_SEPARATOR}${indentJson(ipamEntry(p.keys[i]!, p.values[i]!), '  ', '    ')}`
  return out
}
