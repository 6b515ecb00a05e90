// `npm pack` (prepack): copy the packages with native addons into dist/node_modules/, prebuilt for this platform,
// so that the packed package installs without a compiler or a network (README.md "Installing on nodes").
//
// npm runs the install scripts of a package's dependencies, bundled ones included, and those of better-sqlite3
// (prebuild-install, else node-gyp), netns and unix-exchange (node-gyp) download or compile. So package.json lists
// these three as optionalDependencies (an install that cannot fetch or build them goes on without them) and the
// package carries them here instead: the bundles and dist/ resolve packages from dist/node_modules before the
// package's own node_modules, as Node looks in every node_modules above the requiring file. `--clean` (postpack)
// removes the copies again, so that a checkout keeps using node_modules.
import fs from 'node:fs'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const OUT = path.join(ROOT, 'dist', 'node_modules')

/** Package → the files it needs at run time besides package.json (directories are copied whole). */
const VENDORED = {
  'better-sqlite3': ['lib', 'build/Release/better_sqlite3.node'],
  netns: ['index.js', 'build/Release/netns.node'],
  'unix-exchange': ['index.js', 'build/Release/unix_exchange.node'],
}

fs.rmSync(OUT, {recursive: true, force: true})
if (!process.argv.includes('--clean')) {
  for (const [name, files] of Object.entries(VENDORED)) {
    const from = fs.realpathSync(path.join(ROOT, 'node_modules', name))
    for (const f of ['package.json', ...files]) {
      const src = path.join(from, f)
      if (!fs.existsSync(src)) throw new Error(`vendor-addons: ${src} is missing: run npm ci (it builds the addons)`)
      fs.cpSync(src, path.join(OUT, name, f), {recursive: true})
    }
    // The copy is used as it is: no install script may try to build it again.
    const pkgFile = path.join(OUT, name, 'package.json')
    const pkg = JSON.parse(fs.readFileSync(pkgFile, 'utf8'))
    delete pkg.scripts
    delete pkg.gypfile
    fs.writeFileSync(pkgFile, `${JSON.stringify(pkg, null, 2)}\n`)
  }
}
