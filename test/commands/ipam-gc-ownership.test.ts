// ipam check / ipam gc with the real binary on a store shared with Calico and with manual assignments: tunnel
// addresses named by a Node record are in use, gc releases only workload allocations and lists every other
// leak as "leaked, not released: not a workload allocation", and --dry-run prints exactly what a real run does.
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import {before, describe, it} from 'node:test'
import {assignIps} from '../../src/lib/ipam/assign-ip.ts'
import {makeCtx} from '../../src/lib/ipam/context.ts'
import {keys} from '../../src/lib/store/keys.ts'
import {SqliteStore} from '../../src/lib/store/sqlite.ts'
import {encodeWorkloadEndpoint, endpointKey, newWorkloadEndpoint} from '../../src/lib/workload/endpoint.ts'
import {ensureBuilt, fixture, lines, type Sandbox} from './helpers.ts'

const NOT_WORKLOAD = 'Leaked, not released: not a workload allocation (release it with `ipam release`): '
const GONE_WEP = 'node-1-k8s-gone--0-eth0'

const steps = [
  ['pool', 'create', 'p4', '--cidr', '10.65.0.0/16'],
  // An operator's manual assignment (a gateway address).
  ['ipam', 'assign', '--host', 'node-1', '--ip', '10.65.0.10', '--handle', 'gateway'],
] as const

/**
 * Allocations with attributes only ipamctl's own writers may set (ipam assign --attr refuses them): a tunnel address
 * as Calico's node agent allocates it, workload leaks with the attributes the plugins write, and a workload whose
 * endpoint record is still there but whose network namespace is gone. A fixed clock keeps two sandboxes identical.
 */
const written: {ip: string; handle: string; attrs: Record<string, string>}[] = [
  {ip: '10.65.0.20', handle: 'vxlan-tunnel-addr-node-1', attrs: {type: 'vxlanTunnelAddress', node: 'node-1'}},
  {ip: '10.65.0.30', handle: 'k8s-pod-network.c0ffee', attrs: {namespace: 'default', pod: 'web-0'}},
  {ip: '10.65.0.31', handle: 'k8s-pod-network.beef', attrs: {'ipamctl.io/netns': '/var/run/netns/beef'}},
  {ip: '10.65.0.40', handle: 'k8s-pod-network.dead', attrs: {namespace: 'default', pod: 'gone-0'}},
]

/** What Calico (and a vanished pod) leave in the store besides ipamctl's own writes. */
async function shared(): Promise<Sandbox> {
  const sb = await fixture('gc-ownership', steps)
  const store = SqliteStore.open(sb.db)
  try {
    const node = {
      kind: 'Node',
      apiVersion: 'projectcalico.org/v3',
      metadata: {name: 'node-1', uid: 'u-1', creationTimestamp: '2026-01-02T03:04:05Z'},
      spec: {ipv4VXLANTunnelAddr: '10.65.0.20'},
    }
    const wep = newWorkloadEndpoint(
      {
        name: GONE_WEP,
        namespace: 'default',
        orchestrator: 'k8s',
        node: 'node-1',
        containerID: 'dead',
        pod: 'gone-0',
        endpoint: 'eth0',
        ipNetworks: ['10.65.0.40/32'],
        interfaceName: 'cali0123456789a',
        netns: '/nonexistent/ipamctl-test/netns/dead',
      },
      new Date('2026-01-02T03:04:05Z'),
    )
    // Fixed values (uid, time): two sandboxes seeded alike hold byte-identical stores.
    wep.uid = 'u-2'
    const ctx = makeCtx(store, {clock: {now: () => new Date('2026-01-02T03:04:05Z')}})
    for (const w of written) {
      await assignIps(ctx, [w.ip], {
        host: 'node-1',
        handle: w.handle,
        attrs: {...w.attrs, timestamp: '2026-01-02 03:04:05 +0000 UTC'},
      })
    }
    await store.txn(
      [],
      [
        {put: keys.node('node-1'), value: JSON.stringify(node)},
        {put: endpointKey('default', GONE_WEP), value: encodeWorkloadEndpoint(wep)},
        {put: keys.handle('orphan'), value: '{"block":{"10.65.0.0/26":1},"deleted":false}'},
      ],
    )
  } finally {
    await store.close()
  }
  return sb
}

const assigned = async (sb: Sandbox, ip: string) => !/is not assigned/.test(await sb.ok('ipam', 'show', '--ip', ip))

/** Addresses allocated, per `ipam check -o` (read-only). */
async function allocatedIps(sb: Sandbox): Promise<Set<string>> {
  const report = path.join(sb.dir, `report-${Date.now()}-${Math.random()}.json`)
  await sb.ok('ipam', 'check', '--node', 'node-1', '-o', report)
  return new Set(Object.keys((JSON.parse(fs.readFileSync(report, 'utf8')) as {allocations: object}).allocations))
}

before(() => ensureBuilt())

