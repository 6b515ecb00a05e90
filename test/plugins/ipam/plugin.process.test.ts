// Black-box tests of the REAL plugin executable: `node bin/ipamctl-ipam.cjs` is started the way a container
// runtime starts a CNI plugin (a clean environment with the CNI_* variables, the netconf on stdin) against a
// temp embedded datastore named by the netconf's `datastore_path`. The datastore is inspected in-process.
import {type ProcResult, runProcess} from '../../support/process.ts'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {after, before, describe, it} from 'node:test'
import {makeCtx} from '../../../src/lib/ipam/context.ts'
import {createPools} from '../../../src/lib/ipam/pool-admin.ts'
import {ipsByHandle, ipStatus} from '../../../src/lib/ipam/query.ts'
import {keys} from '../../../src/lib/store/keys.ts'
import {SqliteStore} from '../../../src/lib/store/sqlite.ts'
import {ensureBuilt, ROOT} from '../../commands/helpers.ts'

const BIN = path.join(ROOT, 'bin', 'ipamctl-ipam.cjs')
const TRACE = path.join(ROOT, 'test', 'support', 'trace-modules.mjs')
const NET = 'k8s-pod-network'

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-cni-proc-'))
after(() => fs.rmSync(tmp, {recursive: true, force: true}))

type Proc = ProcResult

/** Start a process with exactly `env` (plus PATH), write `stdin`, collect everything. */
function exec(args: readonly string[], env: Record<string, string | undefined>, stdin = ''): Promise<Proc> {
  const clean: NodeJS.ProcessEnv = {PATH: process.env.PATH}
  for (const [k, v] of Object.entries(env)) if (v !== undefined) clean[k] = v
  return runProcess(process.execPath, args, {cwd: ROOT, env: clean, stdin})
}

interface Sandbox {
  db: string
  conf(extra?: Record<string, unknown>, ipam?: Record<string, unknown>): string
  plugin(env: Record<string, string | undefined>, stdin: string, nodeArgs?: string[]): Promise<Proc>
  add(cid: string, opts?: {version?: string; ipam?: Record<string, unknown>; args?: string}): Promise<Proc>
  del(cid: string, opts?: {args?: string}): Promise<Proc>
  /** Open the datastore for a look, then close it again. */
  inspect<T>(fn: (ctx: ReturnType<typeof makeCtx>) => Promise<T>): Promise<T>
}

let boxes = 0
async function sandbox(): Promise<Sandbox> {
  const dir = path.join(tmp, `box${++boxes}`)
  fs.mkdirSync(dir)
  const db = path.join(dir, 'ipam.db')
  const store = SqliteStore.open(db)
  await createPools(makeCtx(store), [
    {name: 'default-ipv4-ippool', cidr: '10.65.0.0/16'},
    {name: 'default-ipv6-ippool', cidr: 'fd00:65::/48'},
  ])
  await store.close()
  const sb: Sandbox = {
    db,
    conf: (extra = {}, ipam = {}) =>
      JSON.stringify({
        cniVersion: '1.0.0',
        name: NET,
        type: 'calico',
        nodename: 'node-1',
        datastore_path: db,
        ipam_lock_file: path.join(dir, 'ipam.lock'),
        ...extra,
        ipam: {type: 'calico-ipam', ...ipam},
      }),
    plugin: (env, stdin, nodeArgs = []) => exec([...nodeArgs, BIN], env, stdin),
    add: (cid, o = {}) =>
      sb.plugin(
        {
          CNI_COMMAND: 'ADD',
          CNI_CONTAINERID: cid,
          CNI_NETNS: `/var/run/netns/${cid}`,
          CNI_IFNAME: 'eth0',
          CNI_PATH: '/opt/cni/bin',
          CNI_ARGS: o.args,
        },
        sb.conf({cniVersion: o.version ?? '1.0.0'}, o.ipam),
      ),
    del: (cid, o = {}) =>
      sb.plugin(
        {CNI_COMMAND: 'DEL', CNI_CONTAINERID: cid, CNI_IFNAME: 'eth0', CNI_PATH: '/opt/cni/bin', CNI_ARGS: o.args},
        sb.conf(),
      ),
    async inspect(fn) {
      const s = SqliteStore.open(db)
      try {
        return await fn(makeCtx(s))
      } finally {
        await s.close()
      }
    },
  }
  return sb
}

function ok(p: Proc): unknown {
  assert.equal(p.code, 0, `plugin failed (${p.code}):\nstdout: ${p.stdout}\nstderr: ${p.stderr}`)
  return p.stdout === '' ? undefined : JSON.parse(p.stdout)
}

function cniError(p: Proc): {cniVersion: string; code: number; msg: string; details?: string} {
  assert.equal(p.code, 1, `expected exit 1, got ${p.code}: ${p.stdout}${p.stderr}`)
  return JSON.parse(p.stdout)
}

