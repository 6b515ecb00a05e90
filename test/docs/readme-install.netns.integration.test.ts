// README.md "Installing on nodes", followed literally: its sh blocks, in order, as one bash script, with the
// variables the section defines pointing into a temporary directory and two packed tarballs (this build as 0.1.0,
// and again as 0.1.1 for the upgrade). The section's smoke test wires a pod in a real network namespace through the
// installed plugin after the install, the upgrade and both rollbacks. Needs root, `ip netns` and npm.
import assert from 'node:assert/strict'
import {spawnSync} from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {after, before, describe, it} from 'node:test'
import {ensureBuilt, ROOT} from '../commands/helpers.ts'
import {listing, packCopy} from '../support/checkout-copy.ts'
import {netnsSkipReason, tryIp} from '../support/netns.ts'

const SKIP = netnsSkipReason(`ipamctl-readme-${process.pid}`)
const SMOKE_NS = 'ipamctl-smoke' // the name the README's cni_smoke uses

/** The sh blocks of one README section, in order. */
function sectionScript(readme: string, title: string): string {
  const start = readme.indexOf(`\n## ${title}\n`)
  assert.notEqual(start, -1, `README.md has a section "${title}"`)
  const end = readme.indexOf('\n## ', start + 1)
  const section = readme.slice(start, end === -1 ? undefined : end)
  const blocks = [...section.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]!)
  assert.ok(blocks.length > 0, `"${title}" has sh blocks`)
  return blocks.join('\n')
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-readme-install-'))
after(() => {
  tryIp('netns', 'del', SMOKE_NS)
  fs.rmSync(tmp, {recursive: true, force: true})
})

describe('README "Installing on nodes"', {skip: SKIP}, () => {
  const tarballs = {old: '', new: ''}
  before(() => {
    ensureBuilt()
    tarballs.old = packCopy(tmp, '0.1.0')
    tarballs.new = packCopy(tmp, '0.1.1')
  })

  it('its blocks, run verbatim: install, a wired pod, upgrade, rollback and removal', () => {
    const script = sectionScript(fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8'), 'Installing on nodes')
    const v = (name: string) => path.join(tmp, name)
    const vars = {
      TARBALL: tarballs.old,
      NEW_TARBALL: tarballs.new,
      NPM_PREFIX: v('usr-local'),
      PREFIX: v('opt-ipamctl'),
      CNI_BIN_DIR: v('opt-cni-bin'),
      CNI_CONF_DIR: v('etc-cni-net.d'),
      UNIT_DIR: v('etc-systemd-system'),
      IPAM_LOCK_FILE: v('run-ipam.lock'),
      CNI_LOG_FILE: v('var-log-calico-cni/cni.log'),
      IPAMCTL_DATASTORE_PATH: v('var-lib-ipamctl/ipam.db'),
    }
    fs.mkdirSync(vars.CNI_BIN_DIR)
    fs.writeFileSync(path.join(vars.CNI_BIN_DIR, 'loopback'), '#!/bin/sh\n', {mode: 0o755}) // another plugin
    fs.mkdirSync(vars.UNIT_DIR)
    const cniBefore = listing(vars.CNI_BIN_DIR)
    const r = spawnSync('bash', ['-euo', 'pipefail', '-c', script], {
      cwd: tmp,
      // HOME: an empty npm cache, so that --offline proves the tarball carries everything.
      env: {PATH: process.env.PATH, HOME: v('home'), NO_COLOR: '1', ...vars},
      encoding: 'utf8',
      timeout: 240_000,
    })
    assert.equal(r.status, 0, `the README's commands failed (exit ${r.status}):\n${r.stdout}\n${r.stderr}`)
    // cni_smoke ran four times: after the install, the upgrade, --rollback and the reinstall of the old package
    // (its `ip -brief` line follows the ADD result, which ends without a newline).
    const wired = r.stdout.split('\n').filter((l) => /\beth0@\S+\s+UP\s+10\.244\.\d+\.\d+\/32/.test(l))
    assert.equal(wired.length, 4, r.stdout)
    // The plugins logged the first pod's story to the netconf's log file, and `cni logs` told it in order.
    const story = r.stdout.split('\n').filter((l) => /container=ipamctl-smoke/.test(l))
    const first = (re: RegExp) => story.findIndex((l) => re.test(l))
    assert.ok(first(/ADD/) >= 0 && first(/DEL/) > first(/ADD/), r.stdout)
    assert.equal(fs.statSync(vars.CNI_LOG_FILE).mode & 0o777, 0o600)
    const unit = fs.readFileSync(path.join(vars.UNIT_DIR, 'ipamctl-agent.service'), 'utf8')
    assert.match(
      unit,
      new RegExp(
        `^ExecStart=\\S+ ${vars.NPM_PREFIX}/lib/node_modules/ipamctl/bin/run\\.cjs agent run .*--datastore-path ${vars.IPAMCTL_DATASTORE_PATH}$`,
        'm',
      ),
    )
    // Removal left the CNI bin directory as it was, and nothing under the runtime prefix.
    assert.deepEqual(listing(vars.CNI_BIN_DIR), cniBefore)
    assert.equal(listing(vars.PREFIX), 'absent')
  })
})
