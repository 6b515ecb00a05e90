// Runs the autoassign allocator scenarios (allocator-scenarios.ts) against every embedded store backend.
import {after} from 'node:test'
import {autoAssignScenarios} from './allocator-scenarios.ts'
import {openMemory, tempSqlite} from './helpers.ts'

const sqlite = tempSqlite()
after(() => sqlite.cleanup())

autoAssignScenarios('MemoryStore', openMemory)
autoAssignScenarios('SqliteStore', sqlite.open)