const BLOCK_V4 = /^10\.65\.\d{1,3}\.\d{1,3}\/26$/
const BLOCK_V6 = /^fd00:65:[0-9a-f:]+\/122$/
const ipOnly = (cidr: string) => cidr.split('/')[0]!

before(() => ensureBuilt())

describe('ipamctl-ipam process: ADD in each result version', () => {
  let sb: Sandbox
  before(async () => {
    sb = await sandbox()
  })
  const seen = new Set<string>()

  for (const version of ['0.3.1', '0.4.0', '1.0.0', '1.1.0']) {
    it(`${version}: a block-masked address and its route`, async () => {
      const p = await sb.add(`v${version.replace(/\./g, '')}`, {version})
      const r = ok(p) as {
        cniVersion: string
        ips: {version?: string; address: string}[]
        routes: {dst: string}[]
        dns: object
      }
      assert.equal(r.cniVersion, version)
      assert.equal(r.ips.length, 1)
      assert.match(r.ips[0]!.address, BLOCK_V4)
      assert.equal(r.ips[0]!.version, version.startsWith('0.') ? '4' : undefined)
      assert.deepEqual(r.routes, [{dst: r.ips[0]!.address}])
      assert.deepEqual(r.dns, {})
      assert.ok(!p.stdout.endsWith('\n') && p.stdout.includes('\n    "cniVersion"'), 'Go-style 4-space indentation')
      assert.ok(!seen.has(r.ips[0]!.address), 'each container gets a different address')
      seen.add(r.ips[0]!.address)
    })
  }

  it('0.2.0: ip4 with its routes', async () => {
    const r = ok(await sb.add('v020', {version: '0.2.0'})) as {
      cniVersion: string
      ip4: {ip: string; routes: {dst: string}[]}
      ips?: unknown
    }
    assert.equal(r.cniVersion, '0.2.0')
    assert.match(r.ip4.ip, BLOCK_V4)
    assert.deepEqual(r.ip4.routes, [{dst: r.ip4.ip}])
    assert.equal(r.ips, undefined)
  })

  it('dual stack with assign_ipv6 "true"', async () => {
    const r = ok(await sb.add('dual', {ipam: {assign_ipv6: 'true'}})) as {
      ips: {address: string}[]
      routes: {dst: string}[]
    }
    assert.equal(r.ips.length, 2)
    assert.match(r.ips[0]!.address, BLOCK_V4)
    assert.match(r.ips[1]!.address, BLOCK_V6)
    assert.deepEqual(
      r.routes,
      r.ips.map((i) => ({dst: i.address})),
    )
    const held = await sb.inspect((ctx) => ipsByHandle(ctx, `${NET}.dual`))
    assert.deepEqual(held.sort(), r.ips.map((i) => ipOnly(i.address)).sort())
  })

  it('IP= gives exactly that address as /32', async () => {
    const r = ok(
      await sb.add('fixed', {args: 'IgnoreUnknown=1;K8S_POD_NAMESPACE=prod;K8S_POD_NAME=web-0;IP=10.65.200.7'}),
    ) as {ips: {address: string}[]}
    assert.deepEqual(r.ips, [{address: '10.65.200.7/32'}])
    const st = await sb.inspect((ctx) => ipStatus(ctx, '10.65.200.7'))
    assert.equal(st.state, 'assigned')
    if (st.state === 'assigned') {
      assert.equal(st.owner.handle, `${NET}.fixed`)
      assert.equal(st.owner.attrs.pod, 'web-0')
      assert.equal(st.owner.attrs.namespace, 'prod')
      assert.equal(st.owner.attrs.node, 'node-1')
      assert.match(st.owner.attrs.timestamp!, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)? \+0000 UTC$/)
    }
  })
})

