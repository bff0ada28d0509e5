//! The ledger's judge: a background task that drains the queue, keeps each
//! site's book (what it served, each crawler's last fetch, the counts not
//! yet written), replays journals a stopped process left, and writes the
//! counts to the shared database in one transaction.

use super::*;

/// One site's book: what it served, each crawler's last fetch, and the
/// counts not yet written.
#[derive(Debug, Default)]
pub(super) struct Book {
    pub(super) timeline: Timeline,
    /// What the timeline's last outcome is, to tell a change.
    pub(super) last: Option<Seen>,
    /// When `last` was served from.
    pub(super) last_at: At,
    pub(super) fetches: HashMap<String, Fetch>,
    pub(super) rows: HashMap<Key, Tally>,
    pub(super) reads: HashMap<String, Read>,
}

/// A served state, told apart from another.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Seen {
    File(String),
    Status(u16),
    Unreachable,
}

/// The background task: judges, counts and writes.
#[derive(Debug)]
pub struct Judge {
    pub(super) ledger: Arc<Ledger>,
    pub(super) catalogue: Catalogue,
    pub(super) identity: Option<Arc<Identity>>,
    pub(super) store: Arc<RobotsStore>,
    pub(super) shared: Arc<Shared>,
    pub(super) flush: Duration,
    pub(super) max_rows: usize,
    /// How each site's origin reads slashes (see `Site::slashes`).
    pub(super) slashes: HashMap<String, Slashes>,
}

/// A served copy, as the judge knows it.
#[derive(Debug)]
pub(super) struct Known {
    /// Its stand-in revision: negative, until the database names it.
    pub(super) id: i64,
    pub(super) served: Arc<Served>,
    /// What it means to crawlers, made once: its compiled rules are cloned
    /// here, not at every request judged against it.
    pub(super) outcome: Outcome,
}

/// The judge's memory, owned by its task.
#[derive(Debug, Default)]
pub(super) struct Books {
    pub(super) sites: HashMap<Arc<str>, Book>,
    /// Every served copy seen, by site and ETag.
    pub(super) copies: HashMap<(Arc<str>, String), Known>,
    /// Stand-in to stored revision.
    pub(super) stored: HashMap<i64, i64>,
    pub(super) next: i64,
    pub(super) rows: usize,
    /// The longest cache window of any crawler seen.
    pub(super) longest: Duration,
    /// This process's journal: the last event judged (its number and
    /// where its record ends), and the number the database marks counted.
    pub(super) own: Option<(u64, u64)>,
    pub(super) marked: u64,
    /// Journals of processes that are gone, judged, with the last number
    /// judged: marked and removed at the next write.
    pub(super) adopted: Vec<(crate::crawlers::journal::Orphan, u64)>,
    /// When kept copies were last pruned.
    pub(super) pruned: Option<std::time::Instant>,
}

impl Judge {
    /// The outcome of a state, registering a served copy under a stand-in
    /// revision; `None` when the gateway knows nothing yet.
    pub(super) fn outcome(&self, books: &mut Books, site: &Arc<str>, state: &State) -> Option<(Seen, Outcome)> {
        match state {
            State::Serve(served) => {
                let key = (Arc::clone(site), served.etag.clone());
                let next = books.next - 1;
                let copy = books.copies.entry(key).or_insert_with(|| Known {
                    id: next,
                    served: Arc::clone(served),
                    outcome: Outcome {
                        revision: Some(next),
                        status: Some(200),
                        policy: Arc::new(Policy::Rules(served.robots.clone())),
                    },
                });
                if copy.id == next {
                    books.next = next;
                    self.keep_copy(served);
                }
                Some((Seen::File(served.etag.clone()), copy.outcome.clone()))
            }
            State::NoFile(status) => Some((Seen::Status(*status), Outcome::status(*status))),
            // Requests for robots.txt went through to the origin: what it
            // last answered is what crawlers got.
            State::Unknown => {
                let health = self.store.health(site);
                match (health.last_status, &health.last_error) {
                    (Some(s), _) => Some((Seen::Status(s), Outcome::status(s))),
                    (None, Some(_)) => Some((Seen::Unreachable, Outcome::unreachable())),
                    (None, None) => None,
                }
            }
        }
    }

