#!/usr/bin/env bash
# What the compliance ledger costs the gateway's hot path: the same build of
# robots-proxy, with `proxy.ledger` off and on (writing to a SQLite file
# every 10 s), in one run, on the fast path, at 1 and 64 connections, with
# crawler User-Agents in the mix (scripts/mix.lua: 80% browsers, 20%
# crawlers), over pages some of which the robots.txt disallows. The origin
# is nginx on loopback. Off and on take turns, ROUNDS times, so drift on
# the machine falls on both alike.
# Installs nginx and wrk from Debian if missing.
#   scripts/bench-ledger.sh [SECONDS=10] [ROUNDS=2]
# PROXY_BIN runs another build of robots-proxy instead of building.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
rounds=${2:-2}
source scripts/setup.sh
source scripts/bench-common.sh
bench_ports_free 18700 18701 18702 18710 18712
bench_install nginx-light wrk sqlite3
bench_proxy_bin

work=$(mktemp -d /tmp/robots-ledger-bench.XXXXXX)
bench_origin "$work" 18701 'try_files $uri /page.html;'
mkdir -p "$work/www/shop"
chmod 755 "$work/www/shop"
printf 'User-agent: *\nDisallow: /cart\nDisallow: /search\n\nUser-agent: GPTBot\nDisallow: /\n\nUser-agent: Googlebot\nDisallow: /private\n' > "$work/www/robots.txt"
nginx -c "$work/nginx.conf"
gateway() { # PORT ADMIN LEDGER-LINES
  cat <<CONF
database: $work/ledger-$1.db
proxy:
  listen: ["127.0.0.1:$1"]
  admin: 127.0.0.1:$2
  admin_token: bench
  state_dir: $work/state-$1
  refresh: 1h
  threads: 1
$3
sites:
  - name: shop
    proxy:
      hosts: [shop.test]
      origin: 127.0.0.1:18701
CONF
}
gateway 18700 18702 "" > "$work/off.yaml"
gateway 18710 18712 "  ledger: { flush: 10s }" > "$work/on.yaml"
ROBOTSGATE_LOG=warn "$bin" --config "$work/off.yaml" > /dev/null 2> "$work/off.log" &
off=$!
ROBOTSGATE_LOG=warn "$bin" --config "$work/on.yaml" > /dev/null 2> "$work/on.log" &
on=$!
trap 'kill $off $on 2>/dev/null || true; nginx -c "$work/nginx.conf" -s stop 2>/dev/null || true' EXIT
bench_wait_store 100 18700 18710

# The request mix: scripts/mix.lua.
run() { # LABEL PORT CONNECTIONS
  local out
  out=$(wrk -t"$(( $3 < 2 ? 1 : 2 ))" -c"$3" -d"${secs}s" --latency -s scripts/mix.lua "http://127.0.0.1:$2/" )
  printf '%-12s %3s conns: %s req/s, p50 %s, p99 %s\n' "$1" "$3" \
    "$(awk '/Requests\/sec/ {print $2}' <<<"$out")" "$(awk '$1=="50%" {print $2}' <<<"$out")" "$(awk '$1=="99%" {print $2}' <<<"$out")"
}
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
echo "wrk ${secs}s per line; gateway: 1 worker thread, fast path; mix: 80% browsers, 20% crawlers"
for r in $(seq 1 "$rounds"); do
  for c in 1 64; do
    run "ledger off" 18700 "$c"
    run "ledger on" 18710 "$c"
  done
done
sleep 11   # one flush
echo "ledger rows written: $(sqlite3 "$work/ledger-18710.db" 'SELECT COUNT(*), SUM(requests) FROM ledger')"
curl -s -H 'Authorization: Bearer bench' http://127.0.0.1:18712/status | grep -o '"ledger":{[^}]*}'
