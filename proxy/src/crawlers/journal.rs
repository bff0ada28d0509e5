//! The ledger's journal: a memory-mapped ring file under `state_dir` that
//! holds every ledger event from the moment the request path hands it over
//! until the database has its counts.
//!
//! Why a mapped file: a store into a shared mapping is in the kernel's
//! page cache as soon as it is made, so a `kill -9` loses nothing of it,
//! and it costs no system call (the bound: none per request). Only
//! a machine's crash loses the page cache's unwritten part, as it loses
//! the ledger's memory anyway.
//!
//! The file: a 4 KiB header (magic, ring size, the tail: where the oldest
//! record the database may not have yet begins, and the number of the last
//! record before it), then the ring. A record is
//! its payload's length, a CRC-32 of its sequence number and payload, the
//! sequence number and the payload, padded to 8 bytes. A record that does
//! not fit before the ring's end leaves a skip mark and starts the next
//! lap. Positions are logical (they only grow); a record's place in the
//! ring is its position modulo the ring's size.
//!
//! Each process writes a journal of its own, named by a fresh id and held
//! by an exclusive lock while it lives, so an upgrade's old and new
//! processes never share one. A journal whose lock can be taken belongs to
//! a process that is gone: its records past the sequence number the
//! database marks as counted for it are judged again, counted with that
//! mark moved in the same transaction, and the file is removed. Each event
//! is thus counted exactly once, whenever the kill came.

use std::fs::{File, OpenOptions};
use std::io::{self, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use memmap2::MmapMut;

const MAGIC: &[u8; 8] = b"RGJRNL01";
/// The header's size: one page, so the ring's records are page-aligned.
const HEADER: usize = 4096;
/// A record's fixed part: length, CRC, sequence number.
const RECORD: usize = 16;
/// The length that marks the rest of a lap as unused.
const SKIP: u32 = u32::MAX;
/// A journal file's name ends so.
const SUFFIX: &str = ".journal";

fn align8(n: usize) -> usize {
    (n + 7) & !7
}

fn crc(seq: u64, payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&seq.to_le_bytes());
    h.update(payload);
    h.finalize()
}

/// This process's journal, written on the request path.
#[derive(Debug)]
pub struct Journal {
    id: String,
    path: PathBuf,
    map: MmapMut,
    /// The ring's size in bytes.
    cap: usize,
    /// Where the next record goes (logical).
    head: u64,
    /// Where the oldest record the database may lack begins (logical).
    tail: u64,
    /// The number of the record before the tail: a record read at the
    /// tail with a number no greater is from an earlier lap.
    tail_seq: u64,
    /// Held for the lock.
    _file: File,
}

impl Journal {
    /// Creates a new journal of `ring` bytes (rounded to 8) in `dir`.
    pub fn create(dir: &Path, ring: usize) -> io::Result<Journal> {
        std::fs::create_dir_all(dir)?;
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        let id = format!("{}-{}-{}", std::process::id(), now.as_secs(), now.subsec_nanos());
        let path = dir.join(format!("{id}{SUFFIX}"));
        // Only this user reads it: it holds clients' addresses and targets.
        let file = OpenOptions::new().read(true).write(true).create_new(true).mode(0o600).open(&path)?;
        file.try_lock().map_err(|e| io::Error::other(format!("locking {}: {e}", path.display())))?;
        let cap = align8(ring.max(64 * 1024));
        // Written out, not sparse: a store into a mapped page the disk has
        // no room for kills the process with SIGBUS, so a full disk is
        // found here, at start, as an error, never on a request.
        let zeros = vec![0u8; 1 << 20];
        let mut left = HEADER + cap;
        let mut writer = &file;
        while left > 0 {
            let n = left.min(zeros.len());
            writer.write_all(&zeros[..n]).inspect_err(|_| {
                let _ = std::fs::remove_file(&path);
            })?;
            left -= n;
        }
        // SAFETY: the file is ours alone (created here, exclusively locked),
        // and its length is fixed for the life of the mapping, so no other
        // writer changes the bytes under us and no access passes its end.
        #[allow(unsafe_code)]
        let mut map = unsafe { MmapMut::map_mut(&file)? };
        map[0..8].copy_from_slice(MAGIC);
        map[8..16].copy_from_slice(&(cap as u64).to_le_bytes());
        map[16..32].fill(0);
        Ok(Journal { id, path, map, cap, head: 0, tail: 0, tail_seq: 0, _file: file })
    }

