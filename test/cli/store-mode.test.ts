// Every command that opens a datastore declares how (BaseCommand.storeMode: read, update or create), so a read can
// never create a store and a new command cannot forget: BaseCommand refuses to open one without it at run time,
// and this test finds the omission before any run does.
import {test} from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

const commands = fileURLToPath(new URL('../../src/commands/', import.meta.url))

function files(dir: string): string[] {
  return fs
    .readdirSync(dir, {withFileTypes: true})
    .flatMap((e) =>
      e.isDirectory() ? files(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : [],
    )
}

test('every command that opens a datastore declares its storeMode', () => {
  const opening = files(commands).filter((f) => /this\.(ctx|openStore|openExisting)\(/.test(fs.readFileSync(f, 'utf8')))
  assert.ok(opening.length > 20, `expected most commands to open a store, found ${opening.length}`)
  const undeclared = opening.filter(
    (f) => !/static override storeMode = '(read|update|create)' as const/.test(fs.readFileSync(f, 'utf8')),
  )
  assert.deepEqual(
    undeclared.map((f) => path.relative(commands, f)),
    [],
  )
})
