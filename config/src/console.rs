//! The `console:` part of the config: where the web console listens and
//! who may read it.

use std::path::PathBuf;

use serde::Deserialize;

/// The monitor's web console. Reading needs nothing; anything that writes
/// needs the admin token (see [`Config::admin_token`]).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Console {
    /// `host:port`; localhost by default, so nothing is exposed unasked.
    #[serde(default = "default_console_listen")]
    pub listen: String,
    /// The address people reach the console at (`https://robots.example.com`),
    /// for links in alerts; none without it.
    #[serde(default)]
    pub url: Option<String>,
    /// Show the console to anyone who reaches `listen`, with no token. Off
    /// by default: on an address others can reach, readers sign in with
    /// `ROBOTSGATE_CONSOLE_TOKEN`, since the pages show client addresses
    /// and sample URLs.
    #[serde(default)]
    pub public: bool,
    /// An htpasswd file of readers who sign in with a name and a password
    /// (HTTP basic auth), one `name:hash` a line, the hashes bcrypt, as
    /// `htpasswd -B` writes them; relative to the config file. With it,
    /// every page and API call asks, on any address, loopback included.
    #[serde(default)]
    pub htpasswd: Option<PathBuf>,
}

impl Default for Console {
    fn default() -> Console {
        Console { listen: default_console_listen(), url: None, public: false, htpasswd: None }
    }
}

fn default_console_listen() -> String {
    "127.0.0.1:8484".to_string()
}
