// Security promises that need no etcd (security.integration.test.ts has TLS and authentication):
//  - the embedded store file is 0600 and the directories ipamctl creates for it 0700, even under umask 000,
//    and no file of the store is ever visible with a wider mode (it is built privately and linked into place);
//  - the `ipam check` report file is 0600, also when it existed before with a wider mode;
//  - passwords are never printed: not by `datastore status`, not in errors, not with --debug;
//  - no shell is ever started: src/ uses only spawn/execFile-style calls with argument arrays;
//  - names that end up in file paths, keys or interface names are validated.
import assert from 'node:assert/strict'
import {spawn} from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {after, before, describe, test} from 'node:test'
import {findPlugin} from '../../src/lib/cni/delegate.ts'
import {validIfName} from '../../src/lib/dataplane/names.ts'
import {isValidHandleId, isValidHostName} from '../../src/lib/store/keys.ts'
import {assertCleanError, ensureBuilt, ROOT, runCli, sandbox} from '../commands/helpers.ts'
import {configText} from '../commands/etcd-cli.ts'
import {runProcess} from '../support/process.ts'

const UMASK0 = path.join(ROOT, 'test', 'reliability', 'workers', 'umask0.mjs')
const CREATE = path.join(ROOT, 'test', 'reliability', 'workers', 'create-stores.mjs')
const SRC = path.join(ROOT, 'src')

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-sec-'))
after(() => fs.rmSync(dir, {recursive: true, force: true}))
before(() => ensureBuilt())

const mode = (p: string) => fs.statSync(p).mode & 0o777
const cleanEnv = () => {
  const env = {...process.env}
  delete env.NODE_OPTIONS
  return env
}

/** Every file and directory under `root` with its mode, as seen right now (entries may vanish meanwhile). */
function scan(root: string, out: Map<string, number>): void {
  let entries: fs.Dirent[]
  try {
    entries = fs.readdirSync(root, {withFileTypes: true})
  } catch {
    return
  }
  for (const e of entries) {
    const p = path.join(root, e.name)
    try {
      const m = fs.lstatSync(p).mode & 0o777
      out.set(`${p} ${m.toString(8)}`, m)
    } catch {
      continue
    }
    if (e.isDirectory()) scan(p, out)
  }
}

describe('the embedded store is private from the first moment', () => {
  test('under umask 000: store 0600, -wal/-shm 0600, new directories 0700, via the real CLI', async () => {
    const db = path.join(dir, 'cli', 'a', 'b', 'ipam.db')
    const r = await runProcess(
      process.execPath,
      [UMASK0, 'bin/run.cjs', 'pool', 'create', 'p', '--cidr', '10.5.0.0/16'],
      {cwd: ROOT, env: {...cleanEnv(), IPAMCTL_DATASTORE_PATH: db}},
    )
    assert.equal(r.code, 0, r.stderr)
    assert.equal(mode(db).toString(8), '600')
    for (const d of [path.join(dir, 'cli'), path.join(dir, 'cli', 'a'), path.join(dir, 'cli', 'a', 'b')])
      assert.equal(mode(d).toString(8), '700', d)
    // A process holding the store open keeps -wal and -shm: they are private too.
    const Database = (await import('better-sqlite3')).default
    const open = new Database(db)
    try {
      open.prepare('SELECT count(*) FROM kv').get()
      for (const f of [`${db}-wal`, `${db}-shm`]) assert.equal(mode(f).toString(8), '600', f)
    } finally {
      open.close()
    }
  })

  test('no window: while 40 stores are created under umask 000, no file or directory is ever seen with group/other bits', async () => {
    const root = path.join(dir, 'race')
    fs.mkdirSync(root, {mode: 0o700})
    const child = spawn(process.execPath, [UMASK0, CREATE, root, '40'], {
      cwd: ROOT,
      env: cleanEnv(),
      stdio: ['ignore', 'ignore', 'pipe'],
    })
    let stderr = ''
    child.stderr.on('data', (d) => (stderr += d))
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve))
    let done = false
    void exited.then(() => (done = true))
    const seen = new Map<string, number>()
    let scans = 0
    while (!done) {
      scan(root, seen)
      if (++scans % 20 === 0) await new Promise((r) => setImmediate(r))
    }
    assert.equal(await exited, 0, stderr)
    scan(root, seen)
    const wide = [...seen].filter(([, m]) => (m & 0o077) !== 0).map(([k]) => k)
    assert.deepEqual(wide, [], 'seen with a group/other-accessible mode')
    const stores = [...seen.keys()].filter((k) => / 600$/.test(k) && k.includes('ipam.db '))
    assert.equal(new Set(stores.map((k) => k.split(' ')[0])).size, 40)
    assert.ok(
      [...seen.keys()].some((k) => k.includes('.new-')),
      `the private temp files were never seen (${scans} scans): the scan proved little`,
    )
  })

  test('the code builds a new store in a 0600 temp file and links it into place (inspection)', () => {
    const text = fs.readFileSync(path.join(SRC, 'lib', 'store', 'sqlite.ts'), 'utf8')
    const create = text.slice(text.indexOf('function createDatabase'))
    const body = create.slice(0, create.indexOf('\n}\n'))
    const openAt = body.indexOf("fs.openSync(tmp, 'wx', 0o600)")
    assert.ok(openAt >= 0, 'the temp file is created exclusively with mode 0600')
    assert.ok(body.indexOf('new Database(tmp') > openAt, 'SQLite opens the temp file only after it exists privately')
    assert.match(body, /fs\.linkSync\(tmp, file\)/)
    assert.match(text, /fs\.mkdirSync\(m, \{mode: 0o700\}\)/)
    const open = text.slice(text.indexOf('static open('))
    assert.ok(
      open.indexOf('createDatabase(file)') < open.indexOf('new Database(file'),
      'a missing file is created privately before SQLite opens it',
    )
  })
})

