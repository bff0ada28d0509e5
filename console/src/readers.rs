//! The console's readers who sign in with a name and a password (HTTP
//! basic auth): an htpasswd file of bcrypt hashes, as `htpasswd -B` writes
//! it, read once when the console starts. Other schemes htpasswd offers
//! (MD5 `$apr1$`, SHA-1 `{SHA}`, crypt) are refused by file and line: they
//! are fast to guess.
//!
//! A browser sends the password with every request, and bcrypt is slow by
//! design, so a password found right is remembered for a few minutes by a
//! digest of the name and password (never the password itself); a wrong
//! one is checked in full every time, at most one check a core at once.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

/// How long a right password is taken without running bcrypt again.
const REMEMBER: Duration = Duration::from_secs(300);
/// At most this many remembered sign-ins; past it, all are forgotten.
const REMEMBER_MOST: usize = 1024;

/// The readers of an htpasswd file.
#[derive(Debug)]
pub struct Readers {
    /// Name and bcrypt hash, in the file's order.
    users: Vec<(String, String)>,
    /// Digests of (name, password) found right, and when.
    recent: Mutex<HashMap<[u8; 32], Instant>>,
    /// At most one bcrypt run a core at a time: a flood of wrong passwords
    /// queues here instead of filling the blocking pool and every core.
    checks: tokio::sync::Semaphore,
}

impl Readers {
    /// Reads `path` (`console.htpasswd`): blank lines and `#` comments are
    /// skipped; every other line is `name:hash` with a bcrypt hash. An
    /// error names the file and line, and what to do.
    pub fn read(path: &Path) -> Result<Readers, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("console.htpasswd {}: cannot read it: {e}", path.display()))?;
        Readers::parse(&text, path)
    }

    /// Parses an htpasswd file's text; `path` only names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Readers, String> {
        let at = |n: usize, why: String| format!("console.htpasswd {} line {n}: {why}", path.display());
        let mut users: Vec<(String, String)> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim_end_matches('\r');
            if line.trim().is_empty() || line.trim_start().starts_with('#') {
                continue;
            }
            let Some((name, hash)) = line.split_once(':') else {
                return Err(at(i + 1, "no `:` between the name and the hash".into()));
            };
            if name.is_empty() {
                return Err(at(i + 1, "the name is empty".into()));
            }
            let scheme = match hash {
                h if ["$2a$", "$2b$", "$2x$", "$2y$"].iter().any(|p| h.starts_with(p)) => None,
                h if h.starts_with("$apr1$") => Some("MD5 (`$apr1$`)"),
                h if h.starts_with("{SHA}") => Some("SHA-1 (`{SHA}`)"),
                h if h.starts_with("$5$") || h.starts_with("$6$") => Some("SHA-crypt"),
                h if h.starts_with("$argon2") => Some("Argon2"),
                _ => Some("crypt or plain text"),
            };
            if let Some(scheme) = scheme {
                return Err(at(
                    i + 1,
                    format!(
                        "`{name}`'s password is hashed with {scheme}, which the console does not take: \
                         write it with `htpasswd -B {} {name}` (bcrypt)",
                        path.display()
                    ),
                ));
            }
            if hash.parse::<bcrypt::HashParts>().is_err() {
                return Err(at(i + 1, format!("`{name}`'s bcrypt hash is cut short or damaged")));
            }
            if users.iter().any(|(n, _)| n == name) {
                return Err(at(i + 1, format!("`{name}` is named twice")));
            }
            users.push((name.to_string(), hash.to_string()));
        }
        if users.is_empty() {
            return Err(format!("console.htpasswd {}: names no reader", path.display()));
        }
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        Ok(Readers { users, recent: Mutex::new(HashMap::new()), checks: tokio::sync::Semaphore::new(cores) })
    }

    /// How many readers the file names.
    pub fn len(&self) -> usize {
        self.users.len()
    }

    /// Whether it names none (never, once read).
    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
    }

    /// Whether an `Authorization: Basic …` value names a reader and their
    /// password.
    pub async fn admit(&self, basic: &str) -> bool {
        use base64::Engine as _;
        let Ok(pair) = base64::engine::general_purpose::STANDARD.decode(basic.trim()) else { return false };
        let Ok(pair) = String::from_utf8(pair) else { return false };
        let Some((name, password)) = pair.split_once(':') else { return false };
        let key: [u8; 32] = Sha256::new()
            .chain_update(b"robotsgate-reader\0")
            .chain_update(name.as_bytes())
            .chain_update(b"\0")
            .chain_update(password.as_bytes())
            .finalize()
            .into();
        if self.recent.lock().is_ok_and(|r| r.get(&key).is_some_and(|at| at.elapsed() < REMEMBER)) {
            return true;
        }
        // An unknown name costs a bcrypt run too, so that timing does not
        // tell names apart.
        let (known, hash) = match self.users.iter().find(|(n, _)| n == name) {
            Some((_, h)) => (true, h.clone()),
            None => (false, self.users[0].1.clone()),
        };
        let password = password.to_string();
        let Ok(_turn) = self.checks.acquire().await else { return false };
        let right = tokio::task::spawn_blocking(move || bcrypt::verify(password, &hash).unwrap_or(false))
            .await
            .unwrap_or(false);
        if known
            && right
            && let Ok(mut recent) = self.recent.lock()
        {
            if recent.len() >= REMEMBER_MOST {
                recent.clear();
            }
            recent.insert(key, Instant::now());
        }
        known && right
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_bcrypt_file_admits_its_readers_only() {
        let hash = bcrypt::hash("s3cret", 4).unwrap();
        let text = format!("# readers\n\nalice:{hash}\r\nbob:{}\n", bcrypt::hash("other", 4).unwrap());
        let readers = Readers::parse(&text, Path::new("r")).unwrap();
        let basic = |s: &str| {
            use base64::Engine as _;
            base64::engine::general_purpose::STANDARD.encode(s)
        };
        assert!(readers.admit(&basic("alice:s3cret")).await);
        assert!(readers.admit(&basic("alice:s3cret")).await, "remembered");
        assert!(!readers.admit(&basic("alice:s3cre")).await);
        assert!(!readers.admit(&basic("bob:s3cret")).await);
        assert!(!readers.admit(&basic("carol:s3cret")).await);
        assert!(!readers.admit("not base64!").await);
        assert!(readers.admit(&basic("bob:other")).await);
    }

    #[test]
    fn other_schemes_and_broken_lines_are_named_by_line() {
        let p = Path::new("/etc/robotsgate/readers");
        for (text, want) in [
            ("alice:$apr1$abc$def\n", "line 1: `alice`'s password is hashed with MD5"),
            ("# c\nbob:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=\n", "line 2: `bob`'s password is hashed with SHA-1"),
            ("carol:plain\n", "crypt or plain text"),
            ("dave\n", "line 1: no `:`"),
            ("erin:$2y$05$short\n", "cut short or damaged"),
            ("\n# nobody\n", "names no reader"),
        ] {
            let e = Readers::parse(text, p).unwrap_err();
            assert!(e.contains(want) && e.contains("/etc/robotsgate/readers"), "{text:?}: {e}");
        }
        let e = Readers::parse("alice:$apr1$x$y\n", p).unwrap_err();
        assert!(e.contains("htpasswd -B /etc/robotsgate/readers alice"), "{e}");
    }
}