    /// Puts `state` on the site's timeline at `at` if it is a change.
    ///
    /// Events reach the judge a little after they happened, interleaved
    /// with its own samples, so `at` may be earlier than the timeline's
    /// last entry. What an event saw is what was served at its instant:
    /// if the timeline knows nothing that early, the state goes in at
    /// `at` even when it is the one last seen. (Without this, a request
    /// made just after a start, drained after the first sample, found no
    /// outcome at its instant and was judged obeyed.)
    pub(super) fn saw(&self, books: &mut Books, site: &Arc<str>, state: &State, at: At) {
        let book = books.sites.get(site);
        let covered = book.is_some_and(|b| b.timeline.at(at).is_some());
        // The common case, the copy served before: nothing to build.
        if let (true, State::Serve(served), Some(Seen::File(etag))) =
            (covered, state, book.and_then(|b| b.last.as_ref()))
            && *etag == served.etag
        {
            return;
        }
        let Some((seen, outcome)) = self.outcome(books, site, state) else { return };
        let book = books.sites.entry(Arc::clone(site)).or_default();
        if book.last.as_ref() != Some(&seen) || !covered {
            book.timeline.push(at, outcome);
            // The last state is the latest one on the timeline.
            if book.last_at <= at {
                book.last = Some(seen);
                book.last_at = at;
            }
        }
    }

    /// The answer to count: a pending one asked again, off the request path.
    pub(super) async fn settle(&self, crawler: &robotsgate_crawlers::Crawler, e: &Event) -> Judged {
        let answer = match (e.identity, &self.identity, e.client) {
            (Some(Answer::Pending), Some(identity), Some(ip)) => Some(identity.verify(crawler, ip, None).await.answer),
            (a, _, _) => a,
        };
        // Verification off: the claim is neither confirmed nor refuted.
        answer.map_or(Judged::Unverifiable, Judged::from)
    }

