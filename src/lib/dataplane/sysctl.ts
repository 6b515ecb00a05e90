// Network sysctls through /proc/sys. Keys are given as path segments because interface names may contain dots
// (`eth0.100`), which makes dotted keys ambiguous. Always synchronous: inside inNetns the write must happen on
// the switched thread (see netns.ts for why that reaches the pod's values).
import {readFileSync, writeFileSync} from 'node:fs'
import {DataplaneError} from './errors.js'
import type {NetnsHandle} from './netns.js'

export type SysctlKey = readonly string[]

export const sysctlName = (key: SysctlKey): string => key.join('.')

const pathOf = (key: SysctlKey): string => `/proc/sys/${key.join('/')}`

export function writeSysctl(key: SysctlKey, value: string): void {
  try {
    writeFileSync(pathOf(key), value)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    throw new DataplaneError(`failed to set ${sysctlName(key)}=${value}: ${code ?? (error as Error).message}`, code, {
      cause: error,
    })
  }
}

export function readSysctl(key: SysctlKey): string {
  try {
    return readFileSync(pathOf(key), 'utf8').trim()
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    throw new DataplaneError(`failed to read ${sysctlName(key)}: ${code ?? (error as Error).message}`, code, {
      cause: error,
    })
  }
}

/** Write several sysctls inside a namespace in one switch. */
export function writeSysctlsIn(ns: NetnsHandle, settings: ReadonlyArray<readonly [SysctlKey, string]>): void {
  ns.run(() => {
    for (const [key, value] of settings) writeSysctl(key, value)
  })
}

export function readSysctlIn(ns: NetnsHandle, key: SysctlKey): string {
  return ns.run(() => readSysctl(key))
}
