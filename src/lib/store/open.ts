// Which datastore a command or plugin talks to.
import {defaultDatastorePath, SqliteStore} from './sqlite.js'
import type {Store} from './store.js'

export interface DatastoreOptions {
  /** Embedded store file; falls back to $IPAMCTL_DATASTORE_PATH, then the per-user default. */
  path?: string
}

export function resolveDatastorePath(opts: DatastoreOptions, env: NodeJS.ProcessEnv = process.env): string {
  return opts.path || env.IPAMCTL_DATASTORE_PATH || defaultDatastorePath(env)
}

export async function openStore(opts: DatastoreOptions = {}, env: NodeJS.ProcessEnv = process.env): Promise<Store> {
  return SqliteStore.open(resolveDatastorePath(opts, env))
}
