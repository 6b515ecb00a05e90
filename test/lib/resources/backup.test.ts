// datastore export's writer (src/lib/resources/backup.ts writeExport): streamed from one snapshot of the store,
// its text must stay byte-identical to the text the export wrote when it built the whole file in memory (the
// reference below is that earlier implementation, kept here frozen), for stores larger than one written piece and
// with every kind of key; and writeExportFile must leave an earlier export alone when the export fails midway.
import assert from 'node:assert/strict'
import {execFileSync, spawn} from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {pathToFileURL} from 'node:url'
import {after, describe, test} from 'node:test'
import {compactJson, encodeJson, indentJson, parseJson} from '../../../src/lib/codec/gojson.ts'
import {loadYaml} from '../../../src/lib/codec/yaml.ts'
import {exportText, writeExport, writeExportFile} from '../../../src/lib/resources/backup.ts'
import {keys, parseAffinityKey, parseBlockKey} from '../../../src/lib/store/keys.ts'
import {MemoryStore} from '../../../src/lib/store/memory.ts'
import {SqliteStore} from '../../../src/lib/store/sqlite.ts'
import type {KeyValue, Store} from '../../../src/lib/store/store.ts'

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-backup-test-'))
after(() => fs.rmSync(root, {recursive: true, force: true}))

const RES = '/calico/resources/v3/projectcalico.org/'
const V3_KINDS: readonly [string, string][] = [
  ['ippools', 'IPPool'],
  ['bgppeers', 'BGPPeer'],
  ['tiers', 'Tier'],
  ['globalnetworkpolicies', 'GlobalNetworkPolicy'],
  ['stagedglobalnetworkpolicies', 'StagedGlobalNetworkPolicy'],
  ['globalnetworksets', 'GlobalNetworkSet'],
  ['hostendpoints', 'HostEndpoint'],
  ['kubecontrollersconfigurations', 'KubeControllersConfiguration'],
  ['networkpolicies', 'NetworkPolicy'],
  ['stagednetworkpolicies', 'StagedNetworkPolicy'],
  ['stagedkubernetesnetworkpolicies', 'StagedKubernetesNetworkPolicy'],
  ['networksets', 'NetworkSet'],
  ['nodes', 'Node'],
  ['bgpconfigurations', 'BGPConfiguration'],
  ['felixconfigurations', 'FelixConfiguration'],
  ['ipreservations', 'IPReservation'],
  ['bgpfilters', 'BGPFilter'],
  ['workloadendpoints', 'WorkloadEndpoint'],
]

/** The export text as the earlier, whole-in-memory implementation wrote it (from one list of /calico/). */
function reference(kvs: readonly KeyValue[]): {text: string; skipped: string[]} {
  const ipamEntry = (kv: KeyValue) =>
    `{"Key":${encodeJson(kv.key)},"Value":${kv.value.trim() === '' ? '{"state":"confirmed","deleted":false}' : compactJson(kv.value)},"TTL":0}`
  const byPlural = new Map<string, KeyValue[]>()
  const blocks: KeyValue[] = []
  const affinities: KeyValue[] = []
  const handles: KeyValue[] = []
  let config: KeyValue | undefined
  let clusterInfo: KeyValue | undefined
  const skipped: string[] = []
  for (const kv of kvs) {
    if (kv.key.startsWith(RES)) {
      const [plural, ...rest] = kv.key.slice(RES.length).split('/')
      if (plural === 'clusterinformations') {
        if (rest.join('/') === 'default') clusterInfo = kv
        else skipped.push(kv.key)
        continue
      }
      const list = byPlural.get(plural!) ?? []
      list.push(kv)
      byPlural.set(plural!, list)
    } else if (parseBlockKey(kv.key)) blocks.push(kv)
    else if (parseAffinityKey(kv.key)) affinities.push(kv)
    else if (kv.key.startsWith(keys.handlePrefix())) handles.push(kv)
    else if (kv.key === keys.ipamConfig()) config = kv
    else skipped.push(kv.key)
  }
  const plurals = [
    ...V3_KINDS.map(([p]) => p),
    ...[...byPlural.keys()].filter((p) => !V3_KINDS.some(([q]) => q === p)).sort(),
  ]
  const docs = plurals.map((plural) => {
    const items = (byPlural.get(plural) ?? []).map((kv) => {
      const obj = parseJson(kv.value) as Record<string, unknown>
      const md = obj.metadata as Record<string, unknown> | undefined
      if (md && typeof md === 'object') for (const k of ['uid', 'resourceVersion', 'creationTimestamp']) delete md[k]
      return obj
    })
    const kind = V3_KINDS.find(([p]) => p === plural)?.[1] ?? String(items[0]?.kind ?? plural)
    return loadYaml().stringify(
      {apiVersion: 'projectcalico.org/v3', items, kind: `${kind}List`, metadata: {}},
      {lineWidth: 0},
    )
  })
  const info = clusterInfo ? indentJson(compactJson(clusterInfo.value)) : 'null'
  const parts: string[] = []
  if (affinities.length > 0) parts.push(`"block_affinities":[${affinities.map(ipamEntry).join(',')}]`)
  if (blocks.length > 0) parts.push(`"blocks":[${blocks.map(ipamEntry).join(',')}]`)
  if (handles.length > 0) parts.push(`"handles":[${handles.map(ipamEntry).join(',')}]`)
  if (config) parts.push(`"config":${ipamEntry(config)}`)
  return {
    text: `${docs.map((d) => `${d}---\n`).join('')}===\n${info}\n===\n${indentJson(`{${parts.join(',')}}`)}\n`,
    skipped,
  }
}

