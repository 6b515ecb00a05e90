// `ipamctl agent run` / `agent status` as real processes on an embedded store, with the real ipamctl-ipam plugin
// sending its ADDs and DELs through the agent's socket: batching, metrics against `ipam show`, bad requests,
// shutdown, a kill -9 in the middle of a batch, and the plugin's fallback to the datastore.
import assert from 'node:assert/strict'
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import {after, before, describe, it} from 'node:test'
import {checkIpam} from '../../src/lib/ipam/check.ts'
import {makeCtx} from '../../src/lib/ipam/context.ts'
import {ipsByHandle, listBlocks} from '../../src/lib/ipam/query.ts'
import {keys} from '../../src/lib/store/keys.ts'
import {SqliteStore} from '../../src/lib/store/sqlite.ts'
import {datastoreId} from '../../src/lib/agent-client/protocol.ts'
import {type AgentProc, addEnv, ipamPluginProc, parseMetrics, resultIp, startAgentProc} from '../support/agent.ts'
import {assertCleanError, ensureBuilt, type Sandbox, sandbox} from './helpers.ts'
import {notInfo} from '../support/log.ts'

const NET = 'net1'
const TRACE = path.join(import.meta.dirname, '..', 'support', 'trace-modules.mjs')
const NODE = 'node-a'

function netconf(sb: Sandbox, socket: string, extra: Record<string, unknown> = {}) {
  return {
    cniVersion: '1.0.0',
    name: NET,
    type: 'ipamctl-ipam',
    nodename: NODE,
    datastore_path: sb.db,
    ipam_lock_file: path.join(sb.dir, 'ipam.lock'),
    ipamctl_agent_socket: socket,
    ipam: {type: 'ipamctl-ipam'},
    ...extra,
  }
}

/** Read the store in this process (WAL: safe next to the running agent). */
async function inspect<T>(db: string, fn: (ctx: ReturnType<typeof makeCtx>) => Promise<T>): Promise<T> {
  const s = SqliteStore.open(db)
  try {
    return await fn(makeCtx(s))
  } finally {
    await s.close()
  }
}

/** A raw exchange on the socket: write `bytes`, read until the agent closes. */
function raw(socket: string, bytes: string | Buffer): Promise<{status: number; body: unknown}> {
  return new Promise((resolve, reject) => {
    const c = net.createConnection(socket)
    const chunks: Buffer[] = []
    c.on('connect', () => c.write(bytes))
    c.on('data', (b) => chunks.push(b))
    c.on('error', (e: NodeJS.ErrnoException) => (e.code === 'EPIPE' || e.code === 'ECONNRESET' ? undefined : reject(e)))
    c.on('close', () => {
      const text = Buffer.concat(chunks).toString()
      const status = Number(/^HTTP\/1\.1 (\d+)/.exec(text)?.[1] ?? 0)
      const body = text.slice(text.indexOf('\r\n\r\n') + 4)
      resolve({status, body: body ? JSON.parse(body) : undefined})
    })
  })
}

const post = (op: string, body: string) =>
  `POST /v1/${op} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`

before(() => ensureBuilt())