    /// Judges every event the request path left since the last drain.
    pub(super) async fn drain(&self, books: &mut Books, taken: &mut Vec<Event>) {
        {
            let mut pending = self.ledger.buffer.lock().unwrap_or_else(|e| e.into_inner());
            std::mem::swap(&mut pending.events, taken);
        }
        if let Some(e) = taken.iter().rev().find(|e| e.journal_end > 0) {
            books.own = Some((e.at.seq, e.journal_end));
        }
        for e in taken.drain(..) {
            self.take(books, e).await;
            self.ledger.judged.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub(super) async fn take(&self, books: &mut Books, e: Event) {
        self.saw(books, &e.site, &e.state, e.at);
        let Some((crawler, _)) = self.catalogue.claim(&e.word) else { return };
        let identity = self.settle(crawler, &e).await;
        let window = crawler.robots_cache();
        books.longest = books.longest.max(window);
        let token = crawler.token.clone();
        let Some(target) = &e.target else {
            // A fetch is recorded, never judged; a spoofer's is not the crawler's.
            if identity == Judged::Spoofed {
                return;
            }
            let Some((_, outcome)) = self.outcome(books, &e.site, &e.state) else { return };
            let book = books.sites.entry(Arc::clone(&e.site)).or_default();
            let read = Read {
                at: e.at.ms,
                seq: i64::try_from(e.at.seq).unwrap_or(i64::MAX),
                revision: outcome.revision.unwrap_or(0),
                status: i64::from(outcome.status.unwrap_or(0)),
            };
            book.reads.insert(token.clone(), read);
            book.fetches.insert(token, Fetch { at: e.at, outcome });
            return;
        };
        let full = books.rows >= self.max_rows;
        let book = books.sites.entry(Arc::clone(&e.site)).or_default();
        let slashes = self.slashes.get(&*e.site).copied().unwrap_or_default();
        let request = Request { at: e.at, crawler: &e.word, identity, target, slashes };
        let mut j = robotsgate_compliance::judge(&request, book.fetches.get(&token), window, &book.timeline);
        if e.throttled {
            j.class = j.class.throttled();
        }
        let key = Key {
            crawler: token,
            identity: identity.as_str(),
            revision: j.revision.unwrap_or(0),
            line: i64::from(j.line.unwrap_or(0)),
            status: i64::from(j.status.unwrap_or(0)),
            class: j.class.as_str(),
            day: e.at.ms.div_euclid(DAY_MS),
        };
        let url = String::from_utf8_lossy(target);
        match book.rows.get_mut(&key) {
            Some(tally) => tally.add(e.at.ms, &url, j.stale),
            None if full => self.ledger.drop_one(),
            None => {
                let mut tally = Tally::default();
                tally.add(e.at.ms, &url, j.stale);
                book.rows.insert(key, tally);
                books.rows += 1;
                self.ledger.pending.store(books.rows as u64, Ordering::Relaxed);
                self.ledger.metrics.ledger_rows.set(i64::try_from(books.rows).unwrap_or(i64::MAX));
            }
        }
        if j.class == robotsgate_compliance::Class::Violation {
            self.ledger
                .metrics
                .ledger_violations
                .with_label_values(&[&*e.site, crawler.token.as_str(), identity.as_str()])
                .inc();
        }
    }

    /// Samples every site's served state, and forgets what no window reaches.
    pub(super) fn sample(&self, books: &mut Books) {
        let (ms, _) = now();
        let at = At { ms, seq: self.ledger.seq.fetch_add(1, Ordering::Relaxed) };
        let names: Vec<Arc<str>> = self.store.sites().map(Arc::from).collect();
        let keep = i64::try_from(books.longest.max(KEEP_AT_LEAST).as_millis()).unwrap_or(i64::MAX);
        for site in names {
            let state = self.store.state(&site);
            self.saw(books, &site, &state, at);
            if let Some(book) = books.sites.get_mut(&site) {
                book.timeline.forget_before(At::ms(ms.saturating_sub(keep)));
            }
        }
    }

    /// Writes the counts in one transaction; on failure they stay for the
    /// next write (within the bound).
    pub(super) async fn write(&self, books: &mut Books) {
        // The judge alone fills `books`, so every event judged by now is in them.
        let judged = self.ledger.judged.load(Ordering::Relaxed);
        let pending = books.sites.values().any(|b| !b.rows.is_empty() || !b.reads.is_empty())
            || books.own.is_some_and(|(seq, _)| seq > books.marked)
            || !books.adopted.is_empty();
        if !pending {
            self.ledger.settled.store(judged, Ordering::Relaxed);
            self.learn(books).await;
            return;
        }
        let result = match self.shared.db().await {
            Some(db) => match tokio::time::timeout(CALL_TIMEOUT * 2, write_books(&db, &self.ledger, books)).await {
                Ok(r) => r.map_err(|e| e.to_string()),
                Err(_) => Err("timed out".to_string()),
            },
            None => Err("the database cannot be reached".to_string()),
        };
        if result.is_ok() {
            self.ledger.settled.store(judged, Ordering::Relaxed);
        }
        self.settle_write(books, result);
        self.learn(books).await;
    }

    /// Clears what was written, or keeps it, and reports either.
    pub(super) fn settle_write(&self, books: &mut Books, result: Result<u64, String>) {
        let mut report = self.ledger.report.lock().unwrap_or_else(|e| e.into_inner());
        match result {
            Ok(written) => {
                for book in books.sites.values_mut() {
                    book.rows.clear();
                    book.reads.clear();
                }
                books.rows = 0;
                // The journal's room up to the last event counted is free again.
                if let Some((seq, end)) = books.own {
                    books.marked = seq;
                    let mut pending = self.ledger.buffer.lock().unwrap_or_else(|e| e.into_inner());
                    if let Some(journal) = pending.journal.as_mut() {
                        journal.advance(end, seq);
                    }
                }
                for (orphan, _) in books.adopted.drain(..) {
                    orphan.remove();
                }
                report.written += written;
                report.last_write = Some(u64::try_from(now().0 / 1000).unwrap_or(0));
                report.last_error = None;
                self.ledger.metrics.ledger_writes.with_label_values(&["ok"]).inc();
            }
            Err(e) => {
                tracing::warn!("cannot write the compliance ledger: {e}; keeping the counts for the next write");
                report.last_error = Some(e);
                self.ledger.metrics.ledger_writes.with_label_values(&["error"]).inc();
            }
        }
        self.ledger.pending.store(books.rows as u64, Ordering::Relaxed);
        self.ledger.metrics.ledger_rows.set(i64::try_from(books.rows).unwrap_or(i64::MAX));
    }

    /// Takes the fetches other gateways saw (newer than this one's) from
    /// the database, so a crawler that read robots.txt through a replica
    /// is judged by what it got there.
    pub(super) async fn learn(&self, books: &mut Books) {
        let Some(db) = self.shared.db().await else { return };
        let sites: Vec<Arc<str>> = books.sites.keys().cloned().collect();
        for site in sites {
            let Ok(Ok(reads)) =
                tokio::time::timeout(CALL_TIMEOUT, robotsgate_history::ledger::reads(&db.pool, &site)).await
            else {
                return;
            };
            for (token, r) in reads {
                let at = At { ms: r.at, seq: u64::try_from(r.seq).unwrap_or(0) };
                let book = books.sites.entry(Arc::clone(&site)).or_default();
                if book.fetches.get(&token).is_some_and(|f| f.at >= at)
                    || book.reads.contains_key(&token)
                    || r.content_unknown()
                {
                    continue;
                }
                let outcome = if r.revision > 0 {
                    let local = books.stored.iter().find(|(_, s)| **s == r.revision).map(|(l, _)| *l);
                    let known =
                        local.and_then(|l| books.copies.values().find(|c| c.id == l)).map(|c| c.outcome.clone());
                    match known {
                        Some(o) => o,
                        None => {
                            let body = robotsgate_history::ledger::revision_body(&db.pool, &site, r.revision).await;
                            match body {
                                Ok(Some(body)) => Outcome::body(r.revision, &body),
                                _ => continue,
                            }
                        }
                    }
                } else if r.status > 0 {
                    Outcome::status(u16::try_from(r.status).unwrap_or(500))
                } else {
                    Outcome::unreachable()
                };
                let book = books.sites.entry(Arc::clone(&site)).or_default();
                book.fetches.insert(token, Fetch { at, outcome });
            }
        }
    }
}

impl Judge {
    /// Keeps a served copy where a replay can find it: a journal names
    /// copies by ETag only. Written once per copy, by this task, never on
    /// the request path.
    pub(super) fn keep_copy(&self, served: &Served) {
        let Some((_, dir)) = &self.ledger.journal else { return };
        let path = copy_path(dir, &served.etag);
        if path.exists() {
            return;
        }
        let mut bytes = Vec::with_capacity(4 + served.origin.len() + served.body.len());
        bytes.extend_from_slice(&u32::try_from(served.origin.len()).unwrap_or(u32::MAX).to_le_bytes());
        bytes.extend_from_slice(&served.origin);
        bytes.extend_from_slice(&served.body);
        let write = || -> std::io::Result<()> {
            std::fs::create_dir_all(path.parent().unwrap_or(dir))?;
            let part = path.with_extension("part");
            std::fs::write(&part, &bytes)?;
            std::fs::rename(&part, &path)
        };
        if let Err(e) = write() {
            tracing::warn!(path = %path.display(), "cannot keep a served copy for the ledger's journal: {e}");
        }
    }

    /// The copy an ETag names: the one served now, one this judge knows,
    /// or one kept on disk.
    pub(super) fn copy(&self, books: &Books, site: &Arc<str>, etag: &str) -> Option<Arc<Served>> {
        if let State::Serve(now) = &*self.store.state(site)
            && now.etag == etag
        {
            return Some(Arc::clone(now));
        }
        if let Some(k) = books.copies.get(&(Arc::clone(site), etag.to_string())) {
            return Some(Arc::clone(&k.served));
        }
        let (_, dir) = self.ledger.journal.as_ref()?;
        let bytes = std::fs::read(copy_path(dir, etag)).ok()?;
        let (len, rest) = bytes.split_first_chunk::<4>()?;
        let len = usize::try_from(u32::from_le_bytes(*len)).ok()?;
        let (origin, body) = (rest.get(..len)?, rest.get(len..)?);
        let body = bytes::Bytes::copy_from_slice(body);
        let robots = rules::Robots::parse(&body);
        // Not registered: a replayed copy is not served.
        let counter = prometheus::IntCounter::new("replayed_copy", "unused").ok()?;
        let mut served =
            Served::new(body, robots, crate::robots::store::Origin::LastGood, UNIX_EPOCH, Duration::ZERO, counter);
        served.origin = bytes::Bytes::copy_from_slice(origin);
        (served.etag == etag).then(|| Arc::new(served))
    }

    /// Judges the events of journals whose processes are gone, those the
    /// database does not count yet; they are marked counted, and their
    /// files removed, with the next write. Waits for the database.
    pub(super) async fn adopt(&self, books: &mut Books) {
        let Some((own, dir)) = &self.ledger.journal else { return };
        if books.pruned.is_none_or(|at| at.elapsed() > PRUNE_EVERY) {
            books.pruned = Some(std::time::Instant::now());
            prune_copies(dir);
        }
        let held: Vec<String> = books.adopted.iter().map(|(o, _)| o.id.clone()).collect();
        let orphans: Vec<_> =
            crate::crawlers::journal::orphans(dir, own).into_iter().filter(|o| !held.contains(&o.id)).collect();
        if orphans.is_empty() {
            return;
        }
        let Some(db) = self.shared.db().await else { return };
        for orphan in orphans {
            let counted = match robotsgate_history::ledger::journal_counted(&db.pool, &orphan.id).await {
                Ok(c) => u64::try_from(c.unwrap_or(0)).unwrap_or(0),
                // Asked again at the next flush.
                Err(e) => {
                    tracing::warn!("cannot read the ledger journals' marks: {e}");
                    return;
                }
            };
            let (mut judged, mut lost, mut last) = (0u64, 0u64, counted);
            for (seq, payload) in &orphan.records {
                if *seq <= counted {
                    continue;
                }
                last = *seq;
                match self.replayed(books, *seq, payload) {
                    Some(event) => {
                        self.take(books, event).await;
                        judged += 1;
                    }
                    None => lost += 1,
                }
            }
            self.ledger.replayed.fetch_add(judged, Ordering::Relaxed);
            if judged > 0 || lost > 0 {
                tracing::warn!(journal = %orphan.id, judged, lost, "counted the ledger events a stopped process left");
            }
            books.adopted.push((orphan, last));
        }
    }

    /// An event back from a journal record; `None` when the record is not
    /// one, or names a copy no longer to be found.
    pub(super) fn replayed(&self, books: &Books, seq: u64, payload: &[u8]) -> Option<Event> {
        let r = decode(payload)?;
        let site: Arc<str> = Arc::from(r.site.as_str());
        let state = match r.state {
            Recorded::Unknown => State::Unknown,
            Recorded::NoFile(status) => State::NoFile(status),
            Recorded::Serve(etag) => State::Serve(self.copy(books, &site, &etag)?),
        };
        Some(Event {
            site,
            word: r.word.into_boxed_str(),
            identity: r.identity,
            client: r.client,
            at: At { ms: r.ms, seq },
            state: Arc::new(state),
            target: r.target.map(Vec::into_boxed_slice),
            throttled: r.throttled,
            journal_end: 0,
        })
    }
}

/// How often kept copies are pruned.
pub(super) const PRUNE_EVERY: Duration = Duration::from_secs(3600);
/// How long a kept copy outlives its last write: a journal left longer
/// than this by a stopped gateway is replayed against the copies still
/// known (the one served, the judge's) or not at all. A file that changes
/// at every fetch would otherwise leave a copy per fetch forever.
pub(super) const KEEP_COPIES: Duration = Duration::from_secs(7 * 86_400);

/// Removes kept copies older than [`KEEP_COPIES`].
pub(super) fn prune_copies(dir: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(dir.join("copies")) else { return };
    for entry in entries.flatten() {
        let old =
            entry.metadata().and_then(|m| m.modified()).is_ok_and(|t| t.elapsed().unwrap_or_default() > KEEP_COPIES);
        if old {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Where a served copy is kept for replays.
pub(super) fn copy_path(dir: &std::path::Path, etag: &str) -> std::path::PathBuf {
    let name: String = etag.chars().filter(char::is_ascii_alphanumeric).collect();
    dir.join("copies").join(format!("{name}.copy"))
}

/// Writes every book's rows and reads, stand-in revisions replaced by the
/// stored ones, in one transaction; returns the rows written.
pub(super) async fn write_books(
    db: &robotsgate_history::Db,
    ledger: &Ledger,
    books: &mut Books,
) -> Result<u64, robotsgate_history::DbError> {
    let mut tx = db.pool.begin().await?;
    let mut written = 0u64;
    let names: Vec<Arc<str>> = books.sites.keys().cloned().collect();
    for site in names {
        let (ms, _) = now();
        // Name every stand-in this site's rows and reads use.
        let book = &books.sites[&site];
        let mut used: Vec<i64> = book
            .rows
            .keys()
            .map(|k| k.revision)
            .chain(book.reads.values().map(|r| r.revision))
            .filter(|r| *r < 0)
            .collect();
        used.sort_unstable();
        used.dedup();
        for local in used {
            if books.stored.contains_key(&local) {
                continue;
            }
            let Some(served) = books
                .copies
                .iter()
                .find(|((s, _), c)| **s == *site && c.id == local)
                .map(|(_, c)| Arc::clone(&c.served))
            else {
                continue;
            };
            let recorded = robotsgate_history::record(&mut tx, &site, &served.origin, ms).await?;
            books.stored.insert(local, recorded.id);
        }
        let stored = |r: i64| if r < 0 { books.stored.get(&r).copied().unwrap_or(0) } else { r };
        let book = &books.sites[&site];
        let rows: HashMap<Key, Tally> = book
            .rows
            .iter()
            .map(|(k, t)| (Key { revision: stored(k.revision), ..k.clone() }, t.clone()))
            .fold(HashMap::new(), |mut acc, (k, t)| {
                acc.entry(k).and_modify(|have: &mut Tally| have.merge(&t)).or_insert(t);
                acc
            });
        let reads: HashMap<String, Read> =
            book.reads.iter().map(|(c, r)| (c.clone(), Read { revision: stored(r.revision), ..*r })).collect();
        robotsgate_history::ledger::write_rows(&mut tx, &site, &rows).await?;
        robotsgate_history::ledger::write_reads(&mut tx, &site, &reads).await?;
        written += rows.len() as u64;
    }
    let (ms, _) = now();
    let own = ledger.journal.as_ref().zip(books.own).filter(|(_, (seq, _))| *seq > books.marked);
    let marks = own.map(|((id, _), (seq, _))| (id.as_str(), seq)).into_iter();
    for (journal, seq) in marks.chain(books.adopted.iter().map(|(o, seq)| (o.id.as_str(), *seq))) {
        let seq = i64::try_from(seq).unwrap_or(i64::MAX);
        robotsgate_history::ledger::mark_journal(&mut tx, journal, seq, ms).await?;
    }
    tx.commit().await?;
    Ok(written)
}

#[async_trait]
impl BackgroundService for Judge {
    async fn start(&self, mut shutdown: ShutdownWatch) {
        RUNNING.store(true, Ordering::SeqCst);
        let mut books = Books::default();
        let mut flush = tokio::time::interval(self.flush);
        let mut sample = tokio::time::interval(SAMPLE_EVERY);
        let mut drain = tokio::time::interval(DRAIN_EVERY);
        flush.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        drain.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut taken = Vec::new();
        // What a killed process left is counted before anything new.
        self.adopt(&mut books).await;
        loop {
            tokio::select! {
                _ = drain.tick() => self.drain(&mut books, &mut taken).await,
                _ = sample.tick() => self.sample(&mut books),
                _ = flush.tick() => {
                    self.adopt(&mut books).await;
                    self.drain(&mut books, &mut taken).await;
                    self.write(&mut books).await;
                }
                _ = shutdown.changed() => {
                    // What is left, then one last write.
                    self.drain(&mut books, &mut taken).await;
                    self.write(&mut books).await;
                    SETTLED.store(true, Ordering::SeqCst);
                    return;
                }
            }
        }
    }
}
