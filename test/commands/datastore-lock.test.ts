// `ipamctl datastore lock|unlock`: ClusterInformation default's datastoreReady, confirmation for unlock.
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'
import {assertRejected, sandbox} from './helpers.ts'

const CI = '/calico/resources/v3/projectcalico.org/clusterinformations/default'

describe('datastore lock/unlock', {concurrency: true}, () => {
  test('lock creates ClusterInformation locked; unlock --yes unlocks and keeps the GUID', async () => {
    const sb = sandbox()
    assert.equal(await sb.ok('datastore', 'lock'), 'Datastore locked.\n')
    const locked = JSON.parse(sb.value(CI)!)
    assert.equal(locked.kind, 'ClusterInformation')
    assert.match(locked.spec.clusterGUID, /^[0-9a-f]{32}$/)
    assert.equal(locked.spec.datastoreReady, false)
    // Locking again writes nothing: a report made under the lock stays current.
    const before = sb.dump()
    assert.equal(await sb.ok('datastore', 'lock'), 'Datastore locked.\n')
    assert.equal(sb.dump(), before)
    assert.equal(await sb.ok('datastore', 'unlock', '--yes'), 'Datastore unlocked.\n')
    const unlocked = JSON.parse(sb.value(CI)!)
    assert.equal(unlocked.spec.datastoreReady, true)
    assert.equal(unlocked.spec.clusterGUID, locked.spec.clusterGUID)
  })

  test('unlock without a terminal and without --yes refuses (exit 2) and changes nothing', async () => {
    const sb = sandbox()
    await sb.ok('datastore', 'lock')
    await assertRejected(sb, ['datastore', 'unlock'], 2, 'pass --yes')
    assert.equal(JSON.parse(sb.value(CI)!).spec.datastoreReady, false)
  })
})
