// The embedded store under storage faults: another process holding the write lock, a read-only file system, a
// full disk (a 1 MiB tmpfs this test mounts and always unmounts). Each write gives one clean line with exit 5
// (datastore unavailable), changes nothing, and leaves a file that SQLite's integrity_check calls ok; once the
// fault is gone, allocation works again. Needs root (mount); integration because it does.
import assert from 'node:assert/strict'
import {spawn, execFileSync} from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {after, before, describe, test} from 'node:test'
import Database from 'better-sqlite3'
import {assertCleanError, dumpStore, ensureBuilt, lines, ROOT, runCli} from '../commands/helpers.ts'
import {runProcess} from '../support/process.ts'
import {mountTestTmpfs} from '../support/tmpfs.ts'

const TIMEOUT_S = 1
const SLACK_MS = 6000

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-faults-'))
const fsys = mountTestTmpfs(dir, {size: '1m', source: 'ipamctl-test'})
const {mnt, skip} = fsys
after(() => fsys.cleanup())
before(() => ensureBuilt())

function integrity(db: string): string {
  const d = new Database(db, {readonly: true, fileMustExist: true})
  try {
    return d.pragma('integrity_check', {simple: true}) as string
  } finally {
    d.close()
  }
}

/** Set up a store with a pool and one allocation; returns its path. */
async function store(where: string): Promise<string> {
  const db = path.join(where, 'ipam.db')
  for (const args of [
    ['pool', 'create', 'p', '--cidr', '10.88.0.0/16'],
    ['ipam', 'assign', '--host', 'h1', '--handle', 'first'],
  ]) {
    const r = await runCli(db, args)
    assert.equal(r.status, 0, r.stderr)
  }
  return db
}

/** A refused command: exit 5, one line matching `message`, in time, nothing changed. */
async function refused(db: string, args: string[], message: RegExp): Promise<void> {
  const before = dumpStore(db)
  const t = Date.now()
  const r = await runCli(db, [...args, '--timeout', String(TIMEOUT_S)])
  assertCleanError(r, 5, message)
  assert.ok(Date.now() - t < TIMEOUT_S * 1000 + SLACK_MS, `took ${Date.now() - t} ms`)
  if (before !== '<no datastore file>' || fs.existsSync(db)) assert.equal(dumpStore(db), before)
}

async function assigns(db: string, handle: string): Promise<void> {
  const r = await runCli(db, ['ipam', 'assign', '--host', 'h1', '--handle', handle])
  assert.equal(r.status, 0, r.stderr)
  assert.equal(lines(r.stdout).length, 1)
}

/** Fill the file system of `where` completely; returns the filler file. */
function fill(where: string): string {
  const filler = path.join(where, 'filler')
  const fd = fs.openSync(filler, 'w')
  const chunk = Buffer.alloc(4096, 1)
  try {
    for (;;) fs.writeSync(fd, chunk)
  } catch (err) {
    assert.equal((err as NodeJS.ErrnoException).code, 'ENOSPC')
  } finally {
    fs.closeSync(fd)
  }
  return filler
}

