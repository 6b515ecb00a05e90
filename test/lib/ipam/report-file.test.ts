// The `ipam check -o` file (src/lib/ipam/report-file.ts): 0600 before any byte, and never a file that is not an
// earlier report (docs/write-paths.md).
import assert from 'node:assert/strict'
import {execFileSync} from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {after, describe, it} from 'node:test'
import {ValidationError} from '../../../src/lib/errors.ts'
import {type Report, reportJson} from '../../../src/lib/ipam/check-report.ts'
import {openReport, writeReport} from '../../../src/lib/ipam/report-file.ts'

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ipamctl-report-file-'))
after(() => fs.rmSync(tmp, {recursive: true, force: true}))

const report: Report = {
  version: '0.1.0',
  clusterGUID: 'g',
  datastoreLocked: true,
  clusterInformationRevision: '7',
  clusterType: '',
  allocations: {
    '10.65.0.1': [{ip: '10.65.0.1', handle: 'h', sequenceNumber: 1767323045000000001n, inUse: false, owners: null}],
  },
}

function refusedOneLine(f: () => unknown, why: RegExp): void {
  assert.throws(f, (err: unknown) => {
    assert.ok(err instanceof ValidationError, String(err))
    assert.match(err.message, why)
    assert.ok(!err.message.includes('\n'))
    return true
  })
}

describe('report file', () => {
  it('a new file is created 0600 and holds the report', () => {
    const file = path.join(tmp, 'new.json')
    const old = process.umask(0)
    try {
      writeReport(file, report)
    } finally {
      process.umask(old)
    }
    assert.equal(fs.statSync(file).mode & 0o777, 0o600)
    assert.equal(fs.readFileSync(file, 'utf8'), reportJson(report))
  })

  it('an earlier report is replaced and tightened; an empty file and /dev/null are written, /dev/null left as it was', () => {
    const file = path.join(tmp, 'earlier.json')
    fs.writeFileSync(file, reportJson({...report, clusterGUID: 'old'}), {mode: 0o644})
    writeReport(file, report)
    assert.equal(fs.statSync(file).mode & 0o777, 0o600)
    assert.equal(fs.readFileSync(file, 'utf8'), reportJson(report))
    const empty = path.join(tmp, 'empty.json')
    fs.writeFileSync(empty, '')
    writeReport(empty, report)
    assert.equal(fs.readFileSync(empty, 'utf8'), reportJson(report))
    const devNull = fs.statSync('/dev/null').mode
    writeReport('/dev/null', report)
    assert.equal(fs.statSync('/dev/null').mode, devNull, 'the device node keeps its mode')
  })

  it('a FIFO named as the output is written through and keeps its mode', async () => {
    const fifo = path.join(tmp, 'out.fifo')
    execFileSync('mkfifo', ['-m', '0644', fifo])
    const read = new Promise<string>((resolve, reject) => {
      let text = ''
      fs.createReadStream(fifo, 'utf8')
        .on('data', (c) => (text += c))
        .on('end', () => resolve(text))
        .on('error', reject)
    })
    // The read side is open before the write side blocks on it.
    await new Promise((r) => setTimeout(r, 50))
    writeReport(fifo, report)
    assert.equal(await read, reportJson(report))
    assert.equal(fs.statSync(fifo).mode & 0o777, 0o644)
  })

  it('any other file is refused before anything is written, and stays as it was', () => {
    const file = path.join(tmp, 'ipam.db')
    fs.writeFileSync(file, 'SQLite format 3\u0000', {mode: 0o644})
    refusedOneLine(() => openReport(file), /ipam\.db exists and is not an ipam check report; refusing to overwrite it/)
    assert.equal(fs.readFileSync(file, 'utf8'), 'SQLite format 3\u0000')
    assert.equal(fs.statSync(file).mode & 0o777, 0o644)
  })

  it('a path that cannot be written is bad input, reported when the file is opened', () => {
    refusedOneLine(
      () => openReport(path.join(tmp, 'missing', 'r.json')),
      /^cannot write the report to .*missing\/r\.json: ENOENT$/,
    )
  })
})