describe('ipamctl-ipam process: DEL, CHECK, GC, STATUS, errors', () => {
  let sb: Sandbox
  before(async () => {
    sb = await sandbox()
  })

  it('DEL releases the address (the store shows it free), and a second DEL exits 0', async () => {
    const r = ok(await sb.add('to-delete')) as {ips: {address: string}[]}
    const ip = ipOnly(r.ips[0]!.address)
    assert.equal((await sb.inspect((ctx) => ipStatus(ctx, ip))).state, 'assigned')
    const d1 = await sb.del('to-delete')
    assert.deepEqual([d1.code, d1.stdout], [0, ''])
    assert.equal((await sb.inspect((ctx) => ipStatus(ctx, ip))).state, 'free')
    const d2 = await sb.del('to-delete')
    assert.deepEqual([d2.code, d2.stdout], [0, ''])
  })

  it('DEL of a never-added container exits 0', async () => {
    const d = await sb.del('never-added')
    assert.deepEqual([d.code, d.stdout], [0, ''])
  })

  it('CHECK passes with the right prevResult and fails with a wrong one', async () => {
    const added = ok(await sb.add('checked', {version: '0.4.0'})) as {ips: {address: string}[]}
    const env = {
      CNI_COMMAND: 'CHECK',
      CNI_CONTAINERID: 'checked',
      CNI_NETNS: '/var/run/netns/checked',
      CNI_IFNAME: 'eth0',
      CNI_PATH: '/opt/cni/bin',
    }
    const good = await sb.plugin(env, sb.conf({cniVersion: '0.4.0', prevResult: added}))
    assert.deepEqual([good.code, good.stdout], [0, ''])
    const wrong = {...added, ips: [{version: '4', address: '10.65.250.250/26'}]}
    const bad = cniError(await sb.plugin(env, sb.conf({cniVersion: '0.4.0', prevResult: wrong})))
    assert.equal(bad.code, 999)
    assert.match(
      bad.msg,
      /^IPAM CHECK failed: handle k8s-pod-network\.checked holds \[10\.65\.[\d.]+\] but prevResult lists \[10\.65\.250\.250\]$/,
    )
    const old = cniError(await sb.plugin(env, sb.conf({cniVersion: '0.3.1', prevResult: added})))
    assert.deepEqual([old.code, old.msg], [1, 'config version does not allow CHECK'])
  })

  it('GC releases only the attachments not listed', async () => {
    const ips: Record<string, string> = {}
    for (const c of ['gc-keep', 'gc-drop1', 'gc-drop2'])
      ips[c] = ipOnly((ok(await sb.add(c)) as {ips: {address: string}[]}).ips[0]!.address)
    const live = await sb.inspect(async (ctx) =>
      (await ctx.store.listKeys(keys.handlePrefix())).map((k) => k.slice(keys.handlePrefix().length)),
    )
    const valid = live
      .filter((h) => !h.startsWith(`${NET}.gc-drop`))
      .map((h) => ({containerID: h.slice(NET.length + 1), ifname: 'eth0'}))
    const p = await sb.plugin(
      {CNI_COMMAND: 'GC', CNI_PATH: '/opt/cni/bin'},
      sb.conf({cniVersion: '1.1.0', 'cni.dev/valid-attachments': valid}),
    )
    assert.deepEqual([p.code, p.stdout], [0, ''])
    const states = await sb.inspect(async (ctx) =>
      Object.fromEntries(
        await Promise.all(Object.entries(ips).map(async ([c, ip]) => [c, (await ipStatus(ctx, ip)).state])),
      ),
    )
    assert.deepEqual(states, {'gc-keep': 'assigned', 'gc-drop1': 'free', 'gc-drop2': 'free'})
    const after = await sb.inspect(async (ctx) => (await ctx.store.listKeys(keys.handlePrefix())).length)
    assert.equal(after, live.length - 2)
  })

  it('STATUS exits 0 with no output', async () => {
    const p = await sb.plugin({CNI_COMMAND: 'STATUS'}, sb.conf({cniVersion: '1.1.0'}))
    assert.deepEqual([p.code, p.stdout], [0, ''])
  })

  it('bad netconf JSON: code 6 on stdout, exit 1, nothing allocated', async () => {
    const before = await sb.inspect((ctx) => ctx.store.revision())
    const p = await sb.plugin(
      {CNI_COMMAND: 'ADD', CNI_CONTAINERID: 'badjson', CNI_NETNS: '/x', CNI_IFNAME: 'eth0'},
      '{"cniVersion": "1.0.0", "name": ',
    )
    const e = cniError(p)
    assert.equal(e.code, 6)
    assert.match(e.msg, /^error unmarshall network config: /)
    assert.equal(await sb.inspect((ctx) => ctx.store.revision()), before)
    await assert.rejects(
      sb.inspect((ctx) => ipsByHandle(ctx, `${NET}.badjson`)),
      /not found/,
    )
  })

  it('missing CNI_CONTAINERID: code 4 naming it; unsupported version: code 1', async () => {
    const e = cniError(await sb.plugin({CNI_COMMAND: 'ADD', CNI_NETNS: '/x', CNI_IFNAME: 'eth0'}, sb.conf()))
    assert.deepEqual([e.code, e.msg], [4, 'required env variables [CNI_CONTAINERID] missing'])
    const v = cniError(
      await sb.plugin(
        {CNI_COMMAND: 'ADD', CNI_CONTAINERID: 'v99', CNI_NETNS: '/x', CNI_IFNAME: 'eth0'},
        sb.conf({cniVersion: '99.0.0'}),
      ),
    )
    assert.equal(v.code, 1)
  })

  it('VERSION and the about line', async () => {
    const v = await sb.plugin({CNI_COMMAND: 'VERSION'}, '')
    assert.equal(v.code, 0)
    assert.deepEqual(JSON.parse(v.stdout), {
      cniVersion: '1.1.0',
      supportedVersions: ['0.1.0', '0.2.0', '0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'],
    })
    const about = await sb.plugin({}, '')
    assert.equal(about.code, 0)
    assert.equal(about.stdout, '')
    assert.match(about.stderr, /^ipamctl-ipam v\S+: .*\nCNI protocol versions supported: 0\.1\.0, .*1\.1\.0\n$/)
  })
})

