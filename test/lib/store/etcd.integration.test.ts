// EtcdStore against a real etcd (Debian's etcd-server, see test/support/etcd-server.ts): the shared Store
// contract, etcd-specific behaviour (range ends, paging, revisions as etcdctl sees them, guarded txns),
// failure behaviour (nothing listening, a black hole, a killed server), TLS client certificates and
// username/password auth. Skipped as a whole when etcd is not installed.
import {after, before, describe, test} from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import path from 'node:path'
import {DatastoreUnavailableError, ValidationError} from '../../../src/lib/errors.ts'
import {EtcdStore, prefixRangeEnd} from '../../../src/lib/store/etcd.ts'
import type {KeyValue, Store, WriteOp} from '../../../src/lib/store/store.ts'
import {type EtcdServer, etcdSkipReason, freePort, sharedEtcd, startEtcd} from '../../support/etcd-server.ts'
import {storeContract} from './contract.ts'

const put = (key: string, value: string): WriteOp => ({put: key, value})
const byteOrder = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b))

/** The mod_revision etcdctl reports for `key` (etcdctl prints revisions as JSON numbers). */
function ctlModRevision(server: EtcdServer, key: string): bigint | undefined {
  const out = JSON.parse(server.ctl('get', key, '-w', 'json')) as {kvs?: {mod_revision: number}[]}
  return out.kvs?.[0] === undefined ? undefined : BigInt(out.kvs[0].mod_revision)
}

/** The store revision etcdctl reports. */
function ctlRevision(server: EtcdServer): bigint {
  return BigInt((JSON.parse(server.ctl('get', '/', '-w', 'json')) as {header: {revision: number}}).header.revision)
}

/** `fn()` rejects with a DatastoreUnavailableError that names `endpoint`, within `withinMs`. */
async function rejectsUnavailable(
  fn: () => Promise<unknown>,
  endpoint: string,
  withinMs: number,
  what = '',
): Promise<void> {
  const started = performance.now()
  await assert.rejects(fn, (err: unknown) => {
    assert.ok(
      err instanceof DatastoreUnavailableError,
      `${what}: expected DatastoreUnavailableError, got ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`,
    )
    assert.ok(err.message.includes(endpoint), `${what}: the message does not name ${endpoint}: ${err.message}`)
    assert.ok(!err.message.includes('\n'), `${what}: the message is not one line: ${err.message}`)
    assert.equal(err.exitCode, 5)
    return true
  })
  const ms = performance.now() - started
  assert.ok(ms < withinMs, `${what}: took ${Math.round(ms)} ms, expected under ${withinMs} ms`)
}

/** One call of every Store method. */
const everyMethod: [string, (s: Store) => Promise<unknown>][] = [
  ['get', (s) => s.get('/calico/x')],
  ['list', (s) => s.list('/calico/')],
  ['listKeys', (s) => s.listKeys('/calico/')],
  ['txn', (s) => s.txn([{key: '/calico/x', absent: true}], [put('/calico/x', 'v')])],
  ['revision', (s) => s.revision()],
]

