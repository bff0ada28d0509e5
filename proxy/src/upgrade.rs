//! Binary upgrades and reloads without an outage, on Pingora's socket
//! hand-over: a new process started with `--upgrade` listens on the upgrade
//! socket; the old one, on SIGQUIT, sends it its listening sockets, stops
//! accepting and finishes what it has in flight. No connection is refused
//! meanwhile, since the kernel's listen queues never close.
//!
//! What Pingora leaves to its user, and this module does:
//! - **A SIGQUIT with nobody waiting is ignored.** Pingora would retry for
//!   five seconds, give up, close every listener and exit 0: an outage the
//!   service manager does not even restart. The old process hands over only
//!   when a socket newer than itself is there ([`waiting`]).
//! - **A failed hand-over exits non-zero** (see `main.rs`), so that
//!   `Restart=on-failure` brings the service back.
//! - **One command does the dance** ([`hand_over`], `robots-proxy upgrade
//!   --from PID`): start the new binary, wait for its socket, signal the
//!   old one, and report whether the new one took over. systemd's
//!   `ExecReload=` runs it; the new process tells systemd it is the main
//!   process now ([`notify`]).
//! - **The new process has what the old one had** ([`Inherited`]), whoever
//!   runs `upgrade`: robotsgate's variables from the old process's
//!   environment (its `ROBOTSGATE_ADMIN_TOKEN` above all) where this shell
//!   lacks them, and its standard output and error, reopened, so logs stay
//!   where they were. What cannot be handed over is refused before anything
//!   starts, and the old process serves on.
//! - **The socket lives in `state_dir`** (`proxy.upgrade_sock`), not in
//!   `/tmp`, which `PrivateTmp=` gives each start of a unit its own of.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Set when the listeners were handed to a new process (a graceful
/// upgrade): an idle keep-alive connection is then not closed under a
/// client about to reuse it, but waits for its next request and answers it
/// with `Connection: close`, so the client reconnects, to the new process,
/// having lost nothing. (On a stop, idle connections close at once.)
pub static UPGRADING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether the listeners went to a new process.
pub fn upgrading() -> bool {
    UPGRADING.load(std::sync::atomic::Ordering::Relaxed)
}

/// Whether a new process waits on `sock` for this one's listeners: the
/// socket exists and was made after `since` (this process's start), so a
/// leftover of an earlier upgrade does not count.
pub fn waiting(sock: &Path, since: SystemTime) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(sock).is_ok_and(|m| m.file_type().is_socket() && m.modified().is_ok_and(|t| t >= since))
}

/// Tells the service manager `state` (`READY=1`, `MAINPID=…`) on the socket
/// `NOTIFY_SOCKET` names (systemd's `Type=notify`); nothing without one.
pub fn notify(state: &str) {
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else { return };
    let Ok(socket) = std::os::unix::net::UnixDatagram::unbound() else { return };
    let path = PathBuf::from(path);
    let sent = match path.to_str().and_then(|p| p.strip_prefix('@')) {
        // An abstract socket (systemd's usual): a name, not a file.
        Some(name) => {
            use std::os::linux::net::SocketAddrExt;
            std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())
                .and_then(|addr| socket.send_to_addr(state.as_bytes(), &addr))
        }
        None => socket.send_to(state.as_bytes(), &path),
    };
    if let Err(e) = sent {
        tracing::warn!(error = %e, "could not notify the service manager");
    }
}

/// Says `READY=1` (and this process's pid as the main one) to the service
/// manager once every address in `addrs` accepts connections: at start, and
/// after taking the listeners over from an old process.
#[derive(Debug)]
pub struct Ready {
    /// The plain listeners and the admin listener.
    pub addrs: Vec<std::net::SocketAddr>,
    /// Where this process writes its pid once it serves
    /// ([`PID_FILE`] in `state_dir`): what `upgrade` without `--from`
    /// replaces. A new process that took over writes its own.
    pub pid_file: PathBuf,
}

/// The pid file's name in `state_dir`.
pub const PID_FILE: &str = "robots-proxy.pid";