const wep = (i: number, extra: Record<string, unknown> = {}) => ({
  kind: 'WorkloadEndpoint',
  apiVersion: 'projectcalico.org/v3',
  metadata: {
    name: `node--${i % 7}-k8s-pod--${i}-eth0`,
    namespace: 'default',
    uid: `uid-${i}`,
    resourceVersion: String(i),
    creationTimestamp: '2026-01-02T03:04:05Z',
    labels: {'projectcalico.org/namespace': 'default', 'projectcalico.org/orchestrator': 'k8s'},
  },
  spec: {
    orchestrator: 'k8s',
    node: `node-${i % 7}`,
    containerID: i % 11 === 0 ? String(1000 + i) : `${i.toString(16).padStart(12, '0')}${'c'.repeat(52)}`,
    pod: `pod-${i}`,
    endpoint: 'eth0',
    ipNetworks: [`10.0.${i >> 8}.${i & 255}/32`, ...(i % 5 === 0 ? [`fd00::${i.toString(16)}/128`] : [])],
    profiles: ['kns.default'],
    interfaceName: `cali${String(i).padStart(11, '0')}`,
    mac: 'ee:ee:ee:ee:ee:ee',
    ...extra,
  },
})

/** A store of every kind of key, with more text than one piece writeExport hands on (2^20 characters). */
function entries(): {key: string; value: string}[] {
  const out: {key: string; value: string}[] = []
  const put = (key: string, v: unknown) => out.push({key, value: typeof v === 'string' ? v : JSON.stringify(v)})
  for (let i = 0; i < 3000; i++) {
    const odd =
      i === 17
        ? {description: 'two\nlines', note: 'a: b', empty: '', yes: 'yes', num: 1.5, big: '0x1F', list: [[1, 2], {}]}
        : i % 13 === 0
          ? {description: `café 日本 ${i}`}
          : {}
    const w = wep(i, odd)
    put(`${RES}workloadendpoints/default/${w.metadata.name}`, w)
    put(`/calico/ipam/v2/handle/k8s-pod-network.${i}`, {block: {[`10.0.${i >> 8}.0/26`]: 1}, deleted: false})
  }
  for (let b = 0; b < 40; b++) {
    const cidr = `10.0.${b}.0-26`
    put(`/calico/ipam/v2/assignment/ipv4/block/${cidr}`, `{"cidr":"10.0.${b}.0/26","affinity":"host:node-${b % 7}"}`)
    put(`/calico/ipam/v2/host/node-${b % 7}/ipv4/block/${cidr}`, b === 3 ? '' : {state: 'confirmed', deleted: false})
  }
  put('/calico/ipam/v2/virtual/vm-1/ipv4/block/10.1.0.0-26', {state: 'pending', deleted: false})
  put('/calico/ipam/v2/config', {strictAffinity: false, autoAllocateBlocks: true, maxBlocksPerHost: 0})
  put(`${RES}ippools/pods`, {
    kind: 'IPPool',
    apiVersion: 'projectcalico.org/v3',
    metadata: {name: 'pods', uid: 'x'},
    spec: {cidr: '10.0.0.0/16', blockSize: 26},
  })
  for (let n = 0; n < 7; n++)
    put(`${RES}nodes/node-${n}`, {
      kind: 'Node',
      apiVersion: 'projectcalico.org/v3',
      metadata: {name: `node-${n}`},
      spec: {},
    })
  put(`${RES}clusterinformations/default`, {
    kind: 'ClusterInformation',
    apiVersion: 'projectcalico.org/v3',
    metadata: {name: 'default'},
    spec: {clusterGUID: 'g', datastoreReady: true},
  })
  put(`${RES}clusterinformations/other`, {kind: 'ClusterInformation'})
  put(`${RES}aardvarks/one`, {kind: 'Aardvark', apiVersion: 'projectcalico.org/v3', metadata: {name: 'one'}})
  put(`${RES}zebras/one`, {kind: 'Zebra Crossing', apiVersion: 'projectcalico.org/v3', metadata: {name: 'one'}})
  put('/calico/felix/v1/host/x', 'y')
  put('/calico/ipam/v2/weird', '{}')
  return out
}

