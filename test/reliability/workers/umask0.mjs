// Run a Node script with umask 000, the most permissive a caller can set: whatever ipamctl creates must still be
// private. argv: <script> [args...] (the script runs as the main module, argv[1] being itself, as if started directly).
import Module from 'node:module'
import path from 'node:path'

process.umask(0)
process.argv.splice(1, 1)
const script = process.argv[1]
if (!script) throw new Error('usage: umask0.mjs <script> [args...]')
process.argv[1] = path.resolve(script)
Module.runMain()
