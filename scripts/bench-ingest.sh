#!/usr/bin/env bash
# Access-log import speed, against GoAccess on the same log, in one run:
# LINES lines of nginx `combined` (80% browsers, 20% crawlers of the
# catalogue over many paths, some disallowed), judged by `robots-monitor
# ingest` against a site whose history holds two robots.txt revisions,
# and counted by `goaccess --log-format=COMBINED -o json`. Prints wall
# time, lines a second and peak RSS (GNU time) for both. Then the other
# line formats on the same requests, each into a fresh database: Apache's
# vhost_combined (GoAccess's VCOMBINED beside it), and an nginx layout
# (`--format nginx --layout`, here combined's own log_format text, read by
# the layout reader), IIS's W3C extended and AWS ALB lines of the same
# requests (GoAccess's W3C and AWSALB beside them). Offline.
#   scripts/bench-ingest.sh [LINES=10000000]
set -euo pipefail
cd "$(dirname "$0")/.."
lines=${1:-10000000}
source scripts/setup.sh
for p in goaccess time; do
  command -v "$p" >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$p"; }
done
cargo build --release --locked -p robots-monitor --bin robots-monitor

work=$(mktemp -d /tmp/robots-ingest-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
cat > "$work/robots.txt" <<'ROBOTS'
User-agent: *
Disallow: /admin
Disallow: /cart
Disallow: /search?
Disallow: /*?sort=
Allow: /search?q=
User-agent: GPTBot
Disallow: /
ROBOTS
cat > "$work/config.yaml" <<YAML
database: $work/history.db
agents: [Googlebot]
sites:
  - name: shop
    file: $work/robots.txt
    proxy: { hosts: [shop.example], origin: "127.0.0.1:1" }
YAML
target/release/robots-monitor --config "$work/config.yaml" once >/dev/null

python3 - "$lines" "$work/access.log" <<'PY'
import random, sys, time
n, path = int(sys.argv[1]), sys.argv[2]
random.seed(7)
crawlers = [
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
    "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.1; +https://openai.com/gptbot)",
    "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)",
    "Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)",
    "CCBot/2.0 (https://commoncrawl.org/faq/)",
]
browsers = [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0",
]
paths = ["/", "/products/shoe-%d", "/category/%d?sort=price", "/search?q=red+%d", "/search?page=%d", "/admin/x%d", "/cart/%d", "/blog/post-%d", "/robots.txt"]
t0 = int(time.time()) + 2  # after the history's first state
out = open(path, "w")
# The same requests as IIS (W3C extended) and AWS ALB lines.
w3c = open(path.replace("access.log", "u_ex.log"), "w")
w3c.write("#Software: Microsoft Internet Information Services 10.0\n#Version: 1.0\n"
          "#Fields: date time s-ip cs-method cs-uri-stem cs-uri-query s-port cs-username c-ip cs(User-Agent) cs(Referer) sc-status sc-substatus sc-win32-status time-taken\n")
alb = open(path.replace("access.log", "alb.log"), "w")
for i in range(n):
    t = time.gmtime(t0 + i * 3600 // n)
    stamp = time.strftime("%d/%b/%Y:%H:%M:%S +0000", t)
    ua = random.choice(crawlers) if random.random() < 0.2 else random.choice(browsers)
    p = random.choice(paths)
    if "%d" in p:
        p = p % random.randint(1, 5000)
    ip = "66.249.%d.%d" % (random.randint(64, 95), random.randint(1, 254))
    size = random.randint(100, 90000)
    out.write('%s - - [%s] "GET %s HTTP/1.1" 200 %d "-" "%s"\n' % (ip, stamp, p, size, ua))
    stem, _, query = p.partition("?")
    w3c.write("%s %s 10.0.0.5 GET %s %s 443 - %s %s - 200 0 0 15\n" % (
        time.strftime("%Y-%m-%d", t), time.strftime("%H:%M:%S", t), stem, query or "-", ip, ua.replace(" ", "+")))
    alb.write('https %s app/shop-lb/50dc6c495c0c9188 %s:2817 10.0.0.1:80 0.000 0.001 0.000 200 200 34 %d "GET https://shop.example:443%s HTTP/1.1" "%s" ECDHE-RSA-AES128-GCM-SHA256 TLSv1.2 arn:aws:elasticloadbalancing:us-east-2:123456789012:targetgroup/shop/73e2d6bc24d8a067 "Root=1-58337262-36d228ad5d99923122bbe354" "shop.example" "-" 0 %s "forward" "-" "-" "10.0.0.1:80" "200" "-" "-"\n' % (
        time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", t), ip, size, p, ua, time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", t)))
out.close()
w3c.close()
alb.close()
PY
size=$(du -h "$work/access.log" | cut -f1)
echo "== $lines lines ($size), $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"

measure() { # name, command...
  local name=$1; shift
  local t0 t1
  t0=$(date +%s.%N)
  /usr/bin/time -f "%M" -o "$work/rss" "$@" >/dev/null 2>"$work/err" || { cat "$work/err"; return 1; }
  t1=$(date +%s.%N)
  python3 - "$name" "$t0" "$t1" "$lines" "$(tail -1 "$work/rss")" <<'PY'
import sys
name, t0, t1, n, rss = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
s = t1 - t0
print(f"{name:<34} {s:7.2f} s  {n / s / 1e6:5.2f} M lines/s  peak RSS {rss / 1024:7.1f} MiB")
PY
}
measure "robots-monitor ingest" target/release/robots-monitor --config "$work/config.yaml" ingest --site shop "$work/access.log"
measure "goaccess --log-format=COMBINED" goaccess "$work/access.log" --log-format=COMBINED -o "$work/report.json"
# The other formats: the same requests, each into a database of its own
# (the same bytes twice would count once).
fresh() { # NAME: a config with its own database, polled once
  sed "s|history.db|$1.db|" "$work/config.yaml" > "$work/$1.yaml"
  target/release/robots-monitor --config "$work/$1.yaml" once >/dev/null
  echo "$work/$1.yaml"
}
sed 's/^/shop.example:443 /' "$work/access.log" > "$work/vhost.log"
measure "ingest --format vhost_combined" target/release/robots-monitor --config "$(fresh vhost)" ingest --site shop --format vhost_combined "$work/vhost.log"
measure "goaccess --log-format=VCOMBINED" goaccess "$work/vhost.log" --log-format=VCOMBINED -o "$work/report-vhost.json"
layout='$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent"'
measure "ingest --format nginx --layout" target/release/robots-monitor --config "$(fresh layout)" ingest --site shop --format nginx --layout "$layout" "$work/access.log"
measure "ingest --format w3c (IIS)" target/release/robots-monitor --config "$(fresh w3c)" ingest --site shop --format w3c "$work/u_ex.log"
measure "goaccess --log-format=W3C" goaccess "$work/u_ex.log" --log-format=W3C -o "$work/report-w3c.json"
measure "ingest --format alb" target/release/robots-monitor --config "$(fresh alb)" ingest --site shop --format alb "$work/alb.log"
measure "goaccess --log-format=AWSALB" goaccess "$work/alb.log" --log-format=AWSALB -o "$work/report-alb.json"
target/release/robots-monitor --config "$work/config.yaml" compliance shop | head -20
