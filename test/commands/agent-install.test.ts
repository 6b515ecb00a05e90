// `ipamctl agent install`: the unit names this node, socket and datastore, runs a working agent, keeps credentials
// out (a config file is referenced, not copied), and a different unit of that name is someone else's until --force.
import assert from 'node:assert/strict'
import {spawn} from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {after, describe, it} from 'node:test'
import {assertCleanError, runCli} from './helpers.ts'

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-agent-install-'))
after(() => fs.rmSync(tmp, {recursive: true, force: true}))
let n = 0
const box = () => {
  const dir = path.join(tmp, `box${++n}`)
  fs.mkdirSync(path.join(dir, 'units'), {recursive: true})
  return {dir, units: path.join(dir, 'units'), db: path.join(dir, 'ipam.db'), sock: path.join(dir, 'agent.sock')}
}
const unitFile = (units: string) => path.join(units, 'ipamctl-agent.service')
const execStart = (unit: string) => /^ExecStart=(.*)$/m.exec(unit)![1]!.split(' ')

describe('agent install', () => {
  it('writes a unit whose ExecStart runs the agent for this node, socket and datastore; the same unit again is a no-op', async () => {
    const b = box()
    const args = ['agent', 'install', '--node', 'node-7', '--socket', b.sock, '--unit-dir', b.units]
    const r = await runCli(b.db, args)
    assert.equal(r.status, 0, r.stderr)
    assert.match(r.stdout, /^Wrote .*ipamctl-agent\.service; run: systemctl daemon-reload/)
    const unit = fs.readFileSync(unitFile(b.units), 'utf8')
    const words = execStart(unit)
    assert.deepEqual(words.slice(2), ['agent', 'run', '--node', 'node-7', '--socket', b.sock, '--datastore-path', b.db])
    assert.match(unit, /^WantedBy=multi-user\.target$/m)

    // What systemd would start: a real agent that answers on the socket.
    await runCli(b.db, ['pool', 'create', 'p', '--cidr', '10.196.30.0/24'])
    const agent = spawn(words[0]!, words.slice(1), {env: {PATH: process.env.PATH}, stdio: ['ignore', 'ignore', 'pipe']})
    try {
      await new Promise<void>((resolve, reject) => {
        let err = ''
        agent.stderr!.on('data', (d: Buffer) => {
          err += d
          if (err.includes('ready on')) resolve()
        })
        agent.on('exit', (code) => reject(new Error(`agent exited ${code}: ${err}`)))
      })
      const st = await runCli(b.db, ['agent', 'status', '--socket', b.sock, '-o', 'json'])
      assert.equal(st.status, 0, st.stderr)
      assert.equal((JSON.parse(st.stdout) as {node: string}).node, 'node-7')
    } finally {
      agent.kill('SIGTERM')
    }

    const again = await runCli(b.db, args)
    assert.equal(again.status, 0, again.stderr)
    assert.match(again.stdout, /is up to date\n$/)
  })

  it('a different unit of that name: refused with one line (exit 4) and left as it was; --force replaces it', async () => {
    const b = box()
    fs.writeFileSync(unitFile(b.units), '[Service]\nExecStart=/usr/local/bin/my-own-agent\n')
    const args = ['agent', 'install', '--node', 'node-7', '--socket', b.sock, '--unit-dir', b.units]
    const r = await runCli(b.db, args)
    assertCleanError(r, 4, /ipamctl-agent\.service exists and differs; pass --force to replace it/)
    assert.equal(fs.readFileSync(unitFile(b.units), 'utf8'), '[Service]\nExecStart=/usr/local/bin/my-own-agent\n')
    const dry = await runCli(b.db, [...args, '--dry-run'])
    assert.match(dry.stdout, /^ExecStart=.* agent run --node node-7 /m)
    assert.equal(fs.readFileSync(unitFile(b.units), 'utf8'), '[Service]\nExecStart=/usr/local/bin/my-own-agent\n')
    const forced = await runCli(b.db, [...args, '--force'])
    assert.equal(forced.status, 0, forced.stderr)
    assert.equal(fs.readFileSync(unitFile(b.units), 'utf8'), dry.stdout)
    assert.deepEqual(fs.readdirSync(b.units), ['ipamctl-agent.service'], 'no temporary file left')
  })

  it('settings from a config file are referenced, never copied; etcd credentials from the environment are refused', async () => {
    const b = box()
    const cfg = path.join(b.dir, 'ipamctl.cfg')
    fs.writeFileSync(
      cfg,
      `apiVersion: projectcalico.org/v3\nkind: CalicoAPIConfig\nspec:\n  datastoreType: etcdv3\n  etcdEndpoints: http://127.0.0.1:2379\n  etcdUsername: ipam\n  etcdPassword: s3cret-pw\n`,
      {mode: 0o600},
    )
    const args = ['agent', 'install', '--node', 'n', '--unit-dir', b.units, '--dry-run']
    const r = await runCli(b.db, [...args, '--config', cfg], {env: {IPAMCTL_DATASTORE_PATH: undefined}})
    assert.equal(r.status, 0, r.stderr)
    assert.match(r.stdout, new RegExp(`agent run --node n --socket /run/ipamctl/agent.sock --config ${cfg}$`, 'm'))
    assert.doesNotMatch(r.stdout, /s3cret|ipam\b.*etcd/)
    const env = await runCli(b.db, args, {
      env: {DATASTORE_TYPE: 'etcdv3', ETCD_USERNAME: 'ipam', ETCD_PASSWORD: 's3cret-pw'},
    })
    assertCleanError(env, 2, /etcd credentials from ETCD_USERNAME and ETCD_PASSWORD would be written into the unit/)
    assert.deepEqual(fs.readdirSync(b.units), [])
  })
})
