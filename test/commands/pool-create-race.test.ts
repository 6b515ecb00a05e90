// Concurrent overlapping `pool create` on the embedded store: real processes, one winner per round.
import {test} from 'node:test'
import {sandbox} from './helpers.ts'
import {raceRound} from './pool-create-race.ts'

// A few rounds keep the suite short; the interleaving that made every create fail before the prefix guard is
// reproduced deterministically in test/lib/ipam/pool-create.test.ts. IPAMCTL_POOL_RACE_ROUNDS=30 for a longer hunt.
const ROUNDS = Number(process.env.IPAMCTL_POOL_RACE_ROUNDS ?? 8)

test(`${ROUNDS} rounds of 6 concurrent pool creates of one CIDR: exactly one wins each round, the rest name it`, {
  timeout: 600_000,
}, async () => {
  const sb = sandbox()
  // A write creates the store file before the racers start (so none of them says it created it).
  await sb.ok('pool', 'create', 'unrelated', '--cidr', '10.250.0.0/24')
  for (let round = 0; round < ROUNDS; round++) {
    await raceRound(
      round,
      (args) => sb.run(...args),
      (cidr) =>
        sb
          .keys('/calico/resources/v3/projectcalico.org/ippools/')
          .filter((k) => JSON.parse(sb.value(k)!).spec.cidr === cidr)
          .map((k) => k.split('/').pop()!),
    )
  }
})
