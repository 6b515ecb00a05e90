// Real concurrency on a real etcd: OS processes racing through guarded Txns.
import {describe, test} from 'node:test'
import assert from 'node:assert/strict'
import {spawn} from 'node:child_process'
import {fileURLToPath} from 'node:url'
import {autoAssign} from '../../../src/lib/ipam/autoassign.ts'
import {makeCtx} from '../../../src/lib/ipam/context.ts'
import {createPools} from '../../../src/lib/ipam/pool-admin.ts'
import {updateConfig} from '../../../src/lib/ipam/config.ts'
import {decodeBlock} from '../../../src/lib/ipam/block.ts'
import {EtcdStore} from '../../../src/lib/store/etcd.ts'
import {etcdSkipReason, sharedEtcd} from '../../support/etcd-server.ts'
import {assertInvariants} from './helpers.ts'

const WORKER = fileURLToPath(new URL('./fixtures/alloc-worker.ts', import.meta.url))

function runWorker(endpoint: string, host: string, count: number, prefix: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', WORKER, `etcd:${endpoint}`, host, String(count), prefix],
      {stdio: ['ignore', 'pipe', 'pipe']},
    )
    let out = ''
    let err = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (err += d))
    child.on('error', reject)
    child.on('close', (code) =>
      code === 0 ? resolve(JSON.parse(out) as string[]) : reject(new Error(`worker ${prefix} exited ${code}: ${err}`)),
    )
  })
}

describe('etcd concurrency (integration)', {skip: etcdSkipReason}, () => {
  const etcd = sharedEtcd()
  const open = () => EtcdStore.connect({endpoints: [etcd.server.endpoint], timeoutMs: 30_000})

  async function race(hostOf: (i: number) => string, blockSize: number): Promise<void> {
    await etcd.wipe()
    const store = await open()
    try {
      await createPools(makeCtx(store), [{name: 'conc', cidr: '10.80.0.0/16', blockSize}])
      const results = await Promise.all(
        Array.from({length: 8}, (_, i) => runWorker(etcd.server.endpoint, hostOf(i), 100, `p${i}`)),
      )
      const all = results.flat()
      assert.equal(all.length, 800)
      assert.equal(new Set(all).size, 800, 'every address must be distinct')
      await assertInvariants(store)
      const handles = await store.list('/calico/ipam/v2/handle/')
      assert.equal(handles.length, 800)
    } finally {
      await store.close()
    }
  }

  test('8 processes x 100 allocations on ONE host: 800 distinct addresses, invariants hold', {
    timeout: 180_000,
  }, async () => {
    await race(() => 'same-host', 24)
  })

  test('8 processes x 100 allocations on 8 hosts: 800 distinct addresses, invariants hold', {
    timeout: 180_000,
  }, async () => {
    await race((i) => `host-${i}`, 26)
  })

  test('32 hosts race for the 16 blocks of a /22: one address each, exactly 16 confirmed affinities matching their blocks', {
    timeout: 120_000,
  }, async () => {
    await etcd.wipe()
    const store = await open()
    try {
      const ctx = makeCtx(store)
      await createPools(ctx, [{name: 'small', cidr: '10.90.0.0/22', blockSize: 26}])
      await updateConfig(ctx, {strictAffinity: false})
      // 32 concurrent clients, each with its own connection, as 32 hosts' CNI plugins would be.
      const clients = await Promise.all(Array.from({length: 32}, () => open()))
      try {
        const results = await Promise.all(
          clients.map((c, i) =>
            autoAssign(makeCtx(c), {host: `h${String(i).padStart(2, '0')}`, num4: 1, num6: 0, handle: `race-${i}`}),
          ),
        )
        const ips = results.map((r) => r.v4.ips.map((x) => x.address))
        for (const [i, got] of ips.entries())
          assert.equal(got.length, 1, `host ${i}: ${results[i]!.v4.messages.join('; ')}`)
        assert.equal(new Set(ips.flat()).size, 32)
      } finally {
        await Promise.all(clients.map((c) => c.close()))
      }
      const affinities = await store.list('/calico/ipam/v2/host/')
      assert.equal(affinities.length, 16, 'exactly one confirmed affinity per block')
      const blocks = await store.list('/calico/ipam/v2/assignment/ipv4/block/')
      assert.equal(blocks.length, 16)
      for (const a of affinities) {
        assert.equal(a.value, '{"state":"confirmed","deleted":false}')
        const [, host, cidr] = /^\/calico\/ipam\/v2\/host\/([^/]+)\/ipv4\/block\/(.+)$/.exec(a.key)!
        const block = decodeBlock(blocks.find((b) => b.key.endsWith(`/${cidr}`))!.value)
        assert.equal(block.affinity, `host:${host}`)
      }
      await assertInvariants(store)
    } finally {
      await store.close()
    }
  })

  test('8 processes fill ONE host up to its block cap (strict affinity, 2 blocks of /26): 128 addresses, never a third block', {
    timeout: 180_000,
  }, async () => {
    await etcd.wipe()
    const store = await open()
    try {
      const ctx = makeCtx(store)
      await createPools(ctx, [{name: 'conc', cidr: '10.80.0.0/16', blockSize: 26}])
      await updateConfig(ctx, {strictAffinity: true, maxBlocksPerHost: 2})
      // Exactly the capacity of two blocks: every request succeeds only if no process claimed past the cap.
      const all = (
        await Promise.all(Array.from({length: 8}, (_, i) => runWorker(etcd.server.endpoint, 'capped', 16, `c${i}`)))
      ).flat()
      assert.equal(new Set(all).size, 128)
      await assertInvariants(store)
      assert.equal((await store.listKeys('/calico/ipam/v2/host/capped/ipv4/block/')).length, 2)
    } finally {
      await store.close()
    }
  })
})
