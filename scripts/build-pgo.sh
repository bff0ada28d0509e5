#!/usr/bin/env bash
# Builds the shipped robots-proxy with profile-guided optimisation: an
# instrumented release build serves a training load on loopback, and the
# final release build is laid out and inlined by what that load ran.
#   scripts/build-pgo.sh            # -> target/x86_64-unknown-linux-gnu/release/robots-proxy (or the host's triple)
#   OUT=/usr/local/bin scripts/build-pgo.sh   # also installs it there
#   TRAIN_SECS=2 scripts/build-pgo.sh         # seconds a training line (3)
#   PGO_PROFILE=dev TRAIN_SECS=1 scripts/build-pgo.sh   # the same steps on a
#       debug build, quickly: how scripts/test.sh checks this script works
#
# Why: a proxy's request touches a wide spread of code (TLS, HTTP/2 framing,
# Tokio, Pingora, the gateway's judgements) and, at one request at a time,
# finds most of it cold; PGO puts the hot paths together and inlines by
# measured counts. On HTTP/2 at one connection and one stream it took the
# gateway from nginx's rate to past it (docs/BENCHMARKS.md, "Profile-guided
# builds").
#
# The training load is its own, not the benchmark's: other paths, other
# User-Agents, other connection counts, robots.txt reads, HEAD, uploads
# (counted and chunked) and HTTP/1.0, over plain HTTP, TLS HTTP/1.1 and
# HTTP/2, on the own path and on Pingora's pipeline. Every address is on
# 127.0.0.1 (ports 18980 to 18995).
#
# Installs what it needs from Debian if missing (the build's cmake,
# pkg-config and libssl-dev; the training's nginx-light, wrk,
# nghttp2-client, openssl and curl) and rustup's llvm-tools, so it runs
# as it is in deploy/Containerfile's build stage too. Without rustup (or
# with NO_PGO=1) it builds the plain release binary and says so.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bench-common.sh
bench_install build-essential cmake pkg-config libssl-dev
# pingora's openssl feature links the system OpenSSL instead of building one.
export OPENSSL_NO_VENDOR=1
secs=${TRAIN_SECS:-3}
host=$(rustc -vV | awk '/^host:/ {print $2}')
# `--target` puts both builds under target/<host>/, apart from
# target/release, so the profile flags (RUSTFLAGS) never invalidate the
# workspace's ordinary builds; it also keeps build scripts and proc macros,
# built for the host, out of the instrumentation and shared with them.
target_dir=${CARGO_TARGET_DIR:-target}
profile=${PGO_PROFILE:-release}
final="$target_dir/$host/$([ "$profile" = dev ] && echo debug || echo "$profile")/robots-proxy"
build() { # RUSTFLAGS
  RUSTFLAGS="$1" cargo build --profile "$profile" --locked --target "$host" -p proxy --bin robots-proxy
}
install_out() {
  if [ -n "${OUT:-}" ]; then
    install -D "$final" -t "$OUT"
  fi
  echo "build-pgo: $final"
}

profdata=""
if [ -z "${NO_PGO:-}" ] && command -v rustup > /dev/null 2>&1; then
  # Bounded: a machine that cannot reach rustup's server builds without a profile.
  timeout 180 rustup component add llvm-tools > /dev/null 2>&1 || true
  profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
fi
if [ ! -x "$profdata" ]; then
  echo "build-pgo: no llvm-profdata for this toolchain (rustup component add llvm-tools); building without a profile" >&2
  build ""
  install_out
  exit 0
fi

bench_ports_free $(seq 18980 18995)
bench_install nginx-light wrk nghttp2-client openssl curl
work=$(mktemp -d /tmp/robots-pgo.XXXXXX)
profiles="$work/profiles"
mkdir -p "$profiles"
pids=()
trap 'kill ${pids[*]} 2>/dev/null || true; nginx -c "$work/nginx.conf" -s stop 2>/dev/null || true; rm -rf "$work"' EXIT

