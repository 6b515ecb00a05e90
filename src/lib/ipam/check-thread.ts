// The endpoint thread of `ipam check` on an embedded store (CheckOptions.endpointThread): a worker thread that opens
// the store file on its own connection and reads the Node records and workload endpoints while the main thread
// reads the blocks and handles. The work is scanEndpointsForThread's (check.ts); this file only connects it to
// the thread's port.
import {parentPort, workerData} from 'node:worker_threads'
import {SqliteStore} from '../store/sqlite.js'
import {type EndpointThreadData, RevisionSignal, scanEndpointsForThread} from './check.js'

const data = workerData as EndpointThreadData
let store: SqliteStore
try {
  store = SqliteStore.open(data.file, {mode: 'read'})
} catch (err) {
  // The main thread waits for a revision it can no longer get: it reads the endpoints itself at once.
  new RevisionSignal(data.signal).fail()
  throw err
}
try {
  await scanEndpointsForThread(store, data, (m, transfer) => parentPort!.postMessage(m, transfer))
} finally {
  await store.close()
}
