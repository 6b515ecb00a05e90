// `ipam show` and `ipam check` draw a progress bar with counts on a terminal (a real pseudo-terminal from
// util-linux `script`), and write nothing but their output to a pipe.
import assert from 'node:assert/strict'
import {spawn, spawnSync} from 'node:child_process'
import path from 'node:path'
import {before, describe, test} from 'node:test'
import {ROOT, sandbox} from './helpers.ts'

/** Carriage return and erase-line: the progress line is removed before the output. */
const ERASE = '\r\u001b[K'
const hasScript = spawnSync('script', ['--version']).status === 0

function onTty(db: string, args: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const cmd = `${process.execPath} ${path.join(ROOT, 'bin/run.cjs')} ${args}`
    const child = spawn('script', ['-qec', cmd, '/dev/null'], {
      env: {...process.env, IPAMCTL_DATASTORE_PATH: db, NO_COLOR: '1'},
    })
    let out = ''
    const timer = setTimeout(() => {
      child.kill()
      reject(new Error(`no exit within 30 s; output so far: ${JSON.stringify(out)}`))
    }, 30_000)
    child.stdout.on('data', (d) => (out += d))
    child.on('close', () => {
      clearTimeout(timer)
      resolve(out)
    })
  })
}

describe('progress of long scans', {skip: hasScript ? false : 'util-linux script is not installed'}, () => {
  const sb = sandbox()
  before(async () => {
    await sb.ok('pool', 'create', 'p1', '--cidr', '10.9.0.0/16')
    for (const h of ['a', 'b', 'c']) await sb.ok('ipam', 'assign', '--host', h)
  })

  test('ipam show on a terminal: a bar with the block count, erased before the table', async () => {
    const out = await onTty(sb.db, 'ipam show')
    assert.ok(out.includes(`Reading blocks [${'#'.repeat(24)}] 3/3${ERASE}`), JSON.stringify(out))
    assert.match(out, /IP Pool/)
  })

  test('ipam check on a terminal: a bar with the block count, erased before the report', async () => {
    const out = await onTty(sb.db, 'ipam check')
    assert.ok(out.includes(`Checking blocks [${'#'.repeat(24)}] 3/3${ERASE}`), JSON.stringify(out))
    assert.match(out, /Check complete/)
  })

  test('on a pipe: nothing on stderr', async () => {
    for (const args of [
      ['ipam', 'show'],
      ['ipam', 'check'],
    ]) {
      const r = await sb.run(...args)
      assert.equal(r.status, 0)
      assert.equal(r.stderr, '')
    }
  })
})