describe('ipam check / gc ownership (embedded store, real binary)', () => {
  it("ipam check counts the Node record's tunnel address as in use by the node", async () => {
    const sb = await shared()
    const before = sb.dump()
    const report = path.join(sb.dir, 'report.json')
    const out = lines(await sb.ok('ipam', 'check', '--show-all-ips', '--node', 'node-1', '-o', report))
    assert.equal(sb.dump(), before, 'check is read-only')
    const i = out.indexOf('Loading all nodes.')
    assert.deepEqual(out.slice(i, i + 3), [
      'Loading all nodes.',
      '  10.65.0.20 belongs to Node(node-1)',
      'Found 1 node tunnel IPs.',
    ])
    assert.ok(out.includes('Workloads and nodes are using 1 IPs.'), out.join('\n'))
    assert.ok(out.includes('Found 4 IPs that are allocated in IPAM but not actually in use.'), out.join('\n'))
    const entry = (
      JSON.parse(fs.readFileSync(report, 'utf8')) as {
        allocations: Record<string, {inUse: boolean; owners: string[] | null; type?: string}[]>
      }
    ).allocations['10.65.0.20']![0]!
    assert.deepEqual([entry.inUse, entry.owners, entry.type], [true, ['Node(node-1)'], 'vxlanTunnelAddress'])
  })

  it('ipam gc --grace 0s --yes keeps the manual assignment and the tunnel address, releases the workload leaks', async () => {
    const sb = await shared()
    const out = lines(await sb.ok('ipam', 'gc', '--node', 'node-1', '--grace', '0s', '--yes'))
    const h = out.findIndex((l) => l.startsWith(NOT_WORKLOAD))
    assert.ok(h >= 0, out.join('\n'))
    assert.equal(out[h], `${NOT_WORKLOAD}1 addresses`)
    assert.match(out[h + 1]!, /^ {2}10\.65\.0\.10 \(handle gateway, allocated \d{4}-/)
    assert.ok(out.includes('Released 3 addresses; deleted 1 handles.'), out.join('\n'))
    assert.equal(await assigned(sb, '10.65.0.10'), true, 'the manual assignment survives')
    assert.equal(await assigned(sb, '10.65.0.20'), true, 'the tunnel address survives')
    for (const ip of ['10.65.0.30', '10.65.0.31', '10.65.0.40']) assert.equal(await assigned(sb, ip), false, ip)
  })

  it('--dry-run prints exactly what the real run then does on the same store', async () => {
    const dry = await shared()
    const real = await shared()
    assert.equal(dry.dump(), real.dump(), 'two identical copies')
    const start = await allocatedIps(dry)
    const startKeys = new Set(dry.keys())

    const dryOut = lines(await dry.ok('ipam', 'gc', '--node', 'node-1', '--grace', '0s', '--dry-run'))
    const realOut = lines(await real.ok('ipam', 'gc', '--node', 'node-1', '--grace', '0s', '--yes'))
    const dryPlan = dryOut.slice(
      0,
      dryOut.findIndex((l) => l.startsWith('Dry run: ')),
    )
    const realPlan = realOut.slice(
      0,
      realOut.findIndex((l) => l.startsWith('Released ')),
    )
    const verbs = (l: string) => l.replace(/^Would release /, 'Releasing ').replace(/^Would delete /, 'Deleting ')
    assert.deepEqual(dryPlan.map(verbs), realPlan, 'the same plan, line for line')

    // What the real run did, from the stores: the dry run's copy is untouched, so it is the "before".
    const end = await allocatedIps(real)
    const freed = [...start].filter((ip) => !end.has(ip)).sort()
    const goneKeys = [...startKeys].filter((k) => !real.keys().includes(k))
    const planned = (re: RegExp) =>
      dryPlan
        .map((l) => re.exec(l)?.[1])
        .filter((x): x is string => x !== undefined)
        .sort()
    assert.deepEqual(freed, planned(/^Would release (\S+) /))
    const handlePrefix = keys.handlePrefix()
    const endpointPrefix = endpointKey('', '').slice(0, -1)
    // Handles of released addresses go with them; leaked handle records are deleted by plan.
    assert.deepEqual(
      goneKeys
        .filter((k) => k.startsWith(handlePrefix))
        .map((k) => k.slice(handlePrefix.length))
        .filter((h) => !h.startsWith('k8s-pod-network.')),
      planned(/^Would delete leaked handle (\S+)$/),
    )
    assert.deepEqual(
      goneKeys.filter((k) => k.startsWith(endpointPrefix)).map((k) => k.slice(endpointPrefix.length)),
      planned(/^Would delete endpoint record (\S+) /),
    )
    assert.deepEqual(planned(/^Would delete endpoint record (\S+) /), [`default/${GONE_WEP}`])
    // Nothing else went: no block, affinity, node or other record.
    assert.deepEqual(
      goneKeys.filter((k) => !k.startsWith(handlePrefix) && !k.startsWith(endpointPrefix)),
      [],
    )
    const summary =
      /^Dry run: would release (\d+) addresses and delete (\d+) handles and (\d+) endpoint records; nothing was changed\.$/.exec(
        dryOut.at(-1)!,
      )
    assert.ok(summary, dryOut.at(-1))
    assert.ok(realOut.includes(`Released ${summary[1]} addresses; deleted ${summary[2]} handles.`), realOut.join('\n'))
    assert.ok(
      realOut.includes(
        `Deleted ${summary[3]} endpoint records of pods whose network namespace is gone: default/${GONE_WEP}`,
      ),
      realOut.join('\n'),
    )
    assert.ok(dryPlan.includes(`${NOT_WORKLOAD}1 addresses`), dryPlan.join('\n'))
    assert.deepEqual(freed, ['10.65.0.30', '10.65.0.31', '10.65.0.40'])
  })
})
