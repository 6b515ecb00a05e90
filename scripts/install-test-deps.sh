#!/usr/bin/env bash
# System packages the tests need, installed only when missing (Debian, as root):
# etcd and etcdctl for the etcd integration tests, openssl for their TLS certificates, script(1) for the
# terminal-prompt test; promtool (Debian's prometheus package) for the agent's /metrics test at 550,000
# allocations (test/commands/agent-metrics-scale.test.ts); Debian's containernetworking-plugins (host-local, ptp in /usr/lib/cni) for the CNI
# delegation tests, and golang-go + golang-github-appc-cni-dev to build the reference client cnitool.
#
# cnitool is built from the shared folder beside the clone ($(dirname repo)/shared, or $IPAMCTL_SHARED_DIR)
# by its build-cnitool.sh. That folder is read-only and the script writes next to itself, so it is copied to
# .cache/cni-tools/ (gitignored) and run there; the result is .cache/cni-tools/bin/cnitool, rebuilt only when
# missing or when the shared source changed. Without the shared folder this only warns: the cnitool tests then
# skip with a reason.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SHARED="${IPAMCTL_SHARED_DIR:-$(dirname "$REPO")/shared}"
CNI_LIBSRC=/usr/share/gocode/src/github.com/containernetworking/cni/libcni

need=()
command -v etcd >/dev/null || need+=(etcd-server)
command -v etcdctl >/dev/null || need+=(etcd-client)
command -v openssl >/dev/null || need+=(openssl)
command -v script >/dev/null || need+=(bsdutils)
command -v groff >/dev/null || need+=(groff-base)
command -v ip >/dev/null || need+=(iproute2)
command -v promtool >/dev/null || need+=(prometheus)
[ -x /usr/lib/cni/host-local ] && [ -x /usr/lib/cni/ptp ] || need+=(containernetworking-plugins)
command -v go >/dev/null || need+=(golang-go)
[ -d "$CNI_LIBSRC" ] || need+=(golang-github-appc-cni-dev)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
# The Debian packages enable etcd and prometheus services on their default ports where an init system runs them;
# tests start their own etcd on free ports and use only prometheus's promtool, which serves nothing.

# cnitool
CACHE="$REPO/.cache/cni-tools"
if [ ! -x "$SHARED/tools/cni/build-cnitool.sh" ]; then
  [ -x "$CACHE/bin/cnitool" ] || echo "warning: $SHARED/tools/cni/build-cnitool.sh not found; cnitool not built (the cnitool tests will be skipped)" >&2
elif [ ! -x "$CACHE/bin/cnitool" ] || ! cmp -s "$SHARED/tools/cni/cnitool/main.go" "$CACHE/cnitool/main.go"; then
  echo "building cnitool into ${CACHE#"$REPO"/}/bin" >&2
  rm -rf "$CACHE"
  mkdir -p "$CACHE"
  # The copy must be writable (the shared folder is not); -L follows symlinks so the copy is self-contained.
  cp -RL "$SHARED/tools/cni/." "$CACHE/"
  chmod -R u+w "$CACHE"
  if ! log="$("$CACHE/build-cnitool.sh" 2>&1)"; then
    echo "warning: building cnitool failed (the cnitool tests will be skipped):" >&2
    echo "$log" >&2
    rm -f "$CACHE/bin/cnitool"
  fi
fi