async function filled(store: Store): Promise<Store> {
  const all = entries()
  for (let i = 0; i < all.length; i += 500)
    await store.txn(
      [],
      all.slice(i, i + 500).map((e) => ({put: e.key, value: e.value})),
    )
  return store
}

describe('writeExport', () => {
  for (const [name, open] of [
    ['the embedded store (one SQLite snapshot)', () => SqliteStore.open(path.join(root, 'export.db'))],
    ['the memory store (scan by scan)', () => new MemoryStore()],
  ] as const) {
    test(`on ${name}: the same bytes as the whole-in-memory export, written in several pieces`, async () => {
      const store = await filled(open())
      try {
        const want = reference(await store.list('/calico/'))
        const pieces: Uint8Array[] = []
        const r = await writeExport(store, (chunk) => pieces.push(chunk))
        assert.ok(pieces.length > 2, `${pieces.length} pieces`)
        assert.equal(Buffer.concat(pieces).toString('utf8'), want.text)
        assert.deepEqual(r.skipped, want.skipped)
        assert.deepEqual(r.counts, {resources: 3010, blocks: 40, affinities: 41, handles: 3000, config: 1})
        assert.equal((await exportText(store)).text, want.text)
      } finally {
        await store.close()
      }
    })
  }

  test('keys the format has no place for inside the subtrees read only for their values: skipped in key order; progress counts every key', async () => {
    const store = await filled(SqliteStore.open(path.join(root, 'export-odd.db')))
    try {
      await store.txn(
        [],
        [
          {put: '/calico/ipam/v2/host/junk', value: '{}'},
          {put: '/calico/ipam/v2/assignment/ipv4/junk', value: '{}'},
          {put: '/calico/ipam/v2/handle/', value: '{"block":{},"deleted":false}'},
          {put: `${RES}workloadendpointsx/default/one`, value: JSON.stringify(wep(1))},
          {put: `${RES}workloadendpoints`, value: JSON.stringify(wep(2))},
        ],
      )
      const all = await store.list('/calico/')
      const want = reference(all)
      const pieces: Uint8Array[] = []
      const seen: string[] = []
      const r = await writeExport(store, (chunk) => pieces.push(chunk), {
        onProgress: (phase, done, total) => seen.push(`${phase} ${done}/${total}`),
      })
      assert.equal(Buffer.concat(pieces).toString('utf8'), want.text)
      assert.deepEqual(r.skipped, want.skipped)
      assert.ok(r.skipped.includes('/calico/ipam/v2/host/junk'), r.skipped.join())
      assert.deepEqual(r.counts, {resources: 3012, blocks: 40, affinities: 41, handles: 3001, config: 1})
      // Listing covers only the small part of the store; the bar's total is every key from the start.
      const listed = seen.filter((p) => p.startsWith('Listing keys')).length
      assert.ok(listed > 0 && listed < 200, `${listed} keys listed`)
      const exporting = seen.filter((p) => p.startsWith('Exporting'))
      assert.equal(exporting[0], `Exporting 1/${all.length}`)
      assert.ok(exporting.every((p) => p.endsWith(`/${all.length}`)))
      // Every key is read but the three skipped ones outside those subtrees, which no part of the file reads; the
      // workloadendpointsx resource is read twice (it is also under the prefix of the workloadendpoints List).
      assert.equal(exporting.at(-1), `Exporting ${all.length - 3 + 1}/${all.length}`)
    } finally {
      await store.close()
    }
  })

  test('an empty store: every List empty, no ClusterInformation, an empty IPAM object', async () => {
    const store = new MemoryStore()
    assert.equal((await exportText(store)).text, reference([]).text)
  })
})

