#!/usr/bin/env bash
# The requests the gateway used to hand to Pingora's pipeline, with nginx
# in the same run: a 1 KiB POST with a Content-Length and the same body
# chunked, and an HTTP/1.0 GET (one request a connection), through the
# gateway's own path, through Pingora's pipeline (the same build with
# `fast_path: false`, where they went before), through nginx as a reverse
# proxy, and to the nginx origin directly. Prints req/s, latency and the
# serving process's CPU a request (`perf stat` task-clock).
#   scripts/bench-handover.sh [SECONDS=10] [ROUNDS=2]
# CONNS sets the connection counts (default "1 64"); PROXY_BIN runs
# another build; BASE_BIN adds an earlier build's gateway (own path).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
rounds=${2:-2}
source scripts/setup.sh
source scripts/bench-common.sh
bench_install nginx-light wrk linux-perf
bench_proxy_bin
bench_ports_free 18920 18921 18922 18923 18924 18925 18926 18927 18928

work=$(mktemp -d /tmp/robots-uploads-bench.XXXXXX)
# The origin answers every POST without a file: `return` reads and drops
# the body, chunked or not, as an application would after taking it.
bench_origin "$work" 18920 'location / { return 200 "ok\n"; }'
{
  bench_peer_http "$work" 1 18920
  cat <<CONF
  server {
    listen 127.0.0.1:18921;
$(bench_proxy_location)
  }
}
CONF
} > "$work/nginx-proxy.conf"
nginx -c "$work/nginx.conf"
nginx -c "$work/nginx-proxy.conf"
gateway_yaml() { # NAME LISTEN ADMIN FAST
  cat <<CONF
proxy:
  listen: ["127.0.0.1:$2"]
  admin: 127.0.0.1:$3
  state_dir: $work/state-$1
  refresh: 1h
  threads: 1
  fast_path: $4
sites:
  - name: shop
    proxy:
      hosts: [shop.test]
      origin: 127.0.0.1:18920
CONF
}
gateway_yaml own 18922 18923 true > "$work/own.yaml"
gateway_yaml pipeline 18924 18925 false > "$work/pipeline.yaml"
names=(own pipeline)
pids=()
bench_gateways "$work" own pipeline
if [ -n "${BASE_BIN:-}" ]; then
  gateway_yaml base 18926 18927 true > "$work/base.yaml"
  ROBOTSGATE_LOG=warn "$BASE_BIN" --config "$work/base.yaml" > /dev/null 2> "$work/base.log" &
  pids+=($!)
  names+=(base)
fi
# The workers, not the masters, serve (one each).
nginx_pid=$(pgrep -P "$(cat "$work/nginx-proxy.pid")" | head -1)
origin_pid=$(pgrep -P "$(cat "$work/nginx.pid")" | head -1)
cleanup() {
  kill "${pids[@]}" 2> /dev/null || true
  nginx -c "$work/nginx.conf" -s stop 2> /dev/null || true
  nginx -c "$work/nginx-proxy.conf" -s stop 2> /dev/null || true
}
trap cleanup EXIT
sleep 1

body=$(head -c 1024 /dev/zero | tr '\0' 'u')
# wrk adds a Content-Length to any body it formats, so the chunked request
# is written whole.
cat > "$work/length.lua" <<LUA
local r = "POST /upload HTTP/1.1\r\nHost: shop.test\r\nContent-Length: 1024\r\n\r\n$body"
function request() return r end
LUA
cat > "$work/chunked.lua" <<LUA
local r = "POST /upload HTTP/1.1\r\nHost: shop.test\r\nTransfer-Encoding: chunked\r\n\r\n200\r\n" ..
  string.rep("u", 512) .. "\r\n200;part=2\r\n" .. string.rep("u", 512) .. "\r\n0\r\n\r\n"
function request() return r end
LUA
cat > "$work/http10.lua" <<'LUA'
local r = "GET /page HTTP/1.0\r\nHost: shop.test\r\n\r\n"
function request() return r end
LUA
for port in 18922 18924 ${BASE_BIN:+18926}; do
  curl -s -o /dev/null -w "check $port: %{http_code}\n" -H 'Host: shop.test' -H 'Transfer-Encoding: chunked' \
    --data-binary "$body" "http://127.0.0.1:$port/upload"
done

# LABEL PORT SCRIPT CONNECTIONS PID
run() {
  perf stat -e task-clock -x, -p "$5" -o "$work/perf.txt" -- sleep "$secs" &
  local perf_pid=$! out reqs cpu
  out=$(wrk -t"$(( $4 < 2 ? 1 : 2 ))" -c"$4" -d"${secs}s" --latency -s "$work/$3.lua" "http://127.0.0.1:$2/")
  wait "$perf_pid" || true
  reqs=$(awk '/requests in/ {print $1}' <<<"$out")
  cpu=$(awk -F, -v r="$reqs" '$3 == "task-clock" { printf "%.1f", $1 * 1000 / r }' "$work/perf.txt")
  if grep -q "Non-2xx" <<<"$out"; then echo "$1: non-2xx answers" >&2; grep Non-2xx <<<"$out" >&2; fi
  printf '%-44s %3s conns: %9s req/s, p50 %8s, p99 %8s, %s us CPU a request\n' "$1" "$4" \
    "$(awk '/Requests\/sec/ {print $2}' <<<"$out")" "$(awk '$1 == "50%" {print $2}' <<<"$out")" \
    "$(awk '$1 == "99%" {print $2}' <<<"$out")" "$cpu"
}
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
for round in $(seq 1 "$rounds"); do
  echo "round $round"
  for c in ${CONNS:-1 64}; do
    run "nginx origin, chunked" 18920 chunked "$c" "$origin_pid"
    run "nginx reverse proxy, chunked" 18921 chunked "$c" "$nginx_pid"
    run "gateway own path, Content-Length" 18922 length "$c" "${pids[0]}"
    run "gateway own path, chunked" 18922 chunked "$c" "${pids[0]}"
    run "gateway pipeline, Content-Length" 18924 length "$c" "${pids[1]}"
    run "gateway pipeline, chunked" 18924 chunked "$c" "${pids[1]}"
    [ -z "${BASE_BIN:-}" ] || run "earlier build (BASE_BIN), chunked" 18926 chunked "$c" "${pids[2]}"
    run "nginx origin, HTTP/1.0" 18920 http10 "$c" "$origin_pid"
    run "nginx reverse proxy, HTTP/1.0" 18921 http10 "$c" "$nginx_pid"
    run "gateway own path, HTTP/1.0" 18922 http10 "$c" "${pids[0]}"
    run "gateway pipeline, HTTP/1.0" 18924 http10 "$c" "${pids[1]}"
    [ -z "${BASE_BIN:-}" ] || run "earlier build (BASE_BIN), HTTP/1.0" 18926 http10 "$c" "${pids[2]}"
  done
done
