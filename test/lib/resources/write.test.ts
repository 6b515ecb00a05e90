// The resource model and the write engine on the memory store: apply is idempotent (a second run commits
// nothing), files are all-or-nothing, IPPool change rules, resourceVersion compare, and get output re-applies.
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'
import {ConflictError, NotFoundError, ValidationError} from '../../../src/lib/errors.ts'
import {autoAssign} from '../../../src/lib/ipam/autoassign.ts'
import {makeCtx} from '../../../src/lib/ipam/context.ts'
import {parseManifest} from '../../../src/lib/ipam/manifest.ts'
import {resolveKind} from '../../../src/lib/resources/kinds.ts'
import {
  applyLabelChanges,
  getResources,
  mergePatch,
  StaleResourceError,
  updateResource,
  writeResources,
} from '../../../src/lib/resources/write.ts'
import {MemoryStore} from '../../../src/lib/store/memory.ts'
import {fakeClock} from '../ipam/helpers.ts'

const SCRIPT = `
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: p1, labels: {tier: a}}
spec: {cidr: 10.70.0.0/24, blockSize: 28, nodeSelector: all()}
---
apiVersion: projectcalico.org/v3
kind: IPReservation
metadata: {name: gw}
spec: {reservedCIDRs: [10.70.0.1]}
---
apiVersion: projectcalico.org/v3
kind: IPAMConfiguration
metadata: {name: default}
spec: {strictAffinity: true, maxBlocksPerHost: 4}
---
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node-1, labels: {rack: r1}}
`

async function dump(store: MemoryStore): Promise<string> {
  const kvs = await store.list('/')
  return [`rev ${await store.revision()}`, ...kvs.map((kv) => `${kv.key} ${kv.modRevision} ${kv.value}`)].join('\n')
}

const ctxOf = (store = new MemoryStore()) => makeCtx(store, {clock: fakeClock()})