describe('the ipam check report is never readable by others', () => {
  test('a new report under umask 000 is 0600; an existing 0666 file becomes 0600', async () => {
    const sb = sandbox()
    await sb.ok('pool', 'create', 'p', '--cidr', '10.6.0.0/16')
    await sb.ok('ipam', 'assign', '--host', 'h', '--handle', 'secret-owner')
    const fresh = path.join(sb.dir, 'new-report.json')
    const r = await runProcess(process.execPath, [UMASK0, 'bin/run.cjs', 'ipam', 'check', '-o', fresh], {
      cwd: ROOT,
      env: {...cleanEnv(), IPAMCTL_DATASTORE_PATH: sb.db},
    })
    assert.equal(r.code, 0, r.stderr)
    assert.equal(mode(fresh).toString(8), '600')
    assert.match(fs.readFileSync(fresh, 'utf8'), /secret-owner/)
    const old = path.join(sb.dir, 'old-report.json')
    fs.writeFileSync(old, '{\n  "version": "v0.0.1",\n  "clusterGUID": "",\n  "allocations": {}\n}\n')
    fs.chmodSync(old, 0o666)
    await sb.ok('ipam', 'check', '-o', old)
    assert.equal(mode(old).toString(8), '600')
    assert.match(fs.readFileSync(old, 'utf8'), /secret-owner/)
  })

  test('-o never overwrites a file that is not a report (the datastore, say): exit 2, the file byte-identical', async () => {
    const sb = sandbox()
    await sb.ok('pool', 'create', 'p', '--cidr', '10.6.0.0/16')
    await sb.ok('ipam', 'assign', '--host', 'h', '--handle', 'keep-me')
    const before = fs.readFileSync(sb.db)
    const r = await sb.run('ipam', 'check', '-o', sb.db)
    assert.equal(r.status, 2, r.stderr)
    assert.equal(
      r.stderr,
      `Error: ${sb.db} exists and is not an ipam check report; refusing to overwrite it (remove it or choose another path)\n`,
    )
    assert.ok(fs.readFileSync(sb.db).equals(before), 'the datastore file is untouched')
    assert.match(await sb.ok('ipam', 'show', '--ip', '10.6.0.0'), /keep-me|assigned|handle/)
    const notes = path.join(sb.dir, 'notes.txt')
    fs.writeFileSync(notes, 'operator notes')
    assert.equal((await sb.run('ipam', 'check', '-o', notes)).status, 2)
    assert.equal(fs.readFileSync(notes, 'utf8'), 'operator notes')
  })
})

