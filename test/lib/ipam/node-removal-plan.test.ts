// The node-removal plan (what `node remove --dry-run` shows) is read-only and predicts exactly the summary the
// real run reports: affinities released, blocks deleted or kept, addresses released, endpoints deleted.
import assert from 'node:assert/strict'
import {after, describe} from 'node:test'
import {autoAssign} from '../../../src/lib/ipam/autoassign.ts'
import {assignIp} from '../../../src/lib/ipam/assign-ip.ts'
import {updateConfig} from '../../../src/lib/ipam/config.ts'
import {executeNodeRemoval, planNodeRemoval} from '../../../src/lib/ipam/node-removal.ts'
import {createPools} from '../../../src/lib/ipam/pool-admin.ts'
import {releaseIps} from '../../../src/lib/ipam/release.ts'
import {keys} from '../../../src/lib/store/keys.ts'
import type {Store} from '../../../src/lib/store/store.ts'
import {encodeWorkloadEndpoint, endpointKey, newWorkloadEndpoint} from '../../../src/lib/workload/endpoint.ts'
import {type Env, openMemory, scenario, seed, type StoreOpener, tempSqlite} from './helpers.ts'

const sqlite = tempSqlite()
after(() => sqlite.cleanup())

async function assign(env: Env, host: string, n: number, handle?: string, pools4?: string[]): Promise<string[]> {
  const r = await autoAssign(env.ctx, {host, num4: n, num6: 0, handle, pools4})
  assert.equal(r.v4.ips.length, n, r.v4.messages.join('; '))
  return r.v4.ips.map((i) => i.address)
}

const snapshot = async (store: Store): Promise<string> =>
  (await store.list('')).map((kv) => `${kv.key} @${kv.modRevision} ${kv.value}`).join('\n')

/** Plan (asserting it wrote nothing), execute the same plan, and require the prediction to be the outcome. */
async function planMatchesRun(env: Env, host: string, releaseAddresses: boolean): Promise<void> {
  const before = await snapshot(env.store)
  const plan = await planNodeRemoval(env.ctx, host, {releaseAddresses})
  assert.equal(await snapshot(env.store), before, 'planning changed the datastore')
  const done = await executeNodeRemoval(env.ctx, plan)
  assert.deepEqual(done, plan.predicted)
}

function scenarios(name: string, open: StoreOpener): void {
  const s = (title: string, body: (env: Env) => Promise<void>) => scenario(open, title, body)
  describe(`${name}: node removal plan`, () => {
    s('plain removal: an empty block deleted, a non-empty one kept, a legacy host key', async (env) => {
      await createPools(env.ctx, [
        {name: 'a', cidr: '10.80.0.0/26'},
        {name: 'b', cidr: '10.81.0.0/26'},
      ])
      await assign(env, 'n1', 2, 'h1')
      const [b] = await assign(env, 'n1', 1, 'h2', ['b'])
      await releaseIps(env.ctx, [{ip: b!}])
      await seed(env.store, `${keys.allHostAffinitiesPrefix()}n1`, '{}')
      await planMatchesRun(env, 'n1', false)
    })

    s('--release-addresses: whole handles, a handle shared with another node, no handle, endpoints', async (env) => {
      await createPools(env.ctx, [{name: 'a', cidr: '10.83.0.0/24'}])
      await assign(env, 'n1', 2, 'h1')
      await assign(env, 'n1', 1)
      await assign(env, 'n1', 1, 'shared')
      await assign(env, 'n2', 1, 'shared')
      const now = env.clock.now()
      const w = newWorkloadEndpoint(
        {
          name: 'n1-k8s-web-eth0',
          namespace: 'default',
          orchestrator: 'k8s',
          node: 'n1',
          containerID: 'c',
          pod: 'web',
          endpoint: 'eth0',
          ipNetworks: [],
          interfaceName: 'cali0',
        },
        now,
      )
      await seed(env.store, endpointKey(w.namespace, w.name), encodeWorkloadEndpoint(w))
      await planMatchesRun(env, 'n1', true)
    })

    s(
      '--release-addresses with a cooldown: the released addresses keep the block, so it is kept without an owner',
      async (env) => {
        await createPools(env.ctx, [{name: 'a', cidr: '10.86.0.0/26'}])
        await updateConfig(env.ctx, {ipCooldownSeconds: 300})
        await assign(env, 'n1', 2, 'h1')
        const plan = await planNodeRemoval(env.ctx, 'n1', {releaseAddresses: true})
        assert.deepEqual(
          plan.affinities.map((a) => a.outcome),
          ['released'],
        )
        await planMatchesRun(env, 'n1', true)
      },
    )

    s('--release-addresses with a handle record missing: its addresses are released one by one', async (env) => {
      await createPools(env.ctx, [{name: 'a', cidr: '10.87.0.0/26'}])
      await assign(env, 'n1', 2, 'leaky')
      await assignIp(env.ctx, {ip: '10.87.0.40', host: 'n1', handle: 'kept'})
      await env.store.txn([], [{delete: keys.handle('leaky')}])
      const plan = await planNodeRemoval(env.ctx, 'n1', {releaseAddresses: true})
      assert.deepEqual(
        plan.handles.map((h) => h.handle),
        ['kept'],
      )
      assert.equal(plan.ips.length, 2)
      const done = await executeNodeRemoval(env.ctx, plan)
      assert.deepEqual(done, plan.predicted)
    })
  })
}

scenarios('MemoryStore', openMemory)
scenarios('SqliteStore', sqlite.open)
