// Comments, docs and tests are self-contained: nothing tracked under src/, test/, bench/, scripts/, docs/ or
// README.md may point at a document outside the repository (a sibling folder, a shared reference file, its
// numbered sections, or a numbered issue). Facts the code relies on live in docs/ (docs/calico.md, docs/cni.md,
// docs/design.md) and are cited by file and section heading.
// The patterns are assembled from pieces so that this file does not match them itself.
import {test} from 'node:test'
import assert from 'node:assert/strict'
import {spawnSync} from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

const root = fileURLToPath(new URL('../../', import.meta.url))
const SCOPE = ['src', 'test', 'bench', 'scripts', 'docs', 'README.md']

const esc = (s: string): string => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')
const SECTION = String.fromCharCode(0xa7)

/** What a reference to something outside the repository looks like. */
const OUTSIDE: readonly {what: string; re: RegExp}[] = [
  ...[
    ['..', 'shared'].join('/'),
    ['', 'work', 'shared'].join('/'),
    ...['calico-reference', 'stack-and-style', 'measurements', 'cni-conformance'].map((n) => `${n}.md`),
  ].map((p) => ({what: `a path outside the repository (${p})`, re: new RegExp(esc(p))})),
  {what: 'a numbered section of an outside document', re: new RegExp(`${SECTION}\\s*\\d`)},
  {what: 'a lettered, numbered part of an outside document', re: new RegExp(['\\bPart', '[A-Z]\\.\\d'].join(' '))},
  {what: 'a numbered issue', re: new RegExp(['\\bissues?', '(item\\s+)?#?\\d'].join('\\s+'), 'i')},
]

function trackedFiles(): string[] {
  const git = spawnSync('git', ['ls-files', '-z', '--', ...SCOPE], {cwd: root, encoding: 'utf8'})
  if (git.status === 0 && git.stdout) return git.stdout.split('\0').filter(Boolean)
  // Not a git checkout (an unpacked tarball): every file of the scope.
  const out: string[] = []
  const walk = (rel: string): void => {
    const abs = path.join(root, rel)
    if (!fs.existsSync(abs)) return
    if (fs.statSync(abs).isDirectory()) for (const e of fs.readdirSync(abs)) walk(path.join(rel, e))
    else out.push(rel)
  }
  for (const s of SCOPE) walk(s)
  return out
}

/** `file:line: what (text)` for every line that refers outside the repository. */
export function outsideReferences(files: readonly string[]): string[] {
  const found: string[] = []
  for (const rel of files) {
    const abs = path.join(root, rel)
    if (!fs.existsSync(abs)) continue
    const buf = fs.readFileSync(abs)
    if (buf.includes(0)) continue // binary
    buf
      .toString('utf8')
      .split('\n')
      .forEach((line, i) => {
        for (const {what, re} of OUTSIDE) {
          const m = re.exec(line)
          if (m) found.push(`${rel}:${i + 1}: ${what}: ${JSON.stringify(line.trim().slice(0, 160))}`)
        }
      })
  }
  return found
}

test('the scope is not empty (the file list works)', () => {
  const files = trackedFiles()
  assert.ok(files.includes('README.md'), 'README.md is listed')
  assert.ok(
    files.some((f) => f.startsWith('src/')),
    'src/ is listed',
  )
})

test('every pattern catches the citation form it is meant for', () => {
  const samples = [
    `see ${['..', 'shared', 'docs'].join('/')}/x`,
    `as ${['calico', 'reference'].join('-')}.md says`,
    `(reference ${SECTION}4.3)`,
    `(${['Part', 'A.2'].join(' ')})`,
    `(${['issue', '6'].join(' ')})`,
    `Targets (${['issues', '4, 6 and 8'].join(' ')})`,
    `(${['issue', 'item', '5'].join(' ')})`,
  ]
  for (const s of samples)
    assert.ok(
      OUTSIDE.some(({re}) => re.test(s)),
      `not caught: ${s}`,
    )
  for (const s of [
    'docs/calico.md, "Block JSON"',
    `the t${['issue', '5'].join(' ')}`,
    'an issue with it',
    'Part of A.2',
  ]) {
    assert.ok(!OUTSIDE.some(({re}) => re.test(s)), `caught by mistake: ${s}`)
  }
})

test('no comment, doc or test refers to a document outside the repository', () => {
  const found = outsideReferences(trackedFiles())
  assert.deepEqual(
    found,
    [],
    `write the fact into docs/ (docs/calico.md, docs/cni.md, docs/design.md) and cite that file and section instead:\n${found.join('\n')}`,
  )
})

/** GitHub's anchor for a Markdown heading. */
const slug = (heading: string): string =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-')

test('every docs/<file>.md#<section> cited exists as a heading of that file', () => {
  const cite = /docs\/([\w-]+\.md)#([\w-]+)/g
  const missing: string[] = []
  for (const rel of trackedFiles()) {
    const abs = path.join(root, rel)
    if (!fs.existsSync(abs) || fs.readFileSync(abs).includes(0)) continue
    const text = fs.readFileSync(abs, 'utf8')
    for (const m of text.matchAll(cite)) {
      const doc = path.join(root, 'docs', m[1]!)
      const anchors = fs.existsSync(doc)
        ? fs
            .readFileSync(doc, 'utf8')
            .split('\n')
            .filter((l) => /^#{1,6} /.test(l))
            .map((l) => slug(l.replace(/^#+ /, '')))
        : []
      if (!anchors.includes(m[2]!)) missing.push(`${rel}: ${m[0]}`)
    }
  }
  assert.deepEqual(
    missing,
    [],
    `cited sections that do not exist (rename the citation or the heading):\n${missing.join('\n')}`,
  )
})
