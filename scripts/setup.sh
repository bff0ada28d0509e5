#!/usr/bin/env bash
# Installs what building and testing robotsgate needs on a fresh Debian
# machine: the system packages pingora needs (cmake, pkg-config, libssl-dev),
# a C toolchain, the openssl and curl commands the TLS test uses, and,
# with SETUP_FOR=tests, headless Chromium with its WebDriver for the
# console tests and dnsmasq. Safe to run again: it installs only what is
# missing.
set -euo pipefail

packages=(build-essential cmake pkg-config libssl-dev openssl curl)
# What only the tests need: headless Chromium and its WebDriver (the
# console's pages), and dnsmasq (a resolver on loopback). scripts/test.sh
# asks for them with SETUP_FOR=tests; the main job (scripts/run.sh) does not.
if [ "${SETUP_FOR:-}" = tests ]; then
  packages+=(chromium chromium-driver dnsmasq-base)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: cargo is not installed; install Rust 1.89 or newer (rustup) and run this again" >&2
  exit 1
fi

# pingora's openssl feature links the system OpenSSL instead of building one.
export OPENSSL_NO_VENDOR=1
