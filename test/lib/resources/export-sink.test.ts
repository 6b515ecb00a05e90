// datastore export's sinks (src/lib/resources/export-sink.ts): the writer thread must write exactly the bytes the
// main thread would (pages it formats and pieces of text, in the order they were handed over), take part of the
// formatting, and report a failed write as the caller's error without hanging or writing on afterwards.
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {after, describe, test} from 'node:test'
import type {Page} from '../../../src/lib/resources/export-format.ts'
import {type ExportSink, THREAD_AFTER_PAGES, textSink, threadSink} from '../../../src/lib/resources/export-sink.ts'

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-export-sink-test-'))
after(() => fs.rmSync(root, {recursive: true, force: true}))

const resource = (i: number) =>
  JSON.stringify({
    kind: 'WorkloadEndpoint',
    apiVersion: 'projectcalico.org/v3',
    metadata: {name: `pod-${i}`, namespace: 'default', uid: `u${i}`, labels: {app: i % 3 ? 'web' : 'café'}},
    spec: {node: `node-${i % 5}`, ipNetworks: [`10.0.${i >> 8}.${i & 255}/32`], note: i % 7 ? 'x' : 'two\nlines'},
  })

/** Text and pages in the order an export hands them over: enough pages that both threads format some. */
function feed(sink: ExportSink): void {
  for (let p = 0; p < 400; p++) {
    sink.text(`# part ${p}\n`)
    const values = Array.from({length: 50}, (_, i) => resource(p * 50 + i))
    if (p % 2) sink.page({kind: 'resources', values})
    else sink.page({kind: 'ipam', keys: values.map((_, i) => `/calico/ipam/v2/handle/h-${p}-${i}`), values})
  }
  sink.text('the end\n')
}

function viaText(): Buffer {
  const pieces: Uint8Array[] = []
  const sink = textSink((c) => pieces.push(c))
  feed(sink)
  void sink.finish()
  return Buffer.concat(pieces)
}

describe('threadSink', () => {
  test('writes the same bytes as textSink, in order, with pages formatted on the thread', async () => {
    const want = viaText()
    const file = path.join(root, 'out.txt')
    const fd = fs.openSync(file, 'w')
    try {
      const sink = threadSink(fd, (e) => new Error(`cannot write: ${e.code}`))
      feed(sink)
      await sink.finish()
      await sink.finish()
      assert.ok(sink.pagesOnThread() > 0, 'the thread formatted no page')
      assert.ok(sink.pagesOnThread() <= 400)
    } finally {
      fs.closeSync(fd)
    }
    const got = fs.readFileSync(file)
    assert.equal(got.length, want.length)
    assert.ok(got.equals(want), 'the bytes differ')
    const text = got.toString('utf8')
    assert.ok(text.startsWith('# part 0\n{\n      "Key": "/calico/ipam/v2/handle/h-0-0",\n'), text.slice(0, 80))
    assert.ok(text.includes('# part 1\n  - kind: WorkloadEndpoint\n'), 'no YAML item after part 1')
    assert.ok(text.endsWith('the end\n'))
  })

  /** Writes to a full device through a sink whose thread starts after `startAfter` pages. */
  async function fullDevice(startAfter: number): Promise<void> {
    const fd = fs.openSync('/dev/full', 'w')
    try {
      let failed: unknown
      const sink = threadSink(
        fd,
        (e) => {
          failed = e
          return new Error(`cannot write out.txt: ${e.code}`)
        },
        {startAfter},
      )
      const page: Page = {kind: 'resources', values: [resource(1)]}
      let thrown: unknown
      try {
        // The failure shows at a later hand-over, or at finish when the thread is slower than this loop.
        // A page first: with startAfter 0 the thread starts before any text is written here.
        for (let i = 0; i < 2000; i++) {
          sink.page(page)
          sink.text('x'.repeat(1 << 12))
        }
        await sink.finish()
      } catch (err) {
        thrown = err
      }
      assert.match(String(thrown), /^Error: cannot write out\.txt: ENOSPC$/)
      // Where the write failed: the thread reports a plain {code, message}; here it is the write's own error.
      assert.equal(failed instanceof Error, startAfter !== 0)
      await sink.abort()
    } finally {
      fs.closeSync(fd)
    }
  }

  test('a failed write (a full device) on the thread rejects with the caller error and writes nothing more', () =>
    fullDevice(0))
  test('a failed write (a full device) before the thread starts rejects with the caller error', () => fullDevice(1e9))

  test('a small export (fewer pages than THREAD_AFTER_PAGES) is written without starting the thread', async () => {
    const file = path.join(root, 'small.txt')
    const fd = fs.openSync(file, 'w')
    const pieces: Uint8Array[] = []
    const local = textSink((c) => pieces.push(c))
    try {
      const sink = threadSink(fd, (e) => new Error(`cannot write: ${e.code}`))
      for (const s of [sink, local]) {
        for (let p = 0; p < THREAD_AFTER_PAGES; p++) {
          s.text(`# part ${p}\n`)
          s.page({kind: 'resources', values: [resource(p)]})
        }
        await s.finish()
      }
      assert.equal(sink.pagesOnThread(), 0)
    } finally {
      fs.closeSync(fd)
    }
    assert.ok(fs.readFileSync(file).equals(Buffer.concat(pieces)))
  })
})
