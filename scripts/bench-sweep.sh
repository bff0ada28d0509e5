#!/usr/bin/env bash
# The check-cost sweep (rules/benches/sweep.rs): 36 generated robots.txt
# files from about 1 KB to 500 KB in four shapes, with the peers in the same
# run, then a table of checks per second and each file's ratio to the
# smallest file of the sweep (the issue's goal: at least 0.5x everywhere,
# 0.25x above 100 KB, and the smallest at 20 M/s or more).
#   scripts/bench-sweep.sh            # robotsgate and the peers
#   SWEEP_PEERS= scripts/bench-sweep.sh   # robotsgate alone (faster)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
export SWEEP_PEERS=${SWEEP_PEERS-1}
[ -n "$SWEEP_PEERS" ] || unset SWEEP_PEERS
cargo bench -p rules --bench sweep 2> /tmp/sweep-sizes.txt | grep -E '^sweep/' || true
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
python3 - <<'PY'
import json, os, re
sizes = {}
for line in open('/tmp/sweep-sizes.txt'):
    m = re.match(r'sweep (\S+): (\d+) bytes, (\d+) rules', line)
    if m:
        sizes[m.group(1)] = (int(m.group(2)), int(m.group(3)))
root = 'target/criterion/sweep'
rate = {}
for who in sorted(os.listdir(root)):
    if who == 'report':
        continue
    for name in os.listdir(os.path.join(root, who)):
        path = os.path.join(root, who, name, 'new', 'estimates.json')
        if os.path.exists(path) and name in sizes:
            ns = json.load(open(path))['median']['point_estimate']
            rate[(who, name)] = 1e9 / ns
small = rate[('robotsgate', 'shop-30')]
peers = sorted({w for w, _ in rate if w != 'robotsgate'})
print(f"{'file':<22}{'bytes':>9}{'rules':>7}{'robotsgate':>13}{'ratio':>7}  goal" + ''.join(f"{p:>16}" for p in peers))
misses = 0
for name, (size, rules) in sorted(sizes.items(), key=lambda kv: (kv[0].split('-')[0], kv[1][0])):
    r = rate.get(('robotsgate', name))
    if r is None:
        continue
    need = 0.25 if size > 100_000 else 0.5
    ok = r / small >= need
    misses += not ok
    cells = ''.join(f"{rate[(p, name)] / 1e6:>14.2f} M" if (p, name) in rate else f"{'-':>16}" for p in peers)
    print(f"{name:<22}{size:>9}{rules:>7}{r / 1e6:>11.2f} M{r / small:>7.2f}  {'ok' if ok else 'MISS'}{cells}")
print(f"smallest file: {small / 1e6:.1f} M checks/s (goal: 20 M/s); files under their goal: {misses}")
PY
