// Machine-readable output for every read command: exact integers (IPv6 counts exceed 2^53).
import {encodeJson} from '../lib/codec/gojson.js'
import {loadYaml} from '../lib/codec/yaml.js'

export type OutputFormat = 'table' | 'json' | 'yaml'

/** 2-space indented, <, > and & as they are (what JSON.stringify wrote before; scripts compare it). */
export function toJson(data: unknown): string {
  return `${encodeJson(data, {indent: '  ', escapeHtml: false})}\n`
}
export function toYaml(data: unknown): string {
  return loadYaml().stringify(data)
}

/** Render `data` as JSON or YAML, or call `table` for the human layout. */
export function render(format: OutputFormat, data: unknown, table: () => string): string {
  if (format === 'json') return toJson(data)
  if (format === 'yaml') return toYaml(data)
  return table()
}

/** The first line of every `--dry-run` output in table form; what follows is exactly what the real run prints. */
export const DRY_RUN_HEADER = 'Dry run: nothing was changed. Without --dry-run this command would print:'

/**
 * Output of a command that has a `--dry-run`: the real run's rendering of `data`, or, for a dry run, the same
 * rendering under DRY_RUN_HEADER (table) or with `dryRun: true` first (JSON, YAML), so the two can be compared.
 */
export function renderRun(format: OutputFormat, dryRun: boolean, data: object, table: () => string): string {
  if (!dryRun) return render(format, data, table)
  return render(format, {dryRun: true, ...data}, () => `${DRY_RUN_HEADER}\n${table()}`)
}
