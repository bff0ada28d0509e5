//! Forward-confirmed reverse DNS with hickory-resolver: the PTR names of an
//! address, each kept only if it resolves back to that address. Answers are
//! cached for their TTL (bounded), lookups in flight are bounded, and a
//! caller waits at most its budget: a lookup that takes longer goes on in
//! the background and its answer serves the next request.

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hickory_resolver::TokioResolver;
use hickory_resolver::config::{NameServerConfig, ResolverConfig, ResolverOpts};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::proto::rr::{Name, RData};

/// Longest an answer is trusted, whatever its TTL says.
const MAX_TTL: Duration = Duration::from_secs(3600);
/// How long a failed lookup (no PTR, a timeout) is remembered.
const FAILED_TTL: Duration = Duration::from_secs(60);
/// How long DNS itself failing (a timeout, a refusal, nothing listening)
/// is remembered for an address: its requests go on as `pending` at once
/// meanwhile, so an outage costs one wait of the budget per address per
/// this interval, not one per request.
pub const DOWN_TTL: Duration = Duration::from_secs(30);
/// Most PTR names checked for one address.
const MAX_NAMES: usize = 4;
/// Most addresses cached; past it the cache is emptied (simple and bounded).
const MAX_CACHED: usize = 100_000;

/// What DNS says of an address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Names {
    /// The forward-confirmed PTR names (lower case, no final dot); empty
    /// when there are none or the lookup failed.
    Known(Arc<Vec<String>>),
    /// Not known within the budget (asked on in the background), or DNS
    /// failed (asked again next time).
    Pending,
}

#[derive(Debug)]
struct Cached {
    /// `None`: DNS failed; the address is `pending` until `until`.
    names: Option<Arc<Vec<String>>>,
    until: Instant,
}

/// The resolver with its cache.
#[derive(Debug)]
pub struct Dns {
    resolver: TokioResolver,
    cache: Mutex<HashMap<IpAddr, Cached>>,
    asking: Mutex<HashSet<IpAddr>>,
    in_flight: Arc<tokio::sync::Semaphore>,
    budget: Duration,
}

/// How the resolver is set up.
#[derive(Clone, Debug)]
pub struct DnsOptions {
    /// Name servers (`None`: the system's, from /etc/resolv.conf).
    pub servers: Vec<SocketAddr>,
    /// Longest one query waits.
    pub timeout: Duration,
    /// Longest a request waits for verification.
    pub budget: Duration,
    /// Most lookups at once.
    pub in_flight: usize,
}

impl Dns {
    /// A resolver asking `options.servers`.
    pub fn new(options: &DnsOptions) -> Result<Dns, String> {
        // The resolver's sockets belong to the identity runtime, which
        // runs every lookup; Pingora's services each run runtimes of
        // their own, and a request awaits the lookup from any of them.
        let _in = super::runtime()?.enter();
        let builder = if options.servers.is_empty() {
            TokioResolver::builder_tokio().map_err(|e| format!("reading the system's DNS settings: {e}"))?
        } else {
            let servers = options
                .servers
                .iter()
                .map(|s| {
                    let mut ns = NameServerConfig::udp_and_tcp(s.ip());
                    for c in &mut ns.connections {
                        c.port = s.port();
                    }
                    ns
                })
                .collect();
            TokioResolver::builder_with_config(
                ResolverConfig::from_name_servers(servers),
                TokioRuntimeProvider::default(),
            )
        };
        let mut opts = ResolverOpts::default();
        opts.timeout = options.timeout;
        opts.attempts = 1;
        let resolver = builder.with_options(opts).build().map_err(|e| format!("building the DNS resolver: {e}"))?;
        Ok(Dns {
            resolver,
            cache: Mutex::default(),
            asking: Mutex::default(),
            in_flight: Arc::new(tokio::sync::Semaphore::new(options.in_flight.max(1))),
            budget: options.budget,
        })
    }

    /// The cached answer for `ip`, if fresh: its names, or `Pending` while
    /// a DNS failure for it is remembered.
    pub fn cached(&self, ip: IpAddr) -> Option<Names> {
        let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        cache
            .get(&ip)
            .filter(|c| c.until > Instant::now())
            .map(|c| c.names.as_ref().map_or(Names::Pending, |n| Names::Known(Arc::clone(n))))
    }

