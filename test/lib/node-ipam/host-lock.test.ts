// The host-wide IPAM lock: exclusive across processes, bounded wait, best effort when it cannot be set up.
import assert from 'node:assert/strict'
import {spawn} from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {after, describe, it} from 'node:test'
import {fileURLToPath} from 'node:url'
import {acquireHostLock} from '../../../src/lib/node-ipam/host-lock.ts'

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-lock-'))
after(() => fs.rmSync(tmp, {recursive: true, force: true}))
const LOCK_TS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../src/lib/node-ipam/host-lock.ts')

describe('acquireHostLock', () => {
  it('creates missing directories and can be taken again once released', () => {
    const file = path.join(tmp, 'a', 'b', 'ipam.lock')
    const logs: string[] = []
    const unlock = acquireHostLock(file, {log: (l) => logs.push(l)})
    assert.ok(fs.existsSync(file))
    unlock()
    const t0 = Date.now()
    acquireHostLock(file, {waitMs: 5000})()
    assert.ok(Date.now() - t0 < 2000)
    assert.deepEqual(logs, [])
  })

  it('is exclusive: a second holder gives up after waitMs and goes on without it', () => {
    const file = path.join(tmp, 'excl.lock')
    const unlock = acquireHostLock(file)
    const logs: string[] = []
    const t0 = Date.now()
    const second = acquireHostLock(file, {waitMs: 300, log: (l) => logs.push(l)})
    const waited = Date.now() - t0
    assert.ok(waited >= 250, `gave up after ${waited} ms, before the wait`)
    assert.equal(logs.length, 1)
    assert.match(logs[0]!, /failed to take the host-wide IPAM lock .*excl\.lock .*going on without it/)
    second()
    unlock()
  })

  it('waits for another process to release it', async () => {
    const file = path.join(tmp, 'proc.lock')
    const script = `import {acquireHostLock} from ${JSON.stringify(LOCK_TS)}; const u = acquireHostLock(${JSON.stringify(file)}); process.stdout.write('held\\n'); setTimeout(() => { u(); process.exit(0) }, 700);`
    const env = {...process.env}
    delete env.NODE_OPTIONS
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      env,
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (b: Buffer) => b.toString().includes('held') && resolve())
      child.on('exit', (code) => reject(new Error(`lock holder exited early (${code})`)))
    })
    const t0 = Date.now()
    const logs: string[] = []
    const unlock = acquireHostLock(file, {waitMs: 10_000, log: (l) => logs.push(l)})
    const waited = Date.now() - t0
    unlock()
    assert.deepEqual(logs, [])
    assert.ok(waited >= 300, `took the lock after ${waited} ms while the other process held it`)
    await new Promise((r) => child.once('close', r))
  })

  it('a lock whose directory cannot be created is skipped at once (never hangs)', () => {
    const logs: string[] = []
    const t0 = Date.now()
    const unlock = acquireHostLock('/proc/ipamctl-no-such-dir/ipam.lock', {log: (l) => logs.push(l)})
    unlock()
    assert.ok(Date.now() - t0 < 2000)
    assert.match(logs.at(-1)!, /going on without it/)
  })
})