    /// The journal's id, as the database marks it.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Appends a record; returns the position just past it, or `None` when
    /// the ring has no room (records the database lacks fill it).
    pub fn append(&mut self, seq: u64, payload: &[u8]) -> Option<u64> {
        let need = align8(RECORD + payload.len());
        if need > self.cap / 2 || payload.len() >= SKIP as usize {
            return None;
        }
        let phys = (self.head % self.cap as u64) as usize;
        let room = self.cap - phys;
        let start = if need > room { self.head + room as u64 } else { self.head };
        if start + need as u64 - self.tail > self.cap as u64 {
            return None;
        }
        if start != self.head {
            self.put(phys, &SKIP.to_le_bytes());
        }
        let at = (start % self.cap as u64) as usize;
        // The payload first and the length last: a record cut by a kill
        // fails its CRC.
        self.put(at + RECORD, payload);
        self.put(at + 8, &seq.to_le_bytes());
        self.put(at + 4, &crc(seq, payload).to_le_bytes());
        self.put(at, &(payload.len() as u32).to_le_bytes());
        self.head = start + need as u64;
        Some(self.head)
    }

    fn put(&mut self, at: usize, bytes: &[u8]) {
        self.map[HEADER + at..HEADER + at + bytes.len()].copy_from_slice(bytes);
    }

    /// The database has every record before `position`, the last of them
    /// numbered `seq`: their room may be written again.
    pub fn advance(&mut self, position: u64, seq: u64) {
        if position > self.tail && position <= self.head {
            self.tail = position;
            self.tail_seq = seq;
            // The number first: a reader that finds the new tail finds it.
            self.map[24..32].copy_from_slice(&seq.to_le_bytes());
            self.map[16..24].copy_from_slice(&position.to_le_bytes());
        }
    }

    /// The journal's file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// A journal whose process is gone, locked by this one, with the records
/// it still holds.
#[derive(Debug)]
pub struct Orphan {
    /// Its id.
    pub id: String,
    /// Its file.
    pub path: PathBuf,
    /// Its records (sequence number, payload), oldest first.
    pub records: Vec<(u64, Vec<u8>)>,
    _file: File,
}

impl Orphan {
    /// Removes the journal: every record of it is counted.
    pub fn remove(self) {
        if let Err(e) = std::fs::remove_file(&self.path) {
            tracing::warn!(path = %self.path.display(), "cannot remove a replayed ledger journal: {e}");
        }
    }
}

/// The journals in `dir` no live process holds (their lock can be taken),
/// other than `own`, read. A file that is not a journal is left alone and
/// named in the log.
pub fn orphans(dir: &Path, own: &str) -> Vec<Orphan> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(id) = path.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(SUFFIX)) else {
            continue;
        };
        if id == own {
            continue;
        }
        let Ok(file) = OpenOptions::new().read(true).write(true).open(&path) else { continue };
        // Held: its process lives (an upgrade's old process, say).
        if file.try_lock().is_err() {
            continue;
        }
        match read(&file) {
            Ok(records) => out.push(Orphan { id: id.to_string(), path, records, _file: file }),
            Err(e) => tracing::warn!(path = %path.display(), "not a ledger journal, left alone: {e}"),
        }
    }
    out.sort_by(|a, b| a.id.cmp(&b.id));
    out
}