describe('ipamctl-ipam process: concurrency', () => {
  it('20 parallel ADDs on one node get 20 distinct addresses; 20 parallel DELs free them', async () => {
    const sb = await sandbox()
    const ids = Array.from({length: 20}, (_, i) => `par${i}`)
    const results = await Promise.all(ids.map((c) => sb.add(c)))
    const addrs = results.map((p) => ipOnly((ok(p) as {ips: {address: string}[]}).ips[0]!.address))
    assert.equal(new Set(addrs).size, 20, `addresses: ${addrs.join(' ')}`)
    const held = await sb.inspect(async (ctx) => Promise.all(ids.map((c) => ipsByHandle(ctx, `${NET}.${c}`))))
    assert.deepEqual(
      held,
      addrs.map((a) => [a]),
    )
    const dels = await Promise.all(ids.map((c) => sb.del(c)))
    for (const d of dels) assert.deepEqual([d.code, d.stdout], [0, ''])
    const states = await sb.inspect(async (ctx) => Promise.all(addrs.map(async (a) => (await ipStatus(ctx, a)).state)))
    assert.deepEqual(new Set(states), new Set(['free']))
  })
})

describe('ipamctl-ipam process: start-up cost', () => {
  const FORBIDDEN = /\/node_modules\/(@oclif\/|oclif\/|etcd3\/|chalk\/|inquirer\/|@inquirer\/|cli-table3\/)/

  async function traced(
    sb: Sandbox,
    env: Record<string, string>,
    stdin: string,
  ): Promise<{p: Proc; modules: string[]}> {
    const file = path.join(tmp, `trace-${Math.random().toString(16).slice(2)}.txt`)
    const p = await sb.plugin({...env, IPAMCTL_TRACE_MODULES: file}, stdin, ['--import', TRACE])
    const modules = fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean) : []
    return {p, modules}
  }

  it('an embedded-store ADD loads neither oclif nor etcd3 (nor chalk, inquirer, cli-table3)', async () => {
    const sb = await sandbox()
    const {p, modules} = await traced(
      sb,
      {CNI_COMMAND: 'ADD', CNI_CONTAINERID: 'traced', CNI_NETNS: '/x', CNI_IFNAME: 'eth0'},
      sb.conf(),
    )
    ok(p)
    assert.ok(
      modules.some((m) => /\/(dist\/plugins\/ipam\/main\.js|bin\/start\.cjs)$/.test(m)),
      'the trace saw the plugin load',
    )
    assert.ok(
      modules.some((m) => m.includes('/node_modules/better-sqlite3/')),
      'the trace sees packages',
    )
    assert.deepEqual(
      modules.filter((m) => FORBIDDEN.test(m)),
      [],
    )
  })

  it('(control) an etcdv3 netconf does load etcd3, and STATUS reports the unreachable etcd as code 50', async () => {
    const sb = await sandbox()
    const {p, modules} = await traced(
      sb,
      {CNI_COMMAND: 'STATUS'},
      sb.conf({cniVersion: '1.1.0', datastore_type: 'etcdv3', etcd_endpoints: 'http://127.0.0.1:1'}),
    )
    const e = cniError(p)
    assert.deepEqual([e.code, e.msg], [50, 'plugin not available'])
    assert.ok(
      modules.some((m) => m.includes('/node_modules/etcd3/')),
      'etcd3 is loaded when etcd is configured',
    )
    assert.equal(modules.filter((m) => /\/node_modules\/(@oclif|oclif)\//.test(m)).length, 0)
  })

  it('measures an IPAM ADD against `node -e 0` (printed, not asserted)', async (t) => {
    const sb = await sandbox()
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
    const runs = 10
    const add: number[] = []
    const bare: number[] = []
    for (let i = 0; i < runs; i++) {
      const p = await sb.add(`lat${i}`)
      ok(p)
      add.push(p.ms)
      const n = await exec(['-e', '0'], {})
      assert.equal(n.code, 0)
      bare.push(n.ms)
    }
    const msg = `IPAM ADD median ${median(add).toFixed(1)} ms vs node -e 0 median ${median(bare).toFixed(1)} ms over ${runs} runs (plugin overhead ≈ ${(median(add) - median(bare)).toFixed(1)} ms)`
    t.diagnostic(msg)
  })
})
