#!/usr/bin/env bash
# `robots-monitor once` over SITES loopback sites on a fresh SQLite file,
# with the shipped defaults (the gate on): sites polled per minute at first
# sight (every site's first revision, state and verdicts) and unchanged (the
# same files again), for this tree and, in the same run, for BASE (default
# 1652345^, the commit before the gate), built in a worktree with the same
# profile. Also counts sqlx's slow-acquire warnings. Loopback only.
# The row `variants` is this tree with every site by name, so with its
# default host variants (https:// and www., each fetched and judged after
# every poll; www. redirects to the site, https:// is refused), reached on
# loopback through http.connect_to. The row `sitemaps` is this tree with
# every file naming a served sitemap of 101 URLs (one disallowed), read at
# first sight (one alert a site) and not again while unchanged; every other
# row's files name no sitemap (FLEET_SITEMAPS=none).
#   [BASE=rev] [BASE_TARGET=dir] [RUNS=2] scripts/bench-once.sh [SITES=10000]
set -euo pipefail
cd "$(dirname "$0")/.."
sites=${1:-10000}
runs=${RUNS:-2}
base=${BASE:-1652345^}
source scripts/setup.sh
source scripts/bench-common.sh
bench_install sqlite3
# One profile for both builds, lighter than the shipped one (fat LTO takes
# a quarter of an hour on two cores); the comparison is like for like.
export CARGO_PROFILE_RELEASE_LTO=off CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16
target=${CARGO_TARGET_DIR:-target}
cargo build --release -p robots-monitor --bin robots-monitor --example origin_fleet
now_bin="$target/release/robots-monitor"
fleet="$target/release/examples/origin_fleet"

work=$(mktemp -d /tmp/robots-once-bench.XXXXXX)
tree="$work/base"
git worktree add -q --detach "$tree" "$base"
# BASE_TARGET keeps the base's build between runs (its own directory).
base_target=${BASE_TARGET:-$work/base-target}
(cd "$tree" && CARGO_TARGET_DIR="$base_target" cargo build --release --bin robots-monitor)
base_bin="$base_target/release/robots-monitor"

port=18090
FLEET_SITEMAPS=none "$fleet" "$port" 2>/dev/null &
origin=$!
sitemap_port=18092
FLEET_SITEMAPS=served "$fleet" "$sitemap_port" 2>/dev/null &
sitemap_origin=$!
trap 'kill $origin $sitemap_origin 2>/dev/null || true; git worktree remove --force "$tree" 2>/dev/null || true' EXIT
sleep 0.5

refused=$(( port + 1 ))
config() { # DATABASE [variants]
  echo "database: $1"
  echo "agents: [Googlebot, bingbot, GPTBot]"
  echo "interval: 1m"
  if [[ ${2:-} == variants ]]; then
    bench_monitor_named_sites "$sites" "$port" "$refused"
  elif [[ ${2:-} == sitemaps ]]; then
    bench_monitor_sites "$sites" "$sitemap_port"
  else
    bench_monitor_sites "$sites" "$port"
  fi
}

rate() { # BIN CONFIG LOG: one `once`, in sites per minute
  local start end
  start=$(date +%s.%N)
  ROBOTSGATE_LOG=warn "$1" --config "$2" once >/dev/null 2>>"$3"
  end=$(date +%s.%N)
  awk -v s="$start" -v e="$end" -v n="$sites" 'BEGIN { printf "%.0f", n / (e - s) * 60 }'
}

first_pass() { # BIN CONFIG DATABASE LOG: `run` from a fresh file until every site has a state
  local start end daemon n=0
  start=$(date +%s.%N)
  ROBOTSGATE_LOG=warn "$1" --config "$2" run >/dev/null 2>>"$4" &
  daemon=$!
  while (( n < sites )); do
    sleep 0.1
    n=$(sqlite3 "$3" 'SELECT COUNT(*) FROM states' 2>/dev/null || echo 0)
  done
  end=$(date +%s.%N)
  kill "$daemon"
  wait "$daemon" 2>/dev/null || true
  awk -v s="$start" -v e="$end" -v n="$sites" 'BEGIN { printf "%.0f", n / (e - s) * 60 }'
}

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo); $sites sites; base $(git rev-parse --short "$base")"
printf "%-6s %-5s %14s %14s %14s %9s\n" build run "first sight" unchanged "run 1st pass" "slow acq"
for ((r = 1; r <= runs; r++)); do
  for which in base now variants sitemaps; do
    bin=$base_bin
    [[ $which != base ]] && bin=$now_bin
    db="$work/$which-$r.db"
    config "$db" "$which" > "$work/$which-$r.yaml"
    log="$work/$which-$r.log"
    : > "$log"
    first=$(rate "$bin" "$work/$which-$r.yaml" "$log")
    again=$(rate "$bin" "$work/$which-$r.yaml" "$log")
    config "$db.run" "$which" > "$work/$which-$r-run.yaml"
    pass=$(first_pass "$bin" "$work/$which-$r-run.yaml" "$db.run" "$log")
    slow=$(grep -c "slow threshold" "$log" || true)
    printf "%-6s %-5s %14s %14s %14s %9s\n" "$which" "$r" "$first/min" "$again/min" "$pass/min" "$slow"
  done
done
