// The progress line of long scans: drawn only on a terminal, throttled, with a bar and counts, erased at the end.
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'
import {progressText, terminalProgress} from '../../src/cli/progress.ts'

function fakeStream(isTTY: boolean): NodeJS.WriteStream & {written: string} {
  const s = {
    isTTY,
    written: '',
    write(chunk: string) {
      s.written += chunk
      return true
    },
  }
  return s as unknown as NodeJS.WriteStream & {written: string}
}

describe('progress', () => {
  test('the text: a bar of 24 cells and counts with thousands separators; no bar without a total', () => {
    assert.equal(progressText('Checking blocks', 0, 10_000), `Checking blocks [${'.'.repeat(24)}] 0/10,000`)
    assert.equal(
      progressText('Checking blocks', 5_000, 10_000),
      `Checking blocks [${'#'.repeat(12)}${'.'.repeat(12)}] 5,000/10,000`,
    )
    assert.equal(progressText('Reading blocks', 10_000, 10_000), `Reading blocks [${'#'.repeat(24)}] 10,000/10,000`)
    assert.equal(progressText('Loading IPAM data', 0, 0), 'Loading IPAM data… 0')
  })

  test('nothing at all when the stream is not a terminal', () => {
    assert.equal(terminalProgress(fakeStream(false)), undefined)
  })

  test('on a terminal: redrawn in place at most every 100 ms, the last count always, erased by clear()', () => {
    const s = fakeStream(true)
    const p = terminalProgress(s)!
    for (let i = 1; i <= 1000; i++) p.update('Reading blocks', i, 1000)
    const draws = s.written.split('\r\u001b[K').filter(Boolean)
    assert.ok(draws.length <= 3, `${draws.length} redraws for 1,000 updates within a few ms`)
    assert.equal(draws.at(-1), progressText('Reading blocks', 1000, 1000))
    p.clear()
    assert.ok(s.written.endsWith('\r\u001b[K'))
  })

  test('clear() without a draw writes nothing', () => {
    const s = fakeStream(true)
    terminalProgress(s)!.clear()
    assert.equal(s.written, '')
  })
})
