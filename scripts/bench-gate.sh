#!/usr/bin/env bash
# The gate's cost on the request path (issue #40): two gateways in one run,
# identical but for `gate:` (hold with pins, and off), each in front of the
# same nginx origin, on the own path; wrk with the request mix
# (scripts/mix.lua: 80% browsers, 20% crawlers) at 1 and 64 connections,
# the lines interleaved (off, hold, off, hold) so that drift in the machine
# falls on both. The gate runs on refresh, never per request, so the two
# should match within noise; this measures that rather than assuming it.
# A third line has the gateway holding a change (X-Robots-Source: held).
#   scripts/bench-gate.sh [SECONDS=10]
# Installs nginx and wrk from Debian if missing. PROXY_BIN runs another
# build of robots-proxy instead of building.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
source scripts/setup.sh
source scripts/bench-common.sh
bench_ports_free 18901 18900 18902 18910 18912
bench_install nginx-light wrk
bench_proxy_bin

work=$(mktemp -d /tmp/robots-gate-bench.XXXXXX)
bench_origin "$work" 18901 'try_files $uri /page.html;'
printf 'User-agent: *\nDisallow: /cart\n\nUser-agent: GPTBot\nDisallow: /\n' > "$work/www/robots.txt"
nginx -c "$work/nginx.conf"

gateway() { # NAME PORT ADMIN GATE
  cat <<CONF
proxy:
  listen: ["127.0.0.1:$2"]
  admin: 127.0.0.1:$3
  admin_token: bench
  state_dir: $work/state-$1
  refresh: 1s
  threads: 1
  fast_path: true
sites:
  - name: shop
    gate: $4
    url_sets:
      money:
        expect: { search: allowed }
        urls: [/, /products/, { url: /cart, expect: disallowed }, { url: /, expect: { ai-training: disallowed } }]
    proxy:
      hosts: [shop.test]
      origin: 127.0.0.1:18901
CONF
}
gateway off 18900 18902 off > "$work/off.yaml"
gateway hold 18910 18912 hold > "$work/hold.yaml"
pids=()
bench_gateways "$work" off hold
trap 'kill ${pids[*]} 2>/dev/null || true; nginx -c "$work/nginx.conf" -s stop 2>/dev/null || true; rm -rf "$work"' EXIT
bench_wait_store 100 18900 18910

run() { # LABEL PORT CONNECTIONS
  local out
  out=$(wrk -t"$(( $3 < 2 ? 1 : 2 ))" -c"$3" -d"${secs}s" -s scripts/mix.lua "http://127.0.0.1:$2/")
  printf '%-34s %3s conns: %10s req/s\n' "$1" "$3" "$(awk '/Requests\/sec/ {print $2}' <<<"$out")"
}
echo "robots-proxy $(git rev-parse --short HEAD), ${secs}s a line, wrk with scripts/mix.lua, $(nproc) cores"
for c in 1 64; do
  for round in 1 2; do
    run "gate: off (round $round)" 18900 "$c"
    run "gate: hold, pins (round $round)" 18910 "$c"
  done
done
# The origin deploys Disallow: / ; the hold gateway holds it.
printf 'User-agent: *\nDisallow: /\n' > "$work/www/robots.txt"
for _ in $(seq 1 50); do
  curl -si -H 'Host: shop.test' http://127.0.0.1:18910/robots.txt | grep -qi '^x-robots-source: held' && break
  sleep 0.2
done
curl -si -H 'Host: shop.test' http://127.0.0.1:18910/robots.txt | grep -i '^x-robots-source'
for c in 1 64; do
  run "gate: hold, holding a change" 18910 "$c"
done
