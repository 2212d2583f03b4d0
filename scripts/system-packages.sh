#!/usr/bin/env bash
# Debian packages the project needs beyond Python: Chromium for the browser tests, and
# (with --distributed) PostgreSQL, Redis and nginx for the distributed-mode tests.
set -euo pipefail
want=()
[[ -x /usr/bin/chromium ]] || want+=(chromium)
if [[ ${1:-} == --distributed ]]; then
  command -v redis-server >/dev/null || want+=(redis-server)
  ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || want+=(postgresql)
  # The reverse-proxy recipe's test (docs/nginx.md) runs nginx with a self-signed certificate.
  command -v nginx >/dev/null || [[ -x /usr/sbin/nginx ]] || want+=(nginx)
  command -v openssl >/dev/null || want+=(openssl)
fi
((${#want[@]})) || exit 0
if [[ $(id -u) -ne 0 ]]; then
  echo "please install: ${want[*]} (sudo apt-get install ${want[*]})" >&2
  exit 1
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${want[@]}" >/dev/null
