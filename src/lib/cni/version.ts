// CNI spec versions: which ones we speak, and the comparisons the Go library makes (pkg/version).
import {CNI_ERR, CniError} from './errors.js'

/** Every version this code base can read configs and write results for (VERSION's supportedVersions). */
export const SUPPORTED_VERSIONS: readonly string[] = ['0.1.0', '0.2.0', '0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0']

/** The newest spec implemented: VERSION's answer when the caller did not say which version it speaks. */
export const CURRENT_VERSION = '1.1.0'

/**
 * Calico treats a config without `cniVersion` as 0.2.0 (the Go decoder says 0.1.0, whose result format is
 * the same) and writes its result in that format.
 */
export const DEFAULT_CONFIG_VERSION = '0.2.0'

/** Go's version.ParseVersion: up to three dot-separated integers, missing parts are 0. */
export function parseVersion(version: string): [number, number, number] {
  if (version === '') return [0, 1, 0]
  const parts = version.split('.')
  if (parts.length >= 4) throw new CniError(CNI_ERR.decoding, `invalid version "${version}": too many parts`)
  const names = ['major', 'minor', 'micro']
  const out: [number, number, number] = [0, 0, 0]
  parts.forEach((p, i) => {
    if (!/^[+-]?\d+$/.test(p)) throw new CniError(CNI_ERR.decoding, `failed to convert ${names[i]} version part "${p}"`)
    out[i] = Number(p)
  })
  return out
}

/** Go's version.GreaterThanOrEqualTo (throws a decoding CniError for an unparseable version). */
export function versionAtLeast(version: string, min: string): boolean {
  const a = parseVersion(version)
  const b = parseVersion(min)
  for (let i = 0; i < 3; i++) {
    if (a[i]! !== b[i]!) return a[i]! > b[i]!
  }
  return true
}

export function isSupported(version: string, supported: readonly string[] = SUPPORTED_VERSIONS): boolean {
  return supported.includes(version)
}

/** Result layout family of a version: 0.1.0/0.2.0 (ip4/ip6), 0.3.x/0.4.0 (ips[].version) or ≥1.0.0. */
export function resultFormat(version: string): '020' | '040' | '100' {
  if (version === '0.1.0' || version === '0.2.0') return '020'
  if (version === '0.3.0' || version === '0.3.1' || version === '0.4.0') return '040'
  return '100'
}