describe('passwords are never printed', {concurrency: true}, () => {
  const PW = 'Pw-d0-not-print'
  const noPw = (r: {stdout: string; stderr: string}) => {
    assert.ok(!(r.stdout + r.stderr).includes(PW), `the password was printed:\n${r.stdout}${r.stderr}`)
  }
  const sb = sandbox()
  const unreachable = 'http://127.0.0.1:1'
  const etcdEnv = {ETCD_USERNAME: 'root', ETCD_PASSWORD: PW, DATASTORE_TYPE: 'etcdv3', ETCD_ENDPOINTS: unreachable}

  test('datastore status (table and json, --debug) with ETCD_PASSWORD', async () => {
    for (const out of ['table', 'json']) {
      const r = await runCli(sb.db, ['datastore', 'status', '-o', out, '--timeout', '1', '--debug'], {env: etcdEnv})
      assert.ok(r.stdout.length > 0, r.stderr)
      noPw(r)
    }
  })

  test('a failing command with --debug (stack trace printed) with ETCD_PASSWORD', async () => {
    const r = await runCli(sb.db, ['ipam', 'show', '--timeout', '1', '--debug'], {env: etcdEnv})
    assert.equal(r.status, 5)
    assert.match(r.stderr, /^\s+at /m, 'expected a stack trace with --debug')
    noPw(r)
  })

  test('a config file with etcdPassword: status, failure, and a syntax error after the password line', async () => {
    const cfg = sb.file(
      'pw.cfg',
      configText({datastoreType: 'etcdv3', etcdEndpoints: unreachable, etcdUsername: 'root', etcdPassword: PW}),
    )
    noPw(await runCli(sb.db, ['datastore', 'status', '--config', cfg, '--timeout', '1']))
    noPw(await runCli(sb.db, ['ipam', 'assign', '--host', 'h', '--config', cfg, '--timeout', '1', '--debug']))
    const broken = sb.file(
      'broken.cfg',
      `apiVersion: projectcalico.org/v3\nkind: CalicoAPIConfig\nspec:\n  etcdPassword: "${PW}\n  etcdUsername: [\n`,
    )
    const r = await runCli(sb.db, ['ipam', 'show', '--config', broken, '--debug'])
    assert.equal(r.status, 2)
    noPw(r)
  })

  test('credentials in an endpoint URL are refused without echoing them', async () => {
    const ep = `http://root:${PW}@127.0.0.1:2379`
    const r = await runCli(sb.db, ['ipam', 'show', '--datastore', 'etcdv3', '--etcd-endpoints', ep, '--debug'])
    assertCleanError({...r, stderr: `${r.stderr.split('\n')[0]}\n`}, 2, 'must not contain credentials')
    noPw(r)
    noPw(await runCli(sb.db, ['datastore', 'status'], {env: {DATASTORE_TYPE: 'etcdv3', ETCD_ENDPOINTS: ep}}))
  })
})

