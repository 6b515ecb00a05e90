// Pool selection by namespace labels (upstream SelectsNamespace inside determinePools): the rule of
// docs/pool-selection.md, on selectPools directly and through autoAssign.
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'
import {NotFoundError, ValidationError} from '../../../src/lib/errors.ts'
import {autoAssign} from '../../../src/lib/ipam/autoassign.ts'
import {autoAssignBatch} from '../../../src/lib/ipam/batch-assign.ts'
import {makeCtx} from '../../../src/lib/ipam/context.ts'
import {newPool, type PoolInput} from '../../../src/lib/ipam/pool.ts'
import {createPools} from '../../../src/lib/ipam/pool-admin.ts'
import {parseNamespaceLabels, selectPools} from '../../../src/lib/ipam/pools-select.ts'
import {MemoryStore} from '../../../src/lib/store/memory.ts'

const NOW = new Date('2026-01-02T03:04:05Z')
const W = {allowedUses: ['Workload' as const]}
const INPUTS: PoolInput[] = [
  {name: 'a-team', cidr: '10.1.0.0/24', namespaceSelector: 'team == "a"', ...W},
  {name: 'not-b', cidr: '10.2.0.0/24', namespaceSelector: '!has(team)', ...W},
  {name: 'everyone', cidr: '10.3.0.0/24'},
]
const pools = INPUTS.map((i) => newPool(i, NOW))
const pick = (namespaceLabels?: Record<string, string>, requested?: string[], list = pools) =>
  selectPools({pools: list, family: 4, requested, nodeLabels: {}, namespaceLabels, host: 'n1', use: 'Workload'}).map(
    (p) => p.name,
  )

describe('selectPools: namespaceSelector', () => {
  test('a pool with a namespaceSelector serves only requests whose namespace labels match; an empty selector serves all', () => {
    assert.deepEqual(pick({team: 'a'}), ['a-team', 'everyone'])
    assert.deepEqual(pick({team: 'b'}), ['everyone'])
  })

  test('no namespace labels are the empty label set, not "match anything"', () => {
    assert.deepEqual(pick(undefined), ['not-b', 'everyone'])
    assert.deepEqual(pick({}), ['not-b', 'everyone'])
  })

  test('explicitly requested pools are used whatever their namespaceSelector, in the order given', () => {
    assert.deepEqual(pick({team: 'b'}, ['a-team', 'not-b']), ['a-team', 'not-b'])
  })

  test('combines with nodeSelector: both must match', () => {
    const list = [
      newPool(
        {name: 'rack-a', cidr: '10.4.0.0/24', nodeSelector: 'rack == "a"', namespaceSelector: 'team == "a"', ...W},
        NOW,
      ),
    ]
    assert.deepEqual(
      selectPools({
        pools: list,
        family: 4,
        nodeLabels: {rack: 'a'},
        namespaceLabels: {team: 'a'},
        host: 'n1',
        use: 'Workload',
      }).map((p) => p.name),
      ['rack-a'],
    )
    assert.throws(
      () =>
        selectPools({
          pools: list,
          family: 4,
          nodeLabels: {rack: 'b'},
          namespaceLabels: {team: 'a'},
          host: 'n1',
          use: 'Workload',
        }),
      NotFoundError,
    )
  })

  test('no pool left: upstream message, naming the pools only the namespace ruled out', () => {
    const list = pools.slice(0, 1)
    assert.throws(
      () => pick({team: 'b'}, undefined, list),
      (e: Error) =>
        e instanceof NotFoundError &&
        e.message ===
          'no configured Calico pools for node n1 (IPv4): the namespaceSelector of a-team does not match the namespace labels {team=b}',
    )
    assert.throws(
      () => pick(undefined, undefined, list),
      (e: Error) => e instanceof NotFoundError && e.message.endsWith('the namespace labels none'),
    )
  })
})

describe('parseNamespaceLabels', () => {
  test('k=v,k2=v2 and, for CNI_ARGS, k:v,k2:v2; empty text is no labels', () => {
    assert.deepEqual(parseNamespaceLabels('team=a,example.com/env=prod'), {team: 'a', 'example.com/env': 'prod'})
    assert.deepEqual(parseNamespaceLabels('team:a,env:', ':'), {team: 'a', env: ''})
    assert.deepEqual(parseNamespaceLabels(''), {})
  })

  for (const [text, message] of [
    ['team', 'invalid namespace label "team": expected KEY=VALUE'],
    ['=a', 'invalid namespace label "=a": expected KEY=VALUE'],
    ['team=a,team=b', 'namespace label team given twice'],
    ['team=a b', 'invalid value "a b" for namespace label team'],
    ['bad key=a', 'invalid namespace label key "bad key"'],
    ['team=a,', 'invalid namespace label "": expected KEY=VALUE'],
  ]) {
    test(`rejects ${JSON.stringify(text)}`, () => {
      assert.throws(
        () => parseNamespaceLabels(text!),
        (e: Error) => e instanceof ValidationError && e.message === message,
      )
    })
  }
})

describe('autoAssign and autoAssignBatch apply the namespace labels', () => {
  async function setup() {
    const ctx = makeCtx(new MemoryStore(), {clock: {now: () => NOW}})
    await createPools(ctx, [
      {name: 'a-team', cidr: '10.1.0.0/24', namespaceSelector: 'team == "a"', ...W},
      {name: 'b-team', cidr: '10.2.0.0/24', namespaceSelector: 'team == "b"', ...W},
    ])
    return ctx
  }

  test('autoAssign takes addresses from the pool selecting the labels', async () => {
    const ctx = await setup()
    const a = await autoAssign(ctx, {host: 'n1', num4: 1, num6: 0, handle: 'h-a', namespaceLabels: {team: 'a'}})
    const b = await autoAssign(ctx, {host: 'n1', num4: 1, num6: 0, handle: 'h-b', namespaceLabels: {team: 'b'}})
    assert.match(a.v4.ips[0]!.address, /^10\.1\.0\./)
    assert.match(b.v4.ips[0]!.address, /^10\.2\.0\./)
    await assert.rejects(autoAssign(ctx, {host: 'n1', num4: 1, num6: 0, handle: 'h-c'}), NotFoundError)
    await assert.rejects(
      autoAssign(ctx, {host: 'n1', num4: 1, num6: 0, handle: 'h-d', namespaceLabels: {'bad key': 'x'}}),
      ValidationError,
    )
  })

  test('a batch with requests of different namespaces serves each from its own pool', async () => {
    const ctx = await setup()
    // Warm the host's blocks in both pools so the batch path (shared affine blocks) is taken.
    await autoAssign(ctx, {host: 'n1', num4: 1, num6: 0, handle: 'w-a', namespaceLabels: {team: 'a'}})
    await autoAssign(ctx, {host: 'n1', num4: 1, num6: 0, handle: 'w-b', namespaceLabels: {team: 'b'}})
    const reqs = Array.from({length: 6}, (_, i) => ({
      host: 'n1',
      num4: 1,
      num6: 0,
      handle: `h${i}`,
      namespaceLabels: {team: i % 2 ? 'b' : 'a'},
    }))
    const out = await autoAssignBatch(ctx, reqs)
    out.forEach((o, i) => {
      assert.ok('ok' in o, String((o as {error: unknown}).error))
      assert.match(o.ok.v4.ips[0]!.address, i % 2 ? /^10\.2\.0\./ : /^10\.1\.0\./, `request ${i}`)
    })
  })
})
