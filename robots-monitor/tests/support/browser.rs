//! Headless Chromium for the console's browser tests: chromedriver on a
//! free port, and a session at 1,280 px.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::process::{Command, Stdio};

use fantoccini::{Client, ClientBuilder};
use testkit::{Proc, free_port, wait_listening};

/// chromedriver on a free port, or `None` (with a note) where Chromium is
/// not installed; under CI it must be (`scripts/setup.sh` installs it).
pub fn chromedriver() -> Option<(Proc, u16)> {
    let port = free_port();
    let child =
        Command::new("chromedriver").arg(format!("--port={port}")).stdout(Stdio::null()).stderr(Stdio::null()).spawn();
    match child {
        Ok(c) => {
            let p = Proc(c);
            assert!(wait_listening(SocketAddr::from(([127, 0, 0, 1], port)), 20), "chromedriver did not start");
            Some((p, port))
        }
        Err(e) => {
            assert!(std::env::var_os("CI").is_none(), "chromedriver is required under CI: {e}");
            eprintln!("chromedriver not installed ({e}); skipping the browser tests");
            None
        }
    }
}

pub async fn browser(port: u16) -> Client {
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        serde_json::json!({
            "binary": "/usr/bin/chromium",
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900"]
        }),
    );
    ClientBuilder::native()
        .capabilities(caps)
        .connect(&format!("http://127.0.0.1:{port}"))
        .await
        .expect("a Chromium session")
}
