#!/usr/bin/env bash
# Load benchmark for robots-proxy with wrk, on loopback, against nginx in
# the same run:
#   1. /robots.txt from the proxy's store vs nginx serving the same static file;
#   2. a proxied page (proxy -> nginx origin) vs nginx directly, p50 and p99,
#      with nginx itself as a reverse proxy (upstream keep-alive) as the peer:
#      what any proxy hop costs on this machine.
# Installs nginx and wrk from Debian if missing.
#   scripts/bench-proxy.sh [SECONDS=15] [CONNECTIONS=64]
# PROXY_THREADS sets the proxy's worker threads (default 1); PROXY_BIN runs
# another build of robots-proxy (for A/B comparisons) instead of building.
# PIN=N runs every process (wrk, nginx, both proxies) on CPU N alone, which
# takes this VM's cross-core wake-ups out of the latency figures.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-15}
conns=${2:-64}
source scripts/setup.sh
source scripts/bench-common.sh
bench_install nginx-light wrk
bench_proxy_bin

work=$(mktemp -d /tmp/robots-proxy-bench.XXXXXX)
bench_origin "$work" 18601
printf 'User-agent: *\nDisallow: /admin/\nDisallow: /cart\nAllow: /admin/help\n\nSitemap: https://shop.test/sitemap.xml\n' > "$work/www/robots.txt"
# The peer proxy is a separate nginx, as robots-proxy is a separate process:
# one nginx worker proxying to itself would skip the wake-ups a real hop costs.
{
  bench_peer_http "$work" 1 18601
  cat <<CONF
  server {
    listen 127.0.0.1:18603;
$(bench_proxy_location)
  }
}
CONF
} > "$work/nginx-proxy.conf"
pin=(); [ -n "${PIN:-}" ] && pin=(taskset -c "$PIN")
"${pin[@]}" nginx -c "$work/nginx.conf"
"${pin[@]}" nginx -c "$work/nginx-proxy.conf"
cat > "$work/config.yaml" <<CONF
proxy:
  listen: ["127.0.0.1:18600"]
  admin: 127.0.0.1:18602
  state_dir: $work/state
  refresh: 1h
  threads: ${PROXY_THREADS:-1}
sites:
  - name: shop
    proxy:
      hosts: [shop.test]
      origin: 127.0.0.1:18601
CONF
# The same gateway with its own path off: every request through Pingora's
# pipeline, for comparison in the same run.
sed -e 's/127.0.0.1:18600/127.0.0.1:18604/' -e 's/127.0.0.1:18602/127.0.0.1:18605/' \
  -e "s#state_dir: .*#state_dir: $work/state-pipeline#" -e 's/^  threads:/  fast_path: false\n  threads:/' \
  "$work/config.yaml" > "$work/config-pipeline.yaml"
ROBOTSGATE_LOG=warn "${pin[@]}" "$bin" --config "$work/config.yaml" > /dev/null 2> "$work/proxy.log" &
proxy=$!
ROBOTSGATE_LOG=warn "${pin[@]}" "$bin" --config "$work/config-pipeline.yaml" > /dev/null 2> "$work/pipeline.log" &
pipeline=$!
trap 'kill $proxy $pipeline 2>/dev/null || true; for c in nginx nginx-proxy; do nginx -c "$work/$c.conf" -s stop 2>/dev/null || true; done' EXIT
# Wait until robots.txt comes from the store, not passed through.
bench_wait_store 100 18600 18604
for port in 18600 18604; do
  curl -si -H 'Host: shop.test' http://127.0.0.1:$port/robots.txt | grep -i '^x-robots-source'
done

run() { echo "== $1 ($3 connections)"; "${pin[@]}" wrk -t"$(( $3 < 2 ? 1 : 2 ))" -c"$3" -d"${secs}s" --latency -H 'Host: shop.test' "$2" | grep -E 'Requests/sec|^ +(50|99)%'; }
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
echo "wrk: 2 threads, ${secs}s each; nginx: 1 worker; proxy: ${PROXY_THREADS:-1} worker thread(s)"
run "nginx: /robots.txt (static file)" http://127.0.0.1:18601/robots.txt "$conns"
run "robots-proxy: /robots.txt (from the store)" http://127.0.0.1:18600/robots.txt "$conns"
run "robots-proxy, pipeline only: /robots.txt (from the store)" http://127.0.0.1:18604/robots.txt "$conns"
for c in 1 "$conns"; do
  run "nginx: /page.html directly" http://127.0.0.1:18601/page.html "$c"
  run "robots-proxy: /page.html proxied to nginx" http://127.0.0.1:18600/page.html "$c"
  run "robots-proxy, pipeline only: /page.html proxied to nginx" http://127.0.0.1:18604/page.html "$c"
  run "nginx as reverse proxy: /page.html proxied to nginx" http://127.0.0.1:18603/page.html "$c"
done
