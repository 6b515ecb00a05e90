// Every man page must render without warnings: groff in warning-as-everything mode.
import {test} from 'node:test'
import assert from 'node:assert/strict'
import {spawnSync} from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

const dir = fileURLToPath(new URL('../../man/man1/', import.meta.url))
const haveGroff = spawnSync('groff', ['--version']).status === 0

test('every man page renders with groff -man -ww -z without warnings', {
  skip: haveGroff ? false : 'groff is not installed',
}, () => {
  const pages = fs.readdirSync(dir).filter((f) => f.endsWith('.1'))
  assert.ok(pages.length >= 20, `only ${pages.length} man pages`)
  for (const page of pages) {
    const r = spawnSync('groff', ['-man', '-ww', '-z', path.join(dir, page)], {encoding: 'utf8'})
    assert.equal(r.status, 0, `${page}: exit ${r.status}`)
    assert.equal(r.stderr, '', `${page}: ${r.stderr}`)
  }
})
