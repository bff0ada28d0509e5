#!/usr/bin/env bash
# The test command: sets the machine up, then runs formatting, lint and
# every test in the workspace. CI runs exactly this (see .ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/setup.sh
source scripts/services.sh
export CARGO_TERM_COLOR=never

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "== cargo test"
cargo test --workspace --locked
