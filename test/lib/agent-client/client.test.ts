// The CNI side of the agent, in-process against stand-in agents on temp sockets: how each outcome of a request
// (nothing listening, an answer, an error answer, a connection cut after the request, a timeout) is told apart,
// and what the IPAM plugin then does. The ambiguous case must never allocate twice for one attachment.
import assert from 'node:assert/strict'
import {spawnSync} from 'node:child_process'
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import {after, beforeEach, describe, it} from 'node:test'
import {agentRequest, agentSocketPresent} from '../../../src/lib/agent-client/client.ts'
import {datastoreId, errorFrom, errorReply, parseAssign, parseRelease} from '../../../src/lib/agent-client/protocol.ts'
import {ipamPlugin} from '../../../src/plugins/ipam/plugin.ts'
import {parseNetConf} from '../../../src/lib/node-ipam/netconf.ts'
import {ExhaustedError, ValidationError} from '../../../src/lib/errors.ts'
import {autoAssign} from '../../../src/lib/ipam/autoassign.ts'
import {type Ctx, makeCtx} from '../../../src/lib/ipam/context.ts'
import {createPools} from '../../../src/lib/ipam/pool-admin.ts'
import {ipsByHandle} from '../../../src/lib/ipam/query.ts'
import {MemoryStore} from '../../../src/lib/store/memory.ts'
import {addEnv, errorOf, runSkel} from '../cni/helpers.ts'

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-agent-client-'))
after(() => fs.rmSync(tmp, {recursive: true, force: true}))
let n = 0
const sockPath = () => path.join(tmp, `s${++n}.sock`)

/** A stand-in agent: an HTTP server on a fresh socket with the given handler. */
async function fakeAgent(
  handler: http.RequestListener,
): Promise<{file: string; close: () => Promise<void>; hits: () => number}> {
  const file = sockPath()
  let hits = 0
  const server = http.createServer((req, res) => {
    hits++
    handler(req, res)
  })
  await new Promise<void>((r) => server.listen(file, r))
  return {file, hits: () => hits, close: () => new Promise((r) => server.close(() => r()))}
}

/** A socket file nobody listens on: its listener was killed (-9) and could not remove it. */
function staleSocket(): string {
  const file = sockPath()
  const r = spawnSync(process.execPath, [
    '-e',
    `require('net').createServer().listen(${JSON.stringify(file)}, () => process.kill(process.pid, 'SIGKILL'))`,
  ])
  assert.equal(r.signal, 'SIGKILL')
  assert.ok(fs.statSync(file).isSocket())
  return file
}

describe('agent protocol', () => {
  it('validates requests field by field', () => {
    const ok = {node: 'n', datastore: 'embedded:/x', handle: 'h', num4: 1, num6: 0}
    assert.deepEqual(parseAssign(ok), {...ok, attrs: {}, ipv4Pools: [], ipv6Pools: [], maxBlocksPerHost: 0})
    assert.throws(() => parseAssign([]), /must be a JSON object/)
    assert.throws(() => parseAssign({...ok, num4: '1'}), /"num4" must be an integer/)
    assert.throws(() => parseAssign({...ok, num4: 1.5}), /"num4"/)
    assert.throws(() => parseAssign({...ok, attrs: {a: 1}}), /"attrs" must be an object of strings/)
    assert.throws(() => parseAssign({...ok, handle: ''}), /"handle"/)
    assert.throws(() => parseAssign({...ok, ipv4Pools: 'x'}), /"ipv4Pools"/)
    assert.throws(() => parseRelease({node: 'n', datastore: 'd'}), /nothing to release/)
  })

  it('errors survive the trip as the same classes', () => {
    for (const e of [new ExhaustedError('full'), new ValidationError('bad')]) {
      const {status, body} = errorReply(e)
      assert.ok(status >= 400)
      const back = errorFrom(JSON.parse(JSON.stringify(body)).error)
      assert.equal(back.constructor, e.constructor)
      assert.equal(back.message, e.message)
    }
  })

  it('datastore identity: path resolved, endpoints order-free', () => {
    assert.equal(datastoreId({type: 'embedded', path: '/a/../b/ipam.db', etcdEndpoints: []}), 'embedded:/b/ipam.db')
    assert.equal(
      datastoreId({type: 'etcdv3', path: '', etcdEndpoints: ['http://b:2379', 'http://a:2379']}),
      datastoreId({type: 'etcdv3', path: '', etcdEndpoints: ['http://a:2379', 'http://b:2379']}),
    )
  })

  it('netconf ipamctl_agent_socket: absolute path, short enough; "" turns the agent off', () => {
    const base = {cniVersion: '1.0.0', name: 'n', type: 'x'}
    assert.equal(parseNetConf({...base, ipamctl_agent_socket: '/run/a.sock'}).ipamctlAgentSocket, '/run/a.sock')
    assert.equal(parseNetConf({...base, ipamctl_agent_socket: ''}).ipamctlAgentSocket, '')
    assert.equal(parseNetConf(base).ipamctlAgentSocket, undefined)
    assert.throws(() => parseNetConf({...base, ipamctl_agent_socket: 'rel.sock'}), /absolute path/)
    assert.throws(() => parseNetConf({...base, ipamctl_agent_socket: `/${'x'.repeat(120)}`}), /longer than 107 bytes/)
    assert.throws(() => parseNetConf({...base, ipamctl_agent_socket: 5}), /must be a string/)
  })
})

