// The one report document (src/lib/ipam/check-report.ts): what `ipam check -o` writes is what
// `ipam release --from-report` reads and acts on, and a malformed one is refused with a one-line error.
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {after, describe, it} from 'node:test'
import {ValidationError} from '../../../src/lib/errors.ts'
import {autoAssign} from '../../../src/lib/ipam/autoassign.ts'
import {checkIpam} from '../../../src/lib/ipam/check.ts'
import {buildReport, decodeReport, type Report, reportJson} from '../../../src/lib/ipam/check-report.ts'
import {lockDatastore} from '../../../src/lib/ipam/cluster-info.ts'
import type {Ctx} from '../../../src/lib/ipam/context.ts'
import {createPools} from '../../../src/lib/ipam/pool-admin.ts'
import {ipStatus} from '../../../src/lib/ipam/query.ts'
import {executeRelease, parseReport, planRelease, readReports} from '../../../src/lib/ipam/release-report.ts'
import {writeReport} from '../../../src/lib/ipam/report-file.ts'
import {packageVersion} from '../../../src/lib/package-root.ts'
import {keys} from '../../../src/lib/store/keys.ts'
import {encodeWorkloadEndpoint, endpointKey, newWorkloadEndpoint} from '../../../src/lib/workload/endpoint.ts'
import {freshCtx, seed} from './helpers.ts'

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-check-report-'))
after(() => fs.rmSync(tmp, {recursive: true, force: true}))

async function allocate(ctx: Ctx, handle: string, pod: string): Promise<string> {
  const r = await autoAssign(ctx, {
    host: 'node-1',
    num4: 1,
    num6: 0,
    handle,
    attrs: {node: 'node-1', pod, namespace: 'default'},
  })
  return r.v4.ips[0]!.address
}

async function useAddress(ctx: Ctx, pod: string, ip: string): Promise<void> {
  const w = newWorkloadEndpoint(
    {
      name: `node-1-k8s-${pod}-eth0`,
      namespace: 'default',
      orchestrator: 'k8s',
      node: 'node-1',
      containerID: `cid-${pod}`,
      pod,
      endpoint: 'eth0',
      ipNetworks: [`${ip}/32`],
      interfaceName: `cali-${pod}`,
    },
    ctx.clock.now(),
  )
  await seed(ctx.store, endpointKey('default', w.name), encodeWorkloadEndpoint(w))
}

/** A report with one allocation of every optional member and a leaked handle, as check builds it. */
function fullReport(): Report {
  return {
    version: '0.1.0',
    clusterGUID: 'g',
    datastoreLocked: true,
    clusterInformationRevision: '7',
    clusterType: 'ipamctl',
    allocations: {
      '10.65.0.1': [
        {
          ip: '10.65.0.1',
          handle: 'h',
          sequenceNumber: 1767323045000000001n,
          pod: 'web-0',
          namespace: 'default',
          node: 'node-1',
          type: 'x',
          creationTimestamp: '2026-01-02 03:04:05 +0000 UTC',
          inUse: false,
          borrowed: true,
          coolingDown: true,
          owners: null,
        },
      ],
      '10.65.0.2': [{ip: '10.65.0.2', inUse: true, owners: ['Workload(default/a)', 'Node(n)']}],
    },
    leakedHandles: [{ID: 'orphan', UID: null, Revision: '42'}],
  }
}

