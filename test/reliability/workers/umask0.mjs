// Run a Node script with umask 000, the most permissive a caller can set: whatever ipamctl creates must still be
// private. argv: <script> [args...] (the script sees itself as argv[1], as if started directly).
process.umask(0)
process.argv.splice(1, 1)
await import(new URL(process.argv[1], `file://${process.cwd()}/`).href)
