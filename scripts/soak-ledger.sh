#!/usr/bin/env bash
# The compliance ledger under kill -9: a gateway with the ledger on (flush
# 10 s, the journal on unless JOURNAL_MIB=0) answers a steady stream of
# crawler requests (scripts/crawlers.lua, every one claims a crawler) while
# it is killed with -9 KILLS times, PERIOD seconds apart, and started again
# at once on the same state_dir. At the end a stop signal writes what is
# held, and the ledger's count is set against what wrk saw answered:
#   answered <= counted <= answered + KILLS x CONNECTIONS
# (a request in flight when a kill comes may be counted and never
# answered; each connection has at most one in flight). A count below the
# answered requests is a loss; above the bound, a double.
# Installs nginx and wrk from Debian if missing.
#   scripts/soak-ledger.sh [KILLS=5] [PERIOD=48] [CONNECTIONS=16]
# PROXY_BIN runs another build of robots-proxy instead of building.
set -euo pipefail
cd "$(dirname "$0")/.."
kills=${1:-5}
period=${2:-48}
conns=${3:-16}
source scripts/setup.sh
source scripts/bench-common.sh
bench_ports_free 18900 18901 18902
bench_install nginx-light wrk sqlite3
bench_proxy_bin

work=$(mktemp -d /tmp/robots-ledger-soak.XXXXXX)
bench_origin "$work" 18901 'try_files $uri /page.html;'
printf 'User-agent: *\nDisallow: /cart\nDisallow: /search\n\nUser-agent: GPTBot\nDisallow: /\n' > "$work/www/robots.txt"
nginx -c "$work/nginx.conf"
cat > "$work/gateway.yaml" <<CONF
database: $work/ledger.db
proxy:
  listen: ["127.0.0.1:18900"]
  admin: 127.0.0.1:18902
  admin_token: soak
  state_dir: $work/state
  refresh: 1h
  threads: 1
  ledger: { flush: 10s, journal_mib: ${JOURNAL_MIB:-64} }
sites:
  - name: shop
    proxy:
      hosts: [shop.test]
      origin: 127.0.0.1:18901
CONF
gw=
start() {
  ROBOTSGATE_LOG=warn "$bin" --config "$work/gateway.yaml" > /dev/null 2>> "$work/gateway.log" &
  gw=$!
  bench_wait_store 100 18900
}
trap 'kill $gw 2>/dev/null || true; nginx -c "$work/nginx.conf" -s stop 2>/dev/null || true' EXIT
start
wrk -t2 -c"$conns" -d"$(( (kills + 1) * period ))s" -s scripts/crawlers.lua "http://127.0.0.1:18900/" > "$work/wrk.txt" &
load=$!
for k in $(seq 1 "$kills"); do
  sleep "$period"
  kill -9 "$gw"
  wait "$gw" 2>/dev/null || true
  start
  echo "kill $k: restarted"
done
wait $load
kill -TERM "$gw"
wait "$gw" 2>/dev/null || true
answered=$(awk '/requests in/ {print $1}' "$work/wrk.txt")
cut=$(( kills * conns ))
counted=$(sqlite3 "$work/ledger.db" 'SELECT COALESCE(SUM(requests), 0) FROM ledger')
echo "machine: $(nproc) cores; $kills kills, ${period}s apart, $conns connections; journal_mib ${JOURNAL_MIB:-64}"
grep -E "requests in|Socket errors|Non-2xx" "$work/wrk.txt" | sed 's/^ */wrk: /'
echo "answered: $answered; in flight at the kills, at most: $cut; counted by the ledger: $counted"
if (( counted < answered )); then
  echo "LOST: $(( answered - counted )) answered crawler requests are not counted"
  exit 1
elif (( counted > answered + cut )); then
  echo "DOUBLED: $(( counted - answered - cut )) more counted than could have been in flight"
  exit 1
fi
echo "ok: nothing lost, nothing doubled ($(( counted - answered )) requests counted whose answers a kill cut)"