describe('ipamctl agent on an embedded store', () => {
  let sb: Sandbox
  let agent: AgentProc
  let socket: string
  const added = new Map<string, string>()

  before(async () => {
    sb = sandbox()
    await sb.ok('pool', 'create', 'p4', '--cidr', '10.70.0.0/16')
    await sb.ok('reservation', 'create', 'held', '--cidr', '10.70.255.0/30')
    socket = path.join(sb.dir, 'agent.sock')
    agent = await startAgentProc(
      ['--node', NODE, '--socket', socket, '--metrics-address', '127.0.0.1:0', '--leak-scan-interval', '200ms'],
      {IPAMCTL_DATASTORE_PATH: sb.db},
    )
  })
  after(() => agent?.proc.kill('SIGKILL'))

  it('is ready with a 0660 socket and refuses a second agent on it (exit 4)', async () => {
    assert.equal(fs.statSync(socket).mode & 0o777, 0o660)
    assert.ok(agent.metricsUrl?.startsWith('http://127.0.0.1:'), agent.log())
    const second = await startAgentProc(['--node', NODE, '--socket', socket, '--metrics-address', ''], {
      IPAMCTL_DATASTORE_PATH: sb.db,
    }).catch((e: {code: number; log: string}) => e)
    assert.equal((second as {code: number}).code, 4)
    assert.match(
      (second as {log: string}).log,
      /^Error: another agent is already serving on .*agent\.sock; stop it first\n$/,
    )
  })

  it('50 parallel ipamctl-ipam ADDs: 50 distinct addresses, fewer datastore transactions than requests', async (t) => {
    const ids = Array.from({length: 50}, (_, i) => `par${i}`)
    const runs = await Promise.all(ids.map((c) => ipamPluginProc(addEnv(c), netconf(sb, socket))))
    runs.forEach((r, i) => {
      assert.equal(r.code, 0, `${ids[i]}: ${r.stdout}${r.stderr}`)
      assert.deepEqual(notInfo(r.stderr), [], 'no fallback, no warnings')
      added.set(ids[i]!, resultIp(r.stdout))
    })
    assert.equal(new Set(added.values()).size, 50)
    const held = await inspect(sb.db, (ctx) => Promise.all(ids.map((c) => ipsByHandle(ctx, `${NET}.${c}`))))
    assert.deepEqual(
      held,
      ids.map((c) => [added.get(c)]),
    )
    const st = JSON.parse(await sb.ok('agent', 'status', '--socket', socket, '-o', 'json'))
    assert.equal(st.node, NODE)
    assert.equal(st.counters.batchedRequests, 50)
    assert.ok(st.counters.blockTransactions > 0)
    // The first request claims the block (its own transactions); everything else shares block transactions.
    assert.ok(
      st.counters.datastoreRoundTrips.txn < 50,
      `txns ${st.counters.datastoreRoundTrips.txn} for 50 requests (batches ${st.counters.batches})`,
    )
    t.diagnostic(
      `embedded: ${st.counters.batchedRequests} requests, ${st.counters.batches} batches, ${st.counters.blockTransactions} batched block transactions, ${st.counters.datastoreRoundTrips.txn} transactions in all, ${st.counters.casConflicts} CAS conflicts`,
    )
    const done = Date.now() / 1000
    // The leak figures come from a background scan, never from the scrape: wait for one that began after the ADDs.
    let m = parseMetrics(await (await fetch(agent.metricsUrl!)).text())
    for (let i = 0; i < 100 && m.get('ipamctl_leak_scan_timestamp_seconds')! <= done; i++) {
      await new Promise((r) => setTimeout(r, 100))
      m = parseMetrics(await (await fetch(agent.metricsUrl!)).text())
    }
    assert.ok(m.get('ipamctl_leak_scan_timestamp_seconds')! > done, 'a leak scan after the ADDs')
    assert.equal(m.get('ipamctl_agent_requests_total{op="assign",outcome="ok"}'), 50)
    assert.equal(m.get('ipamctl_agent_batch_size_sum'), 50)
    assert.ok(m.get('ipamctl_agent_block_transactions_total')! < 50)
    assert.equal(m.get('ipamctl_allocation_duration_seconds_count{op="assign",outcome="ok"}'), 50)
    // No endpoints, so all 50 are candidates.
    assert.equal(m.get('ipamctl_leak_candidate_addresses'), 50)
    assert.equal(m.get('ipamctl_leaked_handles'), 0)
  })

  it('metrics equal `ipam show -o json` and `--show-borrowed`, number for number', async () => {
    // A borrowed address: one of node-a's block given to another node.
    const block = await inspect(sb.db, async (ctx) => (await listBlocks(ctx, {host: NODE}))[0]!.block)
    const last = `10.70.${(block.cidr.base >> 8n) & 255n}.${Number(block.cidr.base & 255n) + 63}`
    await sb.ok('ipam', 'assign', '--host', 'node-b', '--ip', last, '--handle', 'borrower')
    const m = parseMetrics(await (await fetch(agent.metricsUrl!)).text())
    const show = JSON.parse(await sb.ok('ipam', 'show', '-o', 'json')) as {
      name: string
      cidr: string
      capacity: number
      inUse: number
      free: number
      reserved: number
    }[]
    const borrowed = JSON.parse(await sb.ok('ipam', 'show', '--show-borrowed', '-o', 'json')) as {borrowed: unknown[]}
    assert.equal(show.length, 1)
    const p = show[0]!
    const l = `{pool="${p.name}",cidr="${p.cidr}"}`
    assert.deepEqual(
      ['capacity', 'in_use', 'free', 'reserved', 'borrowed'].map((k) => m.get(`ipamctl_pool_${k}_addresses${l}`)),
      [p.capacity, p.inUse, p.free, p.reserved, borrowed.borrowed.length],
    )
    assert.deepEqual([p.inUse, p.reserved, borrowed.borrowed.length], [51, 4, 1], 'the comparison is not of zeros')
    assert.equal(m.get(`ipamctl_node_blocks{node="${NODE}"}`), 1)
    assert.ok(m.get('ipamctl_datastore_round_trips_total{op="txn"}')! > 0)
    assert.equal(m.get('ipamctl_datastore_cas_conflicts_total'), 0)
  })

  it('bad requests get JSON errors, and the agent serves on', async () => {
    const garbage = await raw(socket, 'garbage\x00\xff\r\n\r\n')
    assert.equal(garbage.status, 400)
    assert.match((garbage.body as {error: {message: string}}).error.message, /malformed HTTP request/)
    const huge = await raw(socket, post('assign', `{"x":"${'a'.repeat(2 * 1024 * 1024)}"}`))
    assert.deepEqual(
      [huge.status, (huge.body as {error: {message: string}}).error.message],
      [413, 'request body over 1048576 bytes'],
    )
    const unknown = await raw(socket, post('frobnicate', '{}'))
    assert.deepEqual(
      [unknown.status, (unknown.body as {error: {direct: boolean}}).error.direct],
      [404, true],
      'a newer plugin falls back to the datastore',
    )
    const notJson = await raw(socket, post('assign', '{"node":'))
    assert.equal(notJson.status, 400)
    const types = await raw(
      socket,
      post('assign', JSON.stringify({node: NODE, datastore: 'x', handle: 'h', num4: 'one', num6: 0})),
    )
    assert.deepEqual(
      [types.status, (types.body as {error: {message: string}}).error.message],
      [400, 'agent request: "num4" must be an integer from 0 to 65536'],
    )
    const array = await raw(socket, post('release', '[1,2]'))
    assert.equal(array.status, 400)
    const other = await raw(
      socket,
      post('assign', JSON.stringify({node: 'node-z', datastore: 'x', handle: 'h', num4: 1, num6: 0})),
    )
    assert.deepEqual([other.status, (other.body as {error: {direct: boolean}}).error.direct], [421, true])
    // The main plugin's WorkloadEndpoint operations: records are checked before they become keys.
    const ds = datastoreId({type: 'embedded', path: sb.db, etcdEndpoints: []})
    const wep = (namespace: string, node = NODE) =>
      JSON.stringify({metadata: {name: 'w', namespace}, spec: {node, containerID: 'c'}})
    const put = (endpoint: string) =>
      raw(socket, post('endpoint-put', JSON.stringify({node: NODE, datastore: ds, endpoint})))
    const slash = await put(wep('team/../x'))
    assert.deepEqual(
      [slash.status, (slash.body as {error: {message: string}}).error.message],
      [400, 'agent request: "endpoint" needs a metadata.namespace and metadata.name without "/"'],
    )
    assert.equal((await put('{"metadata":')).status, 400)
    const elsewhere = await put(wep('team', 'node-z'))
    assert.deepEqual([elsewhere.status, (elsewhere.body as {error: {direct: boolean}}).error.direct], [421, true])
    const take = (name: string) =>
      raw(
        socket,
        post('endpoint-take', JSON.stringify({node: NODE, datastore: ds, namespace: 'team', name, containerID: 'c'})),
      )
    assert.equal((await take('../w')).status, 400)
    assert.deepEqual(await take('nobody'), {status: 200, body: {endpoint: null, stale: false}})
    assert.equal(
      (
        await inspect(sb.db, async (ctx) =>
          ctx.store.listKeys('/calico/resources/v3/projectcalico.org/workloadendpoints/'),
        )
      ).length,
      0,
      'nothing written',
    )
    const r = await ipamPluginProc(addEnv('after-garbage'), netconf(sb, socket))
    assert.equal(r.code, 0, r.stdout + r.stderr)
    added.set('after-garbage', resultIp(r.stdout))
    assert.equal(agent.proc.exitCode, null)
  })

  it("an IPAM error answered by the agent is the plugin's error (no direct retry)", async () => {
    const r = await ipamPluginProc(
      addEnv('bad-pool'),
      netconf(sb, socket, {ipam: {type: 'ipamctl-ipam', ipv4_pools: ['10.99.0.0/16']}}),
    )
    assert.equal(r.code, 1)
    assert.match(JSON.parse(r.stdout).msg, /10\.99\.0\.0\/16/)
    assert.doesNotMatch(r.stderr, /datastore directly|WARNING/, 'answered by the agent')
  })

  it('DEL goes through the agent and frees the addresses', async () => {
    for (const c of ['par0', 'par1']) {
      const r = await ipamPluginProc({...addEnv(c, 'DEL'), CNI_NETNS: undefined}, netconf(sb, socket))
      assert.deepEqual([r.code, r.stdout, notInfo(r.stderr)], [0, '', []])
    }
    const st = await inspect(sb.db, (ctx) =>
      Promise.all(['par0', 'par1'].map((c) => ipsByHandle(ctx, `${NET}.${c}`).catch((e: Error) => e.message))),
    )
    assert.deepEqual(st, [`handle ${NET}.par0 not found`, `handle ${NET}.par1 not found`])
    const m = parseMetrics(await (await fetch(agent.metricsUrl!)).text())
    assert.equal(m.get('ipamctl_release_duration_seconds_count{outcome="ok"}'), 2)
  })

  it('an ADD through the agent loads neither SQLite nor node:net or node:http: the native exchange does the socket', async () => {
    const file = path.join(sb.dir, 'trace.txt')
    const r = await ipamPluginProc({...addEnv('traced'), IPAMCTL_TRACE_MODULES: file}, netconf(sb, socket), [
      '--import',
      TRACE,
    ])
    assert.equal(r.code, 0, r.stderr)
    assert.deepEqual(notInfo(r.stderr), [], 'answered by the agent')
    const modules = fs.readFileSync(file, 'utf8').split('\n').filter(Boolean)
    assert.ok(
      modules.some((m) => m.endsWith('/unix-exchange/build/Release/unix_exchange.node')),
      `the addon was not loaded: ${modules.join(' ')}`,
    )
    assert.deepEqual(
      modules.filter((m) => /better-sqlite3|^(node:)?(net|http)$/.test(m)),
      [],
    )
  })

  it('agent status: a table when up', async () => {
    const out = await sb.ok('agent', 'status', '--socket', socket)
    assert.match(out, /\| Agent +\| up \(pid \d+/)
    assert.match(out, new RegExp(`\\| Node +\\| ${NODE} `))
  })

  it('SIGTERM: exit 0 and the socket removed; status then says down (exit 5); ADD falls back to the datastore', async () => {
    agent.proc.kill('SIGTERM')
    assert.equal(await agent.exited, 0)
    assert.match(agent.log(), /SIGTERM: finishing requests in flight\n.*stopped\n$/)
    assert.equal(fs.existsSync(socket), false)
    const st = await sb.run('agent', 'status', '--socket', socket)
    assertCleanError(st, 5, /the ipamctl agent is down: nothing answers on .*agent\.sock \(ENOENT\)/)
    const r = await ipamPluginProc(addEnv('no-agent'), netconf(sb, socket))
    assert.equal(r.code, 0, r.stdout)
    assert.deepEqual(notInfo(r.stderr), [], 'no socket file: the agent is not tried at all')
    const viaAgent = JSON.parse(
      (await ipamPluginProc(addEnv('par2', 'ADD'), netconf(sb, socket, {ipamctl_agent_socket: ''}))).stdout,
    )
    const direct = JSON.parse(r.stdout)
    assert.deepEqual(Object.keys(direct), Object.keys(viaAgent))
    assert.match(direct.ips[0].address, /^10\.70\.\d+\.\d+\/26$/)
    assert.deepEqual(direct.routes, [{dst: direct.ips[0].address}])
  })
})

describe('ipamctl agent killed (-9) in the middle of a batch', () => {
  it('the store stays consistent, the plugins fall back without duplicates or leaks, and a restarted agent continues', async () => {
    const sb = sandbox()
    await sb.ok('pool', 'create', 'p4', '--cidr', '10.71.0.0/16')
    const socket = path.join(sb.dir, 'agent.sock')
    const args = ['--node', NODE, '--socket', socket, '--metrics-address', '']
    // Replies are held 10 s after each commit, so the kill lands between commit and reply.
    const agent = await startAgentProc([...args, '--test-hold-replies', '10s'], {IPAMCTL_DATASTORE_PATH: sb.db})
    const ids = Array.from({length: 8}, (_, i) => `k${i}`)
    const runs = Promise.all(ids.map((c) => ipamPluginProc(addEnv(c), netconf(sb, socket))))
    const handles = () => inspect(sb.db, async (ctx) => (await ctx.store.listKeys(keys.handlePrefix())).length)
    for (const until = Date.now() + 20_000; (await handles()) === 0; ) {
      assert.ok(Date.now() < until, 'nothing was committed')
      await new Promise((r) => setTimeout(r, 50))
    }
    agent.proc.kill('SIGKILL')
    assert.equal(await agent.exited, 'SIGKILL')
    const results = await runs
    const got = new Map<string, string>()
    results.forEach((r, i) => {
      assert.equal(r.code, 0, `${ids[i]}: ${r.stdout}${r.stderr}`)
      assert.match(r.stderr, /using the datastore directly/)
      assert.deepEqual(Object.keys(JSON.parse(r.stdout)), ['cniVersion', 'ips', 'routes', 'dns'])
      got.set(ids[i]!, resultIp(r.stdout))
    })
    assert.ok(
      results.some((r) => /already holds/.test(r.stderr)),
      'some request had committed before the kill',
    )
    // A stale socket now: the plugin is refused at connect and goes direct.
    const stale = await ipamPluginProc(addEnv('stale'), netconf(sb, socket))
    assert.equal(stale.code, 0, stale.stdout)
    assert.match(stale.stderr, /ECONNREFUSED; using the datastore directly/)
    got.set('stale', resultIp(stale.stdout))
    // A restarted agent replaces the stale socket and goes on allocating.
    const again = await startAgentProc(args, {IPAMCTL_DATASTORE_PATH: sb.db})
    const more = await Promise.all(['r0', 'r1', 'r2'].map((c) => ipamPluginProc(addEnv(c), netconf(sb, socket))))
    ;['r0', 'r1', 'r2'].forEach((c, i) => {
      assert.equal(more[i]!.code, 0, more[i]!.stdout)
      assert.deepEqual(notInfo(more[i]!.stderr), [])
      got.set(c, resultIp(more[i]!.stdout))
    })
    again.proc.kill('SIGTERM')
    assert.equal(await again.exited, 0)
    assert.equal(new Set(got.values()).size, got.size, `duplicates: ${[...got.values()].join(' ')}`)
    const check = await inspect(sb.db, async (ctx) => {
      const r = await checkIpam(ctx)
      const held = await Promise.all([...got.keys()].map((c) => ipsByHandle(ctx, `${NET}.${c}`)))
      return {r, held}
    })
    assert.deepEqual(
      check.held,
      [...got.values()].map((ip) => [ip]),
      'each attachment holds exactly the address it was given',
    )
    const {r} = check
    assert.deepEqual(
      [r.invalidBlocks, r.leakedHandles, r.missingHandles, r.affinitiesWithoutBlock, r.blocksWithoutAffinity],
      [[], [], [], [], []],
    )
    assert.deepEqual(
      r.allocations.map((a) => a.ip).sort(),
      [...got.values()].sort(),
      'no allocation nobody was told about',
    )
  })
})
