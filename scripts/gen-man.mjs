#!/usr/bin/env node
// Generate man(7) pages for ipamctl from the oclif manifest.
//
//   node scripts/gen-man.mjs [--manifest PATH] [--out DIR]
//
// --manifest defaults to <package root>/oclif.manifest.json (written by
// `oclif manifest`), --out to <package root>/man/man1. One page is written per
// non-hidden command (ipamctl-<id with separators as dashes>.1) plus the
// index page ipamctl.1; ipamctl-*.1 files in the output directory that no
// longer match a command are removed. The date in .TH comes from
// SOURCE_DATE_EPOCH when set, otherwise from the manifest's mtime, so the
// output is reproducible.
//
// Plain Node ESM, no dependencies.

import {existsSync, mkdirSync, readFileSync, readdirSync, statSync, unlinkSync, writeFileSync} from 'node:fs'
import {dirname, join, resolve} from 'node:path'
import {fileURLToPath} from 'node:url'
import process from 'node:process'

const BIN = 'ipamctl'

/** @typedef {import('@oclif/core').Interfaces.Manifest} Manifest */
/** @typedef {import('@oclif/core').Command.Cached} CachedCommand */
/** @typedef {import('@oclif/core').Command.Flag.Cached} CachedFlag */
/** @typedef {import('@oclif/core').Command.Arg.Cached} CachedArg */

const EXIT_STATUS = [
  ['0', 'Success.'],
  ['1', 'Internal error.'],
  ['2', 'Usage or validation error.'],
  ['3', 'Not found.'],
  ['4', 'Conflict.'],
  ['5', 'Datastore unavailable.'],
  ['6', 'Exhausted, or partial allocation.'],
]

// ---------------------------------------------------------------- arguments

/**
 * @param {string} [msg]
 * @returns {never}
 */
function usage(msg) {
  if (msg) process.stderr.write(`gen-man: ${msg}\n`)
  process.stderr.write('usage: node scripts/gen-man.mjs [--manifest PATH] [--out DIR]\n')
  process.exit(2)
}

/** @param {string[]} argv */
function parseArgs(argv) {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
  const opts = {manifest: join(root, 'oclif.manifest.json'), out: join(root, 'man', 'man1')}
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (a === undefined) break
    const eq = a.indexOf('=')
    const name = eq >= 0 ? a.slice(0, eq) : a
    if (name === '--help' || name === '-h') usage()
    if (name !== '--manifest' && name !== '--out') usage(`unknown argument: ${a}`)
    let value
    if (eq >= 0) value = a.slice(eq + 1)
    else {
      value = argv[++i]
      if (value === undefined) usage(`${name} needs a value`)
    }
    opts[name === '--manifest' ? 'manifest' : 'out'] = resolve(value)
  }
  return opts
}

// ---------------------------------------------------------------- escaping

/**
 * Escape text for a roff text line (not a request).
 * @param {unknown} text
 */
