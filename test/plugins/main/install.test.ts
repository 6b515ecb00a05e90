// `ipamctl cni install`: files in a CNI bin directory belong to whoever put them there; they are replaced only
// with --force, and a refusal leaves the directory exactly as it was.
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {after, describe, it} from 'node:test'
import {installPlugins} from '../../../src/plugins/main/manual.ts'

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-install-'))
after(() => fs.rmSync(root, {recursive: true, force: true}))

const listing = (dir: string) =>
  fs
    .readdirSync(dir)
    .sort()
    .map((n) => {
      const p = path.join(dir, n)
      return fs.lstatSync(p).isSymbolicLink() ? `${n} -> ${fs.readlinkSync(p)}` : `${n}: ${fs.readFileSync(p, 'utf8')}`
    })

describe('cni install', () => {
  it('one existing plugin without --force: refused naming it, and neither plugin is installed', () => {
    const dir = path.join(root, 'one')
    fs.mkdirSync(dir)
    fs.writeFileSync(path.join(dir, 'calico-ipam'), "the operator's calico-ipam")
    const before = listing(dir)
    assert.throws(
      () => installPlugins(dir, {asCalico: true, force: false}),
      /calico-ipam already exists; pass --force to replace it/,
    )
    assert.deepEqual(listing(dir), before)
  })

  it('with --force both are replaced by links to this installation', () => {
    const dir = path.join(root, 'force')
    fs.mkdirSync(dir)
    fs.writeFileSync(path.join(dir, 'calico'), 'old')
    const plan = installPlugins(dir, {asCalico: true, force: true})
    assert.deepEqual(listing(dir), plan.map((p) => `${p.name} -> ${p.target}`).sort())
  })
})
