// Output of the resource verbs: `get -o table|wide|yaml|json|name|custom-columns=…` and the one-line summary
// of apply, create, replace and delete, worded as calicoctl words it.
import {Flags} from '@oclif/core'
import {ValidationError} from '../lib/errors.js'
import {type Column, columnValue, parseCustomColumns} from '../lib/resources/columns.js'
import {KINDS, type KindName} from '../lib/resources/kinds.js'
import {API_VERSION, type Resource} from '../lib/resources/model.js'
import type {Outcome} from '../lib/resources/write.js'
import {toJson, toYaml} from './render.js'
import {plainTable} from './table.js'

const FILE_SUMMARY = 'Manifest: YAML or JSON, several documents, a List; "-" reads stdin.'
export const fileFlag = Flags.string({char: 'f', summary: FILE_SUMMARY})
export const requiredFileFlag = Flags.string({char: 'f', summary: FILE_SUMMARY, required: true})

export const getOutputFlag = Flags.string({
  char: 'o',
  summary: 'Output format: table (default), wide, yaml, json, name, or custom-columns=HEADER:.field.path,…',
  default: 'table',
})

const col = (header: string, path: string): Column => ({header, path: parseCustomColumns(`${header}:${path}`)[0]!.path})
const NAME = col('NAME', '.metadata.name')

/** calicoctl's `get` columns per kind: the default ones, then the extra ones of `-o wide`. */
const COLUMNS: Record<KindName, {table: Column[]; wide: Column[]}> = {
  IPPool: {
    table: [NAME, col('CIDR', '.spec.cidr'), col('SELECTOR', '.spec.nodeSelector')],
    wide: [
      NAME,
      col('CIDR', '.spec.cidr'),
      col('NAT', '.spec.natOutgoing'),
      col('IPIPMODE', '.spec.ipipMode'),
      col('VXLANMODE', '.spec.vxlanMode'),
      col('DISABLED', '.spec.disabled'),
      col('DISABLEBGPEXPORT', '.spec.disableBGPExport'),
      col('SELECTOR', '.spec.nodeSelector'),
      col('ASSIGNMENTMODE', '.spec.assignmentMode'),
    ],
  },
  IPReservation: {table: [NAME], wide: [NAME, col('CIDRS', '.spec.reservedCIDRs')]},
  IPAMConfiguration: {
    table: [NAME],
    wide: [
      NAME,
      col('STRICTAFFINITY', '.spec.strictAffinity'),
      col('MAXBLOCKSPERHOST', '.spec.maxBlocksPerHost'),
      col('AUTOALLOCATEBLOCKS', '.spec.autoAllocateBlocks'),
      col('IPCOOLDOWNSECONDS', '.spec.ipCooldownSeconds'),
    ],
  },
  Node: {table: [NAME], wide: [NAME, col('LABELS', '.metadata.labels')]},
  BlockAffinity: {
    table: [NAME, col('NODE', '.spec.node'), col('CIDR', '.spec.cidr'), col('STATE', '.spec.state')],
    wide: [
      NAME,
      col('NODE', '.spec.node'),
      col('CIDR', '.spec.cidr'),
      col('STATE', '.spec.state'),
      col('TYPE', '.spec.type'),
    ],
  },
}

const FALSE_DEFAULTS = new Set(['NAT', 'DISABLED', 'DISABLEBGPEXPORT'])

function table(items: readonly Resource[], cols: readonly Column[]): string {
  return plainTable(
    cols.map((c) => c.header),
    items.map((r) =>
      cols.map((c) => {
        const v = columnValue(r, c.path)
        // Go prints omitted booleans as false.
        return v === '<none>' && FALSE_DEFAULTS.has(c.header) ? 'false' : v
      }),
    ),
  )
}

/** Checked before the datastore is opened, so a bad -o fails without touching anything. */
export function checkGetOutput(format: string): void {
  if (['table', 'ps', 'wide', 'yaml', 'json', 'name'].includes(format)) return
  if (format.startsWith('custom-columns=')) {
    parseCustomColumns(format.slice('custom-columns='.length))
    return
  }
  throw new ValidationError(
    `unknown output format ${JSON.stringify(format)}: use table, wide, yaml, json, name or custom-columns=HEADER:.field.path,…`,
  )
}

/**
 * One object when exactly one name was asked for, else a `<Kind>List`: either re-applies unchanged
 * (`ipamctl apply -f`).
 */
export function renderGet(
  format: string,
  got: {kind: KindName; items: Resource[]; revision: bigint},
  single: boolean,
): string {
  const data = single
    ? got.items[0]
    : {
        apiVersion: API_VERSION,
        kind: `${got.kind}List`,
        items: got.items,
        metadata: {resourceVersion: got.revision.toString()},
      }
  if (format === 'yaml') return toYaml(data)
  if (format === 'json') return toJson(data)
  if (format === 'name') {
    const prefix = KINDS.find((k) => k.kind === got.kind)!.names[0]
    return got.items.map((r) => `${prefix}/${r.metadata.name}\n`).join('')
  }
  if (format.startsWith('custom-columns=')) return table(got.items, parseCustomColumns(format.slice(15)))
  return table(got.items, COLUMNS[got.kind][format === 'wide' ? 'wide' : 'table'])
}

/** calicoctl's line (`Successfully applied 3 'IPPool' resource(s)`), then what changed. */
export function summary(verb: string, outcomes: readonly Outcome[]): string {
  const kinds = new Set(outcomes.map((o) => o.kind))
  const what = kinds.size === 1 ? ` '${[...kinds][0]}'` : ''
  const detail = (['created', 'configured', 'unchanged', 'deleted', 'skipped'] as const)
    .map((r) => [r, outcomes.filter((o) => o.result === r).length] as const)
    .filter(([, n]) => n > 0)
    .map(([r, n]) => `${n} ${r}`)
    .join(', ')
  return `Successfully ${verb} ${outcomes.length}${what} resource(s): ${detail}\n`
}