/// The gateway serving from `state_dir`, by its pid file: `upgrade`'s
/// `--from` when none is given, so that on a host with several gateways
/// the one of this config is replaced, never another.
pub fn serving(state_dir: &Path) -> Result<u32, String> {
    let path = state_dir.join(PID_FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!("no running gateway is recorded for this config ({}: {e}); give --from PID", path.display())
    })?;
    let pid: u32 =
        text.trim().parse().map_err(|_| format!("{} holds `{}`, not a process id", path.display(), text.trim()))?;
    if !alive(pid) {
        return Err(format!("{} names process {pid}, which is not running; start the gateway instead", path.display()));
    }
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    if !cmdline.split(|b| *b == 0).next().is_some_and(|argv0| argv0.ends_with(b"robots-proxy")) {
        return Err(format!("{} names process {pid}, which is not robots-proxy; give --from PID", path.display()));
    }
    Ok(pid)
}

#[async_trait::async_trait]
impl pingora::services::background::BackgroundService for Ready {
    async fn start(&self, _shutdown: pingora::server::ShutdownWatch) {
        let until = tokio::time::Instant::now() + Duration::from_secs(60);
        for addr in &self.addrs {
            while tokio::net::TcpStream::connect(addr).await.is_err() {
                if tokio::time::Instant::now() > until {
                    tracing::warn!(%addr, "not listening after a minute; telling the service manager ready anyway");
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        // Written by rename, so `upgrade` never reads half a number.
        let tmp = self.pid_file.with_extension("pid.new");
        let written = std::fs::write(&tmp, format!("{}\n", std::process::id()))
            .and_then(|()| std::fs::rename(&tmp, &self.pid_file));
        if let Err(e) = written {
            tracing::warn!(file = %self.pid_file.display(), "cannot write the pid file: {e}; upgrade needs --from");
        }
        notify(&format!("READY=1\nMAINPID={}", std::process::id()));
    }
}

/// Whether process `pid` runs (a zombie, exited but not reaped, does not).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| stat.rsplit_once(") ").is_some_and(|(_, rest)| !rest.starts_with('Z')))
}

/// What a new process takes from the old one.
#[derive(Debug, Default)]
pub struct Inherited {
    /// Variables to set in the new process.
    pub env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    /// The old process's standard output, reopened (`None`: ours is the same).
    pub stdout: Option<std::fs::File>,
    /// The old process's standard error, reopened.
    pub stderr: Option<std::fs::File>,
}

/// Whether a `/proc/PID/fd/N` link names a socket (`socket:[inode]`).
fn is_socket(link: &Path) -> bool {
    link.as_os_str().as_encoded_bytes().starts_with(b"socket:")
}

/// Whether a variable is the gateway's to hand over.
fn handed(key: &[u8]) -> bool {
    key.starts_with(b"ROBOTSGATE_") || key == b"RUST_LOG"
}

impl Inherited {
    /// What process `old` had that this one lacks. `config_token`: the
    /// config gives an admin token itself (so every process has it).
    /// `logs_here`: an output that cannot be reopened goes to ours instead
    /// of refusing.
    pub fn from(old: u32, config_token: bool, logs_here: bool) -> Result<Inherited, String> {
        use std::os::unix::ffi::OsStringExt;
        let mut out = Inherited::default();
        match std::fs::read(format!("/proc/{old}/environ")) {
            Ok(environ) => {
                for pair in environ.split(|b| *b == 0) {
                    let Some(eq) = pair.iter().position(|b| *b == b'=') else { continue };
                    let (key, value) = (&pair[..eq], &pair[eq + 1..]);
                    let key = std::ffi::OsString::from_vec(key.to_vec());
                    if handed(key.as_encoded_bytes()) && std::env::var_os(&key).is_none() {
                        out.env.push((key, std::ffi::OsString::from_vec(value.to_vec())));
                    }
                }
            }
            Err(e) if !config_token && std::env::var_os("ROBOTSGATE_ADMIN_TOKEN").is_none() => {
                return Err(format!(
                    "cannot read /proc/{old}/environ ({e}), so its admin token cannot be handed over, and neither                      this shell (ROBOTSGATE_ADMIN_TOKEN) nor the config (proxy.admin_token_file) gives one: the new                      process would answer 403 on /status, /refresh and /release. Run upgrade as the gateway's user                      or root, set ROBOTSGATE_ADMIN_TOKEN, or use proxy.admin_token_file"
                ));
            }
            Err(_) => {}
        }
        for (fd, name) in [(1, "standard output"), (2, "standard error")] {
            let theirs = std::fs::read_link(format!("/proc/{old}/fd/{fd}"));
            let ours = std::fs::read_link(format!("/proc/self/fd/{fd}"));
            let file = match (theirs, ours) {
                (Ok(theirs), Ok(ours)) if theirs == ours => None,
                // Both write to a socket: under systemd, each of a unit's
                // processes has its own stream to the same journal.
                (Ok(theirs), Ok(ours)) if is_socket(&theirs) && is_socket(&ours) => None,
                // A closed output: nothing was written anywhere.
                (Err(e), _) if e.kind() == std::io::ErrorKind::NotFound => None,
                (Ok(theirs), _) => {
                    match std::fs::OpenOptions::new().append(true).open(format!("/proc/{old}/fd/{fd}")) {
                        Ok(file) => Some(file),
                        Err(_) if logs_here => None,
                        Err(e) => {
                            return Err(format!(
                                "cannot reopen the {name} of {old} ({}: {e}), so the new process would log here                                  instead; run the upgrade as the service's reload (systemctl reload robots-proxy),                                  or pass --logs-here",
                                theirs.display()
                            ));
                        }
                    }
                }
                (Err(_), _) if logs_here => None,
                (Err(e), _) => {
                    return Err(format!(
                        "cannot see where {old} writes its {name} ({e}), so the new process would log here                          instead; run upgrade as the gateway's user or root, or pass --logs-here"
                    ));
                }
            };
            if fd == 1 {
                out.stdout = file;
            } else {
                out.stderr = file;
            }
        }
        Ok(out)
    }
}

/// How a hand-over ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The new process took the listeners over; its pid.
    Done(u32),
    /// It never got as far: the old process was not signalled and serves on.
    NotStarted(String),
    /// The old process was signalled, then the new one died.
    Failed(String),
}

/// Starts `exe --config config --upgrade`, waits (up to `timeout`) for it to
/// listen on `sock`, sends SIGQUIT to `old`, and waits until `old` has gone
/// or the new process has served for a few seconds without it. The new
/// process keeps running when this returns.
pub fn hand_over(exe: &Path, config: &Path, old: u32, sock: &Path, timeout: Duration, with: Inherited) -> Outcome {
    use std::os::unix::process::CommandExt;
    if !alive(old) {
        return Outcome::NotStarted(format!("no process {old} to take over from"));
    }
    let since = SystemTime::now();
    // Where the new process writes why it could not start: its standard
    // error is the old process's, which may be a file the old one
    // overwrites as it goes, or a journal this command cannot read.
    let report = sock.with_file_name(format!("upgrade-{}.report", std::process::id()));
    let _ = std::fs::remove_file(&report);
    let reason = |status: std::process::ExitStatus| {
        let why = std::fs::read_to_string(&report).ok().filter(|w| !w.trim().is_empty());
        let _ = std::fs::remove_file(&report);
        match why {
            Some(why) => format!("{status}: {}", why.trim()),
            None => status.to_string(),
        }
    };
    let mut command = std::process::Command::new(exe);
    command
        .arg("--config")
        .arg(config)
        .arg("--upgrade")
        .arg("--upgrade-report")
        .arg(&report)
        .envs(with.env)
        .stdin(std::process::Stdio::null())
        // Its own process group: a Ctrl-C meant for this command is not its.
        .process_group(0);
    if let Some(out) = with.stdout {
        command.stdout(out);
    }
    if let Some(err) = with.stderr {
        command.stderr(err);
    }
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => return Outcome::NotStarted(format!("starting {}: {e}", exe.display())),
    };
    let until = std::time::Instant::now() + timeout;
    while !waiting(sock, since) {
        if let Ok(Some(status)) = child.try_wait() {
            return Outcome::NotStarted(format!("the new process exited before listening ({})", reason(status)));
        }
        if std::time::Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            return Outcome::NotStarted(format!("the new process did not open {} in {timeout:?}", sock.display()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // kill(1) rather than kill(2): the workspace has no unsafe code.
    let signalled_ok = std::process::Command::new("kill").args(["-QUIT", &old.to_string()]).status();
    if !signalled_ok.is_ok_and(|s| s.success()) {
        let _ = child.kill();
        let _ = child.wait();
        return Outcome::NotStarted(format!("could not send SIGQUIT to {old}"));
    }
    let signalled = std::time::Instant::now();
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Outcome::Failed(format!("the new process exited while taking over ({})", reason(status)));
        }
        let old_gone = !alive(old);
        if old_gone || signalled.elapsed() > Duration::from_secs(3) {
            let _ = std::fs::remove_file(&report);
            return Outcome::Done(child.id());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether a new process could listen on every one of `addrs` (`host:port`)
/// once `old` hands its listeners over: each is free now, or `old` itself
/// listens on it. An address another process holds is refused by name,
/// before anything starts, since the new process would fail on it only
/// after the old one was signalled.
pub fn listenable(addrs: &[&str], old: u32) -> Result<(), String> {
    let theirs = socket_inodes(old);
    for addr in addrs {
        let Ok(parsed) = addr.parse::<std::net::SocketAddr>() else { continue };
        match std::net::TcpListener::bind(parsed) {
            Ok(_) => continue,
            Err(e) if e.kind() != std::io::ErrorKind::AddrInUse => {
                return Err(format!("cannot listen on {addr}: {e}"));
            }
            Err(_) => {}
        }
        let listening = listening_inodes(parsed.port());
        if listening.is_empty() || !listening.iter().all(|i| theirs.contains(i)) {
            return Err(format!(
                "{addr} is taken by a process other than {old}, so the new process could not listen on it; \
                 free it or change the config"
            ));
        }
    }
    Ok(())
}

/// The inodes of the sockets process `pid` holds open.
fn socket_inodes(pid: u32) -> Vec<u64> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return Vec::new() };
    dir.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter_map(|link| {
            let text = link.to_str()?.strip_prefix("socket:[")?.strip_suffix(']')?.to_string();
            text.parse().ok()
        })
        .collect()
}

/// The inodes of TCP sockets listening on `port`, on any address.
fn listening_inodes(port: u16) -> Vec<u64> {
    let mut found = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else { continue };
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // local_address is ADDR:PORT in hex; st 0A is LISTEN; inode is the tenth field.
            let (Some(local), Some(state), Some(inode)) = (fields.get(1), fields.get(3), fields.get(9)) else {
                continue;
            };
            let local_port = local.rsplit_once(':').and_then(|(_, p)| u16::from_str_radix(p, 16).ok());
            if local_port == Some(port)
                && *state == "0A"
                && let Ok(inode) = inode.parse()
            {
                found.push(inode);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_another_process_holds_is_refused_and_ours_or_a_free_one_is_not() {
        let ours = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = ours.local_addr().unwrap().to_string();
        assert!(listenable(&[&addr], std::process::id()).is_ok(), "held by the old process itself");
        let why = listenable(&[&addr], u32::MAX).expect_err("held by another process");
        assert!(why.contains(&addr) && why.contains("taken"), "{why}");
        drop(ours);
        assert!(listenable(&[&addr], u32::MAX).is_ok(), "free again");
    }

    #[test]
    fn only_a_socket_newer_than_this_process_is_a_new_process_waiting() {
        let dir = std::env::temp_dir().join(format!("robots-upgrade-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let sock = dir.join("upgrade.sock");
        let _ = std::fs::remove_file(&sock);
        let before = SystemTime::now() - Duration::from_secs(1);
        assert!(!waiting(&sock, before), "no file");
        std::fs::write(&sock, b"").unwrap();
        assert!(!waiting(&sock, before), "a file, not a socket");
        std::fs::remove_file(&sock).unwrap();
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        assert!(waiting(&sock, before));
        assert!(!waiting(&sock, SystemTime::now() + Duration::from_secs(60)), "older than the process");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_child_inherits_the_variables_and_outputs_of_its_parent_process() {
        // This test process plays the old gateway: what it has, nothing is
        // missing, and outputs it shares with itself need no reopening.
        let me = Inherited::from(std::process::id(), false, false).expect("its own environment is readable");
        assert!(me.env.is_empty(), "every variable is already set here: {:?}", me.env);
        assert!(me.stdout.is_none() && me.stderr.is_none());
        assert!(Inherited::from(u32::MAX, true, true).is_ok(), "a token from the config needs no environment");
        let refused = Inherited::from(u32::MAX, false, true);
        if std::env::var_os("ROBOTSGATE_ADMIN_TOKEN").is_none() {
            let why = refused.expect_err("no token anywhere");
            assert!(why.contains("admin token"), "{why}");
        }
    }
}
