#!/usr/bin/env bash
# Compares two builds of rules' `examples/profile` (ns a check) on the
# benchmark's files. The machine's speed drifts by up to 10% between runs,
# so the two binaries run alternately, five times each, and the best of
# each is kept.
#
#   cargo build --release -p rules --example profile && cp target/release/examples/profile /tmp/before
#   (change something, build again)  && cp target/release/examples/profile /tmp/after
#   scripts/bench-ab.sh /tmp/before /tmp/after
set -euo pipefail
a_bin=${1:?usage: bench-ab.sh BEFORE AFTER [CHECKS]}
b_bin=${2:?usage: bench-ab.sh BEFORE AFTER [CHECKS]}
checks=${3:-2000000}
ns() { "$1" "$2" "$checks" | sed -E 's/.* ([0-9]+) ns.*/\1/'; }
for size in shop-small shop-medium shop-large medium large; do
  a=999999 b=999999
  for _ in 1 2 3 4 5; do
    v=$(ns "$a_bin" "$size"); (( v < a )) && a=$v
    v=$(ns "$b_bin" "$size"); (( v < b )) && b=$v
  done
  echo "$size: before $a ns, after $b ns"
done
