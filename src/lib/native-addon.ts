// A package's compiled addon loaded by its file, straight through process.dlopen, where the code runs from a
// CommonJS bundle (the plugins' and the CLI's: `__dirname` is the bundle's folder). A bare require() of the addon
// resolves it as a module first: node_modules folders stat'ed one by one, the package's package.json read for
// `exports`, the real path taken, and the loader's functions for all of that compiled on first use. In an
// `ipamctl-ipam` ADD through the agent that was ~2.3 million instructions of ~116 million; dlopen itself is ~0.1
// million (docs/startup.md#counting-instructions-instead-of-milliseconds).
import fs from 'node:fs'

/** The bundle's folder in a CommonJS bundle; undefined in an ES module (the tsc output, tests through tsx). */
declare const __dirname: string | undefined

/** The folder of the running CommonJS bundle, if the code runs from one. */
const bundleDir = (): string | undefined => (typeof __dirname === 'string' ? __dirname : undefined)

/**
 * The exports of addon `file` of package `pkg` (`unix-exchange`, `build/Release/unix_exchange.node`): from the
 * first `node_modules/<pkg>/<file>` that exists in folder `from` (the bundle's) or above it, the folders Node's
 * resolution would try and in its order, so the same file require() would find. Where there is no such folder
 * or file, `fallback()` (require() as usual, whose error then says what is missing).
 */
export function loadAddon<T>(pkg: string, file: string, fallback: () => T, from = bundleDir()): T {
  for (let at = from; at !== undefined; ) {
    const candidate = `${at}/node_modules/${pkg}/${file}`
    // Node skips a folder that is itself node_modules (no node_modules/node_modules).
    if (!at.endsWith('/node_modules') && fs.statSync(candidate, {throwIfNoEntry: false})?.isFile()) {
      const m = {exports: {}}
      process.dlopen(m, candidate)
      return m.exports as T
    }
    const up = at.slice(0, at.lastIndexOf('/'))
    at = up === at || up === '' ? undefined : up
  }
  return fallback()
}
