// `ipamctl cni install` on a node: the installed plugins outlive the installation they were copied from, an
// upgrade while pods are wired is never seen half-done, and uninstall leaves the directories as they were. Drives
// the plugins through libcni (cnitool, .cache/cni-tools/bin/cnitool from scripts/install-test-deps.sh) into real
// network namespaces. Needs root and a working `ip netns`.
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {after, before, describe, it} from 'node:test'
import {copyCheckout, listing} from '../support/checkout-copy.ts'
import {ip, ipJson, type IpLinkAddrs, netnsSkipReason, tryIp} from '../support/netns.ts'
import {type ProcResult, runProcess} from '../support/process.ts'
import {ensureBuilt, ROOT} from './helpers.ts'

const CNITOOL = path.join(ROOT, '.cache', 'cni-tools', 'bin', 'cnitool')
const RUN = `${process.pid.toString(36)}`
const NET = 'k8s-pod-network'
const SKIP =
  netnsSkipReason(`ipamctl-inst-${RUN}-probe`) ??
  (fs.existsSync(CNITOOL) ? undefined : `${path.relative(ROOT, CNITOOL)} missing (run scripts/install-test-deps.sh)`)

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-cni-install-'))
const namespaces: string[] = []
after(() => {
  for (const ns of namespaces) tryIp('netns', 'del', ns)
  fs.rmSync(tmp, {recursive: true, force: true})
})

const ok = (r: ProcResult, what: string): string => {
  assert.equal(r.code, 0, `${what} failed (exit ${r.code}):\n${r.stdout}${r.stderr}`)
  return r.stdout
}
const cli = (checkout: string, ...args: string[]) =>
  runProcess(process.execPath, [path.join(checkout, 'bin', 'run.cjs'), ...args], {env: {...process.env, NO_COLOR: '1'}})

describe('cni install on a node', {skip: SKIP}, () => {
  before(() => ensureBuilt())

  it('wires pods after the source is deleted, upgrades under a loop of ADD/DEL without a failure, uninstalls to the directories as before', async () => {
    const dir = path.join(tmp, 'opt-cni-bin')
    const prefix = path.join(tmp, 'opt-ipamctl')
    fs.mkdirSync(dir)
    fs.writeFileSync(path.join(dir, 'loopback'), '#!/bin/sh\nexit 0\n', {mode: 0o755}) // someone else's plugin
    const before = {dir: listing(dir), prefix: listing(prefix)}

    const db = path.join(tmp, 'ipam.db')
    ok(await cli(ROOT, 'pool', 'create', 'p', '--cidr', '10.192.40.0/24', '--datastore-path', db), 'pool create')
    const confDir = path.join(tmp, 'net.d')
    fs.mkdirSync(confDir)
    const plugin = {
      type: 'ipamctl-cni',
      nodename: 'node-1',
      datastore_path: db,
      ipam_lock_file: path.join(tmp, 'ipam.lock'),
      ipam: {type: 'ipamctl-ipam'},
    }
    fs.writeFileSync(
      path.join(confDir, '10-ipamctl.conflist'),
      JSON.stringify({cniVersion: '1.0.0', name: NET, plugins: [plugin]}),
    )
    // A runtime's environment: nothing of this checkout on PATH or in NODE_* variables.
    const env = {
      PATH: '/usr/sbin:/usr/bin:/sbin:/bin',
      NETCONFPATH: confDir,
      CNI_PATH: dir,
      CNI_CACHE_DIR: path.join(tmp, 'cni-cache'),
    }
    const cnitool = (cmd: string, ns: string) => runProcess(CNITOOL, [cmd, NET, `/var/run/netns/${ns}`], {env})
    const newNs = (name: string) => {
      const ns = `ipamctl-inst-${RUN}-${name}`
      ip('netns', 'add', ns)
      namespaces.push(ns)
      return ns
    }
    const podAddrs = (ns: string) =>
      ipJson<IpLinkAddrs[]>('-n', ns, 'addr', 'show', 'dev', 'eth0').flatMap((l) =>
        (l.addr_info ?? []).filter((a) => a.scope === 'global').map((a) => a.local),
      )

    // Install from a copy of this checkout, then delete the copy: the plugins must not need it.
    const v1 = copyCheckout(path.join(tmp, 'checkout-v1'))
    ok(await cli(v1, 'cni', 'install', '--dir', dir, '--prefix', prefix), 'cni install (v1)')
    fs.rmSync(v1, {recursive: true, force: true})
    const first = fs.readlinkSync(path.join(prefix, 'current'))

    const pod = newNs('pod')
    const added = JSON.parse(ok(await cnitool('add', pod), 'cnitool add')) as {ips: {address: string}[]}
    const address = added.ips[0]!.address.split('/')[0]!
    assert.match(address, /^10\.192\.40\./)
    assert.deepEqual(podAddrs(pod), [address])
    ok(await cnitool('del', pod), 'cnitool del')

    // Upgrade to a rebuilt version (another version number: another build id) while pods come and go.
    const v2 = copyCheckout(path.join(tmp, 'checkout-v2'), {version: '0.1.1'})
    const loopNs = newNs('loop')
    const failures: string[] = []
    let rounds = 0
    let roundsDuringInstall = 0
    let installing = true
    let stop = false
    const loop = (async () => {
      while (!stop) {
        const during = installing
        for (const cmd of ['add', 'del']) {
          const r = await cnitool(cmd, loopNs)
          if (r.code !== 0) failures.push(`${cmd} (exit ${r.code}): ${r.stdout}${r.stderr}`)
        }
        rounds++
        if (during && installing) roundsDuringInstall++
      }
    })()
    while (rounds < 2) await new Promise((r) => setTimeout(r, 20))
    const upgraded = await cli(v2, 'cni', 'install', '--dir', dir, '--prefix', prefix)
    installing = false
    const after = rounds
    while (rounds < after + 3) await new Promise((r) => setTimeout(r, 20))
    stop = true
    await loop
    ok(upgraded, 'cni install (v2)')
    assert.deepEqual(failures, [])
    assert.ok(roundsDuringInstall > 0, 'ADD/DEL ran while the upgrade was copying')
    const second = fs.readlinkSync(path.join(prefix, 'current'))
    assert.match(second, /^0\.1\.1-/)
    assert.notEqual(second, first)
    assert.ok(fs.existsSync(path.join(prefix, first)), 'the old runtime stays for a rollback')

    // The upgraded plugins wire a pod too; then uninstall restores both directories.
    const pod2 = newNs('pod2')
    ok(await cnitool('add', pod2), 'cnitool add (v2)')
    ok(await cnitool('del', pod2), 'cnitool del (v2)')
    ok(await cli(v2, 'cni', 'uninstall', '--dir', dir, '--prefix', prefix), 'cni uninstall')
    assert.deepEqual({dir: listing(dir), prefix: listing(prefix)}, before)
  })
})
