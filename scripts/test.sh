#!/usr/bin/env bash
# The test command: sets the machine up, then runs formatting, lint and
# every test in the workspace. CI runs exactly this (see .ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."

SETUP_FOR=tests source scripts/setup.sh
source scripts/services.sh
export CARGO_TERM_COLOR=never

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "== cargo test"
log=$(mktemp)
# Every test's scratch files (databases, logs, served trees) go under one
# directory that is removed at the end, so repeated runs do not fill /tmp.
scratch=$(mktemp -d -t robotsgate-tests.XXXXXX)
trap 'rm -f "$log"; rm -rf "$scratch"' EXIT
export TMPDIR="$scratch"
cargo test --workspace --locked 2>&1 | tee "$log"
# Cargo ends with the (often empty) doc-test run of the last crate; close
# with the total over every test binary instead.
summary=$(awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($i ~ /^passed/) p += $(i-1); if ($i ~ /^failed/) f += $(i-1) } }
     END { printf "workspace: %d passed, %d failed\n", p, f }' "$log")
echo "$summary"

# The shipped gateway's build (deploy/Containerfile): the same steps on a
# debug build, with one-second training lines, so that a config key or
# flag the training relies on cannot rot unseen.
# In target/ itself, so that build scripts and proc macros (built for the
# host, without the profile flags) are the test build's; the two gateway
# builds, about 2 GB, are removed after.
echo "== scripts/build-pgo.sh, on a debug build"
host=$(rustc -vV | awk '/^host:/ {print $2}')
PGO_PROFILE=dev TRAIN_SECS=1 CARGO_INCREMENTAL=0 bash scripts/build-pgo.sh
"target/$host/debug/robots-proxy" --version
rm -rf "target/$host/debug"
# The total stays the last line.
echo "$summary"
