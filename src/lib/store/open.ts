// Opening the selected datastore. etcd3 (and gRPC with it) is imported only when etcd is selected: it
// costs ~100 ms of start-up that the embedded path and the CNI plugin must not pay.
import type {DatastoreSettings} from './settings.js'
import type {Store} from './store.js'

/**
 * What the caller will do with the store, declared by the caller (each command class, plugin verb, the agent):
 * - 'read': only reads. A missing embedded store is a StoreMissingError (exit 3) and nothing is created; an
 *   existing one is read without any write, also from a read-only mount.
 * - 'update': writes, but only to change or remove what exists (release, delete, gc, remove, unlock): a missing
 *   embedded store is a StoreMissingError too, since there is nothing to change and the path is likely wrong.
 * - 'create': writes new state; a missing embedded store is created by the first write (0600 in 0700
 *   directories; until then it reads as empty, see CreateOnWriteStore) and `onCreated(path)` is called once,
 *   by the process that created it.
 * etcd has no such distinction: the cluster exists or it does not answer.
 */
export type OpenMode = 'read' | 'update' | 'create'

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
