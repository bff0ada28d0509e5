//! The crawlers every generated benchmark file names in its `User-agent`
//! lines: one list for the shop-shaped corpus (`corpus.rs`) and the
//! generated families (`family.rs`), so that the two sweep the same agents.

/// Product tokens, the well-known first.
pub const CRAWLERS: &[&str] = &[
    "Googlebot",
    "Bingbot",
    "AdsBot-Google",
    "Googlebot-Image",
    "GPTBot",
    "CCBot",
    "ClaudeBot",
    "Applebot",
    "YandexBot",
    "Baiduspider",
    "DuckDuckBot",
    "facebookexternalhit",
    "AhrefsBot",
    "SemrushBot",
    "MJ12bot",
    "PetalBot",
    "Bytespider",
    "Amazonbot",
    "PerplexityBot",
    "DotBot",
];
