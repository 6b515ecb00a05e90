// `ipamctl ipam release --from-report`: a hand-written report (as `ipam check -o` writes it) against the real
// binary. Sequence numbers are nanosecond timestamps above 2^53, so they must be matched digit for digit.
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'
import {assertRejected, fixture, lines, type Sandbox} from './helpers.ts'

const CI = '/calico/resources/v3/projectcalico.org/clusterinformations/default'
const BLOCK = '/calico/ipam/v2/assignment/ipv4/block/10.40.0.0-26'

// Pool 10.40.0.0/26; .5 is leaked (handle leak), .6 is live; the datastore is locked.
const locked = (): Promise<Sandbox> =>
  fixture('release-report', [
    ['pool', 'create', 'p', '--cidr', '10.40.0.0/26'],
    ['ipam', 'assign', '--host', 'h', '--ip', '10.40.0.5', '--handle', 'leak'],
    ['ipam', 'assign', '--host', 'h', '--ip', '10.40.0.6', '--handle', 'live'],
    ['datastore', 'lock'],
  ])

/** The stored sequence number of an ordinal, as the exact digits (JSON.parse would round them). */
function seqDigits(sb: Sandbox, ordinal: number): string {
  const text = sb.value(BLOCK)!
  const m = new RegExp(`"sequenceNumberForAllocation":\\{[^}]*"${ordinal}":(\\d+)`).exec(text)
  assert.ok(m, text)
  return m[1]!
}

/** ClusterInformation's GUID and revision (its mod_revision in the store). */
function cluster(sb: Sandbox): {guid: string; rev: string} {
  const row = sb
    .dump()
    .split('\n')
    .find((l) => l.startsWith(`${CI} @`))!
  const m = /^\S+ @(\d+) (.*)$/.exec(row)!
  return {guid: JSON.parse(m[2]!).spec.clusterGUID, rev: m[1]!}
}

/** A report in `ipam check -o`'s format (docs/calico.md#ipam-check); the sequence number is spliced in as raw digits. */
function writeReport(sb: Sandbox, seq: string, over: {guid?: string} = {}): string {
  const {guid, rev} = cluster(sb)
  const text = `{
  "version": "0.1.0",
  "clusterGUID": "${over.guid ?? guid}",
  "datastoreLocked": true,
  "clusterInformationRevision": "${rev}",
  "clusterType": "ipamctl",
  "allocations": {
    "10.40.0.5": [{"ip": "10.40.0.5", "handle": "leak", "sequenceNumber": ${seq}, "node": "h", "inUse": false, "owners": null}],
    "10.40.0.6": [{"ip": "10.40.0.6", "handle": "live", "sequenceNumber": ${seqDigits(sb, 6)}, "node": "h", "inUse": true, "owners": ["Workload(default/x)"]}]
  }
}
`
  return sb.file('report.json', text)
}

const allocated = (sb: Sandbox): number[] =>
  (JSON.parse(sb.value(BLOCK)!).allocations as (number | null)[]).flatMap((a, o) => (a === null ? [] : [o]))

describe('ipam release --from-report', {concurrency: true}, () => {
  test('releases the leaked address when its sequence number (above 2^53) matches exactly', async () => {
    const sb = await locked()
    const seq = seqDigits(sb, 5)
    assert.ok(BigInt(seq) > 2n ** 53n)
    const file = writeReport(sb, seq)
    const out = await sb.ok('ipam', 'release', '--from-report', file, '--yes')
    assert.deepEqual(lines(out), [
      'Releasing 1 old IPs...',
      'Released 1 IPs successfully',
      "Report didn't contain any handles to clean up.",
      'You may now unlock the data store.',
    ])
    assert.deepEqual(allocated(sb), [6])
  })

  test('a sequence number one off (the same as a double) is not released', async () => {
    const sb = await locked()
    const off = (BigInt(seqDigits(sb, 5)) + 1n).toString()
    assert.equal(Number(off), Number(seqDigits(sb, 5)))
    const file = writeReport(sb, off)
    const r = await sb.run('ipam', 'release', '--from-report', file, '--yes')
    assert.equal(r.status, 4, r.stderr)
    assert.match(r.stdout, /An error occurred while releasing some IPs: .*sequence number/)
    assert.match(r.stdout, /Released 0 IPs successfully/)
    assert.deepEqual(allocated(sb), [5, 6])
  })

  test('without a terminal and without --yes: exit 2, datastore unchanged', async () => {
    const sb = await locked()
    const file = writeReport(sb, seqDigits(sb, 5))
    await assertRejected(sb, ['ipam', 'release', '--from-report', file], 2, 'pass --yes')
  })

  test('a report from another cluster is refused even with --force', async () => {
    const sb = await locked()
    const file = writeReport(sb, seqDigits(sb, 5), {guid: 'f'.repeat(32)})
    await assertRejected(
      sb,
      ['ipam', 'release', '--from-report', file, '--force', '--yes'],
      2,
      'mismatched cluster GUID. Refusing to release',
    )
  })

  test('--from-report excludes --ip', async () => {
    const sb = await locked()
    const file = writeReport(sb, seqDigits(sb, 5))
    await assertRejected(sb, ['ipam', 'release', '--from-report', file, '--ip', '10.40.0.5', '--yes'], 2)
  })
})
