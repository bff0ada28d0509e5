#!/usr/bin/env bash
# The main job on the embedded default: builds the workspace, then runs the
# monitor once over config.example.yaml (the example shop shipped in
# deploy/example-site, history in an embedded SQLite file under var/, no
# network service), shows its history, and shows what the `robots` CLI says
# about the shop's next robots.txt, and whether the gate would hold it.
# Works offline once crates are fetched.
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/setup.sh
cargo build --release --locked --workspace

# Where cargo put them: a CARGO_TARGET_DIR set in the user's environment
# moves the binaries out of target/.
bin="${CARGO_TARGET_DIR:-target}/release"
monitor="$bin/robots-monitor"
robots="$bin/robots"
site=deploy/example-site

echo "== robots-monitor check-config"
"$monitor" --config config.example.yaml check-config
echo "== robots-monitor once (history in var/robotsgate.db)"
"$monitor" --config config.example.yaml once
echo "== robots-monitor history example-shop"
"$monitor" --config config.example.yaml history example-shop
echo
echo "== robots lint $site/robots.next.txt"
"$robots" lint "$site/robots.next.txt" || true
echo
echo "== what changes if $site/robots.next.txt ships"
"$robots" diff "$site/robots.txt" "$site/robots.next.txt" --agent Googlebot --agent GPTBot --urls "$site/urls.txt" || true
echo
echo "== would the gate let $site/robots.next.txt through? (the pins and floor of config.example.yaml)"
"$robots" diff "$site/robots.txt" "$site/robots.next.txt" --config config.example.yaml --site example-shop | sed -n '/^the gate/,$p' || true
