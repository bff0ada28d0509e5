# What the gateway's load benchmarks (bench-proxy, bench-ledger,
# bench-deployed) share, sourced by each: refusing busy ports, installing
# what they run, building the gateway, and the nginx origin serving a
# 2 KB page. Functions only; nothing runs when sourced.

# bench_ports_free PORT...: exits if any is in use. A port in use means a
# run still going (or left behind): its load would fall on this run's
# figures.
bench_ports_free() {
  local port
  for port in "$@"; do
    if (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; then
      echo "port $port is in use: stop what listens there first" >&2
      exit 1
    fi
  done
}

# bench_install PACKAGE...: installs the Debian packages not yet there.
bench_install() {
  local p sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  for p in "$@"; do
    dpkg -s "$p" >/dev/null 2>&1 || {
      "${sudo_cmd[@]}" apt-get update -qq && DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "$p"
    }
  done
}

# bench_proxy_bin: sets `bin` to the gateway to run: PROXY_BIN if given
# (another build, for A/B comparisons), else this tree's release build,
# built now.
bench_proxy_bin() {
  bin=${PROXY_BIN:-target/release/robots-proxy}
  [ -n "${PROXY_BIN:-}" ] || cargo build --release --locked -p proxy --bin robots-proxy
}

# bench_origin WORK PORT [EXTRA]: writes WORK/nginx.conf, one nginx worker
# serving WORK/www on PORT without an access log (EXTRA goes in its server
# block), and a 2 KB WORK/www/page.html. nginx workers run as www-data, so
# WORK is made readable.
bench_origin() {
  mkdir -p "$1/www"
  chmod -R 755 "$1"
  head -c 2048 /dev/zero | tr '\0' 'x' > "$1/www/page.html"
  cat > "$1/nginx.conf" <<CONF
worker_processes 1;
pid $1/nginx.pid;
error_log $1/nginx-error.log;
events { worker_connections 4096; }
http {
  access_log off;
  default_type text/plain;
  keepalive_requests 1000000;
  server { listen 127.0.0.1:$2; root $1/www; ${3:-} }
}
CONF
}

# bench_proxy_location: nginx's `location /` for the peer reverse proxy,
# to the upstream `origin` with keep-alive (HTTP/1.1, no Connection
# header) and the client's Host, as the gateway forwards.
bench_proxy_location() {
  cat <<'CONF'
    location / {
      proxy_pass http://origin;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
    }
CONF
}

# bench_peer_http WORK WORKERS ORIGIN_PORT: the start of the peer nginx's
# reverse-proxy config, up to its server blocks (the caller writes them
# and the closing brace): WORKERS workers, no access log, keep-alive to the
# origin at ORIGIN_PORT.
bench_peer_http() {
  cat <<CONF
worker_processes $2;
pid $1/nginx-proxy.pid;
error_log $1/nginx-proxy-error.log;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  upstream origin { server 127.0.0.1:$3; keepalive 64; }
CONF
}

# bench_gateways WORK NAME...: starts $bin on WORK/NAME.yaml for each NAME,
# logging warnings to WORK/NAME.log, and adds their pids to `pids`.
bench_gateways() {
  local work=$1 g
  shift
  for g in "$@"; do
    ROBOTSGATE_LOG=warn "$bin" --config "$work/$g.yaml" > /dev/null 2> "$work/$g.log" &
    pids+=($!)
  done
}

# bench_wait_store TRIES PORT...: waits, up to TRIES times 0.2 s a port,
# until each gateway serves /robots.txt from its store rather than passing
# it through, so that no line measures a gateway still starting.
bench_wait_store() {
  local tries=$1 port
  shift
  for port in "$@"; do
    for _ in $(seq 1 "$tries"); do
      bench_serving "$port" && break
      sleep 0.2
    done
  done
}

# bench_serving PORT: whether the gateway on PORT serves shop.test's
# /robots.txt from its store (not passed through, not failing).
bench_serving() {
  curl -si -H 'Host: shop.test' "http://127.0.0.1:$1/robots.txt" 2>/dev/null |
    grep -qi '^x-robots-source: \(origin\|managed\)'
}

# bench_monitor_sites SITES PORT: the `sites:` of the monitor's scale
# benchmarks (bench-monitor, bench-once): SITES sites on the origin fleet
# at PORT, each with a saved set of four URLs.
bench_monitor_sites() {
  local i
  echo "sites:"
  for ((i = 0; i < $1; i++)); do
    echo "  - name: s$i"
    echo "    url: http://127.0.0.1:$2/s/$i/robots.txt"
    echo "    url_sets: { main: [/, /admin/login, /cart, /s$i/private/x] }"
  done
}

# bench_monitor_named_sites SITES PORT REFUSED: the same sites by name,
# http://s<n>.bench.test/robots.txt, so that each has the default variants
# (https://, www.): plain HTTP reaches the origin fleet at PORT (which
# redirects www. to the bare name), HTTPS a closed port REFUSED (no TLS
# there, as on many sites: a refused connection, no finding).
bench_monitor_named_sites() {
  echo "http:"
  echo "  connect_to:"
  echo "    \"*.bench.test:80\": \"127.0.0.1:$2\""
  echo "    \"*.bench.test:443\": \"127.0.0.1:$3\""
  echo "sites:"
  local i
  for ((i = 0; i < $1; i++)); do
    echo "  - name: s$i"
    echo "    url: http://s$i.bench.test/robots.txt"
    echo "    url_sets: { main: [/, /admin/login, /cart, /s$i/private/x] }"
  done
}

# bench_gateway_proxy WORK NAME PORT TLS-PORT ADMIN FAST THREADS: the start
# of a gateway's config for these scripts, up to `fast_path` in `proxy:`
# (the caller adds the rest): database and state under WORK by NAME, plain
# HTTP on PORT, TLS with WORK/cert.pem on TLS-PORT, the admin API on
# ADMIN (token `bench`), no robots.txt refresh during a run.
bench_gateway_proxy() {
  cat <<CONF
database: $1/$2.db
proxy:
  listen: ["127.0.0.1:$3"]
  tls_listen: [{ addr: "127.0.0.1:$4", cert: $1/cert.pem, key: $1/key.pem }]
  admin: 127.0.0.1:$5
  admin_token: bench
  state_dir: $1/state-$2
  refresh: 1h
  threads: $7
  fast_path: $6
CONF
}

# bench_cert WORK: a self-signed P-256 certificate for shop.test, valid two
# days, as WORK/cert.pem and WORK/key.pem (readable by nginx's workers).
bench_cert() {
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=shop.test \
    -addext subjectAltName=DNS:shop.test -keyout "$1/key.pem" -out "$1/cert.pem" 2>/dev/null
  chmod 644 "$1/key.pem" "$1/cert.pem"
}

# bench_everything_on ORIGIN_PORT: the gateway's "everything on" lines, as
# bench-deployed.sh and bench-budgets.sh measure it: sets all_proxy (for
# `proxy:`), all_site (for the site's `proxy:`) and all_crawlers (a
# catalogue whose feeds the origin at ORIGIN_PORT serves).
bench_everything_on() {
  all_proxy="  identity:
    refresh: 1h
    reverse_dns: false
  ledger: { flush: 10s }"
  all_site="      enforce: true
      spoofed: tag
      ai_policy: { ai-training: deny, enforce: refuse }"
  all_crawlers="crawlers:
  - { token: Googlebot, operator: Google, purpose: search, obeys: true, source: bench,
      verify: { ip_ranges: [\"http://127.0.0.1:$1/googlebot.json\"] } }
  - { token: GPTBot, operator: OpenAI, purpose: ai-training, obeys: true, source: bench,
      verify: { ip_ranges: [\"http://127.0.0.1:$1/gptbot.json\"] } }"
}
