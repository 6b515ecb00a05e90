// The agent's /metrics at Kubernetes' limits (5,000 nodes × 110 pods = 550,000 allocations in 10,000 blocks) on
// an embedded store: `promtool check metrics` (Debian's prometheus package) accepts it without a lint problem,
// and the figures add up. Only what the metrics read is seeded (the pool, the blocks and their affinities).
import assert from 'node:assert/strict'
import {spawnSync} from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import {after, before, describe, it} from 'node:test'
import {type Attribute, encodeBlock, newBlock} from '../../src/lib/ipam/block.ts'
import {makeCtx} from '../../src/lib/ipam/context.ts'
import {createPools} from '../../src/lib/ipam/pool-admin.ts'
import {encodeAffinity} from '../../src/lib/ipam/records.ts'
import {parseCidr, subnet} from '../../src/lib/net/cidr.ts'
import {keys} from '../../src/lib/store/keys.ts'
import {SqliteStore} from '../../src/lib/store/sqlite.ts'
import {type AgentProc, parseMetrics, startAgentProc} from '../support/agent.ts'
import {BulkWriter} from '../support/bulk-writer.ts'
import {ensureBuilt, sandbox} from './helpers.ts'

const PROMTOOL = process.env.PROMTOOL ?? '/usr/bin/promtool'
const NODES = 5000
const PODS = 110
const POOL = '10.64.0.0/12'

/** Each node owns two /26 blocks, 64 + 46 addresses in use, every allocation naming its node. */
async function seed(db: string): Promise<void> {
  const store = SqliteStore.open(db)
  try {
    await createPools(makeCtx(store), [{name: 'pods', cidr: POOL, blockSize: 26}])
    const pool = parseCidr(POOL)
    const w = new BulkWriter(store, 500, 4_000_000, 1)
    const now = new Date()
    let i = 0
    for (let n = 0; n < NODES; n++) {
      const host = `node-${n}`
      for (const used of [64, PODS - 64]) {
        const cidr = subnet(pool, 26, BigInt(i++))
        const b = newBlock(cidr, `host:${host}`, now, 1n)
        const attributes: Attribute[] = []
        for (let o = 0; o < used; o++) {
          attributes.push({handle_id: `k8s-pod-network.${n}-${o}`, secondary: {node: host}})
          b.allocations[o] = o
        }
        b.attributes = attributes
        b.unallocated = b.unallocated.filter((u) => u >= used)
        await w.put(keys.block(cidr), encodeBlock(b))
        await w.put(keys.affinity(host, cidr), encodeAffinity('confirmed'))
      }
    }
    await w.done()
  } finally {
    await store.close()
  }
}

before(() => ensureBuilt())

describe('agent /metrics at 5,000 nodes × 110 pods', {
  skip: fs.existsSync(PROMTOOL) ? false : `no ${PROMTOOL} (apt-get install -y prometheus)`,
}, () => {
  const sb = sandbox()
  let agent: AgentProc | undefined
  before(async () => {
    await seed(sb.db)
    agent = await startAgentProc(
      [
        '--node',
        'node-0',
        '--socket',
        path.join(sb.dir, 'agent.sock'),
        '--metrics-address',
        '127.0.0.1:0',
        '--leak-scan-interval',
        '0',
      ],
      {IPAMCTL_DATASTORE_PATH: sb.db},
    )
  })
  after(() => agent?.proc.kill('SIGKILL'))

  it('passes promtool check metrics with no lint problem, one node series per node, 550,000 in use', async () => {
    const text = await (await fetch(agent!.metricsUrl!)).text()
    const r = spawnSync(PROMTOOL, ['check', 'metrics'], {input: text, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024})
    assert.deepEqual([r.status, r.stdout, r.stderr], [0, '', ''])
    const m = parseMetrics(text)
    const nodeSeries = [...m.keys()].filter((k) => k.startsWith('ipamctl_node_blocks{'))
    assert.equal(nodeSeries.length, NODES)
    assert.ok(nodeSeries.every((k) => m.get(k) === 2))
    const l = `{pool="pods",cidr="${POOL}"}`
    assert.equal(m.get(`ipamctl_pool_in_use_addresses${l}`), NODES * PODS)
    assert.equal(m.get(`ipamctl_pool_capacity_addresses${l}`), 2 ** 20)
    assert.equal(m.get(`ipamctl_pool_free_addresses${l}`), 2 ** 20 - NODES * PODS)
    // A second scrape, after one node's change, serves the same valid text with it.
    const store = SqliteStore.open(sb.db)
    try {
      await store.txn([], [{delete: keys.block(subnet(parseCidr(POOL), 26, 1n))}])
    } finally {
      await store.close()
    }
    const again = parseMetrics(await (await fetch(agent!.metricsUrl!)).text())
    assert.equal(again.get('ipamctl_node_blocks{node="node-0"}'), 1)
    assert.equal(again.get(`ipamctl_pool_in_use_addresses${l}`), NODES * PODS - (PODS - 64))
  })
})
