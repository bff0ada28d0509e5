#!/usr/bin/env bash
# Scale benchmark for robots-monitor: SITES sites on a local origin fleet,
# polled every minute by the real daemon on embedded SQLite, for MINUTES
# minutes. Prints CPU time, peak memory, fetches done and database growth,
# and the growth extrapolated to a day. Loopback only.
#   [WARMUP=5] [DATABASE=postgres://…] scripts/bench-monitor.sh [SITES=10000] [MINUTES=3]
# DATABASE: an empty PostgreSQL database instead of a fresh SQLite file.
# WARMUP is how many seconds pass before the window opens: long enough, at
# scale, for every site's first poll (which writes its first revision,
# state and verdicts) to be behind, so the window shows steady state.
set -euo pipefail
cd "$(dirname "$0")/.."
sites=${1:-10000}
minutes=${2:-3}
source scripts/setup.sh
source scripts/bench-common.sh
command -v sqlite3 >/dev/null || { apt-get update -qq && apt-get install -y -qq sqlite3; }
cargo build --release --locked -p robots-monitor --bin robots-monitor --example origin_fleet

work=$(mktemp -d /tmp/robots-monitor-bench.XXXXXX)
port=18080
target/release/examples/origin_fleet "$port" 2>/dev/null &
origin=$!
trap 'kill $origin ${daemon:-} 2>/dev/null || true' EXIT

database=${DATABASE:-$work/history.db}
{
  echo "database: $database"
  echo "agents: [Googlebot, bingbot, GPTBot]"
  echo "interval: 1m"
  bench_monitor_sites "$sites" "$port"
} > "$work/config.yaml"

ROBOTSGATE_LOG=warn target/release/robots-monitor --config "$work/config.yaml" run &
daemon=$!
ticks=$(getconf CLK_TCK)
sleep "${WARMUP:-5}"
db_size() {
  if [[ $database == postgres* ]]; then
    psql "$database" -Atc 'SELECT pg_database_size(current_database())'
  else
    du -sb "$work" | cut -f1
  fi
}
size_start=$(db_size)
cpu_start=$(awk '{print $14 + $15}' "/proc/$daemon/stat")
fetch_count() {
  local sql='SELECT CAST(COALESCE(SUM(polls), 0) AS BIGINT) FROM fetches'
  if [[ $database == postgres* ]]; then psql "$database" -Atc "$sql"; else sqlite3 "$database" "$sql" 2>/dev/null || echo 0; fi
}
fetch_start=$(fetch_count)
sleep $((minutes * 60))
cpu_end=$(awk '{print $14 + $15}' "/proc/$daemon/stat")
rss_peak=$(awk '/VmHWM/ {print $2}' "/proc/$daemon/status")
size_end=$(db_size)
fetch_end=$(fetch_count)
kill -TERM "$daemon"; wait "$daemon" || true
daemon=

secs=$((minutes * 60))
fetches=$((fetch_end - fetch_start))
awk -v c=$((cpu_end - cpu_start)) -v t="$ticks" -v s="$secs" -v r="$rss_peak" -v f="$fetches" \
    -v g=$((size_end - size_start)) -v n="$sites" 'BEGIN {
  printf "sites %d, window %d s\n", n, s
  printf "fetches in window: %d (%.1f/s; expected %.1f/s at one per site per minute)\n", f, f / s, n / 60
  printf "CPU: %.1f s in %d s = %.1f%% of one core\n", c / t, s, 100 * c / t / s
  printf "peak RSS: %.1f MiB\n", r / 1024
  printf "database growth: %.2f MiB in window, %.0f MiB per day\n", g / 1048576, g / 1048576 * 86400 / s
}'
