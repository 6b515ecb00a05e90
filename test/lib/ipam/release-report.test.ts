// `ipam release --from-report` against a real store state: reports are built by hand from what the store
// holds (sequence numbers read back from the block), so every safety rule of docs/calico.md#ipam-release-from-a-report
// is exercised.
import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {ConflictError, ValidationError} from '../../../src/lib/errors.ts'
import {assignIp} from '../../../src/lib/ipam/assign-ip.ts'
import {autoAssign} from '../../../src/lib/ipam/autoassign.ts'
import {
  ensureClusterInfo,
  getClusterInfo,
  lockDatastore,
  unlockDatastore,
  datastoreLocked,
} from '../../../src/lib/ipam/cluster-info.ts'
import {createPools} from '../../../src/lib/ipam/pool-admin.ts'
import {ipStatus} from '../../../src/lib/ipam/query.ts'
import {releaseIps} from '../../../src/lib/ipam/release.ts'
import {
  executeRelease,
  type LoadedReport as Report,
  parseReport,
  planRelease,
} from '../../../src/lib/ipam/release-report.ts'
import {keys} from '../../../src/lib/store/keys.ts'
import {assertInvariants, type Env, freshCtx, seed} from './helpers.ts'

const VERSION = '0.1.0'

async function setup(): Promise<{env: Env; ips: string[]}> {
  const env = await freshCtx()
  await createPools(env.ctx, [{name: 'p', cidr: '10.65.0.0/26'}])
  const ips: string[] = []
  for (const h of ['leak-a', 'leak-b', 'live']) {
    const r = await autoAssign(env.ctx, {host: 'node-a', num4: 1, num6: 0, handle: h})
    ips.push(r.v4.ips[0]!.address)
  }
  return {env, ips}
}

async function allocation(env: Env, ip: string, inUse = false) {
  const st = await ipStatus(env.ctx, ip)
  assert.equal(st.state, 'assigned')
  if (st.state !== 'assigned') throw new Error('unreachable')
  return {ip, handle: st.owner.handle, sequenceNumber: st.owner.sequenceNumber, inUse, coolingDown: false}
}

/** A report of the current state: `leaked` addresses not in use, `live` ones in use. */
async function report(
  env: Env,
  leaked: string[],
  live: string[] = [],
  leakedHandles: Report['leakedHandles'] = [],
  file = 'r.json',
): Promise<Report> {
  const info = await ensureClusterInfo(env.ctx)
  const allocations = [
    ...(await Promise.all(leaked.map((ip) => allocation(env, ip)))),
    ...(await Promise.all(live.map((ip) => allocation(env, ip, true)))),
  ]
  return {
    file,
    version: VERSION,
    clusterGUID: info.clusterGUID,
    clusterInformationRevision: info.revision,
    allocations,
    leakedHandles,
  }
}

async function dump(env: Env): Promise<string> {
  return (await env.store.list('/calico/')).map((kv) => `${kv.key} @${kv.modRevision} ${kv.value}`).join('\n')
}

describe('ClusterInformation and the datastore lock', () => {
  it('lock creates the record with a 32-hex GUID; unlock keeps the GUID; locking twice writes nothing', async () => {
    const {ctx, store} = await freshCtx()
    assert.equal(await getClusterInfo(ctx), undefined)
    assert.equal(await datastoreLocked(ctx), false)
    const locked = await lockDatastore(ctx)
    assert.match(locked.clusterGUID, /^[0-9a-f]{32}$/)
    assert.equal(locked.datastoreReady, false)
    assert.equal(await datastoreLocked(ctx), true)
    const raw = JSON.parse((await store.get(keys.resource('clusterinformations', 'default')))!.value)
    assert.equal(raw.kind, 'ClusterInformation')
    assert.equal(raw.apiVersion, 'projectcalico.org/v3')
    assert.equal(raw.metadata.name, 'default')
    assert.equal(raw.spec.clusterType, 'ipamctl')
    assert.equal((await lockDatastore(ctx)).revision, locked.revision)
    const unlocked = await unlockDatastore(ctx)
    assert.equal(unlocked.clusterGUID, locked.clusterGUID)
    assert.equal(unlocked.datastoreReady, true)
    assert.notEqual(unlocked.revision, locked.revision)
  })

  it('unlock keeps fields it does not know', async () => {
    const {ctx, store} = await freshCtx()
    const key = keys.resource('clusterinformations', 'default')
    await seed(
      store,
      key,
      '{"kind":"ClusterInformation","apiVersion":"projectcalico.org/v3","metadata":{"name":"default"},"spec":{"clusterGUID":"abc","calicoVersion":"v3.30.0","datastoreReady":false}}',
    )
    await unlockDatastore(ctx)
    const spec = JSON.parse((await store.get(key))!.value).spec
    assert.deepEqual(spec, {clusterGUID: 'abc', calicoVersion: 'v3.30.0', datastoreReady: true})
  })
})

