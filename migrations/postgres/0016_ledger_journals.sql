-- The gateway's ledger journals (proxy/src/journal.rs): for each journal,
-- the sequence number through which its events are counted in the
-- ledger's rows. Moved in the transaction that adds those counts, so a
-- journal replayed after a kill -9 counts each event exactly once.
CREATE TABLE ledger_journals (
    journal TEXT PRIMARY KEY,
    counted_through BIGINT NOT NULL,
    at BIGINT NOT NULL
);
