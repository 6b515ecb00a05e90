// loadAddon (src/lib/native-addon.ts): a package's addon loaded by its file from the node_modules folders Node's
// resolution would try, nearest first, with require() as the fallback. Real addons of this repository
// (unix-exchange, netns), copied into scratch trees, so which one loaded is told by what it exports.
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {after, describe, test} from 'node:test'
import {loadAddon} from '../../src/lib/native-addon.ts'
import {ROOT} from '../commands/helpers.ts'

const EXCHANGE = path.join(ROOT, 'node_modules', 'unix-exchange', 'build', 'Release', 'unix_exchange.node')
const NETNS = path.join(ROOT, 'node_modules', 'netns', 'build', 'Release', 'netns.node')
const FILE = 'build/Release/addon.node'

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-addon-'))
after(() => fs.rmSync(tmp, {recursive: true, force: true}))

/** `addon` copied to `<dir>/node_modules/pkg/build/Release/addon.node`. */
function place(dir: string, addon: string): void {
  const to = path.join(dir, 'node_modules', 'pkg', FILE)
  fs.mkdirSync(path.dirname(to), {recursive: true})
  fs.copyFileSync(addon, to)
}

const noFallback = (): never => assert.fail('fell back to require()')

describe('loadAddon', {skip: fs.existsSync(EXCHANGE) && fs.existsSync(NETNS) ? false : 'addons not built'}, () => {
  test('loads the addon from a node_modules folder above the bundle, without falling back', () => {
    const root = fs.mkdtempSync(path.join(tmp, 't-'))
    const from = path.join(root, 'dist', 'cni')
    fs.mkdirSync(from, {recursive: true})
    place(root, EXCHANGE)
    const m = loadAddon<{exchange?: unknown}>('pkg', FILE, noFallback, from)
    assert.equal(typeof m.exchange, 'function')
  })

  test('the nearest node_modules wins, as in Node resolution', () => {
    const root = fs.mkdtempSync(path.join(tmp, 't-'))
    const from = path.join(root, 'dist', 'cni')
    fs.mkdirSync(from, {recursive: true})
    place(root, EXCHANGE)
    place(path.join(root, 'dist'), NETNS)
    const m = loadAddon<{setns?: unknown; exchange?: unknown}>('pkg', FILE, noFallback, from)
    assert.equal(typeof m.setns, 'function')
    assert.equal(m.exchange, undefined)
  })

  test('a folder that is itself node_modules gets no node_modules/node_modules lookup', () => {
    const root = fs.mkdtempSync(path.join(tmp, 't-'))
    const from = path.join(root, 'node_modules', 'ipamctl', 'dist')
    fs.mkdirSync(from, {recursive: true})
    place(path.join(root, 'node_modules'), NETNS) // node_modules/node_modules/pkg: never looked at
    place(root, EXCHANGE) // node_modules/pkg: what Node finds from `from`
    const m = loadAddon<{exchange?: unknown}>('pkg', FILE, noFallback, from)
    assert.equal(typeof m.exchange, 'function')
  })

  test('no such file anywhere above, or no bundle folder: the fallback decides', () => {
    const from = fs.mkdtempSync(path.join(tmp, 't-'))
    assert.equal(
      loadAddon('pkg-that-is-nowhere', FILE, () => 'fallback', from),
      'fallback',
    )
    // Outside a CommonJS bundle (these tests run as ES modules) there is no bundle folder to start from.
    assert.equal(
      loadAddon('unix-exchange', 'build/Release/unix_exchange.node', () => 'fallback'),
      'fallback',
    )
  })
})