echo "build-pgo: instrumented build"
build "-Cprofile-generate=$profiles"
trained="$work/robots-proxy"
cp "$final" "$trained"

# The origin: nginx serving pages of a few sizes, robots.txt and two
# IP-range feeds, and taking uploads.
bench_origin "$work" 18980 'location /upload { client_max_body_size 1m; return 200 "taken\n"; }
    location / { try_files $uri /page.html; }'
head -c 300 /dev/zero | tr '\0' 'a' > "$work/www/small.html"
head -c 60000 /dev/zero | tr '\0' 'b' > "$work/www/large.html"
cat > "$work/www/robots.txt" <<'TXT'
User-agent: *
Disallow: /basket
Disallow: /*?sessionid=
Allow: /catalogue/*.html$

User-agent: Googlebot
User-agent: bingbot
Disallow: /staff/
Disallow: /*.pdf$

Sitemap: https://shop.test/sitemap.xml
TXT
printf '{"creationTime":"2026-11-24T00:00:00.000000","prefixes":[{"ipv4Prefix":"127.0.0.1/32"}]}' > "$work/www/google.json"
printf '{"creationTime":"2026-11-24T00:00:00.000000","prefixes":[{"ipv4Prefix":"10.9.0.0/16"}]}' > "$work/www/openai.json"
bench_cert "$work"
nginx -c "$work/nginx.conf"

gateway() { # NAME PORT TLS-PORT ADMIN FAST
  bench_gateway_proxy "$work" "$1" "$2" "$3" "$4" "$5" 1
  cat <<CONF
  # Only the two crawlers whose feeds are on the origin: the catalogue's
  # others would fetch theirs from the internet.
  identity: { only: [Googlebot, GPTBot], refresh: 1h, reverse_dns: false }
  ledger: { flush: 2s }
crawlers:
  - { token: Googlebot, operator: Google, purpose: search, obeys: true, source: training,
      verify: { ip_ranges: ["http://127.0.0.1:18980/google.json"] } }
  - { token: GPTBot, operator: OpenAI, purpose: ai-training, obeys: true, source: training,
      verify: { ip_ranges: ["http://127.0.0.1:18980/openai.json"] } }
sites:
  - name: shop
    proxy:
      hosts: [shop.test, www.shop.test]
      origin: 127.0.0.1:18980
      enforce: true
      spoofed: tag
      ai_policy: { ai-training: deny, enforce: refuse }
  - name: plain
    proxy:
      hosts: [plain.test]
      origin: 127.0.0.1:18980
CONF
}
gateway own 18981 18982 18983 true > "$work/own.yaml"
gateway pipeline 18984 18985 18986 false > "$work/pipeline.yaml"
for g in own pipeline; do
  ROBOTSGATE_LOG=warn "$trained" --config "$work/$g.yaml" > /dev/null 2> "$work/$g.log" &
  pids+=($!)
done
bench_wait_store 100 18981 18984
# A gateway that did not start would still write a profile on its way
# out, of nothing worth training on: refuse to go on without both.
for port in 18981 18984; do
  bench_serving "$port" || {
    echo "build-pgo: the gateway on port $port does not serve robots.txt from its store" >&2
    tail -n 20 "$work"/own.log "$work"/pipeline.log >&2
    exit 1
  }
done
sleep 2 # the feeds

cat > "$work/train.lua" <<'LUA'
-- Training requests: seeded, so every build trains on the same load.
local agents = {
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/132.0 Safari/537.36",
  "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_6) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Safari/605.1.15",
  "Mozilla/5.0 (Linux; Android 15) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/132.0 Mobile Safari/537.36",
  "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
  "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
  "Googlebot-Image/1.0",
  "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
  "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.1; +https://openai.com/gptbot)",
  "Mozilla/5.0 (compatible; YandexBot/3.0; +http://yandex.com/bots)",
  "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/13.1 Safari/605.1.15 (Applebot/0.1)",
  "curl/8.11.0",
  "python-requests/2.32.3",
}
local hosts = { "shop.test", "shop.test", "www.shop.test", "plain.test" }
local paths = {
  "/", "/small.html", "/large.html", "/robots.txt", "/basket", "/catalogue/boots.html",
  "/catalogue/boots.html?sessionid=9", "/staff/rota.pdf", "/files/manual.pdf", "/search?q=red%20boots&page=2",
  "/a/./b/../c", "//double//slash", "/%7Euser/home", "/catalogue/%E2%82%AC/list",
}
math.randomseed(7)
request = function()
  local method = math.random(10) == 1 and "HEAD" or "GET"
  local path = paths[math.random(#paths)]
  if math.random(3) == 1 then path = path .. (path:find("?", 1, true) and "&" or "?") .. "n=" .. math.random(1000) end
  return wrk.format(method, path, { ["Host"] = hosts[math.random(#hosts)], ["User-Agent"] = agents[math.random(#agents)] })
end
LUA

echo "build-pgo: training (${secs}s a line)"
for port in 18981 18984; do
  tls=$((port + 1))
  for c in 1 8 48; do
    wrk -t1 -c"$c" -d"${secs}s" -s "$work/train.lua" "http://127.0.0.1:$port/" > /dev/null
    wrk -t1 -c"$c" -d"${secs}s" -s "$work/train.lua" "https://127.0.0.1:$tls/" > /dev/null
  done
  for cm in "1 1" "4 8" "24 2"; do
    read -r c m <<<"$cm"
    for path in /small.html /catalogue/boots.html /large.html; do
      h2load -c"$c" -m"$m" -D"$secs" -t1 -H ':authority: shop.test' \
        -H 'User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0' \
        "https://127.0.0.1:$tls$path" > /dev/null 2>&1 || true
    done
  done
  # What the load tools do not send: uploads, chunked and counted, with
  # and without Expect, over HTTP/1.1 and HTTP/2; HTTP/1.0; a crawler's
  # robots.txt read.
  for i in $(seq 1 40); do
    curl -s -o /dev/null -H 'Host: shop.test' --data-binary "item=$i" "http://127.0.0.1:$port/upload"
    curl -s -o /dev/null -H 'Host: shop.test' -H 'Transfer-Encoding: chunked' --data-binary "item=$i" \
      "http://127.0.0.1:$port/upload"
    curl -s -o /dev/null -H 'Host: shop.test' -H 'Expect: 100-continue' --data-binary "@$work/www/small.html" \
      "http://127.0.0.1:$port/upload"
    curl -s -o /dev/null --http1.0 -H 'Host: shop.test' "http://127.0.0.1:$port/small.html"
    curl -s -o /dev/null -A 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)' \
      -H 'Host: shop.test' "http://127.0.0.1:$port/robots.txt"
    curl -sk -o /dev/null --http2 -H 'Host: shop.test' --data-binary "item=$i" \
      --resolve "shop.test:$tls:127.0.0.1" "https://shop.test:$tls/upload"
  done
done

# A stop signal lets each gateway exit normally, which writes its profile.
for p in "${pids[@]}"; do
  kill -0 "$p" 2> /dev/null || { echo "build-pgo: a gateway died during the training" >&2; exit 1; }
done
kill -TERM "${pids[@]}"
for p in "${pids[@]}"; do
  for _ in $(seq 1 300); do kill -0 "$p" 2> /dev/null || break; sleep 0.2; done
done
pids=()
ls "$profiles"/*.profraw > /dev/null 2>&1 || { echo "build-pgo: the training wrote no profile" >&2; exit 1; }
"$profdata" merge -o "$work/merged.profdata" "$profiles"

echo "build-pgo: optimised build"
build "-Cprofile-use=$work/merged.profdata"
install_out
