import {test, before, after} from 'node:test'
import assert from 'node:assert/strict'
import {execFileSync, spawnSync} from 'node:child_process'
import {existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, mkdirSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {dirname, join, resolve} from 'node:path'
import {fileURLToPath} from 'node:url'

const SCRIPT = resolve(dirname(fileURLToPath(import.meta.url)), '../../scripts/gen-man.mjs')

const manifest = {
  version: '9.8.7',
  commands: {
    'pool:create': {
      id: 'pool:create',
      summary: 'Create an IP pool',
      description:
        "Create an IP pool from a CIDR -- the block size defaults to 26.\n\nPaths like C:\\pools are escaped.\n.starts with a dot\n'starts with a quote",
      args: {name: {name: 'name', description: 'Pool name', required: true}},
      flags: {
        cidr: {name: 'cidr', char: 'c', summary: 'Pool CIDR', type: 'option', required: true},
        'ipip-mode': {
          name: 'ipip-mode',
          description: 'IP-in-IP encapsulation mode',
          type: 'option',
          options: ['Always', 'CrossSubnet', 'Never'],
          default: 'Never',
        },
        disabled: {name: 'disabled', description: 'Create the pool disabled', type: 'boolean'},
        'super-secret': {name: 'super-secret', description: 'internal', type: 'boolean', hidden: true},
      },
      examples: [
        '<%= config.bin %> <%= command.id %> default --cidr 10.65.0.0/16',
        {command: '<%= config.bin %> <%= command.id %> v6 --cidr fd00::/48', description: 'Create an IPv6 pool'},
      ],
      aliases: [],
    },
    'ipam:show': {
      id: 'ipam:show',
      summary: 'Show IP address utilization',
      description: 'Show IP address utilization.',
      args: {},
      flags: {'show-blocks': {name: 'show-blocks', type: 'boolean', summary: 'Show blocks'}},
      examples: [],
      aliases: [],
    },
    'debug:internal': {
      id: 'debug:internal',
      hidden: true,
      summary: 'Hidden command',
      args: {},
      flags: {},
      examples: [],
      aliases: [],
    },
  },
}

let dir: string
let out: string
let manifestPath: string

function run(extraEnv: Record<string, string> = {}): string {
  return execFileSync(process.execPath, [SCRIPT, '--manifest', manifestPath, '--out', out], {
    env: {...process.env, SOURCE_DATE_EPOCH: '1700000000', ...extraEnv},
    encoding: 'utf8',
  })
}

const page = (name: string) => readFileSync(join(out, name), 'utf8')

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'gen-man-'))
  out = join(dir, 'man', 'man1')
  manifestPath = join(dir, 'oclif.manifest.json')
  writeFileSync(manifestPath, JSON.stringify(manifest, null, 2))
  mkdirSync(out, {recursive: true})
  writeFileSync(join(out, 'ipamctl-pool-removed.1'), '.TH STALE 1\n')
  writeFileSync(join(out, 'unrelated.1'), '.TH KEEP 1\n')
  run()
})

after(() => {
  rmSync(dir, {recursive: true, force: true})
})

test('writes one page per visible command plus the index', () => {
  const files = readdirSync(out).sort()
  assert.deepEqual(files, ['ipamctl-ipam-show.1', 'ipamctl-pool-create.1', 'ipamctl.1', 'unrelated.1'])
})

test('removes stale ipamctl-*.1 pages but leaves other files alone', () => {
  assert.equal(existsSync(join(out, 'ipamctl-pool-removed.1')), false)
  assert.equal(existsSync(join(out, 'unrelated.1')), true)
  assert.equal(existsSync(join(out, 'ipamctl-debug-internal.1')), false)
})

test('command page has all sections in order', () => {
  const text = page('ipamctl-pool-create.1')
  const sections = text.split('\n').filter((l) => l.startsWith('.SH ') || l.startsWith('.TH '))
  assert.deepEqual(sections, [
    '.TH "IPAMCTL\\-POOL\\-CREATE" "1" "2023\\-11\\-14" "ipamctl 9.8.7" "ipamctl Manual"',
    '.SH NAME',
    '.SH SYNOPSIS',
    '.SH DESCRIPTION',
    '.SH ARGUMENTS',
    '.SH OPTIONS',
    '.SH EXAMPLES',
    '.SH EXIT STATUS',
    '.SH SEE ALSO',
  ])
  assert.match(text, /^\.SH NAME\nipamctl\\-pool\\-create \\- Create an IP pool$/m)
  assert.match(text, /^\\fBipamctl pool create\\fR \\fB\\-\\-cidr\\fR \\fIVALUE\\fR \[\\fIOPTIONS\\fR\] \\fINAME\\fR$/m)
})

