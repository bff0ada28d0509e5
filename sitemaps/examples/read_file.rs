//! Reads one sitemap file (XML, gzip or text) with the streaming reader and
//! prints what it found: for measuring peak memory on large files
//! (`/usr/bin/time -v target/release/examples/read_file FILE`).
//!
//! Run: `cargo run --release -p robotsgate-sitemaps --example read_file -- FILE [ORIGIN]`

use robotsgate_sitemaps::read::{Context, Seen, read};

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: read_file FILE [ORIGIN]");
        std::process::exit(2);
    };
    let file = std::fs::File::open(&path)?;
    let mut urls = 0u64;
    let r = read(file, &Context::new(args.next()), &mut Seen::default(), &mut |_| urls += 1);
    println!(
        "{path}: {} {} entries, {urls} handed on, {} bytes read, gzip {}",
        r.kind.as_str(),
        r.entries,
        r.bytes,
        r.gzip
    );
    for f in &r.findings.0 {
        println!("  {}: {f}", f.what.key());
    }
    Ok(())
}