describe('no shell, ever', () => {
  const files = (d: string): string[] =>
    fs
      .readdirSync(d, {withFileTypes: true})
      .flatMap((e) =>
        e.isDirectory() ? files(path.join(d, e.name)) : e.name.endsWith('.ts') ? [path.join(d, e.name)] : [],
      )
  const sources = files(SRC).map((f) => ({f: path.relative(ROOT, f), text: fs.readFileSync(f, 'utf8')}))

  test('src/ imports from child_process only spawn/spawnSync/execFile/execFileSync, never with a shell', () => {
    assert.ok(sources.length > 50)
    const problems: string[] = []
    for (const {f, text} of sources) {
      for (const m of text.matchAll(
        /import\s+(?:\{([^}]*)\}|(\*\s+as\s+\w+|\w+))\s+from\s+'(?:node:)?child_process'/g,
      )) {
        if (!m[1]) problems.push(`${f}: imports child_process as a whole (${m[2]})`)
        for (const name of (m[1] ?? '')
          .split(',')
          .map((s) => s.trim().split(/\s+as\s+/)[0])
          .filter(Boolean)) {
          if (!['spawn', 'spawnSync', 'execFile', 'execFileSync', 'type ChildProcess'].includes(name!))
            problems.push(`${f}: imports ${name}`)
        }
      }
      if (/require\(\s*'(?:node:)?child_process'\s*\)/.test(text)) problems.push(`${f}: requires child_process`)
      if (/\bshell\s*:/.test(text)) problems.push(`${f}: passes a shell option`)
      // A bare exec()/execSync() (child_process's, through a shell); `db.exec(sql)` is SQLite's and fine.
      if (/(?<![.\w])(execSync|exec)\s*\(/.test(text)) problems.push(`${f}: calls exec/execSync`)
      for (const m of text.matchAll(/\b(spawn|spawnSync|execFile|execFileSync)\(([^,()]+),\s*([^,)]+)/g)) {
        if (!m[3]!.trim().startsWith('['))
          problems.push(`${f}: ${m[1]}(${m[2]}, ${m[3]}) — arguments must be a literal array`)
      }
    }
    assert.deepEqual(problems, [])
  })

  test('the checker itself catches a shell', () => {
    const bad =
      // biome-ignore lint/suspicious/noTemplateCurlyInString: source text of a sample file, not a template
      "import {exec} from 'node:child_process'\nexec(`ip link del ${name}`)\nspawn('sh', ['-c', x], {shell: true})"
    assert.match(bad, /import\s+\{([^}]*)\}\s+from\s+'node:child_process'/)
    assert.match(bad, /\bshell\s*:/)
    assert.match(bad, /(?<![.\w])(execSync|exec)\s*\(/)
    assert.doesNotMatch("db.exec('BEGIN')", /(?<![.\w])(execSync|exec)\s*\(/)
  })
})

describe('TLS verification cannot be switched off', () => {
  test('src/ has no option that disables certificate or host name checks', () => {
    const text = fs
      .readdirSync(path.join(SRC, 'lib', 'store'))
      .map((f) => fs.readFileSync(path.join(SRC, 'lib', 'store', f), 'utf8'))
      .join('\n')
    assert.match(text, /rootCertificate/, 'the etcd client is given the CA')
    for (const off of [
      /rejectUnauthorized\s*:\s*false/,
      /checkServerIdentity/,
      /NODE_TLS_REJECT_UNAUTHORIZED/,
      /ssl_target_name_override/,
      /insecure/i,
    ]) {
      assert.doesNotMatch(text, off)
    }
  })
})

describe('names used in paths, keys and interface names are validated', () => {
  test('host names, handles, CNI plugin types and interface names', () => {
    for (const bad of ['a/b', 'a b', 'a\nb', '', 'x'.repeat(254)])
      assert.equal(isValidHostName(bad), false, JSON.stringify(bad))
    for (const bad of ['a/b', 'a\nb', 'a\u0000b', '', 'x'.repeat(254)])
      assert.equal(isValidHandleId(bad), false, JSON.stringify(bad))
    assert.equal(isValidHandleId('k8s-pod-network.0123456789abcdef'), true)
    for (const bad of ['../../bin/sh', 'a/b', 'x;rm -rf /', '$(id)', ''])
      assert.throws(() => findPlugin(bad, '/opt/cni/bin'), /invalid plugin type/, bad)
    for (const bad of ['eth0123456789abc', 'éééééééé', 'a/b', 'a:b', 'a b', '.', '..', ''])
      assert.equal(validIfName(bad), false, bad)
  })

  test('cni add --create-netns refuses a netns name ip(8) would read as an option', async () => {
    const sb = sandbox()
    await runCli(sb.db, ['pool', 'create', 'p', '--cidr', '10.7.0.0/16'])
    const before = sb.dump()
    assertCleanError(await runCli(sb.db, ['cni', 'add', '--netns', '-all', '--create-netns']), 2, 'invalid netns name')
    assert.equal(sb.dump(), before)
  })
})
