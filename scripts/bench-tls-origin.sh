#!/usr/bin/env bash
# A site whose origin speaks TLS (`origin_tls`, as behind a CDN or a load
# balancer), in one run: nginx as a reverse proxy to that origin over TLS
# (keep-alive, session reuse, verifying with the same CA), the gateway's
# own path, and the gateway with the own path off (Pingora's pipeline,
# which carried every such request before #50). Plain HTTP from wrk to each
# proxy, at 1 and 64 connections, one worker thread each, ROUNDS times in
# turn. The origin is nginx terminating TLS 1.3 for shop.test with a
# private CA's certificate.
# Installs nginx and wrk from Debian if missing.
#   scripts/bench-tls-origin.sh [SECONDS=10] [ROUNDS=2]
# PROXY_BIN runs another build of robots-proxy instead of building.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
rounds=${2:-2}
source scripts/setup.sh
source scripts/bench-common.sh
bench_ports_free 18960 18961 18962 18963 18970 18972 18980 18982
bench_install nginx-light wrk openssl
bench_proxy_bin

work=$(mktemp -d /tmp/robots-tls-origin-bench.XXXXXX)
cd "$work"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=bench-ca \
  -keyout ca.key -out ca.pem 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=shop.test \
  -keyout key.pem -out req.pem 2>/dev/null
printf 'subjectAltName=DNS:shop.test\n' > ext.cnf
openssl x509 -req -in req.pem -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile ext.cnf -out cert.pem 2>/dev/null
chmod 644 ./*.pem
cd - > /dev/null
bench_origin "$work" 18961 "listen 127.0.0.1:18963 ssl; ssl_certificate $work/cert.pem; ssl_certificate_key $work/key.pem; ssl_protocols TLSv1.3; try_files \$uri /page.html;"
printf 'User-agent: *\nDisallow: /cart\n' > "$work/www/robots.txt"
nginx -c "$work/nginx.conf"
{
  bench_peer_http "$work" 1 18963
  cat <<CONF
  server {
    listen 127.0.0.1:18962;
    location / {
      proxy_pass https://origin;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host \$host;
      proxy_ssl_server_name on;
      proxy_ssl_name shop.test;
      proxy_ssl_verify on;
      proxy_ssl_trusted_certificate $work/ca.pem;
      proxy_ssl_session_reuse on;
      proxy_ssl_protocols TLSv1.3;
    }
  }
}
CONF
} > "$work/nginx-proxy.conf"
nginx -c "$work/nginx-proxy.conf"
gateway() { # PORT ADMIN FAST
  cat <<CONF
proxy:
  listen: ["127.0.0.1:$1"]
  admin: 127.0.0.1:$2
  state_dir: $work/state-$1
  refresh: 1h
  threads: 1
  fast_path: $3
  origin_ca_file: $work/ca.pem
sites:
  - name: shop
    proxy:
      hosts: [shop.test]
      origin: 127.0.0.1:18963
      origin_tls: true
      sni: shop.test
CONF
}
gateway 18970 18972 true > "$work/fast.yaml"
gateway 18980 18982 false > "$work/pipeline.yaml"
pids=()
bench_gateways "$work" fast pipeline
trap 'kill ${pids[*]} 2>/dev/null || true; for c in nginx nginx-proxy; do nginx -c "$work/$c.conf" -s stop 2>/dev/null || true; done' EXIT
bench_wait_store 100 18970 18980
for p in 18962 18970 18980; do
  curl -sf -H 'Host: shop.test' "http://127.0.0.1:$p/page.html" > /dev/null || { echo "port $p does not proxy"; exit 1; }
done

run() { # LABEL PORT CONNECTIONS
  local out
  out=$(wrk -t"$(( $3 < 2 ? 1 : 2 ))" -c"$3" -d"${secs}s" --latency -H 'Host: shop.test' "http://127.0.0.1:$2/page.html")
  printf '%-34s %3s conns: %10s req/s, p50 %s, p99 %s\n' "$1" "$3" \
    "$(awk '/Requests\/sec/ {print $2}' <<<"$out")" "$(awk '$1=="50%" {print $2}' <<<"$out")" "$(awk '$1=="99%" {print $2}' <<<"$out")"
}
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
echo "wrk ${secs}s per line; one worker thread each; origin: nginx, TLS 1.3"
for r in $(seq 1 "$rounds"); do
  for c in 1 64; do
    run "nginx, proxy_pass https" 18962 "$c"
    run "gateway own path" 18970 "$c"
    run "gateway pipeline (fast_path: false)" 18980 "$c"
  done
done
