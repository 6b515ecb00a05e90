#!/usr/bin/env bash
# The main job on the embedded store: create pools, assign addresses for two hosts, show utilization and a
# block. The demo always uses a store of its own, ./demo-data/ipam.db (or $IPAMCTL_DEMO_DIR/ipam.db): every
# command gets --datastore embedded --datastore-path explicitly, so IPAMCTL_DATASTORE_PATH, DATASTORE_TYPE,
# ETCD_ENDPOINTS and the config file cannot point it at a real store.
#
# Each run starts from an empty store. ./demo-data is the demo's own; in a directory given by IPAMCTL_DEMO_DIR
# the previous run's store is removed only if the demo made that directory (it holds the marker file
# .ipamctl-demo): a non-empty directory without it is refused, so pointing IPAMCTL_DEMO_DIR at a real store's
# directory cannot delete that store.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${IPAMCTL_DEMO_DIR:-$PWD/demo-data}"
db="$dir/ipam.db"
marker="$dir/.ipamctl-demo"
if [ -n "${IPAMCTL_DEMO_DIR:-}" ] && [ -e "$dir" ] && [ ! -e "$marker" ]; then
  if [ -n "$(ls -A "$dir")" ]; then
    echo "demo: $dir exists and was not made by the demo (no $marker); refusing to use it. Remove it or set IPAMCTL_DEMO_DIR to a new directory." >&2
    exit 2
  fi
fi
mkdir -p -m 0700 "$dir"
touch "$marker"
rm -f "$db" "$db-wal" "$db-shm"
echo "demo: using its own datastore $db" >&2
ipamctl() { echo "\$ ipamctl $*" >&2; node bin/run.cjs "$@" --datastore embedded --datastore-path "$db"; }

ipamctl pool create default-ipv4 --cidr 10.65.0.0/16
ipamctl pool create default-ipv6 --cidr fd80:24e2:f998:72d6::/64
ipamctl pool list
ipamctl ipam assign --host node-1 --count 3 --count6 1 --handle pod-a
ipamctl ipam assign --host node-2 --count 2 --handle pod-b
ipamctl ipam show --show-blocks
first_block=$(node bin/run.cjs block list --host node-1 -o json --datastore embedded --datastore-path "$db" | node -e 'process.stdout.write(JSON.parse(require("fs").readFileSync(0,"utf8"))[0].cidr)')
ipamctl block inspect "$first_block"
ipamctl ipam release --handle pod-b --yes
ipamctl ipam show
echo "demo: datastore $db" >&2
