#!/usr/bin/env bash
# The gateway as deployed, against nginx, in one run (issue #34, part 1):
#   - plain: no crawler logic, a proxied page (as scripts/bench-proxy.sh);
#   - everything on: enforce, an AI policy, identity from IP-range feeds on
#     loopback (Googlebot verified, GPTBot spoofed, bingbot unverifiable,
#     ClaudeBot refused by the AI policy), the compliance ledger, and a
#     mix of 80% browser and 20% crawler User-Agents;
#   - over TLS 1.3: HTTP/1.1 (wrk) and HTTP/2 (h2load), against nginx
#     terminating TLS with the same certificate and proxying to the same
#     origin;
#   - at 1 and 64 connections, on the own path and on Pingora's pipeline;
#   - with THREADS worker threads for the gateway and nginx alike.
# And, where perf can count them on this machine, instructions per request.
# Installs nginx, wrk and nghttp2-client (h2load) from Debian if missing.
#   scripts/bench-deployed.sh [SECONDS=10] [THREADS=1]
#   CALLGRIND=1 scripts/bench-deployed.sh 5   # instructions per request only
#   CONNS=64 scripts/bench-deployed.sh        # only the 64-connection lines
#   NICE=-5 scripts/bench-deployed.sh         # nginx's workers and the gateways
#                                             # at nice -5 alike (as root)
# With CALLGRIND=1 the gateways and nginx (one process, no master) run under
# valgrind's callgrind, which counts every instruction of the process
# whatever the machine's counters; the counts are zeroed before each line
# and dumped after it, and only instructions per request are printed (the
# rates under valgrind mean nothing). Deterministic: the same build and
# requests give the same counts within a percent.
# PROXY_BIN runs another build of robots-proxy instead of building.
# BASE_BIN runs an earlier build beside it, everything on (TLS on port
# 18870), measured after the gateway on each line it serves over TLS.
#   LINES=h2 ROUNDS=4 BASE_BIN=… scripts/bench-deployed.sh 8 1
# repeats the HTTP/2 lines four times: nginx, this build and the earlier
# one take turns, so the machine's drift falls on all three alike.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
threads=${2:-1}
source scripts/setup.sh
source scripts/bench-common.sh
bench_ports_free 18800 18801 18802 18803 18810 18813 18820 18822 18830 18840 18842 18850 \
  ${BASE_BIN:+18860 18862 18870}
callgrind=${CALLGRIND:-}
bench_install nginx-light wrk nghttp2-client openssl ${callgrind:+valgrind}
bench_proxy_bin

work=$(mktemp -d /tmp/robots-deployed-bench.XXXXXX)
# The origin, and nginx as the peer: a reverse proxy on plain HTTP and one
# terminating TLS (HTTP/1.1 and HTTP/2), with the gateway's worker count.
bench_origin "$work" 18801 'try_files $uri /page.html;'
printf 'User-agent: *\nDisallow: /cart\nDisallow: /search\n\nUser-agent: Googlebot\nDisallow: /private\n' > "$work/www/robots.txt"
printf '{"creationTime":"2026-11-24T00:00:00.000000","prefixes":[{"ipv4Prefix":"127.0.0.1/32"}]}' > "$work/www/googlebot.json"
printf '{"creationTime":"2026-11-24T00:00:00.000000","prefixes":[{"ipv4Prefix":"10.0.0.0/8"}]}' > "$work/www/gptbot.json"
bench_cert "$work"
# Under callgrind, nginx runs as one process in the foreground, so that
# valgrind's process is the one that serves.
{
  [ -z "$callgrind" ] || echo 'daemon off; master_process off;'
  bench_peer_http "$work" "$threads" 18801
  cat <<CONF
  server {
    listen 127.0.0.1:18803;
    listen 127.0.0.1:18813 ssl http2;
    ssl_certificate $work/cert.pem;
    ssl_certificate_key $work/key.pem;
    ssl_protocols TLSv1.3;
$(bench_proxy_location)
  }
}
CONF
} > "$work/nginx-proxy.conf"
nginx -c "$work/nginx.conf"
if [ -n "$callgrind" ]; then
  valgrind --tool=callgrind --callgrind-out-file="$work/callgrind.nginx.%p" \
    nginx -c "$work/nginx-proxy.conf" 2> "$work/nginx-valgrind.log" &
  nginx_vg=$!
else
  nginx -c "$work/nginx-proxy.conf"
fi

