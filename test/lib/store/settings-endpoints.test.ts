// --etcd-endpoints is never silently ignored: without a datastore type it selects etcd v3; next to a type that
// says embedded it is a one-line error. ETCD_ENDPOINTS in the environment alone selects nothing.
import assert from 'node:assert/strict'
import {test} from 'node:test'
import {ValidationError} from '../../../src/lib/errors.ts'
import {resolveSettings} from '../../../src/lib/store/settings.ts'

test('--etcd-endpoints alone selects etcdv3', () => {
  const s = resolveSettings({etcdEndpoints: 'http://10.0.0.1:2379'}, {HOME: '/tmp'})
  assert.equal(s.type, 'etcdv3')
  assert.deepEqual(s.etcdEndpoints, ['http://10.0.0.1:2379'])
  assert.equal(s.sources.datastoreType, 'flag')
})

test('--etcd-endpoints with an embedded type from flag or environment: one-line error', () => {
  assert.throws(
    () => resolveSettings({datastore: 'embedded', etcdEndpoints: 'http://10.0.0.1:2379'}, {HOME: '/tmp'}),
    (e) => e instanceof ValidationError && /--datastore flag selects the embedded one/.test(e.message),
  )
  assert.throws(
    () => resolveSettings({etcdEndpoints: 'http://10.0.0.1:2379'}, {HOME: '/tmp', DATASTORE_TYPE: 'embedded'}),
    /DATASTORE_TYPE environment variable selects the embedded one/,
  )
  // datastore migrate uses the endpoints whatever the type says.
  assert.equal(
    resolveSettings({datastore: 'embedded', etcdEndpoints: 'http://10.0.0.1:2379'}, {HOME: '/tmp'}, {bothTypes: true})
      .type,
    'embedded',
  )
})

test('ETCD_ENDPOINTS in the environment alone keeps the embedded default', () => {
  assert.equal(resolveSettings({}, {HOME: '/tmp', ETCD_ENDPOINTS: 'http://10.0.0.1:2379'}).type, 'embedded')
})
