// The logger (src/lib/log/logger.ts) and the plugins' settings (src/lib/log/cni.ts): levels, line format,
// redaction, and the netconf keys with their defaults.
import assert from 'node:assert/strict'
import {test} from 'node:test'
import {cniLogger, envSecrets, logSettingsFrom, podOf} from '../../../src/lib/log/cni.ts'
import {createLogger, isSecretName, type Level, lineLogger, parseLevel, REDACTED} from '../../../src/lib/log/logger.ts'

const at = () => new Date('2026-01-02T03:04:05.678Z')

function capture(level: Level, extra: Partial<Parameters<typeof createLogger>[0]> = {}) {
  const lines: string[] = []
  const log = createLogger({
    level,
    component: 'ipamctl-cni ADD',
    sinks: [{write: (l) => lines.push(l)}],
    now: at,
    ...extra,
  })
  return {log, lines}
}

test('levels accept Calico spellings; unknown ones are undefined', () => {
  for (const [text, want] of [
    ['error', 'error'],
    ['Fatal', 'error'],
    ['warn', 'warning'],
    ['WARNING', 'warning'],
    ['Info', 'info'],
    ['DEBUG', 'debug'],
    ['trace', 'debug'],
  ] as const)
    assert.equal(parseLevel(text), want, text)
  assert.equal(parseLevel('verbose'), undefined)
  assert.equal(parseLevel(undefined), undefined)
})

test('the level filters: each level writes itself and the levels above it', () => {
  const written = (level: Level) => {
    const {log, lines} = capture(level)
    log.debug('d')
    log.info('i')
    log.warn('w')
    log.error('e')
    return lines.map((l) => l.slice(l.indexOf(': ') + 2, -1))
  }
  assert.deepEqual(written('error'), ['e'])
  assert.deepEqual(written('warning'), ['w', 'e'])
  assert.deepEqual(written('info'), ['i', 'w', 'e'])
  assert.deepEqual(written('debug'), ['d', 'i', 'w', 'e'])
})

test('one line per event: time, level, pid, component, context, message, fields; newlines escaped', () => {
  const {log, lines} = capture('info', {context: {container: 'abc', netns: '/run/netns/x y', pod: 'default/web-0'}})
  log.info('assigned addresses\nsecond line', {ips: ['10.0.0.1/26', '10.0.0.2/26'], via: 'agent at /run/x.sock'})
  assert.deepEqual(lines, [
    `2026-01-02T03:04:05.678Z [INFO][${process.pid}] ipamctl-cni ADD container=abc netns="/run/netns/x y" pod=default/web-0: assigned addresses\\nsecond line ips=10.0.0.1/26,10.0.0.2/26 via="agent at /run/x.sock"\n`,
  ])
})

test('json format: one object per line with the same fields', () => {
  const {log, lines} = capture('debug', {format: 'json', component: 'agent', context: {node: 'n1'}})
  log.debug('batch', {size: 3, latency_ms: 1.5, conflicts: 0})
  assert.equal(lines.length, 1)
  assert.ok(lines[0]!.endsWith('}\n'))
  assert.deepEqual(JSON.parse(lines[0]!), {
    time: '2026-01-02T03:04:05.678Z',
    level: 'debug',
    pid: process.pid,
    component: 'agent',
    node: 'n1',
    msg: 'batch',
    size: 3,
    latency_ms: 1.5,
    conflicts: 0,
  })
})

test('secrets are redacted: secret-named fields, known secret values anywhere, PEM blocks', () => {
  const {log, lines} = capture('debug', {secrets: ['s3cr3t-pw', 'ab']})
  log.addSecret('late-token-value')
  log.info('connecting with s3cr3t-pw and late-token-value', {etcd_password: 'other', token: 'x', user: 'ab'})
  log.info('key: -----BEGIN PRIVATE KEY-----\nMIIEvQ\n-----END PRIVATE KEY----- done')
  const text = lines.join('')
  for (const s of ['s3cr3t-pw', 'late-token-value', 'other', 'MIIEvQ']) assert.ok(!text.includes(s), s)
  assert.ok(text.includes(`etcd_password=${REDACTED}`))
  assert.ok(text.includes(`key: ${REDACTED} done`))
  assert.ok(text.includes('user=ab'), 'secrets shorter than 4 characters are not searched for')
})

