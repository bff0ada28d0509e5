//! The admin token, read one way for every process and surface: the
//! gateway's admin API, the console's release and retry forms, and the
//! API's release. Its sources, in the order they win:
//!
//! 1. `ROBOTSGATE_ADMIN_TOKEN` in the environment;
//! 2. the first line of `proxy.admin_token_file` (systemd's
//!    `LoadCredential=`), relative to the config file like every path;
//! 3. `proxy.admin_token`.
//!
//! One reader, so that a token that opens one surface opens them all, and
//! a file that cannot be read is the same error everywhere.

use std::path::Path;

use crate::{Config, ProxySettings};

/// The environment variable that gives the admin token, ahead of the config.
pub const ADMIN_TOKEN_ENV: &str = "ROBOTSGATE_ADMIN_TOKEN";

/// The admin token from the environment, else `file`'s first line, else
/// `inline`; `Ok(None)` with none. A file that cannot be read, or holds no
/// token, is an error naming it.
fn read(file: Option<&Path>, inline: Option<&str>) -> Result<Option<String>, String> {
    if let Some(t) = std::env::var(ADMIN_TOKEN_ENV).ok().filter(|t| !t.trim().is_empty()) {
        return Ok(Some(t.trim().to_string()));
    }
    if let Some(path) = file {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("proxy.admin_token_file: cannot read {}: {e}", path.display()))?;
        let token = text.lines().next().unwrap_or("").trim();
        if token.is_empty() {
            return Err(format!("proxy.admin_token_file: {} holds no token on its first line", path.display()));
        }
        return Ok(Some(token.to_string()));
    }
    Ok(inline.map(str::to_string).filter(|t| !t.trim().is_empty()))
}

impl ProxySettings {
    /// The admin token (see the module's order); `Ok(None)` with none.
    pub fn admin_token(&self) -> Result<Option<String>, String> {
        read(self.admin_token_file.as_deref(), self.admin_token.as_deref())
    }

    /// Whether the config itself gives a token (not the environment).
    pub fn configures_token(&self) -> bool {
        self.admin_token.is_some() || self.admin_token_file.is_some()
    }
}

impl Config {
    /// The admin token every surface of every process accepts: the
    /// environment's, else the `proxy:` section's file or value.
    pub fn admin_token(&self) -> Result<Option<String>, String> {
        match &self.proxy {
            Some(p) => p.admin_token(),
            None => read(None, None),
        }
    }
}

/// Whether `given` is `want`, compared in constant time for equal lengths.
pub fn same_token(want: &str, given: &str) -> bool {
    !want.is_empty()
        && want.len() == given.len()
        && want.bytes().zip(given.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}