test('escapes backslashes, hyphens and leading control characters', () => {
  const text = page('ipamctl-pool-create.1')
  assert.ok(text.includes('from a CIDR \\-\\- the block size'), 'hyphens')
  assert.ok(text.includes('C:\\epools'), 'backslash')
  assert.ok(text.includes('\n\\&.starts with a dot\n'), 'leading dot')
  assert.ok(text.includes("\n\\&'starts with a quote\n"), 'leading quote')
  // No unescaped hyphen anywhere outside comments.
  for (const line of text.split('\n')) {
    if (line.startsWith('.\\"')) continue
    assert.ok(!/(^|[^\\])-/.test(line), `unescaped hyphen in: ${line}`)
  }
})

test('options list flags with char, value placeholder, allowed values and default; hidden flags skipped', () => {
  const text = page('ipamctl-pool-create.1')
  assert.ok(text.includes('.TP\n\\fB\\-c\\fR, \\fB\\-\\-cidr\\fR \\fIVALUE\\fR\nPool CIDR\n'))
  assert.ok(text.includes('.TP\n\\fB\\-\\-ipip\\-mode\\fR \\fIVALUE\\fR\nIP\\-in\\-IP encapsulation mode\n'))
  assert.ok(text.includes('Allowed values: \\fBAlways\\fR, \\fBCrossSubnet\\fR, \\fBNever\\fR.'))
  assert.ok(text.includes('Default: \\fBNever\\fR.'))
  assert.ok(text.includes('.TP\n\\fB\\-\\-disabled\\fR\nCreate the pool disabled\n'), 'boolean flag has no VALUE')
  assert.ok(!text.includes('secret'), 'hidden flag must not appear')
})

test('examples substitute config.bin and command.id', () => {
  const text = page('ipamctl-pool-create.1')
  assert.ok(text.includes('$ ipamctl pool create default \\-\\-cidr 10.65.0.0/16'))
  assert.ok(text.includes('Create an IPv6 pool\n.RS 4\n.nf\n$ ipamctl pool create v6 \\-\\-cidr fd00::/48\n'))
  assert.ok(!text.includes('<%'))
})

test('exit status lists every code', () => {
  const text = page('ipamctl-ipam-show.1')
  for (const [code, words] of [
    ['0', 'Success'],
    ['1', 'Internal error'],
    ['2', 'Usage or validation error'],
    ['3', 'Not found'],
    ['4', 'Conflict'],
    ['5', 'Datastore unavailable'],
    ['6', 'Exhausted'],
  ]) {
    assert.ok(text.includes(`.TP\n\\fB${code}\\fR\n${words}`), `exit ${code}`)
  }
})

test('index page lists every visible command with its summary', () => {
  const text = page('ipamctl.1')
  assert.match(text, /^\.TH "IPAMCTL" "1" "2023\\-11\\-14" "ipamctl 9\.8\.7"/m)
  assert.ok(
    text.includes('.TP\n\\fBipamctl pool create\\fR\nCreate an IP pool. See \\fBipamctl\\-pool\\-create\\fR(1).'),
  )
  assert.ok(
    text.includes('.TP\n\\fBipamctl ipam show\\fR\nShow IP address utilization. See \\fBipamctl\\-ipam\\-show\\fR(1).'),
  )
  assert.ok(!text.includes('Hidden command'))
  assert.ok(text.includes('.SH SEE ALSO'))
})

test('output is reproducible and the date follows SOURCE_DATE_EPOCH', () => {
  const before = page('ipamctl-pool-create.1')
  run()
  assert.equal(page('ipamctl-pool-create.1'), before)
  run({SOURCE_DATE_EPOCH: '86400'})
  assert.match(page('ipamctl-pool-create.1'), /"1970\\-01\\-02"/)
  run()
})

test('pages are valid man(7) input for groff', (t) => {
  const probe = spawnSync('groff', ['--version'], {encoding: 'utf8'})
  if (probe.error || probe.status !== 0) {
    t.skip('groff is not installed')
    return
  }
  for (const file of readdirSync(out).filter((f) => f.startsWith('ipamctl'))) {
    const r = spawnSync('groff', ['-man', '-ww', '-z', join(out, file)], {encoding: 'utf8'})
    assert.equal(r.status, 0, `${file}: ${r.stderr}`)
    assert.equal(r.stderr, '', `${file}: ${r.stderr}`)
  }
})

test('fails with exit status 1 when the manifest is missing', () => {
  const r = spawnSync(process.execPath, [SCRIPT, '--manifest', join(dir, 'nope.json'), '--out', out], {
    encoding: 'utf8',
  })
  assert.equal(r.status, 1)
  assert.match(r.stderr, /manifest not found/)
})
