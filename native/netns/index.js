'use strict'
// CommonJS so ESM callers can use named imports (cjs-module-lexer sees the `exports.x =` lines) and CJS callers
// can require it. build/Release/netns.node is built by `node-gyp rebuild` from the package's install script,
// which npm runs for file: dependencies on `npm install` / `npm ci`.
const binding = require('./build/Release/netns.node')

exports.setns = binding.setns
exports.CLONE_NEWNET = binding.CLONE_NEWNET