function esc(text) {
  let s = String(text ?? '')
    .replace(/\\/g, '\\e')
    .replace(/-/g, '\\-')
    .replace(
      // biome-ignore lint/suspicious/noControlCharactersInRegex: every non-ASCII character, by range
      /[^\x00-\x7f]/gu,
      (c) =>
        `\\[u${/** @type {number} one character matched */ (c.codePointAt(0)).toString(16).toUpperCase().padStart(4, '0')}]`,
    )
  // A line starting with . or ' would be read as a request.
  s = s.replace(/^([.'])/gm, '\\&$1')
  return s
}

/**
 * Escape text used as a quoted macro argument (e.g. in .TH).
 * @param {unknown} text
 */
function escArg(text) {
  return `"${esc(text).replace(/"/g, '\\(dq').replace(/\n/g, ' ')}"`
}

/** @param {unknown} s */
const bold = (s) => `\\fB${esc(s)}\\fR`
/** @param {unknown} s */
const ital = (s) => `\\fI${esc(s)}\\fR`

/**
 * Turn free text into roff paragraphs: blank lines separate paragraphs.
 * `sep` is the paragraph macro (.IP keeps the indentation inside a .TP body).
 * @param {unknown} text
 */
function paragraphs(text, sep = '.PP') {
  /** @type {string[]} */
  const out = []
  const paras = String(text ?? '')
    .replace(/\r\n?/g, '\n')
    .split(/\n[ \t]*\n/)
    .map((p) => p.replace(/^\n+|\s+$/g, ''))
    .filter((p) => p.trim() !== '')
  paras.forEach((p, i) => {
    if (i > 0) out.push(sep)
    // Indented lines (code, lists) are kept verbatim, the rest is filled.
    if (/^[ \t]/m.test(p)) out.push('.nf', esc(p), '.fi')
    else out.push(esc(p))
  })
  return out
}

// ---------------------------------------------------------------- helpers

/**
 * oclif ids use ':' between topics; show them with the ' ' topic separator.
 * @param {string} id
 */
const displayId = (id) => id.split(/[: ]/).filter(Boolean).join(' ')
/** @param {string} id */
const pageName = (id) => `${BIN}-${id.split(/[: ]/).filter(Boolean).join('-')}`

/**
 * @param {unknown} text
 * @param {string} id
 */
function template(text, id) {
  return String(text ?? '')
    .replace(/<%=\s*config\.bin\s*%>/g, BIN)
    .replace(/<%=\s*command\.id\s*%>/g, displayId(id))
}

/** @param {string} manifestPath */
function formatDate(manifestPath) {
  const epoch = process.env.SOURCE_DATE_EPOCH
  let date
  if (epoch !== undefined && epoch !== '') {
    if (!/^\d+$/.test(epoch)) usage(`SOURCE_DATE_EPOCH must be an integer, got ${JSON.stringify(epoch)}`)
    date = new Date(Number(epoch) * 1000)
  } else {
    date = statSync(manifestPath).mtime
  }
  return date.toISOString().slice(0, 10)
}

/**
 * @param {string} title
 * @param {string} date
 * @param {string} version
 */
function th(title, date, version) {
  return `.TH ${escArg(title.toUpperCase())} "1" ${escArg(date)} ${escArg(`${BIN} ${version}`)} ${escArg(`${BIN} Manual`)}`
}

/** @param {CachedCommand} cmd */
function summaryOf(cmd) {
  if (cmd.summary) return String(cmd.summary).trim()
  const first =
    String(cmd.description ?? '')
      .trim()
      .split('\n')[0] ?? ''
  return first.trim()
}

function exitStatusSection() {
  const out = ['.SH EXIT STATUS']
  for (const [code, text] of EXIT_STATUS) out.push('.TP', bold(code), esc(text))
  return out
}

/**
 * Terminate a one-line summary with a full stop unless it has punctuation.
 * @param {unknown} text
 */
function sentence(text) {
  const t = String(text ?? '').trim()
  return t === '' || /[.!?:]$/.test(t) ? t : `${t}.`
}

/** @param {unknown} v */
function formatDefault(v) {
  if (Array.isArray(v)) return v.map(String).join(', ')
  if (typeof v === 'object' && v !== null) return JSON.stringify(v)
  return String(v)
}

// ---------------------------------------------------------------- pages

/** @param {CachedCommand} cmd */
function argsOf(cmd) {
  const args = cmd.args ?? {}
  return (Array.isArray(args) ? args : Object.values(args)).filter((a) => a && !a.hidden)
}

/** @param {CachedCommand} cmd */
function flagsOf(cmd) {
  return Object.entries(cmd.flags ?? {})
    .map(([name, f]) => ({...f, name: f.name ?? name}))
    .filter((f) => !f.hidden)
}

/** @param {CachedFlag} f */
function flagTag(f) {
  const parts = []
  if (f.char) parts.push(bold(`-${f.char}`))
  const long = f.type === 'boolean' && f.allowNo ? `--[no-]${f.name}` : `--${f.name}`
  let tag = bold(long)
  if (f.type === 'option') tag += ` ${ital('VALUE')}`
  parts.push(tag)
  return parts.join(', ')
}

/**
 * @param {CachedCommand} cmd
 * @param {CachedFlag[]} flags
 * @param {CachedArg[]} args
 */
function synopsis(cmd, flags, args) {
  const words = [bold(`${BIN} ${displayId(cmd.id)}`)]
  const required = flags.filter((f) => f.required)
  for (const f of required) {
    words.push(f.type === 'option' ? `${bold(`--${f.name}`)} ${ital('VALUE')}` : bold(`--${f.name}`))
  }
  if (flags.length > required.length) words.push(`[${ital('OPTIONS')}]`)
  for (const a of args) words.push(a.required ? ital(a.name.toUpperCase()) : `[${ital(a.name.toUpperCase())}]`)
  return words.join(' ')
}

/** @param {CachedCommand} cmd */
function examples(cmd) {
  /** @type {string[]} */
  const out = []
  for (const ex of cmd.examples ?? []) {
    let description = ''
    /** @type {string[]} */
    let commands = []
    if (typeof ex === 'string') {
      const lines = template(ex, cmd.id).replace(/\r\n?/g, '\n').split('\n')
      /** @param {string} l */
      const isCmd = (l) => /^\s*\$\s/.test(l) || l.trim().startsWith(`${BIN} `) || l.trim() === BIN
      if (lines.some(isCmd)) {
        description = lines.filter((l) => !isCmd(l)).join('\n')
        commands = lines.filter(isCmd)
      } else {
        commands = lines.filter((l) => l.trim() !== '')
      }
    } else if (ex && typeof ex === 'object') {
      description = template(ex.description, cmd.id)
      commands = template(ex.command, cmd.id).split('\n')
    }
    commands = commands.map((l) => l.trim().replace(/^\$\s+/, '')).filter((l) => l !== '')
    if (description.trim() === '' && commands.length === 0) continue
    out.push('.PP')
    if (description.trim() !== '') out.push(esc(description.trim()))
    if (commands.length > 0) {
      out.push('.RS 4', '.nf')
      for (const c of commands) out.push(`$ ${esc(c)}`)
      out.push('.fi', '.RE')
    }
  }
  return out.length ? ['.SH EXAMPLES', ...out] : []
}

/**
 * @param {CachedCommand} cmd
 * @param {CachedCommand[]} all
 * @param {string} date
 * @param {string} version
 */
function commandPage(cmd, all, date, version) {
  const flags = flagsOf(cmd)
  const args = argsOf(cmd)
  const name = pageName(cmd.id)
  const lines = [
    `.\\" Generated by scripts/gen-man.mjs from oclif.manifest.json; do not edit.`,
    th(name, date, version),
    '.SH NAME',
    `${esc(name)} \\- ${esc(summaryOf(cmd) || displayId(cmd.id))}`,
    '.SH SYNOPSIS',
    synopsis(cmd, flags, args),
    '.SH DESCRIPTION',
    ...paragraphs(template(cmd.description || cmd.summary || '', cmd.id)),
  ]
  const aliases = (cmd.aliases ?? []).filter(Boolean)
  if (aliases.length) {
    lines.push(
      '.PP',
      `${aliases.length > 1 ? 'Aliases' : 'Alias'}: ${aliases.map((a) => bold(`${BIN} ${displayId(a)}`)).join(', ')}.`,
    )
  }
  if (args.length) {
    lines.push('.SH ARGUMENTS')
    for (const a of args) {
      lines.push('.TP', ital(a.name.toUpperCase()))
      const body = []
      if (a.description) body.push(...paragraphs(template(a.description, cmd.id), '.IP'))
      if (a.options?.length) body.push(`Allowed values: ${a.options.map(bold).join(', ')}.`)
      if (a.default !== undefined && a.default !== null && a.default !== '')
        body.push(`Default: ${bold(formatDefault(a.default))}.`)
      if (body.length) body.push('.IP')
      body.push(a.required ? 'Required.' : 'Optional.')
      lines.push(...joinBody(body))
    }
  }
  if (flags.length) {
    lines.push('.SH OPTIONS')
    for (const f of flags) {
      lines.push('.TP', flagTag(f))
      const body = []
      const summary = f.summary ? template(f.summary, cmd.id).trim() : ''
      const description = f.description ? template(f.description, cmd.id).trim() : ''
      if (summary) body.push(...paragraphs(summary, '.IP'))
      if (description && description !== summary) {
        if (body.length) body.push('.IP')
        body.push(...paragraphs(description, '.IP'))
      }
      const notes = []
      if (f.type === 'option' && f.options?.length) notes.push(`Allowed values: ${f.options.map(bold).join(', ')}.`)
      const hasDefault =
        f.default !== undefined &&
        f.default !== null &&
        f.default !== '' &&
        !(f.type === 'boolean' && f.default === false) &&
        !(Array.isArray(f.default) && f.default.length === 0)
      if (hasDefault) notes.push(`Default: ${bold(formatDefault(f.default))}.`)
      if (f.type === 'option' && f.multiple) notes.push('May be given more than once.')
      if (f.required) notes.push('Required.')
      if (notes.length) {
        if (body.length) body.push('.IP')
        body.push(notes.join(' '))
      }
      lines.push(...joinBody(body))
    }
  }
  lines.push(...examples(cmd))
  lines.push(...exitStatusSection())
  lines.push('.SH SEE ALSO')
  const topic = cmd.id.split(/[: ]/).filter(Boolean).slice(0, -1).join(':')
  const related = all
    .filter(
      (c) => c.id !== cmd.id && topic !== '' && c.id.split(/[: ]/).filter(Boolean).slice(0, -1).join(':') === topic,
    )
    .map((c) => `${bold(pageName(c.id))}(1)`)
  lines.push([`${bold(BIN)}(1)`, ...related].join(', '))
  return `${lines.join('\n')}\n`
}

/**
 * Body of a .TP entry; an empty body still needs a line after the tag.
 * @param {string[]} body
 */
function joinBody(body) {
  return body.length ? body : ['\\&']
}

/**
 * @param {CachedCommand[]} cmds
 * @param {string} date
 * @param {string} version
 * @param {string} description
 */
function indexPage(cmds, date, version, description) {
  const lines = [
    `.\\" Generated by scripts/gen-man.mjs from oclif.manifest.json; do not edit.`,
    th(BIN, date, version),
    '.SH NAME',
    `${esc(BIN)} \\- ${esc(description)}`,
    '.SH SYNOPSIS',
    `${bold(BIN)} ${ital('COMMAND')} [${ital('OPTIONS')}] [${ital('ARGUMENTS')}]`,
    '.SH DESCRIPTION',
    `${bold(BIN)} is a calicoctl\\-compatible command line tool for IP address management.`,
    `Run ${bold(`${BIN} COMMAND --help`)} or see the manual page of each command for details.`,
    '.SH COMMANDS',
  ]
  for (const c of cmds) {
    const summary = sentence(summaryOf(c))
    lines.push(
      '.TP',
      bold(`${BIN} ${displayId(c.id)}`),
      `${summary ? `${esc(summary)} ` : ''}See ${bold(pageName(c.id))}(1).`,
    )
  }
  lines.push(...exitStatusSection())
  lines.push('.SH SEE ALSO', cmds.map((c) => `${bold(pageName(c.id))}(1)`).join(', ') || '\\&')
  return `${lines.join('\n')}\n`
}

// ---------------------------------------------------------------- main

function main() {
  const opts = parseArgs(process.argv.slice(2))
  if (!existsSync(opts.manifest)) {
    process.stderr.write(`gen-man: manifest not found: ${opts.manifest} (run \`oclif manifest\` first)\n`)
    process.exit(1)
  }
  /** @type {Manifest} */
  let manifest
  try {
    manifest = JSON.parse(readFileSync(opts.manifest, 'utf8'))
  } catch (err) {
    process.stderr.write(
      `gen-man: cannot parse ${opts.manifest}: ${err instanceof Error ? err.message : String(err)}\n`,
    )
    process.exit(1)
  }
  const version = String(manifest.version ?? '')
  const date = formatDate(opts.manifest)

  let description = 'Calico-compatible IP address management'
  const pkgPath = join(dirname(opts.manifest), 'package.json')
  if (existsSync(pkgPath)) {
    try {
      const pkg = JSON.parse(readFileSync(pkgPath, 'utf8'))
      if (pkg.name === BIN && typeof pkg.description === 'string' && pkg.description) description = pkg.description
    } catch {
      // keep the default description
    }
  }

  const cmds = Object.entries(manifest.commands ?? {})
    .map(([id, c]) => ({...c, id: c.id ?? id}))
    .filter((c) => !c.hidden)
    .sort((a, b) => displayId(a.id).localeCompare(displayId(b.id), 'en'))

  mkdirSync(opts.out, {recursive: true})
  const wanted = new Set([`${BIN}.1`])
  for (const c of cmds) {
    const file = `${pageName(c.id)}.1`
    wanted.add(file)
    writeFileSync(join(opts.out, file), commandPage(c, cmds, date, version))
  }
  writeFileSync(join(opts.out, `${BIN}.1`), indexPage(cmds, date, version, description))

  const removed = []
  for (const file of readdirSync(opts.out)) {
    if (file.startsWith(`${BIN}-`) && file.endsWith('.1') && !wanted.has(file)) {
      unlinkSync(join(opts.out, file))
      removed.push(file)
    }
  }
  process.stdout.write(
    `gen-man: wrote ${cmds.length + 1} page(s) to ${opts.out}` +
      (removed.length ? `; removed stale ${removed.join(', ')}` : '') +
      '\n',
  )
}

main()
