// `ipamctl ipam assign --namespace-labels`: pools with a namespaceSelector serve only matching requests.
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'
import {assertRejected, fixture, type Sandbox} from './helpers.ts'

// team-a (10.30.0.0/26) selects namespaces labelled team=a; z-shared (10.31.0.0/26) has no selector and comes after it in name order.
const MANIFEST = `apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: team-a}
spec: {cidr: 10.30.0.0/26, namespaceSelector: 'team == "a"', allowedUses: [Workload]}
---
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: z-shared}
spec: {cidr: 10.31.0.0/26}
`

const twoPools = async (): Promise<Sandbox> => {
  const sb = await fixture('ns-pools', [])
  await sb.ok('pool', 'create', '-f', sb.file('pools.yaml', MANIFEST))
  return sb
}

const onlyTeamA = async (): Promise<Sandbox> => {
  const sb = await fixture('ns-pool-a', [])
  await sb.ok('pool', 'create', '-f', sb.file('pools.yaml', MANIFEST.split('---')[0]!))
  return sb
}

describe('ipam assign --namespace-labels', {concurrency: true}, () => {
  test('matching labels: the address comes from the pool whose namespaceSelector selects them (the first pool in name order)', async () => {
    const sb = await twoPools()
    assert.equal(
      await sb.ok('ipam', 'assign', '--host', 'node-1', '--handle', 'pod-a', '--namespace-labels', 'team=a,env=prod'),
      '10.30.0.0\n',
    )
  })

  test('other labels, or none: the pool with the selector is never used, the other one is', async () => {
    const sb = await twoPools()
    assert.equal(
      await sb.ok('ipam', 'assign', '--host', 'node-1', '--handle', 'pod-b', '--namespace-labels', 'team=b'),
      '10.31.0.0\n',
    )
    assert.equal(
      await sb.ok('ipam', 'assign', '--host', 'node-1', '--handle', 'pod-c', '--count', '2'),
      '10.31.0.1\n10.31.0.2\n',
    )
    assert.equal(sb.keys('/calico/ipam/v2/assignment/ipv4/block/10.30.').length, 0, 'no block in team-a')
  })

  test('--pool names a pool whatever its namespaceSelector (explicit pools ignore selectors)', async () => {
    const sb = await twoPools()
    assert.equal(
      await sb.ok(
        'ipam',
        'assign',
        '--host',
        'node-1',
        '--handle',
        'pod-d',
        '--pool',
        'team-a',
        '--namespace-labels',
        'team=b',
      ),
      '10.30.0.0\n',
    )
  })

  test('no pool selects the labels: exit 3, the reason names the pool and the labels, nothing written', async () => {
    const sb = await onlyTeamA()
    await assertRejected(
      sb,
      ['ipam', 'assign', '--host', 'node-1', '--handle', 'pod-e', '--namespace-labels', 'team=b'],
      3,
      'Error: no configured Calico pools for node node-1 (IPv4): the namespaceSelector of team-a does not match the namespace labels {team=b}',
    )
    await assertRejected(
      sb,
      ['ipam', 'assign', '--host', 'node-1', '--handle', 'pod-f'],
      3,
      'does not match the namespace labels none',
    )
  })

  for (const [value, message] of [
    ['team', 'Error: invalid namespace label "team": expected KEY=VALUE'],
    ['team=a,team=b', 'Error: namespace label team given twice'],
    ['team=a b', 'Error: invalid value "a b" for namespace label team'],
    ['-team=a', 'Error: invalid namespace label key "-team"'],
  ]) {
    test(`bad --namespace-labels ${JSON.stringify(value)}: exit 2, one line, nothing changed`, async () => {
      const sb = await twoPools()
      await assertRejected(
        sb,
        ['ipam', 'assign', '--host', 'node-1', '--handle', 'pod-g', '--namespace-labels', value!],
        2,
        message,
      )
    })
  }

  test('--namespace-labels with --ip is refused (a specific address ignores selectors): exit 2', async () => {
    const sb = await twoPools()
    await assertRejected(
      sb,
      ['ipam', 'assign', '--host', 'node-1', '--ip', '10.31.0.9', '--namespace-labels', 'team=a'],
      2,
      /--namespace-labels|--ip/,
    )
  })
})