    /// Puts `names` in the cache for `ip` for `ttl`, as a lookup would;
    /// for benchmarks of the cached path, which need no DNS server.
    pub fn remember(&self, ip: IpAddr, names: Vec<String>, ttl: Duration) {
        self.keep(ip, Some(Arc::new(names)), ttl);
    }

    fn keep(&self, ip: IpAddr, names: Option<Arc<Vec<String>>>, ttl: Duration) {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= MAX_CACHED {
            cache.clear();
        }
        cache.insert(ip, Cached { names, until: Instant::now() + ttl });
    }

    /// The forward-confirmed names of `ip`, waiting at most the budget.
    pub async fn names(self: &Arc<Self>, ip: IpAddr) -> Names {
        if let Some(names) = self.cached(ip) {
            return names;
        }
        // One lookup per address at a time, and a bound on all of them.
        if !self.asking.lock().unwrap_or_else(|e| e.into_inner()).insert(ip) {
            return Names::Pending;
        }
        let Ok(permit) = Arc::clone(&self.in_flight).try_acquire_owned() else {
            self.asking.lock().unwrap_or_else(|e| e.into_inner()).remove(&ip);
            return Names::Pending;
        };
        let me = Arc::clone(self);
        let Ok(runtime) = super::runtime() else { return Names::Pending };
        let task = runtime.spawn(async move {
            let (names, ttl) = me.confirm(ip).await;
            let names = Arc::new(names);
            // DNS itself failed: remembered as pending for a while, so the
            // next requests from this address do not wait on it again.
            let known = !ttl.is_zero();
            me.keep(ip, known.then(|| Arc::clone(&names)), if known { ttl } else { DOWN_TTL });
            me.asking.lock().unwrap_or_else(|e| e.into_inner()).remove(&ip);
            drop(permit);
            known.then_some(names)
        });
        match tokio::time::timeout(self.budget, task).await {
            Ok(Ok(Some(names))) => Names::Known(names),
            _ => Names::Pending,
        }
    }

    /// PTR names of `ip` that resolve back to it, and how long to trust that.
    async fn confirm(&self, ip: IpAddr) -> (Vec<String>, Duration) {
        let ptr = match self.resolver.reverse_lookup(Name::from(ip)).await {
            Ok(l) => l,
            // No PTR record: an answer, remembered a while.
            Err(e) if e.is_no_records_found() => return (Vec::new(), FAILED_TTL),
            // DNS itself failed (timeout, refused): no answer; remembered
            // as pending for `DOWN_TTL`, then asked again.
            Err(_) => return (Vec::new(), Duration::ZERO),
        };
        let mut ttl = ptr.valid_until().saturating_duration_since(Instant::now()).min(MAX_TTL);
        let mut names = Vec::new();
        for record in ptr.answers().iter().take(MAX_NAMES) {
            let RData::PTR(name) = &record.data else { continue };
            let fqdn = name.0.to_string();
            let Ok(forward) = self.resolver.lookup_ip(fqdn.as_str()).await else { continue };
            ttl = ttl.min(forward.valid_until().saturating_duration_since(Instant::now()));
            if forward.iter().any(|a| a == ip) {
                names.push(fqdn.trim_end_matches('.').to_ascii_lowercase());
            }
        }
        if names.is_empty() {
            ttl = ttl.min(FAILED_TTL);
        }
        (names, ttl.max(Duration::from_secs(1)))
    }
}

/// Whether `name` is `suffix` or under it (`crawl-1.googlebot.com` is
/// under `googlebot.com`; `evilgooglebot.com` is not).
pub fn under(name: &str, suffix: &str) -> bool {
    let suffix = suffix.trim_matches('.');
    name.eq_ignore_ascii_case(suffix)
        || (name.len() > suffix.len()
            && name.as_bytes()[name.len() - suffix.len() - 1] == b'.'
            && name.as_bytes()[name.len() - suffix.len()..].eq_ignore_ascii_case(suffix.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::under;

    #[test]
    fn suffixes_match_whole_labels() {
        assert!(under("crawl-66-249-66-1.googlebot.com", "googlebot.com"));
        assert!(under("googlebot.com", "googlebot.com"));
        assert!(under("X.GoogleBot.com", ".googlebot.com."));
        assert!(!under("evilgooglebot.com", "googlebot.com"));
        assert!(!under("googlebot.com.evil.net", "googlebot.com"));
        assert!(!under("com", "googlebot.com"));
    }
}
