#!/usr/bin/env node
// CNI IPAM plugin `ipamctl-ipam` (accepts what calico-ipam accepts). Plain entry, no oclif: see
// src/lib/cni/ipam-main.ts. Runs the bundle from scripts/bundle-cni.mjs (start-up is pod-start latency), or the
// tsc output when that is newer (src/ rebuilt with tsc alone since the last `npm run build`) or the bundle is missing.

// Not `import … from 'node:fs'`: an ES import of fs loads its stream classes, which a plugin does not need.
const {statSync} = process.getBuiltinModule?.('node:fs') ?? (await import('node:fs'))
const mtime = (url) => statSync(url, {throwIfNoEntry: false})?.mtimeMs ?? -1
const bundle = new URL('../dist/cni/ipamctl-ipam.cjs', import.meta.url)
const compiled = new URL('../dist/lib/cni/ipam-main.js', import.meta.url)
// The bundle runs through dist/cni/load.cjs (CommonJS, with a V8 code cache made at build time).
const {main} =
  mtime(bundle) >= mtime(compiled)
    ? (process.getBuiltinModule?.('node:module') ?? (await import('node:module'))).createRequire(import.meta.url)('../dist/cni/load.cjs').load('ipamctl-ipam')
    : await import(compiled)

process.exitCode = await main()
// Everything is closed by now, so the process ends on its own; should a library leave a handle open, do
// not let it keep the runtime waiting.
setTimeout(() => process.exit(), 2000).unref()
