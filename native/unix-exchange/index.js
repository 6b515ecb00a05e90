'use strict'
// CommonJS for the same reasons as native/netns/index.js. build/Release/unix_exchange.node is built by the
// package's install script (node-gyp rebuild), which npm runs for file: dependencies on `npm install` / `npm ci`.
const binding = require('./build/Release/unix_exchange.node')

exports.exchange = binding.exchange
exports.peerCredentials = binding.peerCredentials
