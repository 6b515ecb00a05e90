#!/usr/bin/env node
'use strict'
// The ipamctl CLI. CommonJS, and through the one-file bundle with a V8 code cache that scripts/bundle-cli.mjs
// makes; a missing or stale bundle stops with one line, and IPAMCTL_UNBUNDLED=1 runs plain oclif on the tsc output
// instead (docs/startup.md#which-code-runs).
const path = require('node:path')

const root = path.join(__dirname, '..')
const bundle = path.join(root, 'dist', 'cli-bundle', 'ipamctl.cjs')

/** oclif's load options for the bundle: package.json as is, but commands taken from the bundle's COMMANDS. */
exports.loadOptions = () => {
  const pjson = require(path.join(root, 'package.json'))
  return {
    root,
    pjson: {
      ...pjson,
      oclif: {
        ...pjson.oclif,
        commands: {strategy: 'explicit', target: './dist/cli-bundle/ipamctl.cjs', identifier: 'COMMANDS'},
      },
    },
  }
}

/**
 * End the process as soon as the command has finished, not when Node's event loop runs dry: after a command that
 * built a large heap (`ipam show` over 10,000 blocks) Node would first wait for V8's background marking, work whose
 * result nobody needs (docs/startup.md#ending-the-process). The commands write their files synchronously or await
 * them; output still queued on stdout or stderr (a pipe, where pipes are asynchronous) is left to drain as usual.
 */
exports.exitWhenDone = () => {
  if (process.stdout.writableLength === 0 && process.stderr.writableLength === 0) process.exit()
}

if (require.main === module) {
  // `ipamctl --version` alone: oclif's own line (its Config#userAgent) without starting oclif, which is most of
  // that command's time. Anything more than the one flag goes to oclif; test/commands/startup.test.ts checks
  // that both print the same.
  if (process.argv.length === 3 && process.argv[2] === '--version') {
    const {name, version} = require(path.join(root, 'package.json'))
    const arch = require('node:os').arch()
    process.stdout.write(
      `${name}/${version} ${process.platform}-${arch === 'ia32' ? 'x86' : arch} node-${process.version}\n`,
    )
  } else {
    const loader = require('./start.cjs')
    const done = loader.useBundle(bundle)
      ? loader.load(bundle).execute({loadOptions: exports.loadOptions()})
      : // The root named, not found from this file: bin/package.json (a CommonJS marker, docs/startup.md) has no name.
        import('@oclif/core').then(({execute}) => execute({loadOptions: root}))
    done.then(exports.exitWhenDone)
  }
}