gateway() { # NAME PORT TLS-PORT ADMIN FAST EXTRA
  bench_gateway_proxy "$work" "$1" "$2" "$3" "$4" "$5" "$threads"
  cat <<CONF
$6
sites:
  - name: shop
    proxy:
      hosts: [shop.test]
      origin: 127.0.0.1:18801
$7
CONF
}
bench_everything_on 18801
gateway plain 18800 18810 18802 true "" "" > "$work/plain.yaml"
gateway all 18820 18830 18822 true "$all_proxy" "$all_site" > "$work/all.yaml"
printf '%s\n' "$all_crawlers" >> "$work/all.yaml"
gateway pipeline 18840 18850 18842 false "$all_proxy" "$all_site" > "$work/pipeline.yaml"
printf '%s\n' "$all_crawlers" >> "$work/pipeline.yaml"
if [ -n "${BASE_BIN:-}" ]; then
  gateway base 18860 18870 18862 true "$all_proxy" "$all_site" > "$work/base.yaml"
  printf '%s\n' "$all_crawlers" >> "$work/base.yaml"
fi
pids=()
for g in plain all pipeline; do
  ROBOTSGATE_LOG=warn ${callgrind:+valgrind --tool=callgrind --callgrind-out-file=$work/callgrind.$g.%p} \
    "$bin" --config "$work/$g.yaml" > /dev/null 2> "$work/$g.log" &
  pids+=($!)
done
if [ -n "${BASE_BIN:-}" ]; then
  ROBOTSGATE_LOG=warn "$BASE_BIN" --config "$work/base.yaml" > /dev/null 2> "$work/base.log" &
  pids+=($!)
fi
trap 'kill ${pids[*]} ${nginx_vg:-} 2>/dev/null || true; for c in nginx nginx-proxy; do nginx -c "$work/$c.conf" -s stop 2>/dev/null || true; done' EXIT
# Under valgrind a gateway starts tens of times slower.
bench_wait_store "${callgrind:+1000}${callgrind:-100}" 18800 18820 18840 ${BASE_BIN:+18860}
sleep 2   # the feeds

# The request mix (scripts/mix.lua): 80% browsers, 20% crawlers (verified,
# spoofed, unverifiable, refused).
# What perf can count here: instructions where the machine has counters;
# CPU time, syscalls and context switches (software events and a
# tracepoint) nearly everywhere. Each is divided by the line's requests.
perf_ok=
perf stat -e instructions -x, -- true 2>&1 | grep -q '^[0-9]' && perf_ok=1
perf_events=${perf_ok:+instructions,}task-clock,context-switches
perf stat -e raw_syscalls:sys_enter -x, -- true 2>&1 | grep -q '^[0-9]' && perf_events+=,raw_syscalls:sys_enter
perf stat -e "$perf_events" -x, -- true > /dev/null 2>&1 || perf_events=
# LABEL URL CONNECTIONS PID: instructions per request under callgrind.
callgrind_run() {
  local out reqs ins
  callgrind_control -z "$4" > /dev/null 2>&1
  if [ "${5:-}" = h2 ]; then
    out=$(h2load -c"$3" -m1 -D"$secs" -t1 -H ':authority: shop.test' "$2" 2>&1)
    reqs=$(awk '/^requests:/ {print $8}' <<<"$out")
  else
    out=$(wrk -t1 -c"$3" -d"${secs}s" -s scripts/mix.lua "$2")
    reqs=$(awk '/requests in/ {print $1}' <<<"$out")
  fi
  callgrind_control -d "$4" > /dev/null 2>&1
  sleep 1
  # The newest dump is this line's; each is kept for callgrind_annotate
  # (with PROXY_BIN=target/profiling/robots-proxy, which has symbols).
  local dump
  dump=$(ls -t "$work"/callgrind.*."$4".[0-9]* 2>/dev/null | head -1)
  ins=$(awk '/^(summary|totals):/ && !n++ {print $2}' "$dump" 2>/dev/null || true)
  [ -z "$dump" ] || ln -sf "$dump" "$work/dump-$(printf '%s-c%s' "$1" "$3" | tr -c 'a-zA-Z0-9' - | tr -s -)"
  printf '%-44s %3s conns: %8s requests, %8s instructions/request\n' "$1" "$3" "$reqs" \
    "$( [ -n "$ins" ] && [ "${reqs:-0}" -gt 0 ] && echo $(( ins / reqs )) || echo '?')"
}
if [ -n "$callgrind" ]; then
  sleep 5
  echo "instructions per request (callgrind; ${secs}s per line, wrk -t1, the request mix)"
  echo "dumps: $work"
  for c in 1 16; do
    if [ "${LINES:-}" = h2 ]; then
      callgrind_run "nginx, TLS 1.3, HTTP/2" https://127.0.0.1:18813/page.html "$c" "$nginx_vg" h2
      callgrind_run "gateway everything on, TLS 1.3, HTTP/2" https://127.0.0.1:18830/page.html "$c" "${pids[1]}" h2
      continue
    fi
    callgrind_run "nginx as reverse proxy, HTTP" http://127.0.0.1:18803/ "$c" "$nginx_vg"
    callgrind_run "gateway plain, own path, HTTP" http://127.0.0.1:18800/ "$c" "${pids[0]}"
    callgrind_run "gateway everything on, own path, HTTP" http://127.0.0.1:18820/ "$c" "${pids[1]}"
    callgrind_run "gateway everything on, pipeline, HTTP" http://127.0.0.1:18840/ "$c" "${pids[2]}"
    callgrind_run "nginx, TLS 1.3, HTTP/1.1" https://127.0.0.1:18813/ "$c" "$nginx_vg"
    callgrind_run "gateway everything on, TLS 1.3, HTTP/1.1" https://127.0.0.1:18830/ "$c" "${pids[1]}"
    callgrind_run "nginx, TLS 1.3, HTTP/2" https://127.0.0.1:18813/page.html "$c" "$nginx_vg" h2
    callgrind_run "gateway everything on, TLS 1.3, HTTP/2" https://127.0.0.1:18830/page.html "$c" "${pids[1]}" h2
  done
  exit 0
