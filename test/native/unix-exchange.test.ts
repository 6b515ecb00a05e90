// native/unix-exchange: the agent client's connect / send / read-until-close with one deadline, against real
// unix sockets. Every way an exchange can end is reported as data, never as a rejection.
import assert from 'node:assert/strict'
import {spawn, spawnSync} from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import {after, describe, it} from 'node:test'
import {exchange, peerCredentials} from 'unix-exchange'

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-unix-exchange-'))
after(() => fs.rmSync(tmp, {recursive: true, force: true}))
let n = 0
const sockPath = () => path.join(tmp, `x${++n}.sock`)
const {ECONNREFUSED, ENOENT, EMSGSIZE} = os.constants.errno

/**
 * A server on a fresh socket: `onConn` gets each connection. A client that stops reading (the reply cap) makes
 * the server's writes fail with EPIPE: expected, so ignored.
 */
async function server(onConn: (c: net.Socket) => void): Promise<{file: string; close: () => void}> {
  const file = sockPath()
  const s = net.createServer((c) => {
    c.on('error', () => {})
    onConn(c)
  })
  await new Promise<void>((r) => s.listen(file, r))
  return {file, close: () => s.close()}
}

/** A server in another process on `file`: each connection gets `pong:` and what it sent, then is closed. */
function pyEcho(file: string) {
  return spawn(
    'python3',
    [
      '-c',
      `import socket\ns=socket.socket(socket.AF_UNIX)\ns.bind(${JSON.stringify(file)})\ns.listen(16)\nprint('ok', flush=True)\nwhile True:\n  c,_=s.accept()\n  c.sendall(b'pong:'+c.recv(65536))\n  c.close()`,
    ],
    {stdio: ['ignore', 'pipe', 'inherit']},
  )
}

/** Echo the request back once the client has sent `expect` bytes, then close. */
const echo = (expect: number) => (c: net.Socket) => {
  const parts: Buffer[] = []
  let got = 0
  c.on('data', (b) => {
    parts.push(b)
    got += b.length
    if (got >= expect) c.end(Buffer.concat(parts))
  })
}