describe('EtcdStore on a real etcd', {skip: etcdSkipReason}, () => {
  const etcd = sharedEtcd()
  const srv = (): EtcdServer => etcd.server

  /** Wipe every key, then a fresh store. */
  const open = async (): Promise<EtcdStore> => {
    await etcd.wipe()
    return EtcdStore.connect({endpoints: [srv().endpoint], timeoutMs: 5000})
  }

  /** A fresh store on a wiped server, closed after `fn`. */
  const withStore = async (fn: (s: EtcdStore) => Promise<void>): Promise<void> => {
    const s = await open()
    try {
      await fn(s)
    } finally {
      await s.close()
    }
  }

  storeContract('EtcdStore', open)

  describe('prefixRangeEnd', () => {
    test('increments the last byte', () => {
      assert.deepEqual(prefixRangeEnd(Buffer.from('/a/')), Buffer.from('/a0'))
      assert.deepEqual(prefixRangeEnd(Buffer.from('/calico/ipam/v2/handle/')), Buffer.from('/calico/ipam/v2/handle0'))
      assert.deepEqual(prefixRangeEnd(Buffer.from('a')), Buffer.from('b'))
    })

    test('drops trailing 0xff bytes and increments the byte before them', () => {
      assert.deepEqual(prefixRangeEnd(Buffer.from([0x2f, 0x61, 0xff])), Buffer.from([0x2f, 0x62]))
      assert.deepEqual(prefixRangeEnd(Buffer.from([0x2f, 0xfe, 0xff, 0xff])), Buffer.from([0x2f, 0xff]))
      // é is c3 a9, so a non-ASCII prefix ends at c3 aa.
      assert.deepEqual(prefixRangeEnd(Buffer.from('/h/é')), Buffer.from([0x2f, 0x68, 0x2f, 0xc3, 0xaa]))
    })

    test('a prefix of only 0xff bytes, and the empty prefix, range over every key (\\0)', () => {
      assert.deepEqual(prefixRangeEnd(Buffer.from([0xff])), Buffer.from([0]))
      assert.deepEqual(prefixRangeEnd(Buffer.from([0xff, 0xff, 0xff])), Buffer.from([0]))
      assert.deepEqual(prefixRangeEnd(Buffer.alloc(0)), Buffer.from([0]))
    })

    test('does not modify its argument', () => {
      const prefix = Buffer.from([0x2f, 0x61, 0xff])
      prefixRangeEnd(prefix)
      assert.deepEqual(prefix, Buffer.from([0x2f, 0x61, 0xff]))
    })
  })

  describe('etcd-specific behaviour', () => {
    test("a transaction over etcd's --max-txn-ops (128) is bad input, not an outage, and writes nothing", async () => {
      await withStore(async (s) => {
        const before = await s.revision()
        const big = Array.from({length: 129}, (_, i) => put(`/big/${i}`, 'x'))
        await assert.rejects(
          s.txn([], big),
          (e: Error) =>
            e instanceof ValidationError && /transaction of 129 writes and 0 guards as too large/.test(e.message),
        )
        assert.equal(await s.revision(), before)
        assert.deepEqual(await s.list('/big/'), [])
        assert.equal((await s.txn([], big.slice(0, 128))).succeeded, true, '128 is allowed')
      })
    })

    test('listing 1,234 keys (several pages) returns all of them in byte order and nothing from a sibling prefix', async () => {
      await withStore(async (s) => {
        // Unpadded numbers, so byte order differs from numeric order.
        const mine = Array.from({length: 1234}, (_, i) => `/page/${i}`)
        // Neighbours on both sides, including the range end itself ("/page0") and the bare prefix without "/".
        const siblings = ['/page', '/page0', '/page0/1', '/pagd/1', '/pagf/1', '/pag', '/page.x', '/q']
        const all = [...mine, ...siblings]
        for (let i = 0; i < all.length; i += 100) {
          const r = await s.txn(
            [],
            all.slice(i, i + 100).map((k) => put(k, `v:${k}`)),
          )
          assert.equal(r.succeeded, true)
        }
        const expected = [...mine].sort(byteOrder)
        assert.notDeepEqual(expected, mine, 'the keys should not already be in byte order')

        const listed = await s.list('/page/')
        assert.equal(listed.length, 1234)
        assert.deepEqual(
          listed.map((kv) => kv.key),
          expected,
        )
        for (const kv of listed) {
          assert.equal(kv.value, `v:${kv.key}`)
          assert.equal(typeof kv.modRevision, 'bigint')
        }
        assert.deepEqual(await s.listKeys('/page/'), expected)
        // Streamed page by page (the next page is fetched while this one is visited): the same keys and revisions.
        const streamed: KeyValue[] = []
        await s.each('/page/', (kv) => streamed.push(kv))
        assert.deepEqual(streamed, listed)
        const keysOnly: KeyValue[] = []
        await s.each('/page/', (kv) => keysOnly.push(kv), {keysOnly: true})
        assert.deepEqual(
          keysOnly,
          listed.map((kv) => ({...kv, value: ''})),
        )
        // The sibling keys are all still there, just not under "/page/".
        assert.deepEqual(await s.listKeys('/page0'), ['/page0', '/page0/1'])
        assert.equal((await s.listKeys('/pag')).length, all.length - 1, 'everything but /q')
        assert.equal((await s.listKeys('/')).length, all.length)
      })
    })

    test('scans read clustered keys with gaps (bounded windows, docs/etcd-paging.md) exactly once, in order', async () => {
      await withStore(async (s) => {
        // Skewed namespaces, unpadded numbers, a cluster at each end of the byte range and a shared head longer
        // than a window position (128 bytes): 6,000 keys of ~600 bytes are several windows of a streamed scan.
        const mine = Array.from({length: 6000}, (_, i) => {
          if (i % 50 === 0) return `/win/\u0001${i}`
          if (i % 50 === 1) return `/win/~~${i}`
          if (i % 7 === 0) return `/win/${'h'.repeat(140)}${i}`
          return `/win/${i % 10 === 0 ? 'kube-system' : 'default'}/node--${Math.floor(i / 110)}-k8s-pod--${i}-eth0`
        })
        const all = [...mine, '/win', '/win0', '/wim/9', '/wio']
        for (let i = 0; i < all.length; i += 120) {
          const r = await s.txn(
            [],
            all.slice(i, i + 120).map((k) => put(k, `${k}=`.padEnd(600, 'v'))),
          )
          assert.equal(r.succeeded, true)
        }
        const expected = [...mine].sort(byteOrder)
        const streamed: string[] = []
        await s.each('/win/', (kv) => {
          assert.equal(kv.value, `${kv.key}=`.padEnd(600, 'v'))
          streamed.push(kv.key)
        })
        assert.deepEqual(streamed, expected)
        assert.deepEqual(
          (await s.list('/win/')).map((kv) => kv.key),
          expected,
        )
        assert.deepEqual(await s.listKeys('/win/'), expected)
      })
    })

    test("listing 600 values of 16 KB (a full page is past gRPC's default 4 MiB message) returns all of them", async () => {
      await withStore(async (s) => {
        const value = (i: number) => `${i}:`.padEnd(16_000, 'b')
        for (let i = 0; i < 600; i += 50) {
          const r = await s.txn(
            [],
            Array.from({length: 50}, (_, j) => put(`/big/${String(i + j).padStart(4, '0')}`, value(i + j))),
          )
          assert.equal(r.succeeded, true)
        }
        const listed = await s.list('/big/')
        assert.equal(listed.length, 600)
        for (const [i, kv] of listed.entries()) assert.equal(kv.value, value(i))
      })
    })

    test('a paged list is one consistent snapshot while another client writes', async (t) => {
      await withStore(async (s) => {
        const n = 1600 // four pages
        for (let i = 0; i < n; i += 100) {
          await s.txn(
            [],
            Array.from({length: Math.min(100, n - i)}, (_, j) => put(`/snap/${String(i + j).padStart(5, '0')}`, 'x')),
          )
        }
        // Two markers on the first and the last page, always written together in one txn: a consistent snapshot
        // sees the same value in both.
        const first = '/snap/!marker'
        const last = '/snap/~marker'
        await s.txn([], [put(first, '0'), put(last, '0')])

        const writer = await EtcdStore.connect({endpoints: [srv().endpoint], timeoutMs: 5000})
        let stop = false
        let writes = 0
        const writing = (async () => {
          while (!stop) {
            writes++
            await writer.txn([], [put(first, String(writes)), put(last, String(writes))])
          }
        })()
        try {
          for (let round = 0; round < 5; round++) {
            const listed: KeyValue[] = []
            // Odd rounds stream (page n+1 is requested while page n is visited): still one snapshot.
            if (round % 2 === 1) await s.each('/snap/', (kv) => listed.push(kv))
            else listed.push(...(await s.list('/snap/')))
            assert.equal(listed.length, n + 2)
            assert.deepEqual(
              listed.map((kv) => kv.key),
              listed.map((kv) => kv.key).sort(byteOrder),
            )
            const a = listed[0]!
            const z = listed[listed.length - 1]!
            assert.equal(a.key, first)
            assert.equal(z.key, last)
            assert.equal(a.value, z.value, 'the first and the last page come from different revisions')
            assert.equal(a.modRevision, z.modRevision)
          }
        } finally {
          stop = true
          await writing
          await writer.close()
        }
        assert.ok(writes > 0)
        t.diagnostic(`${writes} concurrent marker writes during 5 paged lists`)
      })
    })

    test('revisions are bigints equal to the mod_revision etcdctl reports', async () => {
      await withStore(async (s) => {
        const r1 = await s.txn([], [put('/rev/a', '1'), put('/rev/b', '1')])
        const r2 = await s.txn([], [put('/rev/a', '2')])
        const a = (await s.get('/rev/a'))!
        const b = (await s.get('/rev/b'))!
        assert.equal(typeof a.modRevision, 'bigint')
        assert.equal(a.modRevision, r2.revision)
        assert.equal(b.modRevision, r1.revision)
        assert.equal(ctlModRevision(srv(), '/rev/a'), a.modRevision)
        assert.equal(ctlModRevision(srv(), '/rev/b'), b.modRevision)
        assert.deepEqual(
          (await s.list('/rev/')).map((kv) => kv.modRevision),
          [ctlModRevision(srv(), '/rev/a'), ctlModRevision(srv(), '/rev/b')],
        )
        assert.equal(await s.revision(), ctlRevision(srv()))
        assert.equal(await s.revision(), r2.revision)
        // Written by etcdctl, read by EtcdStore.
        srv().ctl('put', '/rev/c', 'from-etcdctl')
        const c = (await s.get('/rev/c'))!
        assert.equal(c.value, 'from-etcdctl')
        assert.equal(c.modRevision, ctlModRevision(srv(), '/rev/c'))
        assert.equal(c.modRevision, r2.revision + 1n)
      })
    })

    test('a txn with an absent guard on an existing key fails and changes nothing', async () => {
      await withStore(async (s) => {
        const r1 = await s.txn([], [put('/g/k', 'original')])
        const before = ctlRevision(srv())
        const r = await s.txn([{key: '/g/k', absent: true}], [put('/g/k', 'overwritten'), put('/g/other', 'new')])
        assert.equal(r.succeeded, false)
        assert.equal(r.revision, before)
        assert.equal(ctlRevision(srv()), before, 'a failed txn must not bump the revision')
        assert.equal(srv().ctl('get', '/g/k', '--print-value-only').trim(), 'original')
        assert.equal(ctlModRevision(srv(), '/g/k'), r1.revision)
        assert.equal(ctlModRevision(srv(), '/g/other'), undefined)
      })
    })

    test('a txn over several keys is atomic: one false guard of three writes nothing', async () => {
      await withStore(async (s) => {
        const r0 = await s.txn([], [put('/atom/a', 'a0'), put('/atom/b', 'b0')])
        const before = ctlRevision(srv())
        const r = await s.txn(
          [
            {key: '/atom/a', modRevision: r0.revision},
            {key: '/atom/b', modRevision: r0.revision - 1n}, // stale
            {key: '/atom/c', absent: true},
          ],
          [put('/atom/a', 'a1'), put('/atom/b', 'b1'), put('/atom/c', 'c1')],
        )
        assert.equal(r.succeeded, false)
        assert.equal(ctlRevision(srv()), before)
        assert.deepEqual(
          (await s.list('/atom/')).map((kv) => [kv.key, kv.value, kv.modRevision]),
          [
            ['/atom/a', 'a0', r0.revision],
            ['/atom/b', 'b0', r0.revision],
          ],
        )
        // With all three guards true, all three keys are written at one revision.
        const ok = await s.txn(
          [
            {key: '/atom/a', modRevision: r0.revision},
            {key: '/atom/b', modRevision: r0.revision},
            {key: '/atom/c', absent: true},
          ],
          [put('/atom/a', 'a1'), put('/atom/b', 'b1'), put('/atom/c', 'c1')],
        )
        assert.equal(ok.succeeded, true)
        assert.equal(ok.revision, before + 1n)
        for (const k of ['/atom/a', '/atom/b', '/atom/c']) assert.equal(ctlModRevision(srv(), k), ok.revision, k)
      })
    })

    test('description names the endpoints', async () => {
      const s = await EtcdStore.connect({endpoints: [srv().endpoint, 'http://127.0.0.1:1'], timeoutMs: 5000})
      try {
        assert.equal(s.description, `etcdv3 (${srv().endpoint},http://127.0.0.1:1)`)
      } finally {
        await s.close()
      }
    })
  })

  describe('failures become DatastoreUnavailableError', () => {
    test('nothing listening: every method fails within its timeout, naming the endpoint', async () => {
      const endpoint = `http://127.0.0.1:${await freePort()}`
      for (const [what, call] of everyMethod) {
        // A fresh store per method, so each one meets the refused connection itself.
        const s = await EtcdStore.connect({endpoints: [endpoint], timeoutMs: 5000})
        try {
          await rejectsUnavailable(() => call(s), endpoint, 5000, what)
          // And again on the same store (the client now knows the host is down).
          await rejectsUnavailable(() => call(s), endpoint, 5000, `${what} (again)`)
        } finally {
          await s.close()
        }
      }
    })

    test('a black hole (accepts, never answers) times out within timeoutMs, and close() does not hang', async () => {
      const sockets = new Set<net.Socket>()
      const hole = net.createServer((sock) => {
        sockets.add(sock)
        sock.on('error', () => {})
        sock.on('close', () => sockets.delete(sock))
      })
      await new Promise<void>((resolve) => hole.listen(0, '127.0.0.1', resolve))
      const endpoint = `http://127.0.0.1:${(hole.address() as net.AddressInfo).port}`
      try {
        const s = await EtcdStore.connect({endpoints: [endpoint], timeoutMs: 1500})
        try {
          await rejectsUnavailable(() => s.get('/calico/x'), endpoint, 1500 + 3000, 'get')
          await rejectsUnavailable(() => s.txn([], [put('/calico/x', 'v')]), endpoint, 1500 + 3000, 'txn')
          assert.ok(sockets.size > 0, 'the client never connected to the black hole')
        } finally {
          const started = performance.now()
          await s.close()
          assert.ok(performance.now() - started < 1000, 'close() took too long')
        }
      } finally {
        // The accepted sockets (ours) must go too, or they keep this test process alive.
        for (const sock of sockets) sock.destroy()
        await new Promise<void>((resolve) => hole.close(() => resolve()))
      }
    })

    test('a killed etcd fails within the timeout; after a restart a new store sees the old data', async () => {
      const s = await open()
      let written: bigint
      try {
        written = (await s.txn([], [put('/calico/survives', 'yes')])).revision
        await srv().kill()
        await rejectsUnavailable(() => s.get('/calico/survives'), srv().endpoint, 2000 + 3000, 'get after kill')
        await rejectsUnavailable(
          () => s.txn([], [put('/calico/lost', 'x')]),
          srv().endpoint,
          2000 + 3000,
          'txn after kill',
        )
      } finally {
        await s.close()
        // Whatever happened, bring the server back for the tests that follow.
        await srv().start()
      }
      const again = await EtcdStore.connect({endpoints: [srv().endpoint], timeoutMs: 5000})
      try {
        assert.deepEqual(await again.get('/calico/survives'), {
          key: '/calico/survives',
          value: 'yes',
          modRevision: written,
        })
        assert.equal(await again.get('/calico/lost'), undefined)
        const r = await again.txn([{key: '/calico/survives', modRevision: written}], [put('/calico/survives', 'still')])
        assert.equal(r.succeeded, true)
        assert.equal(r.revision, written + 1n)
      } finally {
        await again.close()
      }
    })
  })

  describe('TLS with client certificates', () => {
    let tlsServer: EtcdServer | undefined
    before(async () => {
      tlsServer = await startEtcd({tls: true})
    })
    after(async () => {
      await tlsServer?.stop()
    })
    const tls = () => {
      assert.ok(tlsServer?.tls, 'the TLS etcd did not start')
      return {endpoint: tlsServer.endpoint, ...tlsServer.tls}
    }

    test('CA, certificate and key: put and get work', async () => {
      const t = tls()
      assert.match(t.endpoint, /^https:/)
      const s = await EtcdStore.connect({
        endpoints: [t.endpoint],
        caCertFile: t.ca,
        certFile: t.clientCert,
        keyFile: t.clientKey,
        timeoutMs: 5000,
      })
      try {
        const r = await s.txn([{key: '/calico/tls', absent: true}], [put('/calico/tls', 'secure')])
        assert.equal(r.succeeded, true)
        assert.deepEqual(await s.get('/calico/tls'), {key: '/calico/tls', value: 'secure', modRevision: r.revision})
        assert.deepEqual(await s.listKeys('/calico/'), ['/calico/tls'])
        assert.equal(tlsServer!.ctl('get', '/calico/tls', '--print-value-only').trim(), 'secure')
      } finally {
        await s.close()
      }
    })

    test('without the client certificate (CA only) the server refuses: DatastoreUnavailableError', async () => {
      const t = tls()
      const s = await EtcdStore.connect({endpoints: [t.endpoint], caCertFile: t.ca, timeoutMs: 3000})
      try {
        await rejectsUnavailable(() => s.get('/calico/tls'), t.endpoint, 3000 + 3000, 'get without client cert')
      } finally {
        await s.close()
      }
    })

    test('plain http to a TLS server fails with DatastoreUnavailableError', async () => {
      const t = tls()
      const endpoint = t.endpoint.replace(/^https:/, 'http:')
      const s = await EtcdStore.connect({endpoints: [endpoint], timeoutMs: 2000})
      try {
        await rejectsUnavailable(() => s.get('/calico/tls'), endpoint, 2000 + 3000, 'get over http')
      } finally {
        await s.close()
      }
    })

    test('a certificate, key or CA file that does not exist is a ValidationError at connect', async () => {
      const t = tls()
      const missing = path.join(tlsServer!.dir, 'no-such-file.pem')
      for (const files of [
        {caCertFile: t.ca, certFile: missing, keyFile: t.clientKey},
        {caCertFile: t.ca, certFile: t.clientCert, keyFile: missing},
        {caCertFile: missing, certFile: t.clientCert, keyFile: t.clientKey},
      ]) {
        await assert.rejects(
          EtcdStore.connect({endpoints: [t.endpoint], timeoutMs: 2000, ...files}),
          (err: unknown) => {
            assert.ok(err instanceof ValidationError, `expected ValidationError, got ${String(err)}`)
            assert.ok(err.message.includes(missing), err.message)
            assert.equal(err.exitCode, 2)
            return true
          },
        )
      }
    })
  })

  describe('username and password', () => {
    let authServer: EtcdServer | undefined
    before(async () => {
      // A server of its own: auth enable is sticky.
      authServer = await startEtcd()
      authServer.ctl('user', 'add', 'root', '--new-user-password=rootpw')
      authServer.ctl('auth', 'enable')
    })
    after(async () => {
      await authServer?.stop()
    })
    const endpoint = () => {
      assert.ok(authServer, 'the auth etcd did not start')
      return authServer.endpoint
    }

    test('the right username and password work', async () => {
      const s = await EtcdStore.connect({
        endpoints: [endpoint()],
        username: 'root',
        password: 'rootpw',
        timeoutMs: 5000,
      })
      try {
        const r = await s.txn([], [put('/calico/auth', 'ok')])
        assert.equal(r.succeeded, true)
        assert.deepEqual(await s.get('/calico/auth'), {key: '/calico/auth', value: 'ok', modRevision: r.revision})
        assert.deepEqual(await s.listKeys('/calico/'), ['/calico/auth'])
        assert.equal(await s.revision(), r.revision)
      } finally {
        await s.close()
      }
    })

    test('a wrong password fails with DatastoreUnavailableError', async () => {
      const s = await EtcdStore.connect({endpoints: [endpoint()], username: 'root', password: 'wrong', timeoutMs: 5000})
      try {
        await rejectsUnavailable(() => s.get('/calico/auth'), endpoint(), 5000, 'get with a wrong password')
        await rejectsUnavailable(
          () => s.txn([], [put('/calico/auth', 'x')]),
          endpoint(),
          5000,
          'txn with a wrong password',
        )
      } finally {
        await s.close()
      }
    })

    test('no credentials fail with DatastoreUnavailableError', async () => {
      const s = await EtcdStore.connect({endpoints: [endpoint()], timeoutMs: 5000})
      try {
        await rejectsUnavailable(() => s.get('/calico/auth'), endpoint(), 5000, 'get without credentials')
        await rejectsUnavailable(
          () => s.txn([], [put('/calico/auth', 'x')]),
          endpoint(),
          5000,
          'txn without credentials',
        )
      } finally {
        await s.close()
      }
      // Nothing was written by the rejected clients.
      const root = await EtcdStore.connect({
        endpoints: [endpoint()],
        username: 'root',
        password: 'rootpw',
        timeoutMs: 5000,
      })
      try {
        assert.notEqual((await root.get('/calico/auth'))?.value, 'x')
      } finally {
        await root.close()
      }
    })
  })
})
