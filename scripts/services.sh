#!/usr/bin/env bash
# Installs and starts the servers the integration tests use: PostgreSQL
# (a cluster started with pg_ctlcluster, plus a role and a database), the
# aiosmtpd SMTP server, nginx and Apache, h2load (nghttp2-client) for the HTTP/2 load test (tests start their own on loopback;
# they write the real access logs the compliance import reads; apache2-utils
# gives the htpasswd that writes the console's readers file). Exports
# ROBOTSGATE_TEST_POSTGRES_URL for the tests. Safe to run again.
# Meant to be sourced by scripts/test.sh.
set -euo pipefail

sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)

need=()
for p in postgresql python3-aiosmtpd nginx-light apache2 apache2-utils pre-commit goaccess prometheus wrk nghttp2-client man-db xz-utils zstd; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if ((${#need[@]})); then
  echo "services: installing ${need[*]}"
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}"
fi

# The first cluster Debian created (e.g. "15 main 5432 down ...").
read -r pg_version pg_cluster pg_port pg_status _ < <(pg_lsclusters --no-header | head -n 1)
if [ -z "${pg_version:-}" ]; then
  echo "services: no PostgreSQL cluster found (pg_lsclusters is empty)" >&2
  exit 1
fi
if [ "$pg_status" != "online" ]; then
  "${sudo_cmd[@]}" pg_ctlcluster "$pg_version" "$pg_cluster" start
fi

as_postgres() { "${sudo_cmd[@]}" runuser -u postgres -- "$@"; }
for _ in $(seq 1 30); do
  as_postgres psql -p "$pg_port" -qtAc 'SELECT 1' >/dev/null 2>&1 && break
  sleep 1
done
if ! as_postgres psql -p "$pg_port" -qtAc "SELECT 1 FROM pg_roles WHERE rolname = 'robotsgate'" | grep -q 1; then
  as_postgres psql -p "$pg_port" -qc "CREATE ROLE robotsgate LOGIN PASSWORD 'robotsgate' CREATEDB"
fi
if ! as_postgres psql -p "$pg_port" -qtAc "SELECT 1 FROM pg_database WHERE datname = 'robotsgate_test'" | grep -q 1; then
  as_postgres psql -p "$pg_port" -qc "CREATE DATABASE robotsgate_test OWNER robotsgate"
fi

# The OpenAPI document's validator (robots-monitor/tests/api.rs), from PyPI, for
# the python3 the tests run.
if ! python3 -c 'import openapi_spec_validator' 2>/dev/null; then
  python3 -m pip install -q openapi-spec-validator 2>/dev/null \
    || python3 -m pip install -q --break-system-packages openapi-spec-validator
fi

export ROBOTSGATE_TEST_POSTGRES_URL="postgres://robotsgate:robotsgate@127.0.0.1:${pg_port}/robotsgate_test"
echo "services: PostgreSQL $pg_version on port $pg_port; aiosmtpd available"
