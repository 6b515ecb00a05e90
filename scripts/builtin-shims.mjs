// How the CNI plugin bundles (scripts/bundle-cni.mjs) take some Node built-ins: an esbuild plugin that replaces
// src/'s imports of them with small shims. docs/startup.md#node-built-ins has the measured gain and how to drop one.
//
// - LAZY: loaded on first call. node:child_process (delegating to another IPAM plugin) and node:tty (VERSION
//   only) cost 1–3 ms each to load, and an ADD on the usual path calls neither. node:module (~0.2 ms) gives
//   src/ only createRequire, which the bundles never call (they have their own require); bin/start.cjs
//   does not load it either. node:os: src/ asks it only for a home directory or a host name that the netconf and
//   environment did not give, and loading it was ~0.3 ms of every plugin exec (its module compiled and run).
// - REQUIRED: taken with require(), not an ES import. An ES import of a built-in builds an ES facade that reads
//   every export, and node:fs's lazy getters (ReadStream, WriteStream, promises…) then load the whole stream stack.
//
// Which names a shim exports is read from the module itself here, at build time, not kept by hand: every plain
// value for REQUIRED, and a call-through function for every function whose name is not capitalised (classes
// cannot be wrapped that way). A getter is read only when its value is a function, and then only on a call. An
// import of anything else (node:fs's `promises` or `ReadStream`) fails the build with esbuild's "No matching
// export"; test/scripts/builtin-shims.test.ts checks both.
import {execFileSync} from 'node:child_process'

/** Built-ins loaded on first call. */
export const LAZY_BUILTINS = ['node:child_process', 'node:tty', 'node:module', 'node:os']
/** Built-ins taken with require() (no ES facade). */
export const REQUIRED_BUILTINS = ['node:fs']

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/

/**
 * What the shim of built-in `name` exports: `values`, read from the module when the shim loads, and `calls`,
 * functions that look the name up on each call (so a getter behind it runs only then). Read in a fresh `node`:
 * node:fs turns a lazy getter into a plain value once it has been read, so this process's view depends on what
 * it ran before.
 * @param {string} name
 * @returns {{values: string[], calls: string[]}}
 */
export function shimExports(name) {
  const lazy = LAZY_BUILTINS.includes(name)
  if (!lazy && !REQUIRED_BUILTINS.includes(name)) throw new Error(`builtin-shims: no shim for ${name}`)
  const read = `const m = require(${JSON.stringify(name)})
    const d = Object.entries(Object.getOwnPropertyDescriptors(m))
    console.log(JSON.stringify(d.map(([k, v]) => [k, v.enumerable, 'value' in v, typeof m[k]])))`
  /** @type {[string, boolean, boolean, string][]} */
  const props = JSON.parse(execFileSync(process.execPath, ['-e', read], {encoding: 'utf8', env: {}}))
  /** @type {string[]} */
  const values = []
  /** @type {string[]} */
  const calls = []
  for (const [key, enumerable, plain, type] of props) {
    if (!enumerable || !IDENTIFIER.test(key) || key === 'default') continue
    if (!lazy && plain) values.push(key)
    else if (type === 'function' && !/^[A-Z]/.test(key)) calls.push(key)
  }
  return {values, calls}
}

/**
 * The shim's source.
 * @param {string} name
 */
export function builtinShim(name) {
  const {values, calls} = shimExports(name)
  const lazy = LAZY_BUILTINS.includes(name)
  const lines = [
    // The bundle's own require(): the bundles are CommonJS, so no createRequire (and no import.meta.url) at load.
    lazy ? 'let m' : `const m = require(${JSON.stringify(name)})\nexport default m`,
    ...(values.length ? [`export const {${values.join(', ')}} = m`] : []),
    ...calls.map(
      (f) =>
        `export function ${f}(...args) { return ${lazy ? `(m ??= require(${JSON.stringify(name)}))` : 'm'}.${f}(...args) }`,
    ),
  ]
  return `${lines.join('\n')}\n`
}

/** @type {import('esbuild').Plugin} */
export const builtinShims = {
  name: 'builtin-shims',
  setup(b) {
    const names = [...LAZY_BUILTINS, ...REQUIRED_BUILTINS]
    const filter = new RegExp(`^(${names.map((n) => n.replace(/[.:/]/g, '\\$&')).join('|')})$`)
    // Only src/'s imports are redirected; the shims' own require() calls are left alone.
    b.onResolve({filter}, (a) => (a.namespace === 'file' ? {path: a.path, namespace: 'builtin-shim'} : undefined))
    b.onLoad({filter: /.*/, namespace: 'builtin-shim'}, (a) => ({
      contents: builtinShim(a.path),
      loader: 'js',
      resolveDir: b.initialOptions.absWorkingDir ?? process.cwd(),
    }))
  },
}
