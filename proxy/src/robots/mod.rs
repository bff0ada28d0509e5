//! What the gateway decides about `/robots.txt`: the copy it serves and the
//! last good one behind it (`store`), kept fresh from the origin
//! (`refresh`), judged by the gate before a change is served (`gate`), and
//! shared with the fleet through the database (`shared`).

pub mod gate;
pub mod refresh;
pub mod shared;
pub mod store;