describe('release from reports', () => {
  it('releases the leaked addresses of a valid report and leaves in-use ones', async () => {
    const {env, ips} = await setup()
    await lockDatastore(env.ctx)
    const r = await report(env, ips.slice(0, 2), [ips[2]!])
    const plan = await planRelease(env.ctx, [r], {version: VERSION})
    assert.deepEqual(plan.warnings, [])
    const s = await executeRelease(env.ctx, plan)
    assert.deepEqual(s.released.sort(), ips.slice(0, 2).sort())
    assert.deepEqual(s.lines, [
      'Releasing 2 old IPs...',
      'Released 2 IPs successfully',
      "Report didn't contain any handles to clean up.",
      'You may now unlock the data store.',
    ])
    assert.equal((await ipStatus(env.ctx, ips[0]!)).state, 'free')
    assert.equal((await ipStatus(env.ctx, ips[2]!)).state, 'assigned')
    await assertInvariants(env.store, env.clock.now())
  })

  it('does not release an address released and re-assigned after the report (stale sequence number)', async () => {
    const {env, ips} = await setup()
    await lockDatastore(env.ctx)
    const r = await report(env, ips.slice(0, 2))
    await releaseIps(env.ctx, [{ip: ips[0]!}])
    await assignIp(env.ctx, {ip: ips[0]!, host: 'node-a', handle: 'new-owner'})
    const s = await executeRelease(env.ctx, await planRelease(env.ctx, [r], {version: VERSION}))
    assert.deepEqual(s.released, [ips[1]])
    assert.equal(s.failed.length, 1)
    assert.match(
      s.lines[1]!,
      /^An error occurred while releasing some IPs: .*sequence number.*Try regenerating the IPAM report and retry\.$/,
    )
    assert.equal(s.lines[2], 'Released 1 IPs successfully')
    const st = await ipStatus(env.ctx, ips[0]!)
    assert.equal(st.state === 'assigned' && st.owner.handle, 'new-owner')
    await assertInvariants(env.store, env.clock.now())
  })

  it('counts addresses freed since the report as already cleaned up', async () => {
    const {env, ips} = await setup()
    await lockDatastore(env.ctx)
    const r = await report(env, ips.slice(0, 2))
    await releaseIps(env.ctx, [{ip: ips[0]!}])
    const s = await executeRelease(env.ctx, await planRelease(env.ctx, [r], {version: VERSION}))
    assert.deepEqual(s.released, [ips[1]])
    assert.deepEqual(s.alreadyGone, [ips[0]])
    assert.ok(s.lines.includes('1 addresses marked as leaked in the report had already been cleaned up.'))
  })

  it('refuses a report from another cluster, even with --force, and changes nothing', async () => {
    const {env, ips} = await setup()
    await lockDatastore(env.ctx)
    const r = {...(await report(env, ips)), clusterGUID: '0'.repeat(32)}
    const before = await dump(env)
    for (const force of [false, true]) {
      await assert.rejects(planRelease(env.ctx, [r], {version: VERSION, force}), (e: Error) => {
        assert.ok(e instanceof ValidationError)
        assert.equal(
          e.message,
          'cluster does not match the provided report (r.json): mismatched cluster GUID. Refusing to release',
        )
        return true
      })
    }
    assert.equal(await dump(env), before)
  })

  it('refuses when every report is stale', async () => {
    const {env, ips} = await setup()
    const r = await report(env, ips)
    await lockDatastore(env.ctx) // bumps the ClusterInformation revision after the report
    await assert.rejects(planRelease(env.ctx, [r], {version: VERSION, force: true}), (e: Error) => {
      assert.ok(e instanceof ConflictError)
      assert.match(e.message, /^the provided reports are all stale - at least one should be up-to-date\./)
      return true
    })
  })

  it('refuses an unlocked datastore without --force and warns with it', async () => {
    const {env, ips} = await setup()
    const r = await report(env, ips.slice(0, 1))
    await assert.rejects(
      planRelease(env.ctx, [r], {version: VERSION}),
      /^ConflictError: data store is not locked\. Either lock the data store, or re-run with --force$/,
    )
    const plan = await planRelease(env.ctx, [r], {version: VERSION, force: true})
    assert.deepEqual(plan.warnings, ['WARNING: Data store is not locked. Ignoring due to --force option'])
  })

  it('refuses a report from another version without --force', async () => {
    const {env, ips} = await setup()
    await lockDatastore(env.ctx)
    const r = {...(await report(env, ips)), version: '9.9.9'}
    await assert.rejects(
      planRelease(env.ctx, [r], {version: VERSION}),
      /the provided report \(r\.json\) was produced using a different version \(9\.9\.9\) of calicoctl\. Refusing to release/,
    )
    const plan = await planRelease(env.ctx, [r], {version: VERSION, force: true})
    assert.deepEqual(plan.warnings, [
      'WARNING: Report was produced using a different version of calicoctl. Ignoring due to --force option',
    ])
  })

  it('releases only the intersection of several reports; one current report is enough', async () => {
    const {env, ips} = await setup()
    const older = await report(env, ips.slice(0, 2), [], [], 'old.json')
    await lockDatastore(env.ctx)
    const newer = await report(env, ips.slice(1, 3), [], [], 'new.json')
    const plan = await planRelease(env.ctx, [older, newer], {version: VERSION})
    assert.deepEqual(
      plan.ips.map((o) => o.ip),
      [ips[1]],
    )
    const s = await executeRelease(env.ctx, plan)
    assert.deepEqual(s.released, [ips[1]])
    assert.equal((await ipStatus(env.ctx, ips[0]!)).state, 'assigned')
    assert.equal((await ipStatus(env.ctx, ips[2]!)).state, 'assigned')
  })

  it('deletes a leaked handle only if its revision still matches', async () => {
    const {env} = await setup()
    await seed(env.store, keys.handle('orphan-same'), '{"block":{}}')
    await seed(env.store, keys.handle('orphan-changed'), '{"block":{}}')
    await lockDatastore(env.ctx)
    const revOf = async (id: string) => (await env.store.get(keys.handle(id)))!.modRevision.toString()
    const handles = [
      {id: 'orphan-same', uid: null, revision: await revOf('orphan-same')},
      {id: 'orphan-changed', uid: null, revision: await revOf('orphan-changed')},
      {id: 'orphan-gone', uid: null, revision: '1'},
    ]
    const r = await report(env, [], [], handles)
    // A handle in only one of two reports is left alone.
    const r2 = await report(env, [], [], [...handles, {id: 'live', uid: null, revision: await revOf('live')}])
    await seed(env.store, keys.handle('orphan-changed'), '{"block":{"10.65.0.0/26":1}}')
    const s = await executeRelease(env.ctx, await planRelease(env.ctx, [r, r2], {version: VERSION}))
    assert.deepEqual(s.lines, [
      "Report didn't contain any leaked IPs to clean up.",
      'Deleting 3 handles...',
      "Key: '.' = Deleted OK; 'x' = skip, handle missing/changed.",
      '.xx',
      'Released 1 handles; 2 skipped; 0 errors.',
      'You may now unlock the data store.',
    ])
    assert.equal(await env.store.get(keys.handle('orphan-same')), undefined)
    assert.ok(await env.store.get(keys.handle('orphan-changed')))
    assert.ok(await env.store.get(keys.handle('live')))
  })

  it('parses sequence numbers above 2^53 exactly', () => {
    const r = parseReport(
      '{"version":"0.1.0","clusterGUID":"g","datastoreLocked":true,"clusterInformationRevision":"7","allocations":{"10.65.0.1":[{"ip":"10.65.0.1","handle":"h","sequenceNumber":1767323045000000001,"inUse":false,"owners":null}]},"leakedHandles":[{"ID":"x","UID":null,"Revision":"42"}]}',
      'f',
    )
    assert.equal(r.allocations[0]!.sequenceNumber, 1767323045000000001n)
    assert.deepEqual(r.leakedHandles, [{id: 'x', uid: null, revision: '42'}])
    assert.equal(r.clusterInformationRevision, '7')
  })
})
