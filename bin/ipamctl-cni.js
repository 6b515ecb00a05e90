#!/usr/bin/env node
// CNI plugin `ipamctl-cni` (accepts what calico accepts). Plain entry, no oclif: see src/lib/cni/cni-main.ts.
// Runs the bundle from scripts/bundle-cni.mjs (start-up is pod-start latency), or the tsc output when that is
// newer (src/ rebuilt with tsc alone since the last `npm run build`) or the bundle is missing.

// Not `import … from 'node:fs'`: an ES import of fs loads its stream classes, which a plugin does not need.
const {statSync} = process.getBuiltinModule?.('node:fs') ?? (await import('node:fs'))
const mtime = (url) => statSync(url, {throwIfNoEntry: false})?.mtimeMs ?? -1
const bundle = new URL('../dist/cni/ipamctl-cni.cjs', import.meta.url)
const compiled = new URL('../dist/lib/cni/cni-main.js', import.meta.url)
// The bundle runs through dist/cni/load.cjs (CommonJS, with a V8 code cache made at build time).
const {main} =
  mtime(bundle) >= mtime(compiled)
    ? (process.getBuiltinModule?.('node:module') ?? (await import('node:module'))).createRequire(import.meta.url)('../dist/cni/load.cjs').load('ipamctl-cni')
    : await import(compiled)

process.exitCode = await main()
setTimeout(() => process.exit(), 2000).unref()