/// The records of a journal file from its tail on, until the first that
/// is cut, fails its CRC or is older than the one before it (the rest of
/// an earlier lap).
fn read(file: &File) -> io::Result<Vec<(u64, Vec<u8>)>> {
    let len = usize::try_from(file.metadata()?.len()).unwrap_or(0);
    if len < HEADER + 64 {
        return Err(io::Error::other("too short"));
    }
    // SAFETY: the file is locked by this process (its writer is gone), so
    // nothing changes or truncates it while the view is read.
    #[allow(unsafe_code)]
    let map = unsafe { memmap2::Mmap::map(file)? };
    if &map[0..8] != MAGIC {
        return Err(io::Error::other("no journal header"));
    }
    let word = |at: usize| u64::from_le_bytes(map[at..at + 8].try_into().unwrap_or_default());
    let cap = usize::try_from(word(8)).unwrap_or(0);
    if cap == 0 || cap % 8 != 0 || HEADER + cap != len {
        return Err(io::Error::other("ring size does not match the file"));
    }
    let ring = &map[HEADER..];
    let mut pos = word(16);
    let end = pos + cap as u64;
    let mut last = word(24);
    let mut out = Vec::new();
    while pos < end {
        let at = (pos % cap as u64) as usize;
        let room = cap - at;
        let length = u32::from_le_bytes(ring[at..at + 4].try_into().unwrap_or_default());
        if length == SKIP {
            pos += room as u64;
            continue;
        }
        let need = align8(RECORD + length as usize);
        if need > room {
            break;
        }
        let sum = u32::from_le_bytes(ring[at + 4..at + 8].try_into().unwrap_or_default());
        let seq = u64::from_le_bytes(ring[at + 8..at + 16].try_into().unwrap_or_default());
        let payload = &ring[at + RECORD..at + RECORD + length as usize];
        if sum != crc(seq, payload) || seq <= last {
            break;
        }
        last = seq;
        out.push((seq, payload.to_vec()));
        pos += need as u64;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory under the system's temporary one.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("robotsgate-journal-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn reopen(j: &Journal) -> Vec<(u64, Vec<u8>)> {
        read(&File::open(j.path()).unwrap()).unwrap()
    }

    #[test]
    fn records_come_back_in_order_across_laps() {
        let dir = scratch("laps");
        let mut j = Journal::create(dir.as_path(), 64 * 1024).unwrap();
        let mut seq = 0;
        // Several laps, the tail following the head as the database would.
        for lap in 0..5 {
            let mut ends = Vec::new();
            for i in 0..300 {
                seq += 1;
                let payload = vec![(lap * 7 + i) as u8; 1 + (i * 13) % 200];
                ends.push(j.append(seq, &payload).expect("room"));
            }
            j.advance(ends[149], seq - 150);
            let back = reopen(&j);
            assert_eq!(back.len(), 150, "lap {lap}");
            assert_eq!(back[0].0, seq - 149);
            assert!(back.windows(2).all(|w| w[1].0 == w[0].0 + 1));
            j.advance(*ends.last().unwrap(), seq);
            assert!(reopen(&j).is_empty());
        }
    }

    #[test]
    fn a_full_ring_refuses_rather_than_overwrites() {
        let dir = scratch("full");
        let mut j = Journal::create(dir.as_path(), 64 * 1024).unwrap();
        let mut n = 0u64;
        while j.append(n + 1, &[1u8; 100]).is_some() {
            n += 1;
        }
        assert!(n > 400);
        assert_eq!(reopen(&j).len() as u64, n);
    }

    #[test]
    fn a_cut_record_ends_the_journal() {
        let dir = scratch("cut");
        let mut j = Journal::create(dir.as_path(), 64 * 1024).unwrap();
        j.append(1, b"one").unwrap();
        let end = j.append(2, b"two").unwrap();
        j.append(3, b"three").unwrap();
        // A kill in the middle of the third record's payload.
        let at = end as usize + RECORD;
        j.map[HEADER + at] ^= 0xff;
        let back = reopen(&j);
        assert_eq!(back, vec![(1, b"one".to_vec()), (2, b"two".to_vec())]);
    }

    #[test]
    fn a_live_journal_is_not_an_orphan_and_a_dead_one_is() {
        let dir = scratch("orphans");
        let mut live = Journal::create(dir.as_path(), 64 * 1024).unwrap();
        live.append(1, b"x").unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(live.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "clients' addresses are the gateway user's alone");
        assert!(orphans(dir.as_path(), "other").is_empty());
        let id = live.id().to_string();
        drop(live);
        let found = orphans(dir.as_path(), "other");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].id, id);
        assert_eq!(found[0].records, vec![(1, b"x".to_vec())]);
        drop(found);
        std::fs::write(dir.as_path().join("junk.journal"), b"nope").unwrap();
        assert_eq!(orphans(dir.as_path(), "other").len(), 1);
    }
}
