//! What the gateway decides about `/robots.txt`: the copy it serves and the
//! last good one behind it (`store`), kept fresh from the origin by the
//! refresher (`refresher`: its parts; `refresh`: the refresh), judged by
//! the gate before a change is served (`gate`, over the declarations and
//! holds of `hold`), and shared with the fleet through the database
//! (`shared`). Files import downwards only: hold, store, shared, then
//! refresher, gate, refresh.

pub mod gate;
pub mod hold;
pub mod listed;
pub mod refresh;
pub mod refresher;
pub mod shared;
pub mod sitemaps;
pub mod store;
