// Runs the pools allocator scenarios (allocator-scenarios.ts) against every embedded store backend.
import {after} from 'node:test'
import {poolScenarios} from './allocator-scenarios.ts'
import {openMemory, tempSqlite} from './helpers.ts'

const sqlite = tempSqlite()
after(() => sqlite.cleanup())

poolScenarios('MemoryStore', openMemory)
poolScenarios('SqliteStore', sqlite.open)