fi
# LABEL URL CONNECTIONS [PID to count instructions of]
wrk_run() {
  local out per="" count=()
  if [ -n "$perf_events" ] && [ -n "${4:-}" ]; then
    perf stat -e "$perf_events" -x, -p "$4" -o "$work/perf.txt" -- sleep "$secs" &
    local perf_pid=$!
    # The origin and wrk share the machine: their CPU time per request
    # says whether a gap lies in the proxy or around it.
    perf stat -e task-clock -x, -p "$origin_pid" -o "$work/perf-origin.txt" -- sleep "$secs" &
    local origin_perf=$!
    count=(perf stat -e task-clock -x, -o "$work/perf-wrk.txt" --)
  fi
  out=$("${count[@]}" wrk -t"$(( $3 < 2 ? 1 : 2 ))" -c"$3" -d"${secs}s" --latency -s scripts/mix.lua "$2")
  [ -z "${origin_perf:-}" ] || wait "$origin_perf" || true
  if [ -n "${perf_pid:-}" ]; then
    wait "$perf_pid" || true
    local reqs
    reqs=$(awk '/requests in/ {print $1}' <<<"$out")
    # CSV: value,unit,event,...; task-clock is in milliseconds.
    [ -n "$reqs" ] && per=$(awk -F, -v r="$reqs" '
      $3 == "instructions" { printf " %d instr", $1 / r }
      $3 == "task-clock" { printf " %.1fus CPU", $1 * 1000 / r }
      $3 == "raw_syscalls:sys_enter" { printf " %.2f syscalls", $1 / r }
      $3 == "context-switches" { printf " %.2f cs", $1 / r }' "$work/perf.txt")
    per+=$(awk -F, -v r="$reqs" '$3 == "task-clock" { printf "; origin %.1fus", $1 * 1000 / r }' "$work/perf-origin.txt")
    per+=$(awk -F, -v r="$reqs" '$3 == "task-clock" { printf ", wrk %.1fus", $1 * 1000 / r }' "$work/perf-wrk.txt")
  fi
  printf '%-44s %3s conns: %10s req/s, p50 %8s, p99 %8s%s\n' "$1" "$3" \
    "$(awk '/Requests\/sec/ {print $2}' <<<"$out")" "$(awk '$1=="50%" {print $2}' <<<"$out")" \
    "$(awk '$1=="99%" {print $2}' <<<"$out")" "${per:+; per request:$per}"
}
h2_run() { # LABEL URL CONNECTIONS [STREAMS per connection, 1] [PID to count]
  local out m=${4:-1} per=""
  if [ -n "$perf_events" ] && [ -n "${5:-}" ]; then
    perf stat -e "$perf_events" -x, -p "$5" -o "$work/perf.txt" -- sleep "$secs" &
    local perf_pid=$!
  fi
  # HTTP/2 names the host in :authority; a Host field that differs from it
  # is refused by the gateway (RFC 9113 section 8.3.1).
  out=$(h2load -c"$3" -m"$m" -D"$secs" -t"$(( $3 < 2 ? 1 : 2 ))" -H ':authority: shop.test' \
    -H 'User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0' "$2" 2>&1)
  if [ -n "${perf_pid:-}" ]; then
    wait "$perf_pid" || true
    local reqs
    reqs=$(awk '/^requests:/ {print $8}' <<<"$out")
    [ -n "$reqs" ] && [ "$reqs" -gt 0 ] && per=$(awk -F, -v r="$reqs" '
      $3 == "instructions" { printf " %d instr", $1 / r }
      $3 == "task-clock" { printf " %.1fus CPU", $1 * 1000 / r }
      $3 == "raw_syscalls:sys_enter" { printf " %.2f syscalls", $1 / r }
      $3 == "context-switches" { printf " %.2f cs", $1 / r }' "$work/perf.txt")
  fi
  printf '%-44s %3s conns: %10s req/s, mean %8s, %s failed%s\n' "$1" "$3${4:+x$4}" \
    "$(awk '/^finished in/ {print $4}' <<<"$out")" "$(awk '/^time for request:/ {print $6}' <<<"$out")" \
    "$(awk '/^requests:/ {print $10}' <<<"$out")" "${per:+; per request:$per}"
}
# nginx serves from its workers; perf counts the processes it is given.
nginx_pid=$(pgrep -d, -P "$(cat "$work/nginx-proxy.pid")")
# With NICE, the proxies under test (nginx's workers and every thread of
# each gateway), not wrk or the origin, run at that nice value: on a
# machine shared with the load, the scheduler's preemption of the proxy
# is then out of the comparison (docs/BENCHMARKS.md, "Who gets the CPU").
if [ -n "${NICE:-}" ]; then
  for p in ${nginx_pid//,/ } "${pids[@]}"; do
    for t in /proc/"$p"/task/*; do renice -n "$NICE" -p "${t##*/}" > /dev/null; done
  done
fi
origin_pid=$(pgrep -d, -P "$(cat "$work/nginx.pid")")
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
echo "${secs}s per line; gateway and nginx: $threads worker(s); mix: 80% browsers, 20% crawlers; perf: ${perf_events:-unavailable}${NICE:+; proxies at nice $NICE}"
for c in ${CONNS:-1 64}; do
  [ "${LINES:-}" != h2 ] || break
  wrk_run "nginx as reverse proxy, HTTP" http://127.0.0.1:18803/ "$c" "$nginx_pid"
  wrk_run "gateway plain, own path, HTTP" http://127.0.0.1:18800/ "$c" "${pids[0]}"
  wrk_run "gateway everything on, own path, HTTP" http://127.0.0.1:18820/ "$c" "${pids[1]}"
  wrk_run "gateway everything on, pipeline, HTTP" http://127.0.0.1:18840/ "$c" "${pids[2]}"
  wrk_run "nginx, TLS 1.3, HTTP/1.1" https://127.0.0.1:18813/ "$c" "$nginx_pid"
  wrk_run "gateway everything on, TLS 1.3, HTTP/1.1" https://127.0.0.1:18830/ "$c" "${pids[1]}"
  [ -z "${BASE_BIN:-}" ] || wrk_run "earlier build, everything on, TLS 1.3, HTTP/1.1" https://127.0.0.1:18870/ "$c" "${pids[3]}"
  h2_run "nginx, TLS 1.3, HTTP/2" https://127.0.0.1:18813/page.html "$c"
  h2_run "gateway everything on, TLS 1.3, HTTP/2" https://127.0.0.1:18830/page.html "$c"
  [ -z "${BASE_BIN:-}" ] || h2_run "earlier build, everything on, TLS 1.3, HTTP/2" https://127.0.0.1:18870/page.html "$c"
done
# HTTP/2 as browsers use it: 1 connection with 1 stream, then 16
# connections with 4 streams each; the pipeline's HTTP/2 beside them.
# LINES=h2 runs only these.
for _ in $(seq 1 "${ROUNDS:-1}"); do
  for cm in "1 1" "16 4"; do
    read -r c m <<<"$cm"
    h2_run "nginx, TLS 1.3, HTTP/2" https://127.0.0.1:18813/page.html "$c" "$m" "$nginx_pid"
    h2_run "gateway everything on, TLS 1.3, HTTP/2" https://127.0.0.1:18830/page.html "$c" "$m" "${pids[1]}"
    [ -z "${BASE_BIN:-}" ] ||
      h2_run "earlier build, everything on, TLS 1.3, HTTP/2" https://127.0.0.1:18870/page.html "$c" "$m" "${pids[3]}"
    h2_run "gateway everything on, pipeline, HTTP/2" https://127.0.0.1:18850/page.html "$c" "$m" "${pids[2]}"
  done
done
curl -s -H 'Authorization: Bearer bench' http://127.0.0.1:18822/status | grep -o '"ledger":{[^}]*}' || true
# Peak resident memory of each gateway over the run (and nginx's workers').
names=(plain "everything on" pipeline "earlier build")
for i in "${!pids[@]}"; do
  printf 'peak RSS, %s: %s\n' "${names[$i]}" "$(awk '/^VmHWM/ {print $2, $3}' "/proc/${pids[$i]}/status" 2>/dev/null)"
done
for p in ${nginx_pid//,/ }; do
  printf 'peak RSS, nginx worker: %s\n' "$(awk '/^VmHWM/ {print $2, $3}' "/proc/$p/status" 2>/dev/null)"
done
