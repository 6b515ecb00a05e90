// Running a few reads or writes against a test's embedded store file, closing it whatever happens.
import {SqliteStore} from '../../src/lib/store/sqlite.ts'

export async function withStore<T>(db: string, fn: (s: SqliteStore) => Promise<T>): Promise<T> {
  const s = SqliteStore.open(db)
  try {
    return await fn(s)
  } finally {
    await s.close()
  }
}
