// The agent's HTTP side, in-process on a memory store: the readiness gate (ClusterInformation datastoreReady)
// before every ADD, its read shared by the requests that wait for it at once, and never older than a request.
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {after, describe, it} from 'node:test'
import {datastoreId} from '../../../src/lib/agent-client/protocol.ts'
import type {RunningAgent} from '../../../src/lib/agent/agent.ts'
import {clusterInfoKey, lockDatastore, unlockDatastore} from '../../../src/lib/ipam/cluster-info.ts'
import {makeCtx} from '../../../src/lib/ipam/context.ts'
import {createPools} from '../../../src/lib/ipam/pool-admin.ts'
import {MemoryStore} from '../../../src/lib/store/memory.ts'
import type {KeyValue} from '../../../src/lib/store/store.ts'
import type {DatastoreSettings} from '../../../src/lib/store/settings.ts'
import {agentHttp, startAgentOn} from '../../support/agent.ts'

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-agent-server-'))
after(() => fs.rmSync(tmp, {recursive: true, force: true}))

/** A memory store whose reads of ClusterInformation are counted and take `delayMs`, as a round trip would. */
class SlowInfoStore extends MemoryStore {
  infoReads = 0
  constructor(private readonly delayMs: number) {
    super()
  }
  override async get(key: string): Promise<KeyValue | undefined> {
    if (key !== clusterInfoKey()) return super.get(key)
    this.infoReads++
    // The value as it is when the read reaches the store, returned a round trip later.
    const kv = await super.get(key)
    await new Promise((r) => setTimeout(r, this.delayMs))
    return kv
  }
}

const settings: DatastoreSettings = {
  type: 'embedded',
  path: path.join(tmp, 'ipam.db'),
  etcdEndpoints: [],
  timeoutMs: 5000,
  sources: {},
}

async function agentOn(store: MemoryStore): Promise<RunningAgent> {
  await createPools(makeCtx(store), [{name: 'p4', cidr: '10.66.0.0/16'}])
  return startAgentOn(store, settings, path.join(tmp, `a${Math.random().toString(36).slice(2)}.sock`))
}

/** POST /v1/assign for `handle` over the agent's socket: status and JSON body. */
const assign = (socket: string, handle: string) =>
  agentHttp(socket, 'POST', '/v1/assign', {node: 'node-1', datastore: datastoreId(settings), handle, num4: 1, num6: 0})

const ipOf = (r: {body: Record<string, unknown>}) =>
  (r.body.result as {ips: {address: string}[]} | undefined)?.ips[0]?.address

describe('agent server: the readiness gate', () => {
  it('ADDs that arrive together share one ClusterInformation read (or two), each gets its own address', async () => {
    const store = new SlowInfoStore(300)
    const agent = await agentOn(store)
    try {
      const rs = await Promise.all(Array.from({length: 12}, (_, i) => assign(agent.socket, `h${i}`)))
      assert.deepEqual(
        rs.map((r) => r.status),
        rs.map(() => 200),
      )
      assert.equal(new Set(rs.map(ipOf)).size, 12, 'twelve distinct addresses')
      assert.ok(
        store.infoReads >= 1 && store.infoReads <= 3,
        `${store.infoReads} reads of ClusterInformation for 12 ADDs`,
      )
    } finally {
      await agent.stop()
    }
  })

  it('a locked datastore refuses the ADDs that come after the lock; unlocked, they are served again', async () => {
    const store = new SlowInfoStore(20)
    const agent = await agentOn(store)
    const ctx = makeCtx(store)
    try {
      assert.equal((await assign(agent.socket, 'before')).status, 200)
      await lockDatastore(ctx)
      const refused = await Promise.all([assign(agent.socket, 'l1'), assign(agent.socket, 'l2')])
      for (const r of refused) {
        assert.notEqual(r.status, 200)
        assert.match(JSON.stringify(r.body), /Calico is currently not ready to process requests/)
      }
      await unlockDatastore(ctx)
      const served = await assign(agent.socket, 'after')
      assert.equal(served.status, 200)
      assert.ok(ipOf(served))
    } finally {
      await agent.stop()
    }
  })
})
