//! A fleet of robots.txt origins on loopback for the monitor's scale
//! benchmark: `cargo run --release -p robots-monitor --example origin_fleet -- PORT`
//! serves `/s/<n>/robots.txt` for any `n` (a small file whose rules depend
//! on `n`), answering each request and closing the connection. By name, as
//! the variants benchmark reaches it through `http.connect_to`: `Host:
//! s<n>.bench.test` is site `n` at `/robots.txt`, and `www.s<n>.bench.test`
//! redirects there, as a site whose variants are in order does.
//!
//! `FLEET_SITEMAPS` says what each file's `Sitemap:` line is: unset, a URL
//! on port 80 (nothing there: refused); `none`, no line; `served`, this
//! fleet's `/s/<n>/sitemap.xml`, a urlset of 100 of the site's URLs (one
//! disallowed).

use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let port: u16 = std::env::args().nth(1).and_then(|p| p.parse().ok()).unwrap_or(18080);
    let sitemaps = std::env::var("FLEET_SITEMAPS").unwrap_or_default();
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    eprintln!("origin fleet on 127.0.0.1:{port}");
    loop {
        let (mut stream, _) = listener.accept().await?;
        let sitemaps = sitemaps.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 4096];
            let Ok(n) = stream.read(&mut buf).await else { return };
            let request = String::from_utf8_lossy(&buf[..n]);
            let path = request.split_whitespace().nth(1).unwrap_or("/");
            let host = request
                .lines()
                .find_map(|l| l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case("host")).map(|(_, v)| v.trim()))
                .unwrap_or("");
            if let Some(bare) = host.strip_prefix("www.") {
                let head = format!(
                    "HTTP/1.1 301 Moved Permanently\r\nLocation: http://{bare}/robots.txt\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                );
                let _ = stream.write_all(head.as_bytes()).await;
                return;
            }
            let by_name = host.strip_prefix('s').and_then(|h| h.strip_suffix(".bench.test"));
            let site = by_name.unwrap_or_else(|| path.split('/').nth(2).unwrap_or("0"));
            let body = if path.ends_with("/sitemap.xml") {
                let urls: String = (0..100)
                    .map(|i| format!("<url><loc>http://127.0.0.1:{port}/s/{site}/p/{i}</loc></url>\n"))
                    .chain(std::iter::once(format!("<url><loc>http://127.0.0.1:{port}/cart</loc></url>\n")))
                    .collect();
                format!("<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n{urls}</urlset>\n")
            } else {
                let line = match sitemaps.as_str() {
                    "none" => String::new(),
                    "served" => format!("\nSitemap: http://127.0.0.1:{port}/s/{site}/sitemap.xml\n"),
                    _ => format!("\nSitemap: http://127.0.0.1/s/{site}/sitemap.xml\n"),
                };
                format!(
                    "# site {site}\nUser-agent: *\nDisallow: /admin/\nDisallow: /cart\nDisallow: /s{site}/private/\nAllow: /admin/help\n{line}"
                )
            };
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.write_all(body.as_bytes()).await;
        });
    }
}