describe('agentRequest outcomes', () => {
  it('no socket file, or a stale one: unreachable (nothing was sent)', async () => {
    assert.equal(agentSocketPresent(path.join(tmp, 'none.sock')), false)
    assert.equal((await agentRequest(path.join(tmp, 'none.sock'), 'GET', '/v1/status')).kind, 'unreachable')
    const stale = staleSocket()
    assert.equal(agentSocketPresent(stale), true)
    const o = await agentRequest(stale, 'GET', '/v1/status')
    assert.deepEqual(o, {kind: 'unreachable', reason: 'ECONNREFUSED'})
  })

  it('a reply, an error reply, a cut connection and a timeout', async () => {
    const a = await fakeAgent((_req, res) => res.writeHead(200, {'Content-Type': 'application/json'}).end('{"x":1}'))
    assert.deepEqual(await agentRequest(a.file, 'POST', '/v1/assign', {big: 'y'.repeat(200_000)}), {
      kind: 'answered',
      status: 200,
      body: {x: 1},
    })
    await a.close()
    const b = await fakeAgent((_req, res) =>
      res.writeHead(507).end('{"error":{"type":"ExhaustedError","message":"full"}}'),
    )
    assert.deepEqual(await agentRequest(b.file, 'POST', '/v1/assign', {}), {
      kind: 'answered',
      status: 507,
      body: {error: {type: 'ExhaustedError', message: 'full'}},
    })
    await b.close()
    const c = await fakeAgent((req) => req.socket.destroy())
    assert.equal((await agentRequest(c.file, 'POST', '/v1/assign', {})).kind, 'unknown')
    await c.close()
    const d = await fakeAgent(() => {})
    const t0 = Date.now()
    const o = await agentRequest(d.file, 'POST', '/v1/assign', {}, {timeoutMs: 200})
    assert.equal(o.kind, 'unknown')
    assert.ok(Date.now() - t0 < 2000)
    await d.close().catch(() => {})
  })

  it('blocking: an agent in this very process still answers, and nothing listening is still unreachable', async () => {
    const a = await fakeAgent((_req, res) => res.writeHead(200, {'Content-Type': 'application/json'}).end('{"x":2}'))
    assert.deepEqual(await agentRequest(a.file, 'POST', '/v1/assign', {}, {blocking: true}), {
      kind: 'answered',
      status: 200,
      body: {x: 2},
    })
    await a.close()
    assert.deepEqual(await agentRequest(staleSocket(), 'GET', '/v1/status', undefined, {blocking: true}), {
      kind: 'unreachable',
      reason: 'ECONNREFUSED',
    })
  })
})

