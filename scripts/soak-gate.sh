#!/usr/bin/env bash
# The gate's promise under random sequences, for as long as asked:
#   scripts/soak-gate.sh [SECONDS] [--sqlite] [--steps N] [--seed FIRST]
# Starts what the runs need (PostgreSQL with its role and database,
# aiosmtpd), builds the real binaries, then runs one seeded random run of
# two gateways and two monitors after another (sim/, `soak-gate`), each
# checked after every step against the promise's model (rules::promise).
# Prints a line per seed and a total; at the first divergence, the seed
# and the shortest sequence that reproduces it, and exits 1.
set -euo pipefail
cd "$(dirname "$0")/.."
SETUP_FOR=tests source scripts/setup.sh
source scripts/services.sh
secs="${1:-3600}"
shift || true
cargo build --locked --bins -p proxy -p robots-monitor -p robotsgate-sim
# The run uses copies of the binaries, so that a build during a long soak
# does not swap them under it.
bin=$(mktemp -d -t soak-gate-bin.XXXXXX)
trap 'rm -rf "$bin"' EXIT
cp target/debug/robots-proxy target/debug/robots-monitor target/debug/soak-gate "$bin/"
export ROBOTSGATE_SIM_BIN_DIR="$bin"
"$bin/soak-gate" "$secs" "$@"
