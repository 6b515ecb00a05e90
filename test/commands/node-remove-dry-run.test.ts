// `node remove --dry-run` prints exactly what the real run prints (under one header line) and changes nothing:
// each case runs the dry run on one copy of a store and the real run on another copy of the same store.
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'
import {fixture, type Sandbox} from './helpers.ts'

const HEADER = 'Dry run: nothing was changed. Without --dry-run this command would print:\n'

// n1: one full /29 block (kept without an owner by a plain removal), one block emptied again (deleted), a
// handle shared with n2, an address without a handle; n2 owns its own block. A legacy host key for n1.
const steps = [
  ['pool', 'create', 'a', '--cidr', '10.91.0.0/28', '--block-size', '29'],
  ['pool', 'create', 'b', '--cidr', '10.92.0.0/29', '--block-size', '29'],
  ['ipam', 'assign', '--host', 'n1', '--count', '2', '--handle', 'h1', '--pool', 'a'],
  ['ipam', 'assign', '--host', 'n1', '--pool', 'a'],
  ['ipam', 'assign', '--host', 'n1', '--handle', 'shared', '--pool', 'a'],
  ['ipam', 'assign', '--host', 'n2', '--handle', 'shared', '--pool', 'a'],
  ['ipam', 'assign', '--host', 'n1', '--handle', 'gone', '--pool', 'b'],
  ['ipam', 'release', '--handle', 'gone', '--yes'],
]
const store = (): Promise<Sandbox> => fixture('node-remove-dry-run', steps)
const cooling = (): Promise<Sandbox> =>
  fixture('node-remove-dry-run-cooldown', [...steps, ['ipam', 'configure', '--ip-cooldown-seconds', '600']])

async function compare(open: () => Promise<Sandbox>, args: string[]): Promise<string> {
  const dry = await open()
  const real = await open()
  assert.equal(dry.dump(), real.dump())
  const before = dry.dump()
  const predicted = await dry.ok('node', 'remove', ...args, '--dry-run')
  assert.equal(dry.dump(), before, 'the dry run changed the datastore')
  const done = await real.ok('node', 'remove', ...args, '--yes')
  assert.notEqual(real.dump(), before)
  if (args.includes('json')) {
    const p = JSON.parse(predicted)
    assert.equal(p.dryRun, true)
    delete p.dryRun
    assert.deepEqual(p, JSON.parse(done))
  } else assert.equal(predicted, HEADER + done)
  return done
}

describe('node remove --dry-run', {concurrency: true}, () => {
  test('plain removal: same lines as the real run, nothing changed', async () => {
    const done = await compare(store, ['n1'])
    assert.match(done, /Released 2 block affinities: 1 empty blocks deleted, 1 non-empty blocks kept without an owner/)
  })

  test('--release-addresses: same lines as the real run', async () => {
    const done = await compare(store, ['n1', '--release-addresses'])
    assert.match(
      done,
      /Released 2 block affinities: 2 empty blocks deleted, 0 non-empty blocks kept without an owner\nReleased 4 addresses and deleted 0 workload endpoints/,
    )
  })

  test('--release-addresses -o json: same object as the real run, plus dryRun: true', async () => {
    await compare(store, ['n1', '--release-addresses', '-o', 'json'])
  })

  test('--release-addresses with a cooldown: the block its released addresses cool down in is predicted as kept', async () => {
    const done = await compare(cooling, ['n1', '--release-addresses'])
    assert.match(
      done,
      /Released 2 block affinities: 1 empty blocks deleted, 1 non-empty blocks kept without an owner\nReleased 4 addresses/,
    )
  })

  test('needs no confirmation, and an unknown node fails as the real run does', async () => {
    const sb = await store()
    const before = sb.dump()
    const r = await sb.run('node', 'remove', 'ghost', '--dry-run')
    assert.equal(r.status, 3)
    assert.match(r.stderr, /^Error: node ghost not found/)
    assert.equal(sb.dump(), before)
  })
})
