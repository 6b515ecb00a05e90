import {describe, test} from 'node:test'
import assert from 'node:assert/strict'
import {createHash} from 'node:crypto'
import {
  hostLinkMarker,
  hostVethName,
  ifNameProblem,
  interfacePrefix,
  isHostLinkMarker,
  validIfName,
} from '../../../src/lib/dataplane/names.ts'

describe('hostVethName', () => {
  test('reference example: namespace/podname → cali82111e10a96', () => {
    assert.equal(hostVethName({namespace: 'namespace', pod: 'podname', containerId: 'abc'}), 'cali82111e10a96')
  })

  test('k8s: cali + first 11 hex chars of SHA-1("<namespace>.<pod>"), independent of the container ID', () => {
    const digest = createHash('sha1').update('kube-system.coredns-5d78c9869d-abcde').digest('hex')
    const a = hostVethName({namespace: 'kube-system', pod: 'coredns-5d78c9869d-abcde', containerId: 'c1'})
    const b = hostVethName({namespace: 'kube-system', pod: 'coredns-5d78c9869d-abcde', containerId: 'c2'})
    assert.equal(a, `cali${digest.slice(0, 11)}`)
    assert.equal(a, b)
    assert.equal(a.length, 15)
  })

  test('non-k8s (pod or namespace missing): cali + first 11 hex chars of SHA-1(the whole container ID)', () => {
    const cid = '4f3c2b1a0e9d8c7b6a5f4e3d2c1b0a99'
    const want = `cali${createHash('sha1').update(cid).digest('hex').slice(0, 11)}`
    assert.equal(hostVethName({containerId: cid}), want)
    assert.equal(hostVethName({namespace: 'default', containerId: cid}), want)
    assert.equal(hostVethName({pod: 'web-0', containerId: cid}), want)
    assert.equal(hostVethName({namespace: '', pod: 'web-0', containerId: cid}), want)
  })

  test('non-k8s: IDs sharing their first 11 characters (cnitool-style) get distinct names', () => {
    const a = hostVethName({containerId: 'cnitool-abc0000000000000000001'})
    const b = hostVethName({containerId: 'cnitool-abc0000000000000000002'})
    assert.notEqual(a, b)
    assert.match(a, /^cali[0-9a-f]{11}$/)
    assert.match(b, /^cali[0-9a-f]{11}$/)
  })

  test('short container IDs are hashed too: always 11 suffix characters', () => {
    assert.equal(
      hostVethName({containerId: 'abc'}),
      `cali${createHash('sha1').update('abc').digest('hex').slice(0, 11)}`,
    )
  })

  test('prefix replaces cali; the suffix stays 11 characters', () => {
    assert.equal(
      hostVethName({namespace: 'namespace', pod: 'podname', containerId: 'x', prefix: 'tap'}),
      'tap82111e10a96',
    )
    assert.equal(
      hostVethName({containerId: '0123456789abcdef', prefix: 'wl'}),
      `wl${createHash('sha1').update('0123456789abcdef').digest('hex').slice(0, 11)}`,
    )
  })
})

describe('hostLinkMarker', () => {
  test('names the container ID; one too long for an alias is recorded as its SHA-1', () => {
    assert.equal(hostLinkMarker('c1'), 'ipamctl-cni:c1')
    const long = 'x'.repeat(300)
    assert.equal(hostLinkMarker(long), `ipamctl-cni:sha1:${createHash('sha1').update(long).digest('hex')}`)
    assert.ok(Buffer.byteLength(hostLinkMarker('y'.repeat(243))) <= 255)
    assert.equal(isHostLinkMarker(hostLinkMarker('c1')), true)
    assert.equal(isHostLinkMarker('something else'), false)
    assert.equal(isHostLinkMarker(undefined), false)
  })
})

describe('interfacePrefix (FELIX_INTERFACEPREFIX)', () => {
  test('unset or empty → cali', () => {
    assert.equal(interfacePrefix(undefined), 'cali')
    assert.equal(interfacePrefix(''), 'cali')
  })
  test('first comma-separated item', () => {
    assert.equal(interfacePrefix('tap'), 'tap')
    assert.equal(interfacePrefix('tap,cali'), 'tap')
    assert.equal(interfacePrefix('veth, tap'), 'veth')
  })
  test('feeds hostVethName', () => {
    assert.equal(
      hostVethName({namespace: 'namespace', pod: 'podname', containerId: 'x', prefix: interfacePrefix('abc,cali')}),
      'abc82111e10a96',
    )
  })
})

describe('validIfName', () => {
  for (const name of ['eth0', 'net1', 'cali82111e10a96', 'a', 'eth0.100', 'x-y_z', '123456789012345']) {
    test(`accepts ${JSON.stringify(name)}`, () => {
      assert.equal(validIfName(name), true)
      assert.equal(ifNameProblem(name), undefined)
    })
  }
  for (const name of ['', '.', '..', '1234567890123456', 'eth/0', 'eth:0', 'eth 0', 'eth\t0', 'eth0\n', 'éééééééé']) {
    test(`rejects ${JSON.stringify(name)}`, () => {
      assert.equal(validIfName(name), false)
      assert.match(ifNameProblem(name)!, /interface name/)
    })
  }
})

describe('hostVethName of a second interface', () => {
  test('eth0 keeps the pod name; eth1 hashes the interface name too', () => {
    const pod = {namespace: 'namespace', pod: 'podname', containerId: 'abc'}
    assert.equal(hostVethName({...pod, ifName: 'eth0'}), 'cali82111e10a96')
    const sha = (s: string) => createHash('sha1').update(s).digest('hex').slice(0, 11)
    assert.equal(hostVethName({...pod, ifName: 'eth1'}), `cali${sha('namespace.podname.eth1')}`)
    assert.equal(hostVethName({containerId: 'abc', ifName: 'eth1'}), `cali${sha('abc.eth1')}`)
  })
})
