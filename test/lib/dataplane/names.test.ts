import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { hostVethName, ifNameProblem, interfacePrefix, validIfName } from '../../../src/lib/dataplane/names.ts';

describe('hostVethName', () => {
  test('reference example: namespace/podname → cali82111e10a96', () => {
    assert.equal(hostVethName({ namespace: 'namespace', pod: 'podname', containerId: 'abc' }), 'cali82111e10a96');
  });

  test('k8s: cali + first 11 hex chars of SHA-1("<namespace>.<pod>"), independent of the container ID', () => {
    const digest = createHash('sha1').update('kube-system.coredns-5d78c9869d-abcde').digest('hex');
    const a = hostVethName({ namespace: 'kube-system', pod: 'coredns-5d78c9869d-abcde', containerId: 'c1' });
    const b = hostVethName({ namespace: 'kube-system', pod: 'coredns-5d78c9869d-abcde', containerId: 'c2' });
    assert.equal(a, `cali${digest.slice(0, 11)}`);
    assert.equal(a, b);
    assert.equal(a.length, 15);
  });

  test('non-k8s (pod or namespace missing): cali + first 11 chars of the container ID', () => {
    const cid = '4f3c2b1a0e9d8c7b6a5f4e3d2c1b0a99';
    assert.equal(hostVethName({ containerId: cid }), 'cali4f3c2b1a0e9');
    assert.equal(hostVethName({ namespace: 'default', containerId: cid }), 'cali4f3c2b1a0e9');
    assert.equal(hostVethName({ pod: 'web-0', containerId: cid }), 'cali4f3c2b1a0e9');
    assert.equal(hostVethName({ namespace: '', pod: 'web-0', containerId: cid }), 'cali4f3c2b1a0e9');
  });

  test('short container IDs are used whole', () => {
    assert.equal(hostVethName({ containerId: 'abc' }), 'caliabc');
  });

  test('prefix replaces cali; the suffix stays 11 characters', () => {
    assert.equal(hostVethName({ namespace: 'namespace', pod: 'podname', containerId: 'x', prefix: 'tap' }), 'tap82111e10a96');
    assert.equal(hostVethName({ containerId: '0123456789abcdef', prefix: 'wl' }), 'wl0123456789a');
  });
});

describe('interfacePrefix (FELIX_INTERFACEPREFIX)', () => {
  test('unset or empty → cali', () => {
    assert.equal(interfacePrefix(undefined), 'cali');
    assert.equal(interfacePrefix(''), 'cali');
  });
  test('first comma-separated item', () => {
    assert.equal(interfacePrefix('tap'), 'tap');
    assert.equal(interfacePrefix('tap,cali'), 'tap');
    assert.equal(interfacePrefix('veth, tap'), 'veth');
  });
  test('feeds hostVethName', () => {
    assert.equal(hostVethName({ namespace: 'namespace', pod: 'podname', containerId: 'x', prefix: interfacePrefix('abc,cali') }), 'abc82111e10a96');
  });
});

describe('validIfName', () => {
  for (const name of ['eth0', 'net1', 'cali82111e10a96', 'a', 'eth0.100', 'x-y_z', '123456789012345']) {
    test(`accepts ${JSON.stringify(name)}`, () => {
      assert.equal(validIfName(name), true);
      assert.equal(ifNameProblem(name), undefined);
    });
  }
  for (const name of ['', '.', '..', '1234567890123456', 'eth/0', 'eth:0', 'eth 0', 'eth\t0', 'eth0\n', 'éééééééé']) {
    test(`rejects ${JSON.stringify(name)}`, () => {
      assert.equal(validIfName(name), false);
      assert.match(ifNameProblem(name)!, /interface name/);
    });
  }
});
