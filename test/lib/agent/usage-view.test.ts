// The agent's usage view on the embedded store (its own change feed), on a store not yet created (the agent's
// CreateOnWriteStore), and on a store without a feed (full re-reads): see usage-view-scenarios.ts.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {after, describe} from 'node:test'
import {CreateOnWriteStore} from '../../../src/lib/store/create-on-write.ts'
import {openMemory, tempSqlite} from '../ipam/helpers.ts'
import {usageViewScenarios} from './usage-view-scenarios.ts'

describe('usage view on the embedded store', () => {
  const sqlite = tempSqlite()
  after(() => sqlite.cleanup())
  usageViewScenarios(sqlite.open, {incremental: true})
})

describe('usage view on an embedded store created by the first write', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-usage-view-'))
  after(() => fs.rmSync(dir, {recursive: true, force: true}))
  usageViewScenarios(async () => new CreateOnWriteStore(path.join(dir, 'ipam.db'), {}), {incremental: true})
})

describe('usage view on a store without a change feed (memory)', () => {
  usageViewScenarios(openMemory, {incremental: false})
})
