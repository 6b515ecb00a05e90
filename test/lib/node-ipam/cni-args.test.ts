// CNI_ARGS parsing: the Go library's LoadArgs rules (exact keys, IgnoreUnknown, one "=" per pair).
import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {parseCniArgs, withArg, withIgnoreUnknown} from '../../../src/lib/node-ipam/cni-args.ts'
import {CniError} from '../../../src/lib/cni/errors.ts'

function argsError(text: string): CniError {
  try {
    parseCniArgs(text)
  } catch (err) {
    assert.ok(err instanceof CniError, `expected a CniError, got ${err}`)
    return err
  }
  assert.fail(`parseCniArgs(${JSON.stringify(text)}) did not throw`)
}

describe('parseCniArgs', () => {
  it('returns empty defaults for unset or empty CNI_ARGS', () => {
    for (const text of [undefined, '']) {
      const a = parseCniArgs(text)
      assert.equal(a.ignoreUnknown, false)
      assert.equal(a.ip, undefined)
      assert.equal(a.podName, '')
      assert.equal(a.podNamespace, '')
      assert.deepEqual(a.pairs, [])
    }
  })

  it('reads the kubelet arguments', () => {
    const a = parseCniArgs(
      'IgnoreUnknown=1;K8S_POD_NAMESPACE=kube-system;K8S_POD_NAME=coredns-1;K8S_POD_INFRA_CONTAINER_ID=abc123;K8S_POD_UID=u-1',
    )
    assert.equal(a.ignoreUnknown, true)
    assert.equal(a.podNamespace, 'kube-system')
    assert.equal(a.podName, 'coredns-1')
    assert.equal(a.podInfraContainerId, 'abc123')
    assert.equal(a.podUid, 'u-1')
    assert.deepEqual(a.ignored, [])
    assert.equal(a.pairs.length, 5)
  })

  it('rejects an unknown key without IgnoreUnknown, with the Go library message and code 999', () => {
    const e = argsError('K8S_POD_NAME=web;FOO=bar;BAZ=1')
    assert.equal(e.code, 999)
    assert.equal(e.msg, 'ARGS: unknown args ["FOO=bar" "BAZ=1"]')
  })

  it('lets unknown keys through when IgnoreUnknown is true, wherever it appears', () => {
    for (const text of [
      'FOO=bar;IgnoreUnknown=1',
      'IgnoreUnknown=true;FOO=bar',
      'IgnoreUnknown=TRUE;FOO=bar',
      'IgnoreUnknown=True;FOO=bar',
    ]) {
      const a = parseCniArgs(text)
      assert.equal(a.ignoreUnknown, true, text)
      assert.deepEqual(a.ignored, ['FOO=bar'], text)
    }
  })

  it('does not ignore unknown keys when IgnoreUnknown is false or 0', () => {
    assert.equal(argsError('IgnoreUnknown=0;FOO=bar').msg, 'ARGS: unknown args ["FOO=bar"]')
    assert.equal(argsError('IgnoreUnknown=false;FOO=bar').msg, 'ARGS: unknown args ["FOO=bar"]')
  })

  it('rejects a non-boolean IgnoreUnknown', () => {
    assert.equal(
      argsError('IgnoreUnknown=yes').msg,
      'ARGS: error parsing value of pair "IgnoreUnknown=yes": boolean unmarshal error: invalid input yes)',
    )
  })

  it('matches key names exactly (case-sensitive)', () => {
    assert.match(argsError('k8s_pod_name=web').msg, /unknown args \["k8s_pod_name=web"\]/)
  })

  it('requires exactly one "=" per pair and no empty pairs', () => {
    assert.equal(argsError('K8S_POD_NAME=a=b').msg, 'ARGS: invalid pair "K8S_POD_NAME=a=b"')
    assert.equal(argsError('K8S_POD_NAME').msg, 'ARGS: invalid pair "K8S_POD_NAME"')
    assert.equal(argsError('K8S_POD_NAME=web;').msg, 'ARGS: invalid pair ""')
  })

  it('parses IP= into canonical text and treats an empty IP as absent', () => {
    assert.equal(parseCniArgs('IP=10.65.0.7').ip, '10.65.0.7')
    assert.equal(parseCniArgs('IP=FD00:0:0::0:7').ip, 'fd00::7')
    assert.equal(parseCniArgs('IP=').ip, undefined)
  })

  it('rejects an invalid IP=', () => {
    assert.equal(
      argsError('IP=10.65.0.300').msg,
      'ARGS: error parsing value of pair "IP=10.65.0.300": invalid IP address: 10.65.0.300)',
    )
    assert.match(argsError('IP=10.0.0.0/24').msg, /invalid IP address: 10\.0\.0\.0\/24/)
  })

  it('reads CNI_TEST_NAMESPACE', () => {
    assert.equal(parseCniArgs('CNI_TEST_NAMESPACE=testns').testNamespace, 'testns')
  })

  it('accepts a custom set of known keys', () => {
    assert.equal(parseCniArgs('MINE=1', ['MINE', 'IgnoreUnknown']).pairs[0]![0], 'MINE')
    assert.throws(() => parseCniArgs('K8S_POD_NAME=x', ['IgnoreUnknown']), /unknown args/)
  })
})

describe('CNI_ARGS builders', () => {
  it('prepends IgnoreUnknown=1 as calico does before calling IPAM', () => {
    assert.equal(withIgnoreUnknown(''), 'IgnoreUnknown=1')
    assert.equal(withIgnoreUnknown('K8S_POD_NAME=a'), 'IgnoreUnknown=1;K8S_POD_NAME=a')
    assert.equal(parseCniArgs(withIgnoreUnknown('FOO=1')).ignoreUnknown, true)
  })

  it('appends a pair', () => {
    assert.equal(withArg('', 'IP', '10.0.0.1'), 'IP=10.0.0.1')
    assert.equal(withArg('IgnoreUnknown=1', 'IP', '10.0.0.1'), 'IgnoreUnknown=1;IP=10.0.0.1')
  })
})

describe('IPAMCTL_IPS', () => {
  it('one address per family, canonical', () => {
    assert.deepEqual(parseCniArgs('IPAMCTL_IPS=10.0.0.5,FD00:0::5').ips, ['10.0.0.5', 'fd00::5'])
    assert.equal(parseCniArgs('IPAMCTL_IPS=').ips, undefined)
  })
  it('two of a family or a bad address is an ARGS error', () => {
    assert.throws(
      () => parseCniArgs('IPAMCTL_IPS=10.0.0.5,10.0.0.6'),
      (e: unknown) => {
        assert.ok(e instanceof CniError)
        assert.match(e.msg, /at most one address per family/)
        return true
      },
    )
    assert.throws(() => parseCniArgs('IPAMCTL_IPS=10.0.0.5,nope'), /invalid IP address: nope/)
  })
})
