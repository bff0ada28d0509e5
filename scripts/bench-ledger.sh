#!/usr/bin/env bash
# What the compliance ledger and its journal cost the gateway's hot path:
# the same build of robots-proxy with everything else on (enforce, an AI
# policy, identity from IP-range feeds on loopback), three ways in one run:
#   - ledger off;
#   - ledger on, no journal (`journal_mib: 0`), writing to SQLite every 10 s;
#   - ledger on with its journal (the default), the same.
# On the own path, at 1 and 64 connections, with crawler User-Agents in
# the mix (scripts/mix.lua: 80% browsers, 20% crawlers), over pages some
# of which the robots.txt disallows. The origin is nginx on loopback. The
# three take turns, ROUNDS times, so drift on the machine falls on all
# alike. Where perf can count them, the gateway's system calls and CPU
# time per request are printed too (the journal must add no system call;
# CPU time per request is steadier than requests per second on a shared
# machine).
# Installs nginx and wrk from Debian if missing.
#   scripts/bench-ledger.sh [SECONDS=10] [ROUNDS=2]
# PROXY_BIN runs another build of robots-proxy instead of building.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
rounds=${2:-2}
source scripts/setup.sh
source scripts/bench-common.sh
bench_ports_free 18700 18701 18702 18710 18712 18720 18722
bench_install nginx-light wrk sqlite3
bench_proxy_bin

work=$(mktemp -d /tmp/robots-ledger-bench.XXXXXX)
bench_origin "$work" 18701 'try_files $uri /page.html;'
mkdir -p "$work/www/shop"
chmod 755 "$work/www/shop"
printf 'User-agent: *\nDisallow: /cart\nDisallow: /search\n\nUser-agent: GPTBot\nDisallow: /\n\nUser-agent: Googlebot\nDisallow: /private\n' > "$work/www/robots.txt"
printf '{"creationTime":"2026-11-24T00:00:00.000000","prefixes":[{"ipv4Prefix":"127.0.0.1/32"}]}' > "$work/www/googlebot.json"
printf '{"creationTime":"2026-11-24T00:00:00.000000","prefixes":[{"ipv4Prefix":"10.0.0.0/8"}]}' > "$work/www/gptbot.json"
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
  identity:
    refresh: 1h
    reverse_dns: false
$3
sites:
  - name: shop
    proxy:
      hosts: [shop.test]
      origin: 127.0.0.1:18701
      enforce: true
      spoofed: tag
      ai_policy: { ai-training: deny, enforce: refuse }
crawlers:
  - { token: Googlebot, operator: Google, purpose: search, obeys: true, source: bench,
      verify: { ip_ranges: ["http://127.0.0.1:18701/googlebot.json"] } }
  - { token: GPTBot, operator: OpenAI, purpose: ai-training, obeys: true, source: bench,
      verify: { ip_ranges: ["http://127.0.0.1:18701/gptbot.json"] } }
CONF
}
gateway 18700 18702 "" > "$work/off.yaml"
gateway 18710 18712 "  ledger: { flush: 10s, journal_mib: 0 }" > "$work/bare.yaml"
gateway 18720 18722 "  ledger: { flush: 10s }" > "$work/journal.yaml"
pids=()
bench_gateways "$work" off bare journal
trap 'kill ${pids[*]} 2>/dev/null || true; nginx -c "$work/nginx.conf" -s stop 2>/dev/null || true' EXIT
bench_wait_store 100 18700 18710 18720
sleep 2   # the feeds

syscalls=
perf stat -e raw_syscalls:sys_enter -x, -- true 2>&1 | grep -q '^[0-9]' && syscalls=1
# The request mix: scripts/mix.lua.
run() { # LABEL PORT CONNECTIONS PID
  local out calls="" perf_pid=
  rm -f "$work/perf.txt"
  if [ -n "$syscalls" ]; then
    perf stat -e raw_syscalls:sys_enter,task-clock -x, -p "$4" -o "$work/perf.txt" -- sleep "$secs" &
    perf_pid=$!
  fi
  out=$(wrk -t"$(( $3 < 2 ? 1 : 2 ))" -c"$3" -d"${secs}s" --latency -s scripts/mix.lua "http://127.0.0.1:$2/" )
  [ -z "$perf_pid" ] || wait "$perf_pid"
  local reqs
  reqs=$(awk '/requests in/ {print $1}' <<<"$out")
  if [ -n "$syscalls" ] && [ -s "$work/perf.txt" ]; then
    calls=$(awk -F, -v n="$reqs" '/raw_syscalls/ {printf ", %.2f syscalls/req", $1 / n} /task-clock/ {printf ", %.1f us CPU/req", $1 * 1000 / n}' "$work/perf.txt")
  fi
  printf '%-22s %3s conns: %s req/s, p50 %s, p99 %s%s\n' "$1" "$3" \
    "$(awk '/Requests\/sec/ {print $2}' <<<"$out")" "$(awk '$1=="50%" {print $2}' <<<"$out")" \
    "$(awk '$1=="99%" {print $2}' <<<"$out")" "$calls"
}
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
echo "wrk ${secs}s per line; gateway: 1 worker thread, own path, everything on; mix: 80% browsers, 20% crawlers"
for r in $(seq 1 "$rounds"); do
  for c in 1 64; do
    run "ledger off" 18700 "$c" "${pids[0]}"
    run "ledger, no journal" 18710 "$c" "${pids[1]}"
    run "ledger and journal" 18720 "$c" "${pids[2]}"
  done
done
sleep 11   # one flush
for p in 18710 18720; do
  echo "ledger rows written ($p): $(sqlite3 "$work/ledger-$p.db" 'SELECT COUNT(*), SUM(requests) FROM ledger')"
  curl -s -H 'Authorization: Bearer bench' "http://127.0.0.1:$((p + 2))/status" | grep -o '"ledger":{[^}]*}' || true
done
du -h --apparent-size "$work"/state-18720/ledger/*.journal | sed 's/^/journal file (apparent): /'
du -h "$work"/state-18720/ledger/*.journal | sed 's/^/journal file (on disk): /'