describe('resource writes', () => {
  test('apply twice: the second run writes nothing (same revision, same contents)', async () => {
    const ctx = ctxOf()
    const first = await writeResources(ctx, parseManifest(SCRIPT), 'apply')
    assert.deepEqual(
      first.map((o) => o.result),
      ['created', 'created', 'created', 'created'],
    )
    const before = await dump(ctx.store as MemoryStore)
    const second = await writeResources(ctx, parseManifest(SCRIPT), 'apply')
    assert.deepEqual(
      second.map((o) => o.result),
      ['unchanged', 'unchanged', 'unchanged', 'unchanged'],
    )
    assert.equal(await dump(ctx.store as MemoryStore), before)
  })

  test('get output of every kind re-applies unchanged', async () => {
    const ctx = ctxOf()
    await writeResources(ctx, parseManifest(SCRIPT), 'apply')
    await autoAssign(ctx, {host: 'node-1', num4: 1, num6: 0})
    const before = await dump(ctx.store as MemoryStore)
    for (const kind of ['ippool', 'ipreservation', 'ipamconfig', 'node']) {
      const got = await getResources(ctx, kind, [])
      assert.ok(got.items.length > 0, kind)
      const list = {apiVersion: 'projectcalico.org/v3', kind: `${got.kind}List`, items: got.items}
      for (const text of [JSON.stringify(list), JSON.stringify(got.items[0])]) {
        const r = await writeResources(ctx, parseManifest(text), 'apply')
        assert.ok(
          r.every((o) => o.result === 'unchanged'),
          `${kind}: ${JSON.stringify(r)}`,
        )
      }
    }
    assert.equal(await dump(ctx.store as MemoryStore), before)
    assert.equal((await getResources(ctx, 'affinity', [])).items[0]!.spec!.node, 'node-1')
  })

  test('a bad object anywhere in the file: nothing is written', async () => {
    const ctx = ctxOf()
    const bad = `${SCRIPT}---\napiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: p2}\nspec: {cidr: 10.70.0.128/25}\n`
    await assert.rejects(writeResources(ctx, parseManifest(bad), 'apply'), ConflictError)
    assert.equal(await ctx.store.revision(), 0n)
    await assert.rejects(
      writeResources(ctx, parseManifest(SCRIPT.replace('maxBlocksPerHost: 4', 'maxBlocksPerHost: -1')), 'apply'),
      ValidationError,
    )
    assert.equal(await ctx.store.revision(), 0n)
  })

  test('create refuses existing objects unless skipExists; replace refuses missing ones', async () => {
    const ctx = ctxOf()
    await writeResources(ctx, parseManifest(SCRIPT), 'create')
    await assert.rejects(writeResources(ctx, parseManifest(SCRIPT), 'create'), ConflictError)
    const r = await writeResources(ctx, parseManifest(SCRIPT), 'create', {skipExists: true})
    assert.ok(r.every((o) => o.result === 'skipped'))
    await assert.rejects(
      writeResources(ctx, parseManifest(SCRIPT.replace('name: p1', 'name: p9')), 'replace'),
      NotFoundError,
    )
  })

  test('IPPool: CIDR and blockSize immutable while in use; disabled, selector and labels may change', async () => {
    const ctx = ctxOf()
    await writeResources(ctx, parseManifest(SCRIPT), 'apply')
    const edit = (from: string, to: string) => writeResources(ctx, parseManifest(SCRIPT.replace(from, to)), 'apply')
    // Not in use yet: the CIDR may move.
    assert.equal((await edit('10.70.0.0/24', '10.71.0.0/24'))[0]!.result, 'configured')
    await edit('10.70.0.0/24', '10.70.0.0/24')
    await autoAssign(ctx, {host: 'node-1', num4: 1, num6: 0})
    await assert.rejects(edit('10.70.0.0/24', '10.72.0.0/24'), /CIDR cannot be changed while the pool is in use/)
    await assert.rejects(edit('blockSize: 28', 'blockSize: 27'), /blockSize cannot be changed/)
    const r = await edit('nodeSelector: all()', "nodeSelector: rack == 'r1', disabled: true, natOutgoing: true")
    assert.equal(r[0]!.result, 'configured')
    const [pool] = (await getResources(ctx, 'pool', ['p1'])).items
    assert.equal(pool!.spec!.disabled, true)
    assert.equal(pool!.spec!.nodeSelector, "rack == 'r1'")
  })

  test('a stale resourceVersion is refused; patch and label re-read and apply', async () => {
    const ctx = ctxOf()
    await writeResources(ctx, parseManifest(SCRIPT), 'apply')
    const [pool] = (await getResources(ctx, 'ippool', ['p1'])).items
    await updateResource(ctx, 'ippool', 'p1', (p) => mergePatch(p, {spec: {disabled: true}}) as typeof p)
    await assert.rejects(writeResources(ctx, parseManifest(JSON.stringify(pool)), 'replace'), StaleResourceError)
    await updateResource(ctx, 'node', 'node-1', (n) => ({
      ...n,
      metadata: {
        ...n.metadata,
        labels: applyLabelChanges((n.metadata.labels ?? {}) as Record<string, string>, ['zone=z', 'rack-'], false),
      },
    }))
    const [node] = (await getResources(ctx, 'nodes', ['node-1'])).items
    assert.deepEqual(node!.metadata.labels, {zone: 'z'})
    assert.throws(() => applyLabelChanges({a: '1'}, ['a=2'], false), ConflictError)
    assert.deepEqual(applyLabelChanges({a: '1'}, ['a=2'], true), {a: '2'})
  })

  test('kind names and aliases as calicoctl spells them', () => {
    for (const [text, kind] of [
      ['ippools', 'IPPool'],
      ['pool', 'IPPool'],
      ['IPPool', 'IPPool'],
      ['ipamconfiguration', 'IPAMConfiguration'],
      ['ipamconfig', 'IPAMConfiguration'],
      ['ipreservation', 'IPReservation'],
      ['nodes', 'Node'],
      ['blockaffinities', 'BlockAffinity'],
    ])
      assert.equal(resolveKind(text!).kind, kind)
    assert.throws(() => resolveKind('ipool'), /did you mean "ippool"/)
  })
})
