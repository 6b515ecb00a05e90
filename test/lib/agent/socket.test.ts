// The agent's socket path: a live agent's socket is never taken over, a socket left by a killed agent is
// replaced, and a path that is not a socket (an operator's file, a typo) is never removed.
import assert from 'node:assert/strict'
import {spawn} from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import {after, describe, it} from 'node:test'
import {prepareSocketPath} from '../../../src/lib/agent/socket.ts'
import {ConflictError, ValidationError} from '../../../src/lib/errors.ts'

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-sock-'))
after(() => fs.rmSync(dir, {recursive: true, force: true}))

describe('prepareSocketPath', () => {
  it('a regular file at the path: refused, the file untouched', async () => {
    const file = path.join(dir, 'not-a-socket')
    fs.writeFileSync(file, 'operator data')
    await assert.rejects(
      prepareSocketPath(file),
      (e: unknown) =>
        e instanceof ValidationError && /exists and is not a socket; refusing to replace it/.test(e.message),
    )
    assert.equal(fs.readFileSync(file, 'utf8'), 'operator data')
  })

  it('a live listener: refused (exit 4), its socket stays', async () => {
    const file = path.join(dir, 'live.sock')
    const server = net.createServer()
    await new Promise<void>((r) => server.listen(file, r))
    try {
      await assert.rejects(prepareSocketPath(file), ConflictError)
      assert.ok(fs.lstatSync(file).isSocket())
    } finally {
      await new Promise((r) => server.close(r))
    }
  })

  it('a socket left by a process killed with SIGKILL: removed, so the new agent can listen', async () => {
    const file = path.join(dir, 'stale.sock')
    const child = spawn(
      process.execPath,
      [
        '-e',
        `require('node:net').createServer().listen(${JSON.stringify(file)}, () => console.log('up')); setInterval(() => {}, 1000)`,
      ],
      {stdio: ['ignore', 'pipe', 'inherit']},
    )
    await new Promise<void>((r) => child.stdout!.once('data', () => r()))
    child.kill('SIGKILL')
    await new Promise((r) => child.once('exit', r))
    assert.ok(fs.lstatSync(file).isSocket(), 'the killed process left its socket file')
    await prepareSocketPath(file)
    assert.equal(fs.existsSync(file), false)
  })
})