describe('unix-exchange', () => {
  it('sends all of a large request and reads the whole reply up to the close', async () => {
    const req = Buffer.alloc(3 << 20, 'abcdefgh')
    const s = await server(echo(req.length))
    const r = await exchange(s.file, req, 10_000, 8 << 20)
    s.close()
    assert.deepEqual([r.connected, r.errno, r.timedOut], [true, 0, false])
    assert.ok(r.reply.equals(req), `reply of ${r.reply.length} bytes`)
  })

  it('20 exchanges at once each get their own reply', async () => {
    const s = await server(echo(6))
    const rs = await Promise.all(
      Array.from({length: 20}, (_, i) => exchange(s.file, Buffer.from(`req${String(i).padStart(3, '0')}`), 5000, 1024)),
    )
    s.close()
    assert.deepEqual(
      rs.map((r) => r.reply.toString()),
      rs.map((_, i) => `req${String(i).padStart(3, '0')}`),
    )
  })

  it('no socket file, or nobody listening: not connected, with the errno', async () => {
    const none = await exchange(path.join(tmp, 'none.sock'), Buffer.from('x'), 1000, 10)
    assert.deepEqual(none, {connected: false, errno: ENOENT, timedOut: false, reply: Buffer.alloc(0)})
    const stale = sockPath()
    const k = spawnSync(process.execPath, [
      '-e',
      `require('net').createServer().listen(${JSON.stringify(stale)}, () => process.kill(process.pid, 'SIGKILL'))`,
    ])
    assert.equal(k.signal, 'SIGKILL')
    const refused = await exchange(stale, Buffer.from('x'), 1000, 10)
    assert.deepEqual([refused.connected, refused.errno], [false, ECONNREFUSED])
  })

  it('a peer that never replies: timed out after the deadline, connected', async () => {
    const s = await server(() => {})
    const t0 = Date.now()
    const r = await exchange(s.file, Buffer.from('hello'), 300, 10)
    const took = Date.now() - t0
    s.close()
    assert.deepEqual([r.connected, r.timedOut, r.errno], [true, true, 0])
    assert.ok(took >= 290 && took < 3000, `took ${took} ms`)
  })

  it('a listener that never accepts: once its queue is full, connect keeps failing (EAGAIN) until the deadline, nothing sent', async (t) => {
    const file = sockPath()
    // listen(0) and never accept(): the kernel queues one connection, then refuses with EAGAIN.
    const py = spawn(
      'python3',
      [
        '-c',
        `import socket,sys,time\ns=socket.socket(socket.AF_UNIX)\ns.bind(${JSON.stringify(file)})\ns.listen(0)\nprint('ok', flush=True)\ntime.sleep(30)`,
      ],
      {stdio: ['ignore', 'pipe', 'inherit']},
    )
    t.after(() => py.kill('SIGKILL'))
    await new Promise((r) => py.stdout.once('data', r))
    const first = await exchange(file, Buffer.from('a'), 200, 10)
    assert.deepEqual([first.connected, first.timedOut], [true, true], 'the first connection is queued')
    const t0 = Date.now()
    const second = await exchange(file, Buffer.from('b'), 300, 10)
    assert.deepEqual([second.connected, second.timedOut, second.errno], [false, true, 0])
    assert.ok(Date.now() - t0 >= 290, 'retried until the deadline')
  })

  it('a reply longer than maxReply: EMSGSIZE with the first maxReply bytes; one of exactly maxReply is whole', async () => {
    const s = await server((c) => c.end(Buffer.alloc(100_000, 'z')))
    const r = await exchange(s.file, Buffer.from('q'), 5000, 5000)
    s.close()
    assert.deepEqual([r.connected, r.errno, r.reply.length], [true, EMSGSIZE, 5000])
    for (const size of [4096, 5000, 8192]) {
      const exact = await server((c) => c.end(Buffer.alloc(size, 'y')))
      const e = await exchange(exact.file, Buffer.from('q'), 5000, size)
      exact.close()
      assert.deepEqual([e.errno, e.timedOut, e.reply.length], [0, false, size], `reply of ${size} bytes`)
    }
  })

  it('blocking, with the peer in another process: the result itself, not a promise', async (t) => {
    const file = sockPath()
    const py = pyEcho(file)
    t.after(() => py.kill('SIGKILL'))
    await new Promise((r) => py.stdout!.once('data', r))
    const r = exchange(file, Buffer.from('hello'), 5000, 1024, true)
    assert.ok(!(r instanceof Promise), 'answered on this thread')
    assert.deepEqual(r, {connected: true, errno: 0, timedOut: false, reply: Buffer.from('pong:hello')})
    const none = exchange(path.join(tmp, 'none.sock'), Buffer.from('x'), 1000, 10, true)
    assert.deepEqual(none, {connected: false, errno: ENOENT, timedOut: false, reply: Buffer.alloc(0)})
  })

  it('blocking, with the peer in this process: on the thread pool (a promise), so the peer can answer', async () => {
    const s = await server(echo(5))
    const p = exchange(s.file, Buffer.from('hello'), 5000, 1024, true)
    assert.ok(p instanceof Promise)
    const r = await p
    s.close()
    assert.deepEqual([r.connected, r.errno, r.timedOut, r.reply.toString()], [true, 0, false, 'hello'])
  })

  it('blocking starts no thread pool; the default exchange does', async (t) => {
    const file = sockPath()
    const py = pyEcho(file)
    t.after(() => py.kill('SIGKILL'))
    await new Promise((r) => py.stdout!.once('data', r))
    const threads = (blocking: boolean) => {
      const script = `const {exchange} = require('unix-exchange'); const fs = require('fs')
        const n = () => fs.readdirSync('/proc/self/task').length
        const before = n()
        Promise.resolve(exchange(${JSON.stringify(file)}, Buffer.from('q'), 5000, 64, ${blocking})).then((r) =>
          console.log(JSON.stringify({added: n() - before, reply: r.reply.toString()})))`
      const out = spawnSync(process.execPath, ['-e', script], {
        cwd: path.join(import.meta.dirname, '..', '..'),
        env: {...process.env, UV_THREADPOOL_SIZE: '3'},
        encoding: 'utf8',
      })
      assert.equal(out.status, 0, out.stderr)
      return JSON.parse(out.stdout) as {added: number; reply: string}
    }
    assert.deepEqual(threads(true), {added: 0, reply: 'pong:q'})
    assert.deepEqual(threads(false), {added: 3, reply: 'pong:q'})
  })

  it('bad arguments throw at once', () => {
    assert.throws(() => exchange(`/${'p'.repeat(120)}`, Buffer.from('x'), 10, 10), TypeError)
    assert.throws(() => exchange('', Buffer.from('x'), 10, 10), TypeError)
    assert.throws(() => exchange('/x', 'text' as unknown as Buffer, 10, 10), TypeError)
    assert.throws(() => exchange('/x', Buffer.from('x'), -1, 10), TypeError)
    assert.throws(() => exchange('/x', Buffer.from('x'), 10, 0), TypeError)
    assert.throws(() => exchange('/x', Buffer.from('x'), 10, 10, 'yes' as unknown as boolean), TypeError)
  })

  it('peerCredentials: the connecting process as the kernel recorded it; null for other fds', async (t) => {
    const creds: ReturnType<typeof peerCredentials>[] = []
    const s = await server((c) => {
      creds.push(peerCredentials((c as unknown as {_handle: {fd: number}})._handle.fd))
      c.end()
    })
    t.after(s.close)
    // Another process connects, prints its pid once connected, and waits for the close.
    const child = spawn(
      'python3',
      [
        '-c',
        `import socket,os\ns=socket.socket(socket.AF_UNIX)\ns.connect(${JSON.stringify(s.file)})\nprint(os.getpid(), flush=True)\ns.recv(1)`,
      ],
      {stdio: ['ignore', 'pipe', 'inherit']},
    )
    const pid = Number((await new Promise<Buffer>((r) => child.stdout!.once('data', r))).toString().trim())
    await new Promise((r) => child.once('exit', r))
    assert.deepEqual(creds, [{pid, uid: process.getuid!(), gid: process.getgid!()}])
    assert.notEqual(pid, process.pid)
    const file = fs.openSync(path.join(tmp, 'not-a-socket'), 'w')
    t.after(() => fs.closeSync(file))
    assert.equal(peerCredentials(file), null)
    assert.throws(() => peerCredentials(-1), TypeError)
  })
})