describe('writeExportFile', () => {
  test('streams into a 0600 file; a failure midway leaves the earlier export as it was and no partial file', async () => {
    const dir = fs.mkdtempSync(path.join(root, 'file-'))
    const file = path.join(dir, 'backup.txt')
    const earlier = 'apiVersion: projectcalico.org/v3\nearlier\n'
    fs.writeFileSync(file, earlier)
    await assert.rejects(
      writeExportFile(file, async (sink) => {
        sink.text('apiVersion: projectcalico.org/v3\npartial')
        throw new Error('the store stopped answering')
      }),
      /the store stopped answering/,
    )
    assert.equal(fs.readFileSync(file, 'utf8'), earlier)
    assert.deepEqual(fs.readdirSync(dir), ['backup.txt'])
    const r = await writeExportFile(file, async (sink) => {
      sink.text('apiVersion: projectcalico.org/v3\n')
      sink.text('new\n')
      return 7
    })
    assert.equal(r, 7)
    assert.equal(fs.readFileSync(file, 'utf8'), 'apiVersion: projectcalico.org/v3\nnew\n')
    assert.equal(fs.statSync(file).mode & 0o777, 0o600)
    assert.deepEqual(fs.readdirSync(dir), ['backup.txt'])
  })

  test('a FIFO is written through: no partial file beside it, not replaced, its mode kept', async () => {
    const dir = fs.mkdtempSync(path.join(root, 'fifo-'))
    const fifo = path.join(dir, 'out')
    execFileSync('mkfifo', ['-m', '0644', fifo])
    const read = new Promise<string>((resolve, reject) => {
      let text = ''
      fs.createReadStream(fifo, 'utf8')
        .on('data', (c) => (text += c))
        .on('end', () => resolve(text))
        .on('error', reject)
    })
    // The writer in a child process: a writer that opened the FIFO to read it first (as a regular file's earlier
    // export is read) would block forever, and in this process that would hang the test instead of failing it.
    const module = pathToFileURL(path.join(import.meta.dirname, '../../../src/lib/resources/backup.ts')).href
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '-e',
        `import(${JSON.stringify(module)}).then((m) => m.writeExportFile(${JSON.stringify(fifo)}, async (sink) => { sink.text('apiVersion: projectcalico.org/v3\\nthrough\\n') }))`,
      ],
      {stdio: 'inherit'},
    )
    const killer = setTimeout(() => child.kill('SIGKILL'), 20_000)
    const exit = await new Promise((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal)))
    clearTimeout(killer)
    assert.equal(exit, 0, 'the writer finished')
    assert.equal(await read, 'apiVersion: projectcalico.org/v3\nthrough\n')
    const st = fs.statSync(fifo)
    assert.ok(st.isFIFO(), 'still a FIFO')
    assert.equal(st.mode & 0o777, 0o644)
    assert.deepEqual(fs.readdirSync(dir), ['out'])
  })

  test('a device node is written through and stays the device (not a regular file in its place)', {
    skip: process.getuid?.() === 0 ? false : 'mknod needs root',
  }, async () => {
    const dir = fs.mkdtempSync(path.join(root, 'dev-'))
    const dev = path.join(dir, 'null')
    execFileSync('mknod', ['-m', '0666', dev, 'c', '1', '3']) // a null device of the test's own
    await writeExportFile(dev, async (sink) => {
      sink.text('apiVersion: projectcalico.org/v3\nnothing kept\n')
    })
    const st = fs.statSync(dev)
    assert.ok(st.isCharacterDevice(), 'still a character device')
    assert.equal(st.mode & 0o777, 0o666)
    assert.deepEqual(fs.readdirSync(dir), ['null'])
  })

  test('a directory is refused in one line, nothing created', async () => {
    const dir = fs.mkdtempSync(path.join(root, 'dir-'))
    await assert.rejects(
      writeExportFile(dir, async () => {}),
      /cannot write .*: EISDIR$/,
    )
    assert.deepEqual(fs.readdirSync(dir), [])
  })

  test('a file that is not an earlier export is refused before anything is read or written', async () => {
    const dir = fs.mkdtempSync(path.join(root, 'file-'))
    const file = path.join(dir, 'ipam.db')
    fs.writeFileSync(file, 'SQLite format 3\0')
    let filled = false
    await assert.rejects(
      writeExportFile(file, async () => {
        filled = true
      }),
      /exists and is not an earlier datastore export/,
    )
    assert.equal(filled, false)
    assert.equal(fs.readFileSync(file, 'utf8'), 'SQLite format 3\0')
    assert.deepEqual(fs.readdirSync(dir), ['ipam.db'])
  })
})
