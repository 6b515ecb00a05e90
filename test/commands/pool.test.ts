// `ipamctl pool create|list|get|delete`, run as the real binary.
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'
import {parse as parseYaml} from 'yaml'
import {assertCleanError, assertRejected, lines, sandbox} from './helpers.ts'

const POOL_KEY = '/calico/resources/v3/projectcalico.org/ippools/'
const HEADER = 'NAME CIDR NAT IPIPMODE VXLANMODE DISABLED DISABLEBGPEXPORT SELECTOR ASSIGNMENTMODE'

describe('pool', {concurrency: true}, () => {
  test('create IPv4 and IPv6 from flags; list shows the calicoctl wide columns; get gives the v3 resource', async () => {
    const sb = sandbox()
    assert.equal(
      await sb.ok('pool', 'create', 'default-ipv4', '--cidr', '10.65.0.0/16'),
      'Successfully created IP pool default-ipv4 (10.65.0.0/16, block size /26)\n',
    )
    assert.equal(
      await sb.ok('pool', 'create', 'default-ipv6', '--cidr', 'fd80:24e2:f998:72d6::/64'),
      'Successfully created IP pool default-ipv6 (fd80:24e2:f998:72d6::/64, block size /122)\n',
    )

    const list = await sb.ok('pool', 'list')
    assert.equal(
      list,
      [
        'NAME           CIDR                       NAT     IPIPMODE   VXLANMODE   DISABLED   DISABLEBGPEXPORT   SELECTOR   ASSIGNMENTMODE',
        'default-ipv4   10.65.0.0/16               false   Never      Never       false      false              all()      Automatic',
        'default-ipv6   fd80:24e2:f998:72d6::/64   false   Never      Never       false      false              all()      Automatic',
        '',
      ].join('\n'),
    )
    assert.equal(lines(list)[0]!.split(/\s+/).join(' '), HEADER)

    const json = JSON.parse(await sb.ok('pool', 'get', 'default-ipv4', '-o', 'json'))
    assert.equal(json.apiVersion, 'projectcalico.org/v3')
    assert.equal(json.kind, 'IPPool')
    assert.equal(json.metadata.name, 'default-ipv4')
    assert.match(json.metadata.uid, /^[0-9a-f-]{36}$/)
    assert.match(json.metadata.creationTimestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/)
    assert.deepEqual(json.spec, {
      cidr: '10.65.0.0/16',
      vxlanMode: 'Never',
      ipipMode: 'Never',
      blockSize: 26,
      nodeSelector: 'all()',
      allowedUses: ['Workload', 'Tunnel'],
      assignmentMode: 'Automatic',
    })
    // The stored value is the same resource (wire compatibility with Calico).
    assert.deepEqual(JSON.parse(sb.value(`${POOL_KEY}default-ipv4`)!), json)

    // By CIDR, as YAML.
    const yaml = parseYaml(await sb.ok('pool', 'get', 'fd80:24e2:f998:72d6::/64', '-o', 'yaml'))
    assert.equal(yaml.apiVersion, 'projectcalico.org/v3')
    assert.equal(yaml.kind, 'IPPool')
    assert.equal(yaml.metadata.name, 'default-ipv6')
    assert.deepEqual(yaml.spec, {
      cidr: 'fd80:24e2:f998:72d6::/64',
      vxlanMode: 'Never',
      ipipMode: 'Never',
      blockSize: 122,
      nodeSelector: 'all()',
      allowedUses: ['Workload', 'Tunnel'],
      assignmentMode: 'Automatic',
    })
  })

  test('create with every option; get (table) and list -o json reflect them; CIDR is canonicalised', async () => {
    const sb = sandbox()
    await sb.ok(
      'pool',
      'create',
      'rack-a',
      '--cidr',
      '10.66.0.0/20',
      '--block-size',
      '28',
      '--nat-outgoing',
      '--vxlan-mode',
      'CrossSubnet',
      '--disable-bgp-export',
      '--node-selector',
      'rack == "a"',
      '--assignment-mode',
      'Manual',
      '--allowed-uses',
      'Workload',
    )
    await sb.ok('pool', 'create', 'v6', '--cidr', 'FD00:0:0:0::/120', '--disabled', '--ipip-mode', 'Never')
    assert.equal(
      await sb.ok('pool', 'get', 'rack-a'),
      [
        'NAME     CIDR           NAT    IPIPMODE   VXLANMODE     DISABLED   DISABLEBGPEXPORT   SELECTOR      ASSIGNMENTMODE',
        'rack-a   10.66.0.0/20   true   Never      CrossSubnet   false      true               rack == "a"   Manual',
        '',
      ].join('\n'),
    )
    const pools = JSON.parse(await sb.ok('pool', 'list', '-o', 'json'))
    assert.equal(pools.length, 2)
    assert.deepEqual(pools[0].spec, {
      cidr: '10.66.0.0/20',
      vxlanMode: 'CrossSubnet',
      ipipMode: 'Never',
      natOutgoing: true,
      disableBGPExport: true,
      blockSize: 28,
      nodeSelector: 'rack == "a"',
      allowedUses: ['Workload'],
      assignmentMode: 'Manual',
    })
    assert.equal(pools[1].spec.cidr, 'fd00::/120')
    assert.equal(pools[1].spec.disabled, true)
    assert.equal(pools[1].spec.blockSize, 122)
  })

  test('pool labels are shown by pool get in YAML and JSON', async () => {
    const sb = sandbox()
    await sb.ok('pool', 'create', 'lab', '--cidr', '10.67.0.0/24', '--label', 'team=net', '--label', 'env=prod')
    assert.deepEqual(JSON.parse(sb.value(`${POOL_KEY}lab`)!).metadata.labels, {env: 'prod', team: 'net'})
    assert.deepEqual(parseYaml(await sb.ok('pool', 'get', 'lab', '-o', 'yaml')).metadata.labels, {
      env: 'prod',
      team: 'net',
    })
    assert.deepEqual(JSON.parse(await sb.ok('pool', 'get', 'lab', '-o', 'json')).metadata.labels, {
      env: 'prod',
      team: 'net',
    })
  })

  test('create -f: a two-document YAML manifest creates both pools', async () => {
    const sb = sandbox()
    const file = sb.file(
      'pools.yaml',
      [
        'apiVersion: projectcalico.org/v3',
        'kind: IPPool',
        'metadata:',
        '  name: m1',
        'spec:',
        '  cidr: 10.10.0.0/24',
        '  blockSize: 28',
        '  natOutgoing: true',
        '---',
        'apiVersion: projectcalico.org/v3',
        'kind: IPPool',
        'metadata:',
        '  name: m2',
        'spec:',
        '  cidr: fd10::/120',
        '  nodeSelector: zone == "b"',
        '',
      ].join('\n'),
    )
    assert.equal(
      await sb.ok('pool', 'create', '-f', file),
      'Successfully created IP pool m1 (10.10.0.0/24, block size /28)\nSuccessfully created IP pool m2 (fd10::/120, block size /122)\n',
    )
    const pools = JSON.parse(await sb.ok('pool', 'list', '-o', 'json'))
    assert.deepEqual(
      pools.map(
        (p: {
          metadata: {name: string}
          spec: {cidr: string; blockSize: number; natOutgoing?: boolean; nodeSelector: string}
        }) => [p.metadata.name, p.spec.cidr, p.spec.blockSize, p.spec.natOutgoing ?? false, p.spec.nodeSelector],
      ),
      [
        ['m1', '10.10.0.0/24', 28, true, 'all()'],
        ['m2', 'fd10::/120', 122, false, 'zone == "b"'],
      ],
    )
  })

  test('create -f: a JSON manifest (an IPPoolList) creates its pools', async () => {
    const sb = sandbox()
    const file = sb.file(
      'pools.json',
      JSON.stringify({
        apiVersion: 'projectcalico.org/v3',
        kind: 'IPPoolList',
        items: [
          {
            apiVersion: 'projectcalico.org/v3',
            kind: 'IPPool',
            metadata: {name: 'j1'},
            spec: {cidr: '10.11.0.0/24', ipipMode: 'Always'},
          },
          {
            apiVersion: 'projectcalico.org/v3',
            kind: 'IPPool',
            metadata: {name: 'j2'},
            spec: {cidr: '10.12.0.0/24', blockSize: 30},
          },
        ],
      }),
    )
    assert.equal(
      await sb.ok('pool', 'create', '-f', file),
      'Successfully created IP pool j1 (10.11.0.0/24, block size /26)\nSuccessfully created IP pool j2 (10.12.0.0/24, block size /30)\n',
    )
    assert.deepEqual(sb.keys(POOL_KEY), [`${POOL_KEY}j1`, `${POOL_KEY}j2`])
    assert.equal(JSON.parse(sb.value(`${POOL_KEY}j1`)!).spec.ipipMode, 'Always')
  })

  test('create -f - reads the manifest from stdin', async () => {
    const sb = sandbox()
    const manifest = JSON.stringify({
      apiVersion: 'projectcalico.org/v3',
      kind: 'IPPool',
      metadata: {name: 'stdin-pool'},
      spec: {cidr: '10.13.0.0/24'},
    })
    const r = await sb.runWith({input: manifest}, 'pool', 'create', '-f', '-')
    // The sandbox's store does not exist yet: this first write creates it and says so, nothing else.
    assert.equal(r.stderr, `created new datastore at ${sb.db}\n`)
    assert.equal(r.stdout, 'Successfully created IP pool stdin-pool (10.13.0.0/24, block size /26)\n')
    assert.equal(r.status, 0)
    assert.ok(sb.value(`${POOL_KEY}stdin-pool`))
  })

  test('delete: refuses without --yes when not on a terminal; with --yes removes the pool, addresses stay allocated', async () => {
    const sb = sandbox()
    await sb.ok('pool', 'create', 'old', '--cidr', '10.20.0.0/26')
    assert.equal(
      await sb.ok('ipam', 'assign', '--host', 'h1', '--count', '2', '--handle', 'keep'),
      '10.20.0.0\n10.20.0.1\n',
    )

    await assertRejected(
      sb,
      ['pool', 'delete', 'old'],
      2,
      /^Error: Delete IP pool old \(10\.20\.0\.0\/26\): refusing without confirmation; pass --yes to confirm\n$/,
    )
    assert.ok(sb.value(`${POOL_KEY}old`), 'pool must still exist')

    assert.equal(
      await sb.ok('pool', 'delete', 'old', '--yes'),
      'Successfully deleted IP pool old (10.20.0.0/26); released 1 block affinities\n',
    )
    assert.equal(sb.value(`${POOL_KEY}old`), undefined)
    assert.deepEqual(sb.keys('/calico/ipam/v2/host/'), [], 'affinities released')
    const block = JSON.parse(sb.value('/calico/ipam/v2/assignment/ipv4/block/10.20.0.0-26')!)
    assert.equal(block.affinity, null, 'block no longer owned')
    assert.deepEqual(block.allocations.slice(0, 3), [0, 0, null], 'both addresses still allocated')
    assert.ok(sb.value('/calico/ipam/v2/handle/keep'), 'handle kept')

    const show = await sb.ok('ipam', 'show', '--ip', '10.20.0.1')
    assert.match(show, /^IP 10\.20\.0\.1 is in use\nHandle ID: keep\n/)
    // Releasing the last addresses of the orphaned block removes it.
    assert.match(
      await sb.ok('ipam', 'release', '--yes', '--handle', 'keep'),
      /^Successfully released 2 IP addresses of handle keep/,
    )
    assert.deepEqual(sb.keys('/calico/ipam/v2/assignment/'), [])
  })

  test('pool rm -y alias deletes by CIDR; unknown pool is exit 3', async () => {
    const sb = sandbox()
    await sb.ok('pool', 'create', 'a', '--cidr', '10.30.0.0/24')
    await assertRejected(sb, ['pool', 'rm', 'nope', '-y'], 3, 'IP pool nope not found')
    assert.match(
      await sb.ok('pool', 'rm', '10.30.0.0/24', '-y'),
      /^Successfully deleted IP pool a \(10\.30\.0\.0\/24\)/,
    )
    assert.deepEqual(sb.keys(POOL_KEY), [])
  })

  test('create without NAME or --cidr is a usage error', async () => {
    const sb = sandbox()
    assertCleanError(await sb.run('pool', 'create', 'x'), 2, 'give a pool NAME and --cidr, or -f FILE')
  })
})
