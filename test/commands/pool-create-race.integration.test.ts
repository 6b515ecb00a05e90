// Concurrent overlapping `pool create` on a real etcd: real processes, one winner per round.
import {after, before, test} from 'node:test'
import {etcdSkipReason, startEtcd, type EtcdServer} from '../support/etcd-server.ts'
import {Cli, etcdDump} from './etcd-cli.ts'
import {raceRound} from './pool-create-race.ts'

const POOLS = '/calico/resources/v3/projectcalico.org/ippools/'
// A few rounds keep the suite short; the interleaving that made every create fail before the prefix guard is
// reproduced deterministically in test/lib/ipam/pool-create.test.ts. IPAMCTL_POOL_RACE_ROUNDS=30 for a longer hunt.
const ROUNDS = Number(process.env.IPAMCTL_POOL_RACE_ROUNDS ?? 12)

let server: EtcdServer
const cli = new Cli()

before(async () => {
  if (etcdSkipReason) return
  server = await startEtcd()
})

after(async () => {
  await server?.stop()
})

test(`${ROUNDS} rounds of 6 concurrent pool creates of one CIDR on etcd: exactly one wins each round, the rest name it`, {
  skip: etcdSkipReason,
  timeout: 900_000,
}, async () => {
  for (let round = 0; round < ROUNDS; round++) {
    await raceRound(
      round,
      (args) => cli.etcd(server.endpoint, args),
      (cidr) =>
        [...etcdDump(server, POOLS).kvs]
          .filter(([, v]) => JSON.parse(v).spec.cidr === cidr)
          .map(([k]) => k.slice(POOLS.length)),
    )
  }
})
