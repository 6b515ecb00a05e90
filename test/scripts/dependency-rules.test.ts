// The folder rules of .dependency-cruiser.cjs (`npm run deps`, run before the tests): the real tree passes, and
// a tree with an upward import, a cycle or a CLI package in src/lib is refused. The bad trees are built in a
// temporary directory with the repository's own config, so src/ is never touched.
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {after, describe, test} from 'node:test'
import {ROOT} from '../commands/helpers.ts'
import {runProcess} from '../support/process.ts'

const DEPCRUISE = path.join(ROOT, 'node_modules', '.bin', 'depcruise')
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-deps-'))
after(() => fs.rmSync(tmp, {recursive: true, force: true}))

/** A tree of `files` (path → source) with the repository's config; depcruise's exit status and output. */
async function cruise(name: string, files: Record<string, string>): Promise<{code: number | null; out: string}> {
  const dir = path.join(tmp, name)
  for (const [file, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, file)), {recursive: true})
    fs.writeFileSync(path.join(dir, file), text)
  }
  fs.copyFileSync(path.join(ROOT, '.dependency-cruiser.cjs'), path.join(dir, '.dependency-cruiser.cjs'))
  fs.copyFileSync(path.join(ROOT, 'tsconfig.json'), path.join(dir, 'tsconfig.json'))
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'))
  const r = await runProcess(DEPCRUISE, ['src', '--config', '.dependency-cruiser.cjs'], {cwd: dir, env: process.env})
  return {code: r.code, out: r.stdout + r.stderr}
}

describe('dependency rules', () => {
  test('the repository passes', async () => {
    const r = await runProcess(DEPCRUISE, ['src', '--config', '.dependency-cruiser.cjs'], {cwd: ROOT, env: process.env})
    assert.equal(r.code, 0, r.stdout + r.stderr)
  })

  test('a downward import passes', async () => {
    const r = await cruise('down', {
      'src/lib/node-ipam/a.ts': "import {b} from '../ipam/b.js'\nexport const a = b\n",
      'src/lib/ipam/b.ts': 'export const b = 1\n',
    })
    assert.equal(r.code, 0, r.out)
  })

  test('the core importing the node-IPAM service is an upward import', async () => {
    const r = await cruise('up', {
      'src/lib/ipam/b.ts': "import {a} from '../node-ipam/a.js'\nexport const b = a\n",
      'src/lib/node-ipam/a.ts': 'export const a = 1\n',
    })
    assert.notEqual(r.code, 0)
    assert.match(r.out, /no-upward-import: src\/lib\/ipam\/b\.ts → src\/lib\/node-ipam\/a\.ts/)
  })

  test('a file in src/lib importing a subfolder of src/lib is an upward import', async () => {
    const r = await cruise('root', {
      'src/lib/errors.ts': "import {b} from './ipam/b.js'\nexport const e = b\n",
      'src/lib/ipam/b.ts': 'export const b = 1\n',
    })
    assert.notEqual(r.code, 0)
    assert.match(r.out, /no-upward-import: src\/lib\/errors\.ts → src\/lib\/ipam\/b\.ts/)
  })

  test('two modules of one folder importing each other are a cycle', async () => {
    const r = await cruise('cycle', {
      'src/lib/ipam/a.ts': "import {b} from './b.js'\nexport const a = () => b\n",
      'src/lib/ipam/b.ts': "import {a} from './a.js'\nexport const b = () => a\n",
    })
    assert.notEqual(r.code, 0)
    assert.match(r.out, /no-circular/)
  })

  test('src/lib importing oclif is refused', async () => {
    const r = await cruise('oclif', {
      'src/lib/ipam/a.ts': "import {Command} from '@oclif/core'\nexport const a = Command\n",
    })
    assert.notEqual(r.code, 0)
    assert.match(r.out, /lib-no-cli-packages/)
  })

  test('a folder missing from the layer list is named as such', async () => {
    const r = await cruise('unlisted', {
      'src/lib/newfolder/a.ts': "import {b} from '../ipam/b.js'\nexport const a = b\n",
      'src/lib/ipam/b.ts': 'export const b = 1\n',
    })
    assert.notEqual(r.code, 0)
    assert.match(r.out, /folder-not-in-layers: src\/lib\/newfolder\/a\.ts/)
  })
})
