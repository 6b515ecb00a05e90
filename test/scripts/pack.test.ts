// `npm pack` (scripts/vendor-addons.mjs as prepack) makes a package that installs on a machine with only Node:
// no compiler, no network, an empty npm cache. Packs a copy of this built checkout once, installs the tarball
// into a temporary prefix with a PATH holding only node and sh, and runs the CLI, a plugin ADD, `cni install` and
// man from there.
import assert from 'node:assert/strict'
import {execFileSync, spawnSync} from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {after, before, describe, it} from 'node:test'
import {ensureBuilt, ROOT} from '../commands/helpers.ts'
import {packCopy} from '../support/checkout-copy.ts'

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-pack-'))
after(() => fs.rmSync(tmp, {recursive: true, force: true}))
const prefix = path.join(tmp, 'prefix')
const toolDir = path.join(tmp, 'path')
/** Only node and sh (npm runs scripts through it): no gcc, cc, make or python. */
const env = {HOME: tmp, PATH: toolDir, NO_COLOR: '1'}
const npmCli = fs.realpathSync(execFileSync('sh', ['-c', 'command -v npm'], {encoding: 'utf8'}).trim())

function run(cmd: string, args: string[], extra: Record<string, string> = {}, input = ''): string {
  const r = spawnSync(cmd, args, {env: {...env, ...extra}, input, encoding: 'utf8'})
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')} failed (exit ${r.status}):\n${r.stdout}${r.stderr}`)
  return r.stdout
}

describe('npm pack', () => {
  let tarball: string
  before(() => {
    ensureBuilt()
    tarball = packCopy(tmp)
    fs.mkdirSync(toolDir)
    fs.symlinkSync(process.execPath, path.join(toolDir, 'node'))
    fs.symlinkSync('/bin/sh', path.join(toolDir, 'sh'))
    const cache = fs.mkdtempSync(path.join(tmp, 'npm-cache-'))
    run(process.execPath, [npmCli, 'install', '-g', '--prefix', prefix, tarball, '--offline', '--cache', cache])
  })

  it('installs offline without a compiler: ipamctl, ipamctl-cni, ipamctl-ipam and the man pages work', () => {
    const bin = (name: string) => path.join(prefix, 'bin', name)
    assert.match(run(bin('ipamctl'), ['--version']), /^ipamctl\/\d+\.\d+\.\d+ linux-/)
    const db = ['--datastore-path', path.join(tmp, 'ipam.db')]
    run(bin('ipamctl'), ['pool', 'create', 'p', '--cidr', '10.196.9.0/24', ...db])
    assert.match(run(bin('ipamctl'), ['ipam', 'show', ...db]), /10\.196\.9\.0\/24/)
    const conf = {
      cniVersion: '1.0.0',
      name: 'net',
      type: 'ipamctl-ipam',
      nodename: 'node-1',
      datastore_path: db[1],
      ipam_lock_file: path.join(tmp, 'ipam.lock'),
      ipam: {type: 'ipamctl-ipam'},
    }
    const cniEnv = {
      CNI_COMMAND: 'ADD',
      CNI_CONTAINERID: 'c1',
      CNI_NETNS: '/nonexistent',
      CNI_IFNAME: 'eth0',
      CNI_PATH: '/x',
    }
    const added = JSON.parse(run(bin('ipamctl-ipam'), [], cniEnv, JSON.stringify(conf))) as {ips: {address: string}[]}
    assert.match(added.ips[0]!.address, /^10\.196\.9\.\d+\/26$/)
    assert.match(run(bin('ipamctl-cni'), [], {CNI_COMMAND: 'VERSION'}), /"supportedVersions"/)
    const page = path.join(prefix, 'share', 'man', 'man1', 'ipamctl-cni-install.1')
    assert.ok(fs.existsSync(page), `${page} installed`)
    const man = spawnSync('man', ['-M', path.join(prefix, 'share', 'man'), '-w', 'ipamctl-cni-install'], {
      encoding: 'utf8',
    })
    if (man.error === undefined) assert.equal(fs.realpathSync(man.stdout.trim()), fs.realpathSync(page))
  })

  it('cni install from the installed package copies a runtime that runs the plugins', () => {
    const dir = path.join(tmp, 'cni-bin')
    const runtimes = path.join(tmp, 'opt-ipamctl')
    run(path.join(prefix, 'bin', 'ipamctl'), ['cni', 'install', '--dir', dir, '--prefix', runtimes])
    assert.match(run(path.join(dir, 'ipamctl-ipam'), [], {CNI_COMMAND: 'VERSION'}), /"supportedVersions"/)
    run(path.join(prefix, 'bin', 'ipamctl'), ['cni', 'uninstall', '--prefix', runtimes])
    assert.deepEqual(
      [fs.existsSync(dir), fs.existsSync(runtimes)],
      [false, false],
      'uninstall removed the directories install made',
    )
  })

  it('package.json lists every man page (npm installs only those)', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {man: string[]}
    const pages = fs
      .readdirSync(path.join(ROOT, 'man', 'man1'))
      .sort()
      .map((f) => `./man/man1/${f}`)
    assert.deepEqual(pkg.man, pages)
  })
})
