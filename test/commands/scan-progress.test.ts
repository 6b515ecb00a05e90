// `ipam show`, `ipam check`, `ipam gc` and `datastore export` draw a progress bar with counts on a terminal (a real pseudo-terminal from
// util-linux `script`), and write nothing but their output to a pipe.
import assert from 'node:assert/strict'
import {spawn, spawnSync} from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import {before, describe, test} from 'node:test'
import {ROOT, sandbox} from './helpers.ts'

/** Carriage return and erase-line: the progress line is removed before the output. */
const ERASE = '\r\u001b[K'
const RESOURCES = '/calico/resources/v3/projectcalico.org/'
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

  test('ipam gc --dry-run on a terminal: a bar over the scan, erased before the plan', async () => {
    const out = await onTty(sb.db, 'ipam gc --dry-run')
    assert.ok(out.includes(`Checking blocks [${'#'.repeat(24)}] 3/3${ERASE}`), JSON.stringify(out))
    assert.match(out, /Nothing to clean up\./)
  })

  test('datastore export -o on a terminal: the keys listed, then written of that total, erased before the summary', async () => {
    const file = sb.file('backup.txt', '')
    const out = await onTty(sb.db, `datastore export -o ${file}`)
    // Every key under /calico/ (pool, blocks, affinities, Node records, ...), counted from the store itself.
    const total = sb.keys('/calico/').length
    // The line is redrawn at most every 100 ms, so the listing shows its first count at least.
    assert.ok(out.includes(`${ERASE}Listing keys… `), JSON.stringify(out))
    assert.ok(out.includes(`Exporting [${'#'.repeat(24)}] ${total}/${total}${ERASE}`), JSON.stringify(out))
    assert.ok(out.includes(`${ERASE}Exported ${sb.keys(RESOURCES).length} resources`), JSON.stringify(out))
    assert.ok(fs.readFileSync(file, 'utf8').startsWith('apiVersion: projectcalico.org/v3\n'))
  })

  test('datastore export printed to the terminal itself: no progress line mixed into it', async () => {
    const out = await onTty(sb.db, 'datastore export')
    assert.ok(!out.includes(ERASE) && !out.includes('Exporting'), JSON.stringify(out.slice(0, 300)))
    assert.match(out, /^apiVersion: projectcalico\.org\/v3/)
  })

  test('on a pipe: nothing on stderr', async () => {
    for (const args of [
      ['ipam', 'show'],
      ['ipam', 'check'],
      ['ipam', 'gc', '--dry-run'],
      ['datastore', 'export', '-o', path.join(sb.dir, 'piped.txt')],
    ]) {
      const r = await sb.run(...args)
      assert.equal(r.status, 0)
      assert.equal(r.stderr, '')
    }
  })
})
