// Machine-readable output for every read command: exact integers (IPv6 counts exceed 2^53).
import {loadYaml} from '../lib/codec/yaml.js'

export type OutputFormat = 'table' | 'json' | 'yaml'

const BIG = '@@ipamctl-bigint@@'

export function toJson(data: unknown): string {
  const text = JSON.stringify(data, (_k, v: unknown) => (typeof v === 'bigint' ? `${BIG}${v}` : v instanceof Map ? Object.fromEntries(v) : v), 2)
  return `${text.replace(new RegExp(`"${BIG}(-?\\d+)"`, 'g'), '$1')}\n`
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
