// Shared behaviour every Store implementation must have (src/lib/store/store.ts): etcd-like semantics with one
// global revision counter, per-key mod-revisions and guarded multi-key transactions.
// Usage: storeContract('memory', async () => new MemoryStore())
import {after, describe, test} from 'node:test'
import assert from 'node:assert/strict'
import {
  eachAtOnce,
  forEachKv,
  type KeyValue,
  readMany,
  type Scan,
  type Store,
  type WriteOp,
} from '../../../src/lib/store/store.ts'

export interface ContractOptions {
  /** Test title → reason, for known implementation bugs (the test is run as `todo`). */
  knownBugs?: Readonly<Record<string, string>>
}

const put = (key: string, value: string): WriteOp => ({put: key, value})
const del = (key: string): WriteOp => ({delete: key})

export function storeContract(
  name: string,
  open: () => Promise<Store>,
  cleanup?: () => Promise<void>,
  options: ContractOptions = {},
): void {
  describe(`Store contract: ${name}`, () => {
    if (cleanup) after(cleanup)

    /** Each case gets its own fresh, empty store, closed afterwards. */
    const it = (title: string, fn: (s: Store) => Promise<void>): void => {
      const todo = options.knownBugs?.[title]
      test(title, todo ? {todo} : {}, async () => {
        const s = await open()
        try {
          await fn(s)
        } finally {
          await s.close()
        }
      })
    }

    /** Unconditional single write; returns the new revision. */
    const write = async (s: Store, ...ops: WriteOp[]): Promise<bigint> => {
      const r = await s.txn([], ops)
      assert.equal(r.succeeded, true)
      return r.revision
    }

    it('get of a missing key is undefined', async (s) => {
      assert.equal(await s.get('/nope'), undefined)
      await write(s, put('/a', '1'))
      assert.equal(await s.get('/a/'), undefined)
      assert.equal(await s.get('/'), undefined)
      assert.equal(await s.get('/A'), undefined)
      assert.equal(await s.get(''), undefined)
    })

    it('revision is a bigint and a fresh store has no keys', async (s) => {
      assert.equal(typeof (await s.revision()), 'bigint')
      assert.deepEqual(await s.list(''), [])
      assert.deepEqual(await s.listKeys(''), [])
      assert.equal(typeof s.description, 'string')
      assert.ok(s.description.length > 0)
    })

    it('put guarded by absent succeeds once, then fails', async (s) => {
      const r1 = await s.txn([{key: '/k', absent: true}], [put('/k', 'first')])
      assert.equal(r1.succeeded, true)
      const kv = await s.get('/k')
      assert.deepEqual(kv, {key: '/k', value: 'first', modRevision: r1.revision})
      assert.equal(typeof kv!.modRevision, 'bigint')
      assert.notEqual(kv!.modRevision, 0n)

      const r2 = await s.txn([{key: '/k', absent: true}], [put('/k', 'second')])
      assert.equal(r2.succeeded, false)
      assert.equal(r2.revision, r1.revision, 'a failed txn reports the current revision')
      assert.deepEqual(await s.get('/k'), {key: '/k', value: 'first', modRevision: r1.revision})
    })

    it('one global revision counter: every write bumps it, per-key modRevision records it', async (s) => {
      const r0 = await s.revision()
      const ra = await write(s, put('/a', '1'))
      assert.equal(ra, r0 + 1n)
      const rb = await write(s, put('/b', '1'))
      assert.equal(rb, ra + 1n)
      assert.equal((await s.get('/a'))!.modRevision, ra, 'untouched key keeps its revision')
      assert.equal((await s.get('/b'))!.modRevision, rb)
      const ra2 = await write(s, put('/a', '2'))
      assert.equal(ra2, rb + 1n)
      assert.equal((await s.get('/a'))!.modRevision, ra2)
      assert.equal(await s.revision(), ra2)
    })

    it('a multi-op txn gives every written key the same new revision', async (s) => {
      await write(s, put('/x', '0'))
      const before = await s.revision()
      const r = await s.txn([{key: '/x', modRevision: before}], [put('/c', 'c'), put('/d', 'd'), put('/x', 'x2')])
      assert.equal(r.succeeded, true)
      assert.equal(r.revision, before + 1n, 'one txn, one revision')
      for (const k of ['/c', '/d', '/x']) assert.equal((await s.get(k))!.modRevision, r.revision, k)
      assert.equal(await s.revision(), r.revision)
    })

    it('guard by modRevision succeeds only with the current revision', async (s) => {
      const r1 = await write(s, put('/k', 'v1'))
      const r2 = await write(s, put('/k', 'v2'))

      const stale = await s.txn([{key: '/k', modRevision: r1}], [put('/k', 'stale')])
      assert.equal(stale.succeeded, false)
      assert.equal((await s.get('/k'))!.value, 'v2')

      const future = await s.txn([{key: '/k', modRevision: r2 + 1n}], [put('/k', 'future')])
      assert.equal(future.succeeded, false)
      assert.equal((await s.get('/k'))!.value, 'v2')

      const ok = await s.txn([{key: '/k', modRevision: r2}], [put('/k', 'v3')])
      assert.equal(ok.succeeded, true)
      assert.deepEqual(await s.get('/k'), {key: '/k', value: 'v3', modRevision: ok.revision})

      const again = await s.txn([{key: '/k', modRevision: r2}], [put('/k', 'v4')])
      assert.equal(again.succeeded, false, 'the same guard cannot win twice')
    })

    it('a modRevision guard on a missing key fails; an absent guard on an existing key fails', async (s) => {
      const r = await write(s, put('/exists', 'x'))
      assert.equal((await s.txn([{key: '/missing', modRevision: r}], [put('/missing', 'y')])).succeeded, false)
      assert.equal(await s.get('/missing'), undefined)
      assert.equal((await s.txn([{key: '/exists', absent: true}], [put('/exists', 'y')])).succeeded, false)
      assert.equal((await s.get('/exists'))!.value, 'x')
    })

    it('every guard must hold: one failing guard fails the whole txn', async (s) => {
      const ra = await write(s, put('/a', 'a'))
      const rb = await write(s, put('/b', 'b'))
      const r = await s.txn(
        [
          {key: '/a', modRevision: ra},
          {key: '/b', modRevision: rb - 1n},
        ],
        [put('/a', 'A')],
      )
      assert.equal(r.succeeded, false)
      assert.equal((await s.get('/a'))!.value, 'a')
    })

    it('a prefix guard: fails once a key under the prefix is created or updated after the revision; deletions and other keys do not count', async (s) => {
      const prefix = '/calico/ipam/v2/host/h1/ipv4/block/'
      const guard = (notAfter: bigint) => [{prefix, notAfter}]
      // Empty prefix: holds for any revision.
      assert.equal((await s.txn(guard(0n), [put('/x', '1')])).succeeded, true)
      const r1 = await write(s, put(`${prefix}10.0.0.0-26`, 'a'))
      assert.equal((await s.txn(guard(r1 - 1n), [put('/x', '2')])).succeeded, false, 'a key written after the revision')
      assert.equal((await s.get('/x'))!.value, '1', 'a failed prefix guard writes nothing')
      assert.equal((await s.txn(guard(r1), [put('/x', '3')])).succeeded, true)
      // Neighbours of the prefix (another host, a longer host name, the prefix without its slash) are not under it.
      const r2 = await write(
        s,
        put('/calico/ipam/v2/host/h1/ipv4/block', 'n'),
        put('/calico/ipam/v2/host/h10/ipv4/block/10.0.1.0-26', 'n'),
        put('/calico/ipam/v2/host/h2/ipv4/block/10.0.2.0-26', 'n'),
      )
      assert.equal((await s.txn(guard(r1), [put('/x', '4')])).succeeded, true)
      // An update of a key under it counts; its deletion does not.
      const r3 = await write(s, put(`${prefix}10.0.0.0-26`, 'b'))
      assert.equal((await s.txn(guard(r2), [put('/x', '5')])).succeeded, false)
      await write(s, del(`${prefix}10.0.0.0-26`))
      assert.equal((await s.txn(guard(r1), [put('/x', '6')])).succeeded, true)
      // Combined with key guards: all must hold.
      const x = (await s.get('/x'))!
      assert.equal(
        (await s.txn([...guard(r3), {key: '/x', modRevision: x.modRevision}], [put('/x', '7')])).succeeded,
        true,
      )
      assert.equal(
        (await s.txn([...guard(r3), {key: '/x', modRevision: x.modRevision}], [put('/x', '8')])).succeeded,
        false,
      )
    })

    it('a failed txn changes nothing (values, mod-revisions, revision)', async (s) => {
      await write(s, put('/a', 'a'), put('/b', 'b'))
      const ra = (await s.get('/a'))!
      const rb = (await s.get('/b'))!
      const rev = await s.revision()
      const r = await s.txn(
        [
          {key: '/a', modRevision: ra.modRevision},
          {key: '/new', modRevision: 1n},
        ],
        [put('/a', 'changed'), del('/b'), put('/new', 'n')],
      )
      assert.equal(r.succeeded, false)
      assert.equal(r.revision, rev)
      assert.equal(await s.revision(), rev)
      assert.deepEqual(await s.get('/a'), ra)
      assert.deepEqual(await s.get('/b'), rb)
      assert.equal(await s.get('/new'), undefined)
      assert.deepEqual(await s.listKeys('/'), ['/a', '/b'])
    })

    it('delete removes the key, bumps the revision, and allows re-creation', async (s) => {
      const r1 = await write(s, put('/d', 'v'), put('/keep', 'k'))
      const r2 = await s.txn([{key: '/d', modRevision: r1}], [del('/d')])
      assert.equal(r2.succeeded, true)
      assert.equal(r2.revision, r1 + 1n)
      assert.equal(await s.get('/d'), undefined)
      assert.deepEqual(await s.listKeys('/'), ['/keep'])
      assert.equal((await s.get('/keep'))!.modRevision, r1)
      // The old revision no longer guards anything.
      assert.equal((await s.txn([{key: '/d', modRevision: r1}], [put('/d', 'x')])).succeeded, false)
      const r3 = await s.txn([{key: '/d', absent: true}], [put('/d', 'again')])
      assert.equal(r3.succeeded, true)
      assert.deepEqual(await s.get('/d'), {key: '/d', value: 'again', modRevision: r3.revision})
      assert.ok(r3.revision > r2.revision)
    })

    it('put and delete in one txn apply together', async (s) => {
      await write(s, put('/old', 'o'))
      const r = await write(s, del('/old'), put('/new', 'n'))
      assert.equal(await s.get('/old'), undefined)
      assert.deepEqual(await s.get('/new'), {key: '/new', value: 'n', modRevision: r})
    })

    it('list(prefix) returns only keys with that string prefix, in byte order', async (s) => {
      const keys = [
        '/a/10.0.0.64-26',
        '/a/10.0.0.128-26',
        '/a/b',
        '/a/bc',
        '/a/b/x',
        '/a/B',
        '/a/~',
        '/a',
        '/ab',
        '/b/a',
        '/',
        'z',
      ]
      // Write in several txns, in a scrambled order.
      for (const k of keys) await write(s, put(k, `v:${k}`))

      assert.deepEqual(await s.listKeys('/a/'), [
        '/a/10.0.0.128-26',
        '/a/10.0.0.64-26',
        '/a/B',
        '/a/b',
        '/a/b/x',
        '/a/bc',
        '/a/~',
      ])
      // A plain string prefix: "/a/b" also matches "/a/bc" and "/a/b/x".
      assert.deepEqual(await s.listKeys('/a/b'), ['/a/b', '/a/b/x', '/a/bc'])
      assert.deepEqual(await s.listKeys('/a/b/'), ['/a/b/x'])
      assert.deepEqual(await s.listKeys('/a'), [
        '/a',
        '/a/10.0.0.128-26',
        '/a/10.0.0.64-26',
        '/a/B',
        '/a/b',
        '/a/b/x',
        '/a/bc',
        '/a/~',
        '/ab',
      ])
      assert.deepEqual(await s.listKeys('/a/~'), ['/a/~'])
      assert.deepEqual(await s.listKeys('/zzz'), [])
      assert.deepEqual(await s.listKeys('/a/10.0.0.1'), ['/a/10.0.0.128-26'])
      assert.deepEqual(
        await s.listKeys(''),
        [...keys].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y))),
      )

      const listed = await s.list('/a/b')
      assert.deepEqual(
        listed.map((kv) => [kv.key, kv.value]),
        [
          ['/a/b', 'v:/a/b'],
          ['/a/b/x', 'v:/a/b/x'],
          ['/a/bc', 'v:/a/bc'],
        ],
      )
      for (const kv of listed) assert.equal(kv.modRevision, (await s.get(kv.key))!.modRevision)
    })

    it('list returns each key with its own modRevision', async (s) => {
      const r1 = await write(s, put('/p/1', 'a'))
      const r2 = await write(s, put('/p/2', 'b'))
      await write(s, put('/q/1', 'c'))
      assert.deepEqual(await s.list('/p/'), [
        {key: '/p/1', value: 'a', modRevision: r1},
        {key: '/p/2', value: 'b', modRevision: r2},
      ])
    })

    it('eachAtOnce visits its scans in turn, asks for each next scan only after the last one, keysOnly reads no values', async (s) => {
      await write(s, put('/p/1', 'a'), put('/p/2', 'b'), put('/q/1', 'c'), put('/r/1', 'd'))
      const seen: string[] = []
      function* scans(): Generator<Scan> {
        yield {prefix: '/q/', visit: (kv) => seen.push(`q ${kv.key}=${kv.value}`)}
        // Lazy: this runs after the first scan is complete, so the next scan may depend on it.
        seen.push('between')
        yield {prefix: '/p/', keysOnly: true, visit: (kv) => seen.push(`p ${kv.key}=${kv.value}`)}
        yield {prefix: '/none/', visit: (kv) => seen.push(`none ${kv.key}`)}
        seen.push('end')
      }
      await eachAtOnce(s, scans())
      assert.deepEqual(seen, ['q /q/1=c', 'between', 'p /p/1=', 'p /p/2=', 'end'])
    })

    it('eachAtOnce: a scan with except visits every key under its prefix but those under the except prefixes, in order', async (s) => {
      const inside = ['/x/a', '/x/b/1', '/x/b/2', '/x/b0', '/x/c/1', '/x/c/9', '/x/d', '/x/é']
      await write(s, ...inside.map((k) => put(k, `v${k}`)), put('/x', 'outside'), put('/y/1', 'outside'))
      for (const keysOnly of [false, true]) {
        const seen: string[] = []
        const visit = (kv: KeyValue) => seen.push(`${kv.key}=${kv.value}`)
        // Nested and outside excepts change nothing; an except equal to the prefix leaves nothing.
        await eachAtOnce(s, [
          {prefix: '/x/', keysOnly, except: ['/x/c/', '/x/b/', '/y/', '/x/c/9'], visit},
          {prefix: '/y/', keysOnly, except: ['/y/'], visit},
        ])
        const v = (k: string) => (keysOnly ? `${k}=` : `${k}=v${k}`)
        assert.deepEqual(seen, ['/x/a', '/x/b0', '/x/d', '/x/é'].map(v), `keysOnly ${keysOnly}`)
      }
    })

    it('eachAtOnce: except across pages of a long prefix reads every key between the left-out ranges once', async (s) => {
      const ops: WriteOp[] = []
      for (let i = 0; i < 700; i++)
        ops.push(put(`/w/a/${String(i).padStart(4, '0')}`, 'a'), put(`/w/c/${String(i).padStart(4, '0')}`, 'c'))
      for (let i = 0; i < 3; i++) ops.push(put(`/w/b/${i}`, 'b'))
      for (let i = 0; i < ops.length; i += 100) await write(s, ...ops.slice(i, i + 100))
      const seen: string[] = []
      await eachAtOnce(s, [{prefix: '/w/', except: ['/w/b/'], visit: (kv) => seen.push(kv.key)}])
      assert.deepEqual(
        seen,
        ops
          .map((o) => ('put' in o ? o.put : ''))
          .filter((k) => !k.startsWith('/w/b/'))
          .sort(),
      )
    })

    it('eachAtOnce: a noRevision scan visits the same keys and values, across pages, with or without revisions', async (s) => {
      const ops: WriteOp[] = []
      for (let i = 0; i < 600; i++) ops.push(put(`/n/${String(i).padStart(4, '0')}`, `v${i}`))
      for (let i = 0; i < ops.length; i += 100) await write(s, ...ops.slice(i, i + 100))
      const all: KeyValue[] = []
      const lean: KeyValue[] = []
      await eachAtOnce(s, [
        {prefix: '/n/', visit: (kv) => all.push(kv)},
        {prefix: '/n/', noRevision: true, visit: (kv) => lean.push(kv)},
      ])
      assert.equal(lean.length, 600)
      assert.deepEqual(
        lean.map((kv) => `${kv.key}=${kv.value}`),
        all.map((kv) => `${kv.key}=${kv.value}`),
      )
      assert.ok(all.every((kv) => kv.modRevision > 0n))
      // Stores that read the revision anyway give it; the embedded store gives 0n.
      assert.ok(lean.every((kv, i) => kv.modRevision === 0n || kv.modRevision === all[i]!.modRevision))
    })

    it('eachAtOnce: a count scan counts the keys under its prefix and visits none', async (s) => {
      await write(s, put('/k/1', 'a'), put('/k/2', 'b'), put('/k/sub/3', 'c'), put('/k', 'outside'), put('/l/1', 'd'))
      const counts: string[] = []
      const count = (prefix: string): Scan => ({prefix, count: (n) => counts.push(`${prefix} ${n}`)})
      await eachAtOnce(s, [count('/k/'), count('/k/sub/'), count('/none/'), count('')])
      assert.deepEqual(counts, ['/k/ 3', '/k/sub/ 1', '/none/ 0', ' 5'])
    })

    it('listKeys returns the same keys as list', async (s) => {
      const keys = [
        '/calico/ipam/v2/assignment/ipv4/block/10.0.0.128-26',
        '/calico/ipam/v2/assignment/ipv4/block/10.0.0.64-26',
        '/calico/ipam/v2/assignment/ipv6/block/fd00::-122',
        '/calico/ipam/v2/handle/h1',
        '/calico/ipam/v2/host/n1/ipv4/block/10.0.0.64-26',
      ]
      await write(s, ...keys.map((k) => put(k, '{}')))
      for (const prefix of [
        '',
        '/calico/',
        '/calico/ipam/v2/assignment/',
        '/calico/ipam/v2/assignment/ipv4/',
        '/calico/ipam/v2/h',
        '/nothing',
      ]) {
        assert.deepEqual(
          await s.listKeys(prefix),
          (await s.list(prefix)).map((kv) => kv.key),
          prefix,
        )
      }
      assert.equal((await s.listKeys('/calico/ipam/v2/assignment/')).length, 3)
    })

    it('forEachKv visits what list returns, in order; keysOnly gives the same keys and revisions with empty values', async (s) => {
      await write(s, put('/e/b', 'vb'), put('/e/a', 'va'))
      await write(s, put('/e/c', 'vc'), put('/e', 'outside'), put('/f/a', 'outside'))
      for (const prefix of ['/e/', '/e', '', '/nothing']) {
        const seen: KeyValue[] = []
        await forEachKv(s, prefix, (kv) => seen.push(kv))
        assert.deepEqual(seen, await s.list(prefix), prefix)
        const keysOnly: KeyValue[] = []
        await forEachKv(s, prefix, (kv) => keysOnly.push(kv), {keysOnly: true})
        assert.deepEqual(
          keysOnly,
          seen.map((kv) => ({key: kv.key, value: '', modRevision: kv.modRevision})),
          prefix,
        )
      }
    })

    it('forEachKv: an error thrown by the visitor stops the scan, reaches the caller, and leaves the store usable', async (s) => {
      await write(s, put('/t/1', 'a'), put('/t/2', 'b'), put('/t/3', 'c'))
      const seen: string[] = []
      await assert.rejects(
        forEachKv(s, '/t/', (kv) => {
          seen.push(kv.key)
          if (kv.key === '/t/2') throw new Error('stop here')
        }),
        /stop here/,
      )
      assert.deepEqual(seen, ['/t/1', '/t/2'])
      await write(s, put('/t/4', 'd'))
      assert.deepEqual(await s.listKeys('/t/'), ['/t/1', '/t/2', '/t/3', '/t/4'])
    })

    it('list with a non-ASCII prefix returns only keys with that prefix', async (s) => {
      for (const k of ['/h/é1', '/h/éa', '/h/ê', '/h/ü', '/h/z', '/h/e']) await write(s, put(k, 'v'))
      assert.deepEqual(await s.listKeys('/h/é'), ['/h/é1', '/h/éa'])
      assert.deepEqual(
        (await s.list('/h/é')).map((kv) => kv.key),
        ['/h/é1', '/h/éa'],
      )
    })

    it('list with a prefix made only of non-ASCII characters', async (s) => {
      for (const k of ['\u{1f600}a', '\u{1f600}b', '\u{1f601}', 'ñ']) await write(s, put(k, 'v'))
      assert.deepEqual(await s.listKeys('\u{1f600}'), ['\u{1f600}a', '\u{1f600}b'])
      assert.deepEqual(await s.listKeys('ñ'), ['ñ'])
    })

    it('list orders by UTF-8 bytes (U+FFFF before U+10000)', async (s) => {
      await write(s, put('/o/\u{10000}', 'astral'), put('/o/\uffff', 'bmp'), put('/o/z', 'ascii'))
      assert.deepEqual(await s.listKeys('/o/'), ['/o/z', '/o/\uffff', '/o/\u{10000}'])
    })

    it('read: gets and lists in request order, as get and list return them', async (s) => {
      assert.equal(typeof s.read, 'function', 'every built-in store batches reads')
      const r1 = await write(s, put('/r/a', 'A'), put('/r/b', 'B'), put('/q/1', 'one'))
      const r2 = await write(s, put('/q/2', 'two'), put('/r/a', 'A2'))
      const req = {gets: ['/r/b', '/missing', '/r/a', '', '/r/b'], lists: ['/q/', '/nothing/', '/r/', '']}
      const got = await s.read!(req)
      assert.deepEqual(got.gets, [
        {key: '/r/b', value: 'B', modRevision: r1},
        undefined,
        {key: '/r/a', value: 'A2', modRevision: r2},
        undefined,
        {key: '/r/b', value: 'B', modRevision: r1},
      ])
      assert.deepEqual(got.lists[0], [
        {key: '/q/1', value: 'one', modRevision: r1},
        {key: '/q/2', value: 'two', modRevision: r2},
      ])
      assert.deepEqual(got.lists[1], [])
      assert.deepEqual(
        got.lists.map((l) => l.map((kv) => kv.key)),
        [['/q/1', '/q/2'], [], ['/r/a', '/r/b'], ['/q/1', '/q/2', '/r/a', '/r/b']],
      )
      // The same through readMany, and through readMany on a store that only has the basic calls.
      const basic: Store = {
        description: 'basic',
        get: (k) => s.get(k),
        list: (p) => s.list(p),
        listKeys: (p) => s.listKeys(p),
        txn: (c, o) => s.txn(c, o),
        revision: () => s.revision(),
        close: async () => {},
      }
      assert.deepEqual(await readMany(s, req), got)
      assert.deepEqual(await readMany(basic, req), got)
      assert.deepEqual(await s.read!({}), {gets: [], lists: []})
      assert.deepEqual(await s.read!({gets: ['/r/a']}), {
        gets: [{key: '/r/a', value: 'A2', modRevision: r2}],
        lists: [],
      })
    })

    it('read: one snapshot, never half of a concurrent transaction', async (s) => {
      // Writers keep /s/x and /s/y (and the list /s/l/) equal in every txn; a read that mixed two revisions
      // would see them differ.
      await write(s, put('/s/x', '0'), put('/s/y', '0'), put('/s/l/1', '0'), put('/s/l/2', '0'))
      let stop = false
      const writer = (async () => {
        for (let i = 1; !stop; i++) {
          await write(s, put('/s/x', `${i}`), put('/s/l/1', `${i}`), put('/s/l/2', `${i}`), put('/s/y', `${i}`))
          await new Promise((r) => setImmediate(r))
        }
      })()
      const seen = new Set<string>()
      try {
        for (let n = 0; n < 60; n++) {
          const r = await s.read!({gets: ['/s/x', '/s/y'], lists: ['/s/l/']})
          const values = [r.gets[0]!.value, ...r.lists[0]!.map((kv) => kv.value), r.gets[1]!.value]
          assert.equal(new Set(values).size, 1, `one read saw ${values.join(', ')}`)
          assert.equal(r.gets[0]!.modRevision, r.gets[1]!.modRevision)
          seen.add(values[0]!)
          await new Promise((r) => setImmediate(r))
        }
      } finally {
        stop = true
        await writer
      }
      assert.ok(seen.size > 1, 'the reads should have overlapped the writes')
    })

    it('read: more keys than one etcd transaction holds (128), and a list longer than one page', async (s) => {
      const many = Array.from({length: 700}, (_, i) => `/m/${String(i).padStart(4, '0')}`)
      // etcd caps a txn at 128 ops: write in slices.
      for (let i = 0; i < many.length; i += 100) await write(s, ...many.slice(i, i + 100).map((k) => put(k, `v${k}`)))
      const gets = [...many.slice(0, 300), '/m/none']
      const r = await s.read!({gets, lists: ['/m/', '/m/06']})
      assert.deepEqual(
        r.gets.map((kv) => kv?.value),
        [...many.slice(0, 300).map((k) => `v${k}`), undefined],
      )
      assert.deepEqual(
        r.lists[0]!.map((kv) => kv.key),
        many,
      )
      assert.deepEqual(r.lists[0], await s.list('/m/'))
      assert.deepEqual(
        r.lists[1]!.map((kv) => kv.key),
        many.slice(600),
      )
    })

    it('an empty-ops txn with true guards succeeds without bumping the revision', async (s) => {
      const r1 = await write(s, put('/g', 'v'))
      const r = await s.txn(
        [
          {key: '/g', modRevision: r1},
          {key: '/absent', absent: true},
        ],
        [],
      )
      assert.equal(r.succeeded, true)
      assert.equal(r.revision, r1)
      assert.equal(await s.revision(), r1)
      assert.equal((await s.get('/g'))!.modRevision, r1)

      const none = await s.txn([], [])
      assert.equal(none.succeeded, true)
      assert.equal(none.revision, r1)
      assert.equal(await s.revision(), r1)
    })

    it('an empty-ops txn with a false guard fails', async (s) => {
      const r1 = await write(s, put('/g', 'v'))
      const r = await s.txn([{key: '/g', absent: true}], [])
      assert.equal(r.succeeded, false)
      assert.equal(r.revision, r1)
    })

    it('large values (100 KB) round trip exactly', async (s) => {
      const unit = '{"k":"v","ü":"é","emoji":"\u{1f600}","q":"\\"","nl":"\\n"}\n'
      let big = ''
      while (big.length < 100 * 1024) big += unit
      const r = await write(s, put('/big', big))
      const kv = await s.get('/big')
      assert.equal(kv!.value.length, big.length)
      assert.equal(kv!.value, big)
      assert.equal(kv!.modRevision, r)
      assert.equal((await s.list('/b'))[0]!.value, big)
    })

    it('values are stored verbatim (empty, whitespace, unicode, JSON with big integers)', async (s) => {
      const values = ['', ' ', 'line1\nline2\r\n', '\u2028<&>\u{1f600}', '{"sequenceNumber":1767323045000000001}']
      await write(s, ...values.map((v, i) => put(`/v/${i}`, v)))
      for (const [i, v] of values.entries()) assert.equal((await s.get(`/v/${i}`))!.value, v, JSON.stringify(v))
    })

    it('a previously read KeyValue is a snapshot, unaffected by later writes', async (s) => {
      const r1 = await write(s, put('/snap', 'one'))
      const kv = await s.get('/snap')
      const listed = await s.list('/snap')
      await write(s, put('/snap', 'two'))
      assert.deepEqual(kv, {key: '/snap', value: 'one', modRevision: r1})
      assert.deepEqual(listed, [{key: '/snap', value: 'one', modRevision: r1}])
    })

    it('concurrent creates of one key: exactly one wins', async (s) => {
      const results = await Promise.all(
        Array.from({length: 10}, (_, i) => s.txn([{key: '/race', absent: true}], [put('/race', `w${i}`)])),
      )
      const winners = results.filter((r) => r.succeeded)
      assert.equal(winners.length, 1)
      const kv = await s.get('/race')
      assert.equal(kv!.modRevision, winners[0]!.revision)
      assert.equal(kv!.value, `w${results.indexOf(winners[0]!)}`)
    })

    it('read-modify-write with guards never loses an update (interleaved in one process)', async (s) => {
      const key = '/counter'
      const inc = async (): Promise<number> => {
        let conflicts = 0
        for (;;) {
          const seen = await s.get(key)
          const n = seen ? Number(seen.value) : 0
          // Yield so that the other incrementers interleave between the read and the write.
          await new Promise((r) => setImmediate(r))
          const cond = seen ? {key, modRevision: seen.modRevision} : {key, absent: true as const}
          const r = await s.txn([cond], [put(key, String(n + 1))])
          if (r.succeeded) return conflicts
          conflicts++
        }
      }
      const conflicts = await Promise.all(Array.from({length: 20}, inc))
      assert.equal((await s.get(key))!.value, '20')
      assert.ok(conflicts.reduce((a, b) => a + b, 0) > 0, 'the interleaving should have produced conflicts')
    })
  })
}
