// The REAL ipamctl-ipam executable on a netconf whose embedded `datastore_path` does not exist: no verb creates
// a store it would not write to. DEL succeeds as a no-op (CNI DEL is idempotent and a store that never existed
// holds nothing of this container's), GC has nothing to collect and succeeds, STATUS is ready (the first ADD
// creates the store), CHECK fails (the container's addresses cannot be there), and an ADD that fails before
// writing (no pool in an empty store) leaves nothing either. No file and no directory appear in any case.
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {after, before, describe, it} from 'node:test'
import {ensureBuilt, ROOT} from '../../commands/helpers.ts'
import {runProcess} from '../../support/process.ts'

const BIN = path.join(ROOT, 'bin', 'ipamctl-ipam.cjs')
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-cni-missing-'))
after(() => fs.rmSync(tmp, {recursive: true, force: true}))
before(() => ensureBuilt())

let n = 0
function box(): {
  root: string
  db: string
  run: (
    env: Record<string, string>,
    conf?: Record<string, unknown>,
  ) => Promise<{code: number | null; stdout: string; stderr: string}>
} {
  const dir = path.join(tmp, `box${++n}`)
  fs.mkdirSync(dir)
  const root = path.join(dir, 'no-such-dir')
  const db = path.join(root, 'ipam.db')
  const run = (env: Record<string, string>, conf: Record<string, unknown> = {}) =>
    runProcess(process.execPath, [BIN], {
      cwd: ROOT,
      env: {PATH: process.env.PATH, CNI_PATH: '/opt/cni/bin', ...env},
      stdin: JSON.stringify({
        cniVersion: '1.1.0',
        name: 'k8s-pod-network',
        type: 'ipamctl-ipam',
        nodename: 'node-1',
        datastore_path: db,
        ipamctl_agent_socket: '',
        ipam_lock_file: path.join(dir, 'ipam.lock'),
        ...conf,
      }),
    }).then((r) => ({code: r.code, stdout: r.stdout, stderr: r.stderr}))
  return {root, db, run}
}

const pod = {CNI_CONTAINERID: 'c1', CNI_NETNS: '/var/run/netns/c1', CNI_IFNAME: 'eth0'}

describe('ipamctl-ipam on a datastore_path that does not exist', {concurrency: true}, () => {
  it('DEL exits 0 with no output and creates nothing', async () => {
    const b = box()
    const r = await b.run({CNI_COMMAND: 'DEL', ...pod})
    assert.deepEqual([r.code, r.stdout], [0, ''], r.stderr)
    assert.equal(fs.existsSync(b.root), false)
  })

  it('GC exits 0 and creates nothing', async () => {
    const b = box()
    const r = await b.run({CNI_COMMAND: 'GC'}, {'cni.dev/valid-attachments': []})
    assert.deepEqual([r.code, r.stdout], [0, ''], r.stderr)
    assert.equal(fs.existsSync(b.root), false)
  })

  it('STATUS exits 0 (ready: ADD will create the store) and creates nothing', async () => {
    const b = box()
    const r = await b.run({CNI_COMMAND: 'STATUS'})
    assert.deepEqual([r.code, r.stdout], [0, ''], r.stderr)
    assert.equal(fs.existsSync(b.root), false)
  })

  it('CHECK fails naming the missing store and creates nothing', async () => {
    const b = box()
    const r = await b.run(
      {CNI_COMMAND: 'CHECK', ...pod},
      {prevResult: {cniVersion: '1.1.0', ips: [{address: '10.65.0.1/32'}]}},
    )
    assert.notEqual(r.code, 0)
    assert.match(r.stdout, /does not exist/)
    assert.ok(r.stdout.includes(b.db), r.stdout)
    assert.equal(fs.existsSync(b.root), false)
  })

  it('ADD with no pool to allocate from fails and creates nothing', async () => {
    const b = box()
    const r = await b.run({CNI_COMMAND: 'ADD', ...pod})
    assert.notEqual(r.code, 0)
    assert.equal(fs.existsSync(b.root), false)
  })
})
