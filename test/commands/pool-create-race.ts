// Shared by the pool-create race tests (SQLite and etcd): six real `pool create` processes for one CIDR under
// six names, started together. Exactly one may win; the other five must fail with the overlap error naming
// the winner, and exactly that one pool must be stored.
import assert from 'node:assert/strict'
import type {RunResult} from './helpers.ts'

export const RACERS = 6

export interface RaceRound {
  winner: string
  statuses: (number | null)[]
}

/**
 * One round: `run` starts `pool create NAME --cidr CIDR` for every racer at once; `stored` returns the names of
 * the stored pools whose CIDR is `cidr`, read directly from the datastore after all have exited.
 */
export async function raceRound(
  round: number,
  run: (args: string[]) => Promise<RunResult>,
  stored: (cidr: string) => string[],
): Promise<RaceRound> {
  const cidr = `10.${100 + Math.floor(round / 200)}.${round % 200}.0/24`
  const names = Array.from({length: RACERS}, (_, i) => `race-${round}-${i}`)
  const results = await Promise.all(names.map((n) => run(['pool', 'create', n, '--cidr', cidr])))
  const statuses = results.map((r) => r.status)
  const pools = stored(cidr)
  const detail = `round ${round}: statuses ${statuses.join(',')}, stored [${pools.join(',')}]\n${results.map((r, i) => `${names[i]}: ${r.stderr.trim()}`).join('\n')}`
  assert.equal(pools.length, 1, `exactly one pool must be stored; ${detail}`)
  const winner = pools[0]!
  const won = results.filter((r) => r.status === 0)
  assert.equal(won.length, 1, `exactly one create must succeed; ${detail}`)
  assert.equal(
    results[names.indexOf(winner)]!.status,
    0,
    `the stored pool's create must be the one that succeeded; ${detail}`,
  )
  for (const [i, r] of results.entries()) {
    if (names[i] === winner) continue
    assert.equal(r.status, 4, `a losing create exits 4; ${detail}`)
    assert.equal(r.stdout, '', detail)
    assert.match(
      r.stderr,
      new RegExp(
        `^Error: IPPool\\(${names[i]}\\) CIDR overlaps with IPPool\\(${winner}\\) CIDR ${cidr.replace(/\./g, '\\.')}\\n$`,
      ),
      detail,
    )
  }
  return {winner, statuses}
}