test('netconf keys: top level first, then the ipam section; bad values warn and take the default', () => {
  assert.deepEqual(logSettingsFrom({}), {
    level: 'info',
    file: undefined,
    maxSizeMb: 100,
    maxAgeDays: 30,
    maxCount: 10,
    problems: [],
  })
  const s = logSettingsFrom({
    log_level: 'WARNING',
    log_file_max_size: 5,
    ipam: {log_level: 'debug', log_file_path: '/var/log/x.log', log_file_max_count: 'many'},
  })
  assert.deepEqual(
    {...s, problems: s.problems.length},
    {
      level: 'warning',
      file: '/var/log/x.log',
      maxSizeMb: 5,
      maxAgeDays: 30,
      maxCount: 10,
      problems: 1,
    },
  )
  assert.match(logSettingsFrom({log_level: 'loud'}).problems[0]!, /log_level "loud" .* using info/)
})

test('the plugin logger: pod from CNI_ARGS, a bad log_level is one warning on stderr, nothing fails', () => {
  assert.equal(podOf('IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p;K8S_POD_INFRA_CONTAINER_ID=c'), 'ns/p')
  assert.equal(podOf('K8S_POD_NAME=p'), undefined)
  const err: string[] = []
  const env: Record<string, string> = {
    CNI_COMMAND: 'DEL',
    CNI_CONTAINERID: 'c1',
    CNI_ARGS: 'K8S_POD_NAMESPACE=a;K8S_POD_NAME=b',
  }
  const {logger, close} = cniLogger({
    config: {log_level: 'loud'},
    getenv: (n) => env[n],
    plugin: 'ipamctl-ipam',
    stderr: {write: (l) => err.push(l)},
    env: {},
    now: at,
  })
  logger.info('released addresses')
  close()
  assert.equal(err.length, 2)
  assert.match(err[0]!, /\[WARNING\].* ipamctl-ipam DEL container=c1 pod=a\/b: netconf log_level "loud"/)
  assert.match(err[1]!, /\[INFO\].*: released addresses\n$/)
})

test('lineLogger: a line callback as a logger, warnings and errors marked, fields kept, secrets still redacted', () => {
  const got: string[] = []
  const log = lineLogger((l) => got.push(l))
  log.debug('hidden')
  log.info('assigned addresses', {ips: ['10.0.0.1/26'], etcd_password: 'x'})
  log.warn('agent did not answer')
  log.error('boom')
  assert.deepEqual(got, [
    `assigned addresses ips=10.0.0.1/26 etcd_password=${REDACTED}`,
    'warning: agent did not answer',
    'error: boom',
  ])
})

test('isSecretName follows the rule of its regular expression on every ASCII name built from its words', () => {
  // The rule as it was written before isSecretName (its doc comment): the reference for the hand-written test.
  const rule = /pass(word|wd)?\b|passw|secret|token|credential|private|(^|[_-])key$|^key\b|auth(?!ority)/i
  // biome-ignore format: one line of words reads better than fifteen
  const words = ['pass', 'Pass', 'word', 'wd', 'W', 'auth', 'AUTH', 'ority', 'key', 'KEY', 'Y', 'secret', 'Token', 'e', 'L']
  const glue = ['', '_', '-', '.', ' ', '1', 'x', 'credentia', 'l', 'privat', 'e']
  const names: string[] = []
  for (const a of words)
    for (const g of glue) {
      names.push(a + g, g + a)
      for (const b of words) names.push(a + g + b, g + a + b, a + b + g)
    }
  let secret = 0
  for (const n of names) {
    assert.equal(isSecretName(n), rule.test(n), n)
    if (rule.test(n)) secret++
  }
  // Both outcomes are well represented, so the comparison is not one-sided.
  assert.ok(secret > 1000 && names.length - secret > 1000, `${secret} of ${names.length}`)
  for (const n of [
    'etcd_password',
    'ETCD_PASSWD',
    'etcdPassword',
    'authority',
    'apiKey',
    'key_file',
    'monkey',
    'keyring',
  ])
    assert.equal(isSecretName(n), rule.test(n), n)
})

test('envSecrets: secret-named values of the datastore and cluster variables only', () => {
  const env = {
    ETCD_PASSWORD: 'e-pass',
    IPAMCTL_ETCD_PASSWORD: 'i-pass',
    CALICO_TOKEN: 'c-token',
    DATASTORE_SECRET: 'd-secret',
    K8S_AUTH_TOKEN: 'k-token',
    KUBECONFIG_KEY: 'kube-key',
    ETCD_ENDPOINTS: 'http://127.0.0.1:2379',
    MY_PASSWORD: 'not-ours',
    XETCD_PASSWORD: 'not-a-prefix',
    ETCD_PASSWORD_EMPTY: '',
  }
  assert.deepEqual(envSecrets(env).sort(), ['c-token', 'd-secret', 'e-pass', 'i-pass', 'k-token', 'kube-key'])
})