describe('embedded store faults', {skip}, () => {
  test('busy: another process holds the write lock → exit 5 "busy" within the timeout; reads still work', async () => {
    const db = await store(fs.mkdtempSync(path.join(dir, 'busy-')))
    const holder = spawn(
      process.execPath,
      [
        '-e',
        `const D=require('better-sqlite3');const d=new D(${JSON.stringify(db)});d.exec('BEGIN IMMEDIATE');process.stdout.write('locked\\n');setInterval(()=>{},1000)`,
      ],
      {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    )
    try {
      await new Promise<void>((resolve, reject) => {
        holder.stdout!.on('data', (d) => String(d).includes('locked') && resolve())
        holder.on('exit', (c) => reject(new Error(`lock holder exited ${c}`)))
      })
      await refused(
        db,
        ['ipam', 'assign', '--host', 'h1', '--handle', 'blocked'],
        /^Error: embedded datastore .* is busy: another process held its lock too long; try again$/m,
      )
      await refused(db, ['ipam', 'release', '--handle', 'first', '--yes'], /is busy/)
      const show = await runCli(db, ['ipam', 'show', '--timeout', String(TIMEOUT_S)])
      assert.equal(show.status, 0, `a read waited for the writer: ${show.stderr}`)
    } finally {
      holder.kill('SIGKILL')
    }
    assert.equal(integrity(db), 'ok')
    await assigns(db, 'after-busy')
  })

  test('datastore lock (ClusterInformation): the CNI IPAM plugin refuses with code 11 and allocates nothing', async () => {
    const db = await store(fs.mkdtempSync(path.join(dir, 'locked-')))
    assert.equal((await runCli(db, ['datastore', 'lock'])).status, 0)
    const before = dumpStore(db)
    const conf = JSON.stringify({
      cniVersion: '1.0.0',
      name: 'net',
      type: 'ipamctl-cni',
      nodename: 'h1',
      datastore_path: db,
      ipam_lock_file: `${db}.lock`,
      ipam: {type: 'ipamctl-ipam'},
    })
    const env = {
      PATH: process.env.PATH,
      CNI_COMMAND: 'ADD',
      CNI_CONTAINERID: 'c1',
      CNI_NETNS: '/var/run/netns/none',
      CNI_IFNAME: 'eth0',
      CNI_PATH: '/opt/cni/bin',
    }
    const r = await runProcess(process.execPath, [path.join(ROOT, 'bin', 'ipamctl-ipam.cjs')], {env, stdin: conf})
    assert.equal(r.code, 1, r.stdout + r.stderr)
    assert.deepEqual(JSON.parse(r.stdout).code, 11)
    assert.equal(dumpStore(db), before)
    assert.equal((await runCli(db, ['datastore', 'unlock', '--yes'])).status, 0)
  })

  describe('on a 1 MiB tmpfs', () => {
    let db: string
    before(async () => {
      db = await store(mnt)
    })

    test('read-only file system → writes fail with exit 5 saying so, reads still work; the file is intact', async () => {
      const before = dumpStore(db)
      execFileSync('mount', ['-o', 'remount,ro', mnt])
      try {
        await refused(
          db,
          ['ipam', 'assign', '--host', 'h1', '--handle', 'ro'],
          /read-only file system|readonly database/,
        )
        const list = await runCli(db, ['pool', 'list'])
        assert.equal(list.status, 0, list.stderr)
        assert.match(list.stdout, /10\.88\.0\.0\/16/)
      } finally {
        execFileSync('mount', ['-o', 'remount,rw', mnt])
      }
      assert.equal(dumpStore(db), before)
      assert.equal(integrity(db), 'ok')
      await assigns(db, 'after-ro')
    })

    test('full disk when the store is opened → exit 5 "no space left"; the file is intact', async () => {
      // Read before filling: on a full disk even a reader cannot create the store's -shm file.
      const before = dumpStore(db)
      const filler = fill(mnt)
      try {
        const t = Date.now()
        assertCleanError(
          await runCli(db, ['ipam', 'assign', '--host', 'h2', '--handle', 'full', '--timeout', String(TIMEOUT_S)]),
          5,
          /no space left|disk is full/,
        )
        assert.ok(Date.now() - t < TIMEOUT_S * 1000 + SLACK_MS)
      } finally {
        fs.rmSync(filler)
      }
      assert.equal(dumpStore(db), before)
      assert.equal(integrity(db), 'ok')
      await assigns(db, 'after-full')
    })

    test('full disk while the store is in use (its WAL cannot grow) → exit 5 "disk is full"; the file is intact', async () => {
      // A reader keeps the store's -wal and -shm files in place, as a long-running process would.
      const reader = new Database(db, {readonly: true, fileMustExist: true})
      let filler: string | undefined
      try {
        reader.prepare('SELECT count(*) FROM kv').get()
        filler = fill(mnt)
        let failures = 0
        // A new block for each host: each commit needs fresh WAL pages.
        for (let i = 0; i < 8 && failures === 0; i++) {
          const before = dumpStore(db)
          const r = await runCli(db, [
            'ipam',
            'assign',
            '--host',
            `full-${i}`,
            '--handle',
            `full-${i}`,
            '--timeout',
            String(TIMEOUT_S),
          ])
          if (r.status === 0) continue
          failures++
          assertCleanError(r, 5, /disk is full|no space left/)
          assert.equal(dumpStore(db), before)
        }
        assert.equal(failures, 1, 'no command hit the full disk')
      } finally {
        reader.close()
        if (filler) fs.rmSync(filler)
      }
      assert.equal(integrity(db), 'ok')
      await assigns(db, 'after-full-wal')
    })
  })
})
