// Opening the selected datastore. etcd3 (and gRPC with it) is imported only when etcd is selected: it
// costs ~100 ms of start-up that the embedded path and the CNI plugin must not pay.
import type {DatastoreSettings} from './settings.js'
import type {OpenMode, Store} from './store.js'

export interface OpenOptions {
  mode: OpenMode
  onCreated?: (path: string) => void
}

export async function openStore(s: DatastoreSettings, opts: OpenOptions): Promise<Store> {
  if (s.type === 'etcdv3') {
    const {EtcdStore} = await import('./etcd.js')
    return EtcdStore.connect({
      endpoints: s.etcdEndpoints,
      keyFile: s.etcdKeyFile,
      certFile: s.etcdCertFile,
      caCertFile: s.etcdCaCertFile,
      username: s.etcdUsername,
      password: s.etcdPassword,
      timeoutMs: s.timeoutMs,
    })
  }
  // Imported here too: an IPAM plugin answered by the per-node agent never opens a store.
  const {SqliteStore, storeFileExists} = await import('./sqlite.js')
  if (opts.mode === 'create' && !storeFileExists(s.path)) {
    const {CreateOnWriteStore} = await import('./create-on-write.js')
    return new CreateOnWriteStore(s.path, {busyTimeoutMs: s.timeoutMs, onCreated: opts.onCreated})
  }
  return SqliteStore.open(s.path, {busyTimeoutMs: s.timeoutMs, mode: opts.mode, onCreated: opts.onCreated})
}
