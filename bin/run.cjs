#!/usr/bin/env node
'use strict'
// The ipamctl CLI. CommonJS, and through a bundle with a V8 code cache when there is a fresh one
// (scripts/bundle-cli.mjs explains why); plain oclif otherwise.
const {statSync} = require('node:fs')
const path = require('node:path')

const root = path.join(__dirname, '..')
const bundle = path.join(root, 'dist', 'cli-bundle', 'ipamctl.cjs')
const mtime = (file) => statSync(file, {throwIfNoEntry: false})?.mtimeMs ?? -1

/** oclif's load options for the bundle: package.json as is, but commands taken from the bundle's COMMANDS. */
exports.loadOptions = () => {
  const pjson = require(path.join(root, 'package.json'))
  return {root, pjson: {...pjson, oclif: {...pjson.oclif, commands: {strategy: 'explicit', target: './dist/cli-bundle/ipamctl.cjs', identifier: 'COMMANDS'}}}}
}

if (require.main === module) {
  if (mtime(bundle) >= mtime(path.join(root, 'dist', 'cli', 'base.js'))) {
    require('./load-bundle.cjs').load(bundle).execute({loadOptions: exports.loadOptions()})
  } else {
    import('@oclif/core').then(({execute}) => execute({dir: __filename}))
  }
}
