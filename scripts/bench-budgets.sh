#!/usr/bin/env bash
# Crawl budgets under load (issue #63), in one run on loopback:
#   1. the gateway everything on (enforce, AI policy, identity, ledger) with
#      budgets that are hit (bingbot, and spoofed claims: GPTBot from an
#      address outside its feed), own path and pipeline, against nginx
#      doing the same throttling: `limit_req` keyed on a `map` of the
#      User-Agent, `limit_req_status 429`, proxying to the same origin;
#   2. the own path with budgets configured but never hit against the same
#      gateway with no budgets, ROUNDS times in turn (the machine's drift
#      falls on both alike).
# At 1 and 64 connections, with wrk and scripts/mix.lua (80% browsers, 20%
# crawlers). Installs nginx and wrk from Debian if missing.
#   scripts/bench-budgets.sh [SECONDS=8] [ROUNDS=3]
# PROXY_BIN runs another build of robots-proxy instead of building.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-8}
rounds=${2:-3}
source scripts/setup.sh
source scripts/bench-common.sh
bench_ports_free 18901 18903 18920 18921 18922 18940 18941 18942 18950 18951 18952 18960 18961 18962
bench_install nginx-light wrk openssl
bench_proxy_bin

work=$(mktemp -d /tmp/robots-budgets-bench.XXXXXX)
bench_origin "$work" 18901 'try_files $uri /page.html;'
printf 'User-agent: *\nDisallow: /cart\nDisallow: /search\n\nUser-agent: Googlebot\nDisallow: /private\n' > "$work/www/robots.txt"
printf '{"creationTime":"2026-11-24T00:00:00.000000","prefixes":[{"ipv4Prefix":"127.0.0.1/32"}]}' > "$work/www/googlebot.json"
printf '{"creationTime":"2026-11-24T00:00:00.000000","prefixes":[{"ipv4Prefix":"10.0.0.0/8"}]}' > "$work/www/gptbot.json"
bench_cert "$work"
# nginx's budgets: the crawlers the gateway's budgets hold, by a map of the
# User-Agent (an empty key is never limited), at the same rate and burst.
{
  bench_peer_http "$work" 1 18901
  cat <<'CONF'
  map $http_user_agent $budget {
    default "";
    ~*bingbot bingbot;
    ~*GPTBot GPTBot;
  }
  limit_req_zone $budget zone=budgets:1m rate=50r/s;
  limit_req_status 429;
  server {
    listen 127.0.0.1:18903;
    limit_req zone=budgets burst=20 nodelay;
CONF
  bench_proxy_location
  echo "  }"
  echo "}"
} > "$work/nginx-proxy.conf"
nginx -c "$work/nginx.conf"
nginx -c "$work/nginx-proxy.conf"

bench_everything_on 18901
hit="      budgets:
        - { crawler: bingbot, rate: 50/s, burst: 20 }
        - { identity: spoofed, rate: 50/s, burst: 20 }"
never="      budgets:
        - { crawler: bingbot, rate: 1000000/s, burst: 1000000 }
        - { purpose: ai-training, rate: 1000000/s, burst: 1000000 }"
gateway() { # NAME PORT ADMIN FAST PROXY-EXTRA SITE-EXTRA
  bench_gateway_proxy "$work" "$1" "$2" "$(($2 + 1))" "$3" "$4" 1
  cat <<CONF
$5
sites:
  - name: shop
    proxy:
      hosts: [shop.test]
      origin: 127.0.0.1:18901
$6
CONF
}
gateway all 18920 18922 true "$all_proxy" "$all_site
$hit" > "$work/all.yaml"
printf '%s\n' "$all_crawlers" >> "$work/all.yaml"
gateway pipeline 18940 18942 false "$all_proxy" "$all_site
$hit" > "$work/pipeline.yaml"
printf '%s\n' "$all_crawlers" >> "$work/pipeline.yaml"
gateway off 18950 18952 true "" "" > "$work/off.yaml"
gateway never 18960 18962 true "" "$never" > "$work/never.yaml"
pids=()
bench_gateways "$work" all pipeline off never
trap 'kill ${pids[*]} 2>/dev/null || true; for c in nginx nginx-proxy; do nginx -c "$work/$c.conf" -s stop 2>/dev/null || true; done' EXIT
bench_wait_store 100 18920 18940 18950 18960
sleep 2   # the feeds

run() { # LABEL URL CONNECTIONS: requests/s, p50, p99 and the share of 429s
  local out reqs non2xx
  out=$(wrk -t"$(( $3 < 2 ? 1 : 2 ))" -c"$3" -d"${secs}s" --latency -s scripts/mix.lua "$2")
  reqs=$(awk '/requests in/ {print $1}' <<<"$out")
  non2xx=$(awk '/Non-2xx/ {print $5}' <<<"$out")
  printf '%-62s %10s req/s  p50 %8s  p99 %8s  non-2xx %s of %s\n' "$1 ($3 conn)" \
    "$(awk '/Requests\/sec/ {print $2}' <<<"$out")" "$(awk '$1 == "50%" {print $2}' <<<"$out")" \
    "$(awk '$1 == "99%" {print $2}' <<<"$out")" "${non2xx:-0}" "$reqs"
}
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
echo "wrk ${secs}s per line; gateways and nginx: 1 worker; mix: 80% browsers, 20% crawlers (scripts/mix.lua)"
echo "budgets hit: bingbot and spoofed claims (GPTBot) at 50/s, burst 20; nginx: limit_req 50r/s burst=20 nodelay on a map of the User-Agent"
for c in 1 64; do
  run "nginx, limit_req on a map of the User-Agent" http://127.0.0.1:18903/ "$c"
  run "gateway everything on, budgets hit, own path" http://127.0.0.1:18920/ "$c"
  run "gateway everything on, budgets hit, pipeline" http://127.0.0.1:18940/ "$c"
done
for c in 1 64; do
  for _ in $(seq 1 "$rounds"); do
    run "own path, no budgets" http://127.0.0.1:18950/ "$c"
    run "own path, budgets configured, never hit" http://127.0.0.1:18960/ "$c"
  done
done
for port in 18922 18942; do
  curl -s -H 'Authorization: Bearer bench' "http://127.0.0.1:$port/status" | grep -o '"throttled":[0-9]*' | head -1
done
