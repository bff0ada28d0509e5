//! What the gateway knows and does about crawlers: who a request claims to
//! be (`claim`) and whether that is verified (`verify`), a site's AI policy
//! (`ai`), crawl budgets (`budget`, kept in shape by `reshape`), and the
//! compliance ledger (`ledger`, with its `journal`).

pub mod ai;
pub mod budget;
pub mod claim;
pub mod journal;
pub mod ledger;
pub mod reshape;
pub mod verify;
