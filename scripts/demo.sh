#!/usr/bin/env bash
# The main job on the embedded store: create pools, assign addresses for two hosts, show utilization and a
# block. Uses $IPAMCTL_DATASTORE_PATH if set, otherwise a fresh store under ./demo-data.
set -euo pipefail
cd "$(dirname "$0")/.."
export IPAMCTL_DATASTORE_PATH="${IPAMCTL_DATASTORE_PATH:-$PWD/demo-data/ipam.db}"
rm -f "$IPAMCTL_DATASTORE_PATH" "$IPAMCTL_DATASTORE_PATH-wal" "$IPAMCTL_DATASTORE_PATH-shm"
ipamctl() { echo "\$ ipamctl $*" >&2; node bin/run.cjs "$@"; }

ipamctl pool create default-ipv4 --cidr 10.65.0.0/16
ipamctl pool create default-ipv6 --cidr fd80:24e2:f998:72d6::/64
ipamctl pool list
ipamctl ipam assign --host node-1 --count 3 --count6 1 --handle pod-a
ipamctl ipam assign --host node-2 --count 2 --handle pod-b
ipamctl ipam show --show-blocks
first_block=$(node bin/run.cjs block list --host node-1 -o json | node -e 'process.stdout.write(JSON.parse(require("fs").readFileSync(0,"utf8"))[0].cidr)')
ipamctl block inspect "$first_block"
ipamctl ipam release --handle pod-b --yes
ipamctl ipam show
echo "datastore: $IPAMCTL_DATASTORE_PATH" >&2
