// `npm run demo` (scripts/demo.sh, run for real) uses a store of its own and nothing else: a user's store named by
// IPAMCTL_DATASTORE_PATH, and a datastore selection in the environment, are ignored and left byte-identical.
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {after, before, describe, test} from 'node:test'
import {dumpStore, ensureBuilt, ROOT, runCli} from '../commands/helpers.ts'
import {runProcess} from '../support/process.ts'

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-demo-'))
after(() => fs.rmSync(tmp, {recursive: true, force: true}))
before(() => ensureBuilt())

/** Every file of `dir` with its bytes. */
function snapshot(dir: string): Record<string, string> {
  return Object.fromEntries(
    fs
      .readdirSync(dir)
      .sort()
      .map((f) => [f, fs.readFileSync(path.join(dir, f)).toString('base64')]),
  )
}

async function userStore(name: string): Promise<string> {
  const db = path.join(tmp, name, 'ipam.db')
  for (const args of [
    ['pool', 'create', 'mine', '--cidr', '10.200.0.0/16'],
    ['ipam', 'assign', '--host', 'prod-1', '--handle', 'precious'],
  ]) {
    const r = await runCli(db, args)
    assert.equal(r.status, 0, r.stderr)
  }
  return db
}

function demo(env: Record<string, string>) {
  const clean: NodeJS.ProcessEnv = {...process.env, NO_COLOR: '1', ...env}
  delete clean.NODE_OPTIONS
  return runProcess('bash', [path.join(ROOT, 'scripts', 'demo.sh')], {cwd: tmp, env: clean})
}

describe('scripts/demo.sh', () => {
  test("with IPAMCTL_DATASTORE_PATH (and an etcd selection) in the environment: runs on its own store, the user's is byte-identical", async () => {
    const db = await userStore('user')
    const before = snapshot(path.dirname(db))
    const demoDir = path.join(tmp, 'demo-own')
    const r = await demo({
      IPAMCTL_DATASTORE_PATH: db,
      DATASTORE_TYPE: 'etcdv3',
      ETCD_ENDPOINTS: 'http://127.0.0.1:1',
      IPAMCTL_DEMO_DIR: demoDir,
    })
    assert.equal(r.code, 0, r.stderr)
    assert.ok(r.stderr.includes(`demo: using its own datastore ${demoDir}/ipam.db\n`), r.stderr)
    assert.deepEqual(snapshot(path.dirname(db)), before)
    assert.match(dumpStore(path.join(demoDir, 'ipam.db')), /ippools\/default-ipv4 /)
    assert.doesNotMatch(dumpStore(path.join(demoDir, 'ipam.db')), /ippools\/mine /)
    // Run again: the demo starts over on its own store.
    const again = await demo({IPAMCTL_DEMO_DIR: demoDir})
    assert.equal(again.code, 0, again.stderr)
  })

  test("IPAMCTL_DEMO_DIR naming a directory the demo did not make (a real store's): refused, exit 2, the store byte-identical", async () => {
    const db = await userStore('real')
    const before = snapshot(path.dirname(db))
    const r = await demo({IPAMCTL_DEMO_DIR: path.dirname(db)})
    assert.equal(r.code, 2, r.stderr)
    assert.match(r.stderr, /was not made by the demo .*refusing to use it/)
    assert.deepEqual(snapshot(path.dirname(db)), before)
  })
})