describe('ipamctl-ipam with an agent socket (in-process)', () => {
  const NET = 'net1'
  let store: MemoryStore
  let ctx: Ctx
  let opened: number
  beforeEach(async () => {
    store = new MemoryStore()
    ctx = makeCtx(store)
    opened = 0
    await createPools(ctx, [{name: 'p4', cidr: '10.65.0.0/16'}])
  })
  const plugin = () =>
    ipamPlugin({
      openStore: async () => {
        opened++
        return store
      },
      lock: false,
    })
  const conf = (socket: string) =>
    JSON.stringify({
      cniVersion: '1.0.0',
      name: NET,
      type: 'ipamctl-ipam',
      nodename: 'node-1',
      datastore_path: '/tmp/x.db',
      ipamctl_agent_socket: socket,
      ipam: {type: 'ipamctl-ipam'},
    })
  const add = (socket: string, cid: string) => runSkel(plugin(), addEnv({CNI_CONTAINERID: cid}), conf(socket))

  it('an agent answer is the result; the datastore is never opened', async () => {
    const a = await fakeAgent((_req, res) =>
      res
        .writeHead(200)
        .end(
          '{"result":{"ips":[{"address":"10.9.9.9/26"}],"routes":[{"dst":"10.9.9.9/26"}],"dns":{}},"log":["from the agent"]}',
        ),
    )
    const r = await add(a.file, 'c1')
    assert.equal(r.code, 0, r.stdout)
    assert.equal(JSON.parse(r.stdout).ips[0].address, '10.9.9.9/26')
    assert.match(r.stderr, /from the agent/)
    assert.equal(opened, 0)
    await a.close()
  })

  it('an IPAM error from the agent is returned, not retried directly', async () => {
    const a = await fakeAgent((_req, res) =>
      res
        .writeHead(507)
        .end(JSON.stringify(errorReply(new ExhaustedError('failed to request IPv4 addresses: pool full')).body)),
    )
    const e = errorOf(await add(a.file, 'c1'))
    assert.deepEqual([e.code, e.msg], [999, 'failed to request IPv4 addresses: pool full'])
    assert.equal(opened, 0, 'no direct retry')
    await a.close()
  })

  it('"direct" answers, stale sockets and a disabled agent go to the datastore with the usual result', async () => {
    const a = await fakeAgent((_req, res) =>
      res.writeHead(421).end('{"error":{"type":"Misdirected","message":"other node","direct":true}}'),
    )
    for (const socket of [a.file, staleSocket(), path.join(tmp, 'absent.sock'), '']) {
      const r = await add(socket, `c-${opened}`)
      assert.equal(r.code, 0, r.stdout)
      assert.match(JSON.parse(r.stdout).ips[0].address, /^10\.65\.\d+\.\d+\/26$/)
    }
    assert.equal(opened, 4)
    await a.close()
  })

  it('request sent, agent died after committing: the fallback returns what the handle holds, no second address', async () => {
    const a = await fakeAgent(async (req) => {
      // What a killed agent leaves behind: the allocation committed, no reply.
      const body = JSON.parse(
        await new Promise<string>((r) => {
          let s = ''
          req.on('data', (b) => (s += b))
          req.on('end', () => r(s))
        }),
      )
      await autoAssign(ctx, {host: 'node-1', num4: 1, num6: 0, handle: body.handle, attrs: body.attrs})
      req.socket.destroy()
    })
    const r = await add(a.file, 'cut')
    assert.equal(r.code, 0, r.stdout + r.stderr)
    const held = await ipsByHandle(ctx, `${NET}.cut`)
    assert.equal(held.length, 1, 'exactly one address for the attachment')
    assert.equal(JSON.parse(r.stdout).ips[0].address.split('/')[0], held[0])
    assert.match(r.stderr, /already holds/)
    await a.close()
  })

  it('request sent, agent died before committing: the fallback allocates once', async () => {
    const a = await fakeAgent((req) => req.socket.destroy())
    const r = await add(a.file, 'lost')
    assert.equal(r.code, 0, r.stdout)
    assert.deepEqual(await ipsByHandle(ctx, `${NET}.lost`), [JSON.parse(r.stdout).ips[0].address.split('/')[0]])
    await a.close()
  })

  it('DEL through the agent; a DEL whose agent vanished is done directly', async () => {
    const seen: unknown[] = []
    const a = await fakeAgent((req, res) => {
      let s = ''
      req.on('data', (b) => (s += b))
      req.on('end', () => {
        seen.push(JSON.parse(s))
        res.writeHead(200).end('{"released":[],"missing":[],"log":[]}')
      })
    })
    const r = await runSkel(plugin(), addEnv({CNI_COMMAND: 'DEL', CNI_CONTAINERID: 'd1'}), conf(a.file))
    assert.equal(r.code, 0)
    assert.deepEqual((seen[0] as {handles: string[]}).handles, [`${NET}.d1`, 'd1'])
    assert.equal(opened, 0)
    await a.close()
    const direct = await add(staleSocket(), 'd2')
    assert.equal(direct.code, 0)
    const cut = await fakeAgent((req) => req.socket.destroy())
    assert.equal((await runSkel(plugin(), addEnv({CNI_COMMAND: 'DEL', CNI_CONTAINERID: 'd2'}), conf(cut.file))).code, 0)
    await assert.rejects(ipsByHandle(ctx, `${NET}.d2`), /not found/)
    await cut.close()
  })
})
