//! The gate's judgement in the monitor, with the real `robots-monitor`, a
//! real origin, a real SMTP server and real databases: a change that breaks
//! the floor or a pin raises one critical alert, which says the change is
//! held at the edge (a site robots-proxy fronts with `gate: hold`) or would
//! have been (a site with no gateway); `release` records a release every
//! gateway of the fleet reads.

mod support;

use support::*;

const GOOD: &str = "User-agent: *\nDisallow: /private/\n";
const BLOCK_ALL: &str = "# deploy 42\nUser-agent: *\nDisallow: /\n";

fn config(db: &str, fronted: &Origin, plain: &Origin, smtp_port: u16) -> String {
    format!(
        "database: {db}
agents: [Googlebot, GPTBot]
interval: 1s
http:
  timeout: 2s
email:
  host: 127.0.0.1
  port: {smtp_port}
  security: none
  from: robotsgate@test.example
  to: [seo@test.example]
sites:
  - name: shop
    url: {shop}
    url_sets:
      money:
        expect: {{ search: allowed }}
        urls: [/products/, {{ url: /private/x, expect: disallowed }}]
    proxy:
      hosts: [shop.test]
      origin: 127.0.0.1:1
  - name: blog
    url: {blog}
",
        shop = fronted.url("/robots.txt"),
        blog = plain.url("/robots.txt"),
    )
}

fn once(cfg: &std::path::Path) {
    let out = monitor(cfg, &["once"]);
    assert_eq!(out.status.code(), Some(0), "once failed: {}", String::from_utf8_lossy(&out.stderr));
}

fn the_monitor_judges_as_the_gateway(db: Db) {
    let dir = temp_dir(&format!("monitor-gate-{db:?}"));
    let Some(database) = fresh_database(db, &dir) else { return };
    let (shop, blog) = (Origin::start(), Origin::start());
    let smtp = Smtp::start(&dir.join("mail"));
    let cfg = write_config(&dir, &config(&database, &shop, &blog, smtp.port));
    shop.set("/robots.txt", Reply::ok(GOOD));
    blog.set("/robots.txt", Reply::ok(GOOD));
    once(&cfg);

    // A change that breaks nothing declared: no gate alert.
    shop.set("/robots.txt", Reply::ok(format!("{GOOD}Disallow: /cart\n")));
    once(&cfg);
    assert_eq!(scalar(&database, "SELECT COUNT(*) FROM alerts WHERE subject LIKE '%held%'"), 0);

    // The deploy: held at the edge for the fronted site, "would have been
    // held" for the other; critical both.
    shop.set("/robots.txt", Reply::ok(BLOCK_ALL));
    blog.set("/robots.txt", Reply::ok(BLOCK_ALL));
    once(&cfg);
    let mails = smtp.wait_for(2);
    let held = mails.iter().find(|m| m.contains("Subject: [robotsgate] shop:")).expect("a mail for shop");
    let unwrapped = held.replace("=\r\n", "").replace("=\n", "");
    assert!(unwrapped.contains("Subject: [robotsgate] shop: change held at the edge"), "{unwrapped}");
    assert!(
        unwrapped.contains("A change to robots.txt is held at the edge: it disallows / for Googlebot and "),
        "{unwrapped}"
    );
    assert!(unwrapped.contains(" (line 3: Disallow: /)"), "{unwrapped}");
    // Issue #64: said once a part (text and HTML), not again in the list,
    // and with how to free it, as the gateway-raised alert says it.
    assert_eq!(unwrapped.matches("is held at the edge: it disallows /").count(), 2, "{unwrapped}");
    assert!(unwrapped.contains("Release it: robots-monitor release shop"), "{unwrapped}");

    let would = mails.iter().find(|m| m.contains("Subject: [robotsgate] blog:")).expect("a mail for blog");
    assert!(would.contains("Subject: [robotsgate] blog: change would have been held"), "{would}");
    assert!(!would.contains("Release it"), "a change no gateway holds has nothing to release");
    let critical =
        scalar(&database, "SELECT COUNT(*) FROM alerts WHERE severity = 'critical' AND subject LIKE '%held%'");
    assert_eq!(critical, 2);

    // A pinned deletion: a 404 would unblock /private/x.
    shop.set("/robots.txt", Reply::ok(GOOD));
    once(&cfg);
    shop.set("/robots.txt", Reply::status(404));
    once(&cfg);
    let text = scalar_text(&database, "SELECT body_text FROM alerts WHERE site = 'shop' ORDER BY id DESC LIMIT 1");
    assert!(text.contains("it allows /private/x for Googlebot and 1 other crawler (robots.txt answered 404"), "{text}");

    // `release`: nothing held in the database yet (no gateway shares it);
    // a revision is released ahead, by its exact body.
    let out = monitor(&cfg, &["release", "shop"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing is held for `shop`"), "{out:?}");
    let revision = scalar(&database, "SELECT id FROM revisions WHERE site = 'shop' AND body LIKE '%deploy 42%'");
    let out = monitor(&cfg, &["release", "shop", &revision.to_string()]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("Revision {revision} of shop is released")));
    let released = "SELECT COUNT(*) FROM gate_holds g JOIN revisions r ON r.hash = g.outcome AND r.site = g.site \
                    WHERE g.site = 'shop' AND g.released_at IS NOT NULL AND r.body LIKE '%deploy 42%'";
    assert_eq!(scalar(&database, released), 1);
    let out = monitor(&cfg, &["release", "shop", "999999"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("has no revision 999999"), "{out:?}");
    let out = monitor(&cfg, &["release", "nope"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("no site named `nope`"), "{out:?}");
}

#[test]
fn the_monitor_judges_as_the_gateway_on_sqlite() {
    the_monitor_judges_as_the_gateway(Db::Sqlite);
}

#[test]
fn the_monitor_judges_as_the_gateway_on_postgres() {
    the_monitor_judges_as_the_gateway(Db::Postgres);
}
