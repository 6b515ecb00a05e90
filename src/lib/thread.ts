// Worker threads of ipamctl's own modules (`ipam check`'s endpoint thread, `datastore export`'s writer thread):
// one place that knows where a thread's module is in each way the code runs, and how to start it there.
import {createRequire} from 'node:module'
import path from 'node:path'
import {pathToFileURL} from 'node:url'
import {type ResourceLimits, type TransferListItem, Worker} from 'node:worker_threads'
import {packageRoot} from './package-root.js'

/**
 * The module `name` (no extension) of the folder `dir` under src/lib/, as a thread runs it: beside the calling
 * module `here` (its import.meta.url, a `<dir>/<caller>` module) under tsc's output (.js) or the sources run
 * through tsx (.ts); from a bundle (dist/cli-bundle/), tsc's output, which ships beside it.
 */
export function threadModule(here: string, dir: string, caller: string, name: string): URL {
  for (const ext of ['.js', '.ts'])
    if (here.endsWith(`/lib/${dir}/${caller}${ext}`)) return new URL(`./${name}${ext}`, here)
  return pathToFileURL(path.join(packageRoot(), 'dist', 'lib', dir, `${name}.js`))
}

/**
 * A worker thread running `module` with `workerData`. The sources run through tsx (tests, benches): a worker
 * does not get the hooks that --import tsx registered (Node 20), so it registers them with tsx's API first, the
 * ES module beside tsx's main one (the require() resolution finds the main module only).
 */
export function startThread(
  module: URL,
  workerData: unknown,
  transferList: readonly TransferListItem[] = [],
  resourceLimits?: ResourceLimits,
): Worker {
  const options = {workerData, transferList: [...transferList], resourceLimits}
  if (!module.href.endsWith('.ts')) return new Worker(module, options)
  const tsx = new URL('esm/api/index.mjs', pathToFileURL(createRequire(import.meta.url).resolve('tsx'))).href
  return new Worker(
    `import(${JSON.stringify(tsx)}).then((t) => t.register()).then(() => import(${JSON.stringify(module.href)}))`,
    {...options, eval: true},
  )
}
