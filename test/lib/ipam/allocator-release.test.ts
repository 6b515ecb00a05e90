// Runs the release allocator scenarios (allocator-scenarios.ts) against every embedded store backend.
import {after} from 'node:test'
import {releaseScenarios} from './allocator-scenarios.ts'
import {openMemory, tempSqlite} from './helpers.ts'

const sqlite = tempSqlite()
after(() => sqlite.cleanup())

releaseScenarios('MemoryStore', openMemory)
releaseScenarios('SqliteStore', sqlite.open)
