#!/usr/bin/env bash
# System packages the tests need, installed only when missing (Debian, as root):
# etcd and etcdctl for the etcd integration tests, openssl for their TLS certificates, script(1) for the
# terminal-prompt test.
set -euo pipefail
need=()
command -v etcd >/dev/null || need+=(etcd-server)
command -v etcdctl >/dev/null || need+=(etcd-client)
command -v openssl >/dev/null || need+=(openssl)
command -v script >/dev/null || need+=(bsdutils)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
# The Debian package enables an etcd service on the default ports; tests start their own on free ports.
