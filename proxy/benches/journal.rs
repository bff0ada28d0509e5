//! What the ledger's journal adds to a crawler request on the hot path:
//! one record appended to the mapped ring (a CRC and a copy), in steady
//! state, the tail following as the database's writes would free it.
//!   cargo bench -p proxy --bench journal

use criterion::{Criterion, criterion_group, criterion_main};
use proxy::crawlers::journal::Journal;

fn append(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("robotsgate-journal-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    // A crawler request's record: site, User-Agent word, answer, client,
    // time, ETag and a typical target, about 110 bytes.
    let payload = [7u8; 110];
    for (name, ring_mib) in [("append/64MiB", 64usize), ("append/1MiB", 1)] {
        let mut journal = Journal::create(&dir, ring_mib << 20).expect("journal");
        let mut seq = 0u64;
        let mut freed = (0u64, 0u64);
        c.bench_function(name, |b| {
            b.iter(|| {
                seq += 1;
                let end = match journal.append(seq, std::hint::black_box(&payload)) {
                    Some(end) => end,
                    None => {
                        // Full: the database caught up.
                        journal.advance(freed.0, freed.1);
                        journal.append(seq, &payload).expect("room after a write")
                    }
                };
                freed = (end, seq);
            })
        });
    }
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, append);
criterion_main!(benches);
