//! Rebuilds the crate when a migration is added or edited: `sqlx::migrate!`
//! embeds the files at compile time, and Cargo does not otherwise notice a
//! new file in `migrations/`.

fn main() {
    println!("cargo:rerun-if-changed=../migrations");
}
