#!/usr/bin/env bash
# The main job on the embedded default: builds the workspace in release
# mode, then lints and checks the example site shipped in deploy/example-site
# with the `robots` engine. Needs no network service.
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/setup.sh
cargo build --release --locked --workspace

robots=target/release/robots
site=deploy/example-site
echo "== robots lint $site/robots.txt"
"$robots" lint "$site/robots.txt" || true
echo
echo "== verdicts for $site/urls.txt"
"$robots" check "$site/robots.txt" --agent Googlebot --agent bingbot --agent GPTBot --urls "$site/urls.txt" || true
echo
echo "== what changes if $site/robots.next.txt ships"
"$robots" diff "$site/robots.txt" "$site/robots.next.txt" --agent Googlebot --agent GPTBot --urls "$site/urls.txt" || true
