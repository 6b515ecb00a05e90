// A main plugin that delegates IPAM must forward STATUS and GC to the delegate (CNI spec 1.1), and must not
// collect ipamctl's own handles for a network whose addresses another IPAM plugin hands out. The delegate here
// is a real executable in a temporary CNI_PATH that records what it was asked.
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {after, beforeEach, describe, it} from 'node:test'
import {ipamPlugin} from '../../../src/plugins/ipam/plugin.ts'
import {mainPlugin} from '../../../src/plugins/main/plugin.ts'
import {type Ctx, makeCtx} from '../../../src/lib/ipam/context.ts'
import {createPools} from '../../../src/lib/ipam/pool-admin.ts'
import {ipStatus} from '../../../src/lib/ipam/query.ts'
import {MemoryStore} from '../../../src/lib/store/memory.ts'
import {addEnv, errorOf, runSkel} from '../../lib/cni/helpers.ts'

const NET = 'k8s-pod-network'
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-delegate-'))
const log = path.join(dir, 'calls.jsonl')
after(() => fs.rmSync(dir, {recursive: true, force: true}))

// Records {command, stdin} per call; answers STATUS with code 50 when FAKE_IPAM_DOWN is set.
fs.writeFileSync(
  path.join(dir, 'fake-ipam'),
  `#!${process.execPath}
const fs = require('node:fs');
const stdin = fs.readFileSync(0, 'utf8');
fs.appendFileSync(${JSON.stringify(log)}, JSON.stringify({command: process.env.CNI_COMMAND, stdin: JSON.parse(stdin)}) + '\\n');
if (process.env.CNI_COMMAND === 'STATUS' && process.env.FAKE_IPAM_DOWN) {
  process.stdout.write(JSON.stringify({cniVersion: '1.1.0', code: 50, msg: 'fake-ipam is not ready'}));
  process.exit(1);
}
`,
  {mode: 0o755},
)

let store: MemoryStore
let ctx: Ctx
const deps = () => ({
  openStore: async () => store,
  readFile: () => {
    throw new Error('ENOENT')
  },
  osHostname: () => 'node-1',
  lock: () => () => {},
  invokedAs: 'ipamctl-cni',
})
const conf = (ipamType: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    cniVersion: '1.1.0',
    name: NET,
    type: 'ipamctl-cni',
    nodename: 'node-1',
    datastore_path: '/nonexistent/ipam.db',
    ...extra,
    ipam: {type: ipamType},
  })
const calls = () =>
  fs.existsSync(log)
    ? fs
        .readFileSync(log, 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as {command: string; stdin: Record<string, unknown>})
    : []

describe('main plugin with a delegated IPAM', () => {
  beforeEach(async () => {
    fs.rmSync(log, {force: true})
    store = new MemoryStore()
    ctx = makeCtx(store)
    await createPools(ctx, [{name: 'p4', cidr: '10.70.0.0/16'}])
  })

  it('GC goes to the delegate with the valid-attachments list; ipamctl handles of the same network name stay', async () => {
    // An attachment ipamctl-ipam made under the same network name (another netconf): not this GC's to collect.
    const add = await runSkel(
      ipamPlugin(deps()),
      addEnv({CNI_CONTAINERID: 'other'}),
      conf('ipamctl-ipam', {cniVersion: '1.0.0'}),
    )
    assert.equal(add.code, 0, add.stdout)
    const ip = JSON.parse(add.stdout).ips[0].address.split('/')[0]
    const valid = [{containerID: 'kept', ifname: 'eth0'}]
    const r = await runSkel(
      mainPlugin(deps()),
      {CNI_COMMAND: 'GC', CNI_PATH: dir},
      conf('fake-ipam', {'cni.dev/valid-attachments': valid}),
    )
    assert.deepEqual([r.code, r.stdout], [0, ''], r.stderr)
    const got = calls()
    assert.deepEqual(
      got.map((c) => c.command),
      ['GC'],
    )
    assert.deepEqual(got[0]!.stdin['cni.dev/valid-attachments'], valid)
    assert.equal((await ipStatus(ctx, ip)).state, 'assigned')
  })

  it("STATUS asks the delegate too, and its failure is the plugin's", async () => {
    const up = await runSkel(mainPlugin(deps()), {CNI_COMMAND: 'STATUS', CNI_PATH: dir}, conf('fake-ipam'))
    assert.deepEqual([up.code, up.stdout], [0, ''], up.stderr)
    assert.deepEqual(
      calls().map((c) => c.command),
      ['STATUS'],
    )
    process.env.FAKE_IPAM_DOWN = '1'
    try {
      const down = await runSkel(mainPlugin(deps()), {CNI_COMMAND: 'STATUS', CNI_PATH: dir}, conf('fake-ipam'))
      assert.equal(errorOf(down).code, 50)
      assert.match(errorOf(down).msg, /fake-ipam is not ready/)
    } finally {
      delete process.env.FAKE_IPAM_DOWN
    }
  })
})