describe('the check report, written and read', () => {
  it('a report written by ipam check is read by release --from-report, which releases exactly its leaks', async () => {
    const {ctx, store} = await freshCtx()
    await createPools(ctx, [{name: 'p4', cidr: '10.65.0.0/16'}])
    const leak = await allocate(ctx, 'h-leak', 'leak')
    const live = await allocate(ctx, 'h-live', 'live')
    await useAddress(ctx, 'live', live)
    await seed(store, keys.handle('orphan'), '{"block":{"10.65.0.0/26":1},"deleted":false}')
    await lockDatastore(ctx)

    const written = buildReport(await checkIpam(ctx))
    const file = path.join(tmp, 'report.json')
    writeReport(file, written)
    const text = fs.readFileSync(file, 'utf8')
    // The reader's view of the document is the writer's, member for member and byte for byte.
    assert.deepEqual(decodeReport(text, file), written)
    assert.equal(reportJson(decodeReport(text, file)), text)

    const reports = await readReports([file])
    const plan = await planRelease(ctx, reports, {version: packageVersion()})
    const leakSeq = (await ipStatus(ctx, leak)) as {owner: {sequenceNumber: bigint}}
    assert.deepEqual(plan.ips, [{ip: leak, handle: 'h-leak', sequenceNumber: leakSeq.owner.sequenceNumber}])
    assert.ok(leakSeq.owner.sequenceNumber > BigInt(Number.MAX_SAFE_INTEGER), 'an exact sequence number round-trips')
    assert.deepEqual(
      plan.handles.map((h) => h.id),
      ['orphan'],
    )
    const s = await executeRelease(ctx, plan)
    assert.deepEqual(s.released, [leak])
    assert.equal(s.handlesDeleted, 1)
    assert.equal((await ipStatus(ctx, leak)).state, 'free')
    assert.equal((await ipStatus(ctx, live)).state, 'assigned')
  })

  it('every member of the document survives a write and a read; empty ones stay out', () => {
    const r = fullReport()
    const text = reportJson(r)
    assert.deepEqual(decodeReport(text, 'r.json'), r)
    assert.equal(reportJson(decodeReport(text, 'r.json')), text)
    const bare: Report = {...r, allocations: {}}
    delete bare.leakedHandles
    assert.equal('leakedHandles' in decodeReport(reportJson(bare), 'r.json'), false)
  })

  it('a negative sequence number (a damaged block) is written as a JSON integer, not as a quoted placeholder', () => {
    const r = fullReport()
    r.allocations['10.65.0.1']![0]!.sequenceNumber = -5n
    const text = reportJson(r)
    assert.match(text, /"sequenceNumber": -5,\n/)
    assert.equal(JSON.parse(text).allocations['10.65.0.1'][0].sequenceNumber, -5)
    // The reader refuses it: a sequence number is a uint64.
    assert.throws(
      () => parseReport(text, 'r.json'),
      /^ValidationError: the provided report \(r\.json\), allocation 10\.65\.0\.1: sequenceNumber must be a non-negative integer$/,
    )
  })

  it('a negative sequence number in a stored block reaches the report as a number', async () => {
    const {ctx, store} = await freshCtx()
    await createPools(ctx, [{name: 'p4', cidr: '10.65.0.0/16'}])
    const ip = await allocate(ctx, 'h', 'p')
    const [bkey] = await store.listKeys(keys.blockPrefix(4))
    const b = (await store.get(bkey!))!.value
    await seed(
      store,
      bkey!,
      b.replace(/"sequenceNumberForAllocation":\{"0":\d+\}/, '"sequenceNumberForAllocation":{"0":-5}'),
    )
    const text = reportJson(buildReport(await checkIpam(ctx)))
    assert.equal(JSON.parse(text).allocations[ip][0].sequenceNumber, -5)
  })

  it('a malformed report is refused with a one-line error naming the file', () => {
    const good = JSON.parse(reportJson(fullReport()).replace('1767323045000000001', '1'))
    const cases: [unknown, RegExp][] = [
      ['not json', /is not valid JSON/],
      [[1, 2], /is malformed: not a JSON object/],
      [{...good, clusterGUID: undefined}, /is malformed: clusterGUID is missing/],
      [{...good, clusterInformationRevision: 1.5}, /is malformed: clusterInformationRevision is missing/],
      [{...good, allocations: []}, /is malformed: allocations must be an object/],
      [{...good, allocations: {'10.65.0.1': {}}}, /is malformed: allocations\[10\.65\.0\.1\] must be a list/],
      [{...good, allocations: {'10.65.0.1': [1]}}, /is malformed: allocations\[10\.65\.0\.1\] holds a non-object/],
      [
        {...good, allocations: {'10.65.0.1': [{ip: '10.65.0.1', sequenceNumber: 'soon', inUse: false}]}},
        /allocation 10\.65\.0\.1: sequenceNumber must be a non-negative integer/,
      ],
      [{...good, leakedHandles: {}}, /is malformed: leakedHandles must be a list/],
      [{...good, leakedHandles: [{Revision: '1'}]}, /is malformed: a leaked handle has no ID/],
      [{...good, leakedHandles: [{ID: 'h', UID: null}]}, /is malformed: leaked handle h has no Revision/],
    ]
    for (const [doc, why] of cases) {
      const text = typeof doc === 'string' ? doc : JSON.stringify(doc)
      assert.throws(
        () => parseReport(text, 'bad.json'),
        (err: unknown) => {
          assert.ok(err instanceof ValidationError, String(err))
          assert.match(err.message, /^the provided report \(bad\.json\)/)
          assert.match(err.message, why)
          assert.ok(!err.message.includes('\n'), `one line: ${err.message}`)
          return true
        },
        text,
      )
    }
  })

  it('members release does not use are kept when well-typed and left out when not', () => {
    const text =
      '{"version":7,"clusterGUID":"g","clusterInformationRevision":7,"allocations":{"10.65.0.1":[{"pod":3,"handle":"","inUse":"yes","owners":["a",1]}],"10.65.0.2":null}}'
    assert.deepEqual(decodeReport(text, 'r.json'), {
      version: '',
      clusterGUID: 'g',
      datastoreLocked: false,
      clusterInformationRevision: '7',
      clusterType: '',
      allocations: {'10.65.0.1': [{ip: '10.65.0.1', inUse: false, owners: ['a']}]},
    })
  })
})
