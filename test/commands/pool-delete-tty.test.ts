// `pool delete` asks for confirmation on a terminal. A real pseudo-terminal comes from util-linux `script`;
// the answer is typed only once the prompt has appeared.
import assert from 'node:assert/strict'
import {spawn, spawnSync} from 'node:child_process'
import path from 'node:path'
import {describe, test} from 'node:test'
import {ROOT, sandbox} from './helpers.ts'

const hasScript = spawnSync('script', ['--version']).status === 0

function deleteOnTty(db: string, answer: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const cmd = `${process.execPath} ${path.join(ROOT, 'bin/run.cjs')} pool delete p1`
    const child = spawn('script', ['-qec', cmd, '/dev/null'], {
      env: {...process.env, IPAMCTL_DATASTORE_PATH: db, NO_COLOR: '1'},
    })
    let out = ''
    let answered = false
    const timer = setTimeout(() => {
      child.kill()
      reject(new Error(`no prompt within 20 s; output so far: ${JSON.stringify(out)}`))
    }, 20_000)
    child.stdout.on('data', (d) => {
      out += d
      if (!answered && out.includes('(y/N)')) {
        answered = true
        child.stdin.write(`${answer}\r`)
      }
    })
    child.on('close', () => {
      clearTimeout(timer)
      resolve(out)
    })
  })
}

describe('pool delete on a terminal', {skip: hasScript ? false : 'util-linux script is not installed'}, () => {
  test('answering no keeps the pool; answering yes deletes it', async () => {
    const sb = sandbox()
    await sb.ok('pool', 'create', 'p1', '--cidr', '10.9.0.0/24')
    const no = await deleteOnTty(sb.db, 'n')
    assert.match(no, /Delete IP pool p1 \(10\.9\.0\.0\/24\)\?/)
    assert.match(no, /Aborted; nothing was changed\./)
    assert.ok(sb.value('/calico/resources/v3/projectcalico.org/ippools/p1'), 'pool must survive a "no"')
    const yes = await deleteOnTty(sb.db, 'y')
    assert.match(yes, /Successfully deleted IP pool p1/)
    assert.equal(sb.value('/calico/resources/v3/projectcalico.org/ippools/p1'), undefined)
  })
})
