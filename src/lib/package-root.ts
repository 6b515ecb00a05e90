// Where this installation of ipamctl lives. Found by walking up from the running file rather than by a fixed
// number of `..`: the same code runs from dist/lib/… (tsc output) and from the bundles in dist/cli/ and dist/cni/.
import fs from 'node:fs'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

let root: string | undefined

/** The directory holding ipamctl's package.json (the package's bin/, dist/ and man/ are under it). */
export function packageRoot(): string {
  if (root !== undefined) return root
  for (let dir = path.dirname(fileURLToPath(import.meta.url)); ; dir = path.dirname(dir)) {
    try {
      const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as {name?: string}
      if (pkg.name === 'ipamctl') {
        root = dir
        return root
      }
    } catch {
      /* no package.json here, or not ours: keep looking */
    }
    if (path.dirname(dir) === dir)
      throw new Error(`cannot find ipamctl's package.json above ${fileURLToPath(import.meta.url)}`)
  }
}

let version: string | undefined

/** ipamctl's version, from its package.json ('unknown' if that cannot be read). */
export function packageVersion(): string {
  if (version !== undefined) return version
  try {
    version =
      (JSON.parse(fs.readFileSync(path.join(packageRoot(), 'package.json'), 'utf8')) as {version?: string}).version ??
      'unknown'
  } catch {
    version = 'unknown'
  }
  return version
}
