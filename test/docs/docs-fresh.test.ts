// The committed man pages and README command reference must describe the commands as they are now.
// Fix a failure with `npm run docs`.
import {test} from 'node:test'
import assert from 'node:assert/strict'
import {execFileSync} from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

const root = fileURLToPath(new URL('../../', import.meta.url))
const manifestPath = path.join(root, 'oclif.manifest.json')

function manifest(): {commands: Record<string, {hidden?: boolean}>} {
  if (!fs.existsSync(manifestPath)) execFileSync('npm', ['run', 'build'], {cwd: root, stdio: 'ignore'})
  return JSON.parse(fs.readFileSync(manifestPath, 'utf8'))
}

const withoutDate = (page: string) => page.replace(/^\.TH .*$/m, '.TH')

test('man/man1 matches the pages generated from the current commands', () => {
  manifest()
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-man-'))
  try {
    execFileSync(process.execPath, [path.join(root, 'scripts/gen-man.mjs'), '--manifest', manifestPath, '--out', out])
    const committed = fs.readdirSync(path.join(root, 'man/man1')).sort()
    assert.deepEqual(fs.readdirSync(out).sort(), committed, 'set of man pages differs: run npm run docs')
    for (const f of committed) {
      const want = withoutDate(fs.readFileSync(path.join(out, f), 'utf8'))
      const have = withoutDate(fs.readFileSync(path.join(root, 'man/man1', f), 'utf8'))
      assert.equal(have, want, `man/man1/${f} is stale: run npm run docs`)
    }
  } finally {
    fs.rmSync(out, {recursive: true, force: true})
  }
})

test('README documents every command', () => {
  const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8')
  for (const [id, cmd] of Object.entries(manifest().commands)) {
    if (cmd.hidden) continue
    assert.ok(readme.includes(`## \`ipamctl ${id.replace(/:/g, ' ')}`), `README lacks ${id}: run npm run docs`)
  }
})
