// `cni install|uninstall` on plain directories (the netns test wires pods through what it installs): what install
// writes is listed in the prefix's manifest, uninstall removes exactly that, and files at the plugin names that are
// not install's links belong to someone else (docs/write-paths.md).
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {after, before, describe, it} from 'node:test'
import {ConflictError} from '../../../src/lib/errors.ts'
import {install, MANIFEST, rollback, uninstall} from '../../../src/lib/install/install.ts'
import {ensureBuilt, ROOT} from '../../commands/helpers.ts'
import {copyCheckout, listing} from '../../support/checkout-copy.ts'

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-install-'))
after(() => fs.rmSync(tmp, {recursive: true, force: true}))
before(() => ensureBuilt())

let n = 0
function dirs() {
  const box = path.join(tmp, `box${++n}`)
  const dir = path.join(box, 'cni-bin')
  fs.mkdirSync(dir, {recursive: true})
  // Someone else's plugin, which nothing here may touch.
  fs.writeFileSync(path.join(dir, 'loopback'), 'the operator loopback plugin\n', {mode: 0o755})
  return {dir, prefix: path.join(box, 'opt', 'ipamctl')}
}
const opts = (
  d: {dir: string; prefix: string},
  extra: {source?: string; version?: string; asCalico?: boolean} = {},
) => ({
  source: extra.source ?? ROOT,
  version: extra.version ?? '0.1.0',
  prefix: d.prefix,
  dir: d.dir,
  asCalico: extra.asCalico ?? false,
  force: false,
  node: process.execPath,
})

describe('cni install', () => {
  it('a file of a plugin name that is not ours: refused naming it, and nothing is written', () => {
    const d = dirs()
    fs.writeFileSync(path.join(d.dir, 'calico-ipam'), "the operator's calico-ipam")
    const before = listing(d.dir)
    assert.throws(
      () => install(opts(d, {asCalico: true})),
      (e: unknown) =>
        e instanceof ConflictError && /calico-ipam already exists and is not ipamctl's; pass --force/.test(e.message),
    )
    assert.deepEqual(listing(d.dir), before)
    assert.equal(listing(d.prefix), 'absent')
  })

  it('install, the same build again (reused), uninstall: both directories exactly as before', () => {
    const d = dirs()
    const before = listing(d.dir)
    const first = install(opts(d))
    assert.equal(first.reused, false)
    assert.match(first.version, /^0\.1\.0-[0-9a-f]{12}$/)
    assert.equal(fs.readlinkSync(path.join(d.prefix, 'current')), first.version)
    assert.equal(fs.readlinkSync(path.join(d.dir, 'ipamctl-ipam')), path.join(d.prefix, 'current/bin/ipamctl-ipam'))
    const vdir = path.join(d.prefix, first.version)
    assert.ok(fs.statSync(path.join(vdir, 'node')).mode & 0o111, 'the runtime carries its node')
    assert.equal(fs.readFileSync(path.join(vdir, 'bin/ipamctl-cni'), 'utf8').split('\n')[0], `#!${vdir}/node`)
    const again = install(opts(d))
    assert.deepEqual([again.version, again.reused], [first.version, true])
    assert.ok(again.entries.every((e) => !e.written))
    uninstall(d.prefix)
    assert.deepEqual(listing(d.dir), before)
    assert.equal(listing(path.dirname(d.prefix)), 'absent', 'the prefix (and its parent install made) are gone')
  })

  it('uninstall refuses while a plugin entry is no longer the link install made, and removes nothing', () => {
    const d = dirs()
    install(opts(d))
    const entry = path.join(d.dir, 'ipamctl-ipam')
    fs.rmSync(entry)
    fs.writeFileSync(entry, 'replaced by hand\n')
    const beforeDir = listing(d.dir)
    const beforePrefix = listing(d.prefix)
    assert.throws(
      () => uninstall(d.prefix),
      (e: unknown) => e instanceof ConflictError && e.message.includes(`${entry} is no longer the link`),
    )
    assert.deepEqual([listing(d.dir), listing(d.prefix)], [beforeDir, beforePrefix])
  })

  it('an edited manifest naming a path outside the prefix is refused before anything is removed', () => {
    const d = dirs()
    install(opts(d))
    const file = path.join(d.prefix, MANIFEST)
    const good = fs.readFileSync(file, 'utf8')
    const outside = path.join(tmp, `outside${n}`)
    fs.mkdirSync(outside)
    // Everything under the prefix's parent but the manifest itself, which the test edits.
    const files = () => (listing(path.dirname(d.prefix)) as string[]).filter((l) => !l.includes(MANIFEST))
    const before = files()
    for (const edit of [
      (m: {versions: string[]}) => m.versions.push(path.relative(d.prefix, outside)),
      (m: {createdDirs: string[]}) => m.createdDirs.push(`${d.prefix}/../../x`),
    ]) {
      const m = JSON.parse(good)
      edit(m)
      fs.writeFileSync(file, JSON.stringify(m))
      assert.throws(() => uninstall(d.prefix), /is not an ipamctl install manifest/)
      assert.ok(fs.existsSync(outside))
      assert.deepEqual(files(), before)
    }
    fs.writeFileSync(file, good)
    uninstall(d.prefix)
  })

  it('an upgrade installs beside the old build; --rollback and installing the old build again switch back', () => {
    const d = dirs()
    const newer = copyCheckout(path.join(tmp, `copy${n}`), {version: '0.1.1'})
    const a = install(opts(d))
    const b = install(opts(d, {source: newer, version: '0.1.1'}))
    assert.match(b.version, /^0\.1\.1-/)
    assert.equal(b.previous, a.version)
    assert.ok(fs.existsSync(path.join(d.prefix, a.version)), 'the old build stays beside the new one')
    assert.deepEqual(rollback(d.prefix), {from: b.version, to: a.version})
    assert.equal(fs.readlinkSync(path.join(d.prefix, 'current')), a.version)
    const c = install(opts(d, {source: newer, version: '0.1.1'}))
    assert.deepEqual([c.version, c.reused], [b.version, true])
    const back = install(opts(d))
    assert.deepEqual([back.version, back.reused, back.previous], [a.version, true, b.version])
    const m = JSON.parse(fs.readFileSync(path.join(d.prefix, MANIFEST), 'utf8')) as {versions: string[]}
    assert.deepEqual(m.versions.sort(), [a.version, b.version].sort())
    uninstall(d.prefix)
    assert.equal(listing(path.dirname(d.prefix)), 'absent')
  })
})
