//! The `robots` binary, run as a user would run it.

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn robots(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_robots"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn robots");
    child.stdin.take().expect("stdin").write_all(stdin).expect("write stdin");
    child.wait_with_output().expect("wait robots")
}

fn temp_file(name: &str, body: &[u8]) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("robots-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, body).expect("write temp file");
    path
}

const FILE: &[u8] = b"User-agent: *\nDisallow: /private\nAllow: /private/ok\n";

#[test]
fn check_exit_codes_and_line() {
    let f = temp_file("check.txt", FILE);
    let f = f.to_str().unwrap();
    let out = robots(&["check", f, "Googlebot", "https://x/private/a"], b"");
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("DISALLOWED") && text.contains("line 2: Disallow: /private"), "{text}");
    let out = robots(&["check", f, "Googlebot", "https://x/private/ok"], b"");
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("line 3: Allow: /private/ok"));
    let out = robots(&["check", "/nonexistent/robots.txt", "a", "/"], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/robots.txt"));
    // An empty URL or crawler (often an unset shell variable) is named on
    // stderr, and answered as Google's library answers it, exit status
    // included: an empty URL is the path `/`; an empty crawler matches no
    // group, so only `*` can disallow.
    let cases = [("Googlebot", "", "the URL is empty", 0), ("", "/private/a", "the crawler is empty", 1)];
    for (agent, url, says, code) in cases {
        let out = robots(&["check", f, agent, url], b"");
        assert_eq!(out.status.code(), Some(code), "{agent:?} {url:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains(says), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let all = temp_file("all.txt", b"user-agent: FooBot\ndisallow: /\n");
    let all = all.to_str().unwrap();
    assert_eq!(robots(&["check", all, "FooBot", ""], b"").status.code(), Some(1), "an empty URL under Disallow: /");
    assert_eq!(robots(&["check", all, "", ""], b"").status.code(), Some(0), "an empty crawler");
    let empty = temp_file("empty.txt", b"");
    assert_eq!(robots(&["check", empty.to_str().unwrap(), "FooBot", ""], b"").status.code(), Some(0));
}

#[test]
fn check_table_from_stdin() {
    let f = temp_file("table.txt", b"User-agent: a\nDisallow: /x\n\nUser-agent: *\nDisallow: /y\n");
    let out = robots(
        &["check", f.to_str().unwrap(), "--agent", "a", "--agent", "b", "--urls", "-"],
        b"http://h/x\nhttp://h/y\n\n",
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows, vec!["a\tb\tURL", "disallow:2\tallow\thttp://h/x", "allow\tdisallow:5\thttp://h/y"]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn batch_keeps_members_and_reports_bad_lines() {
    let input = concat!(
        r#"{"id":7,"robots":"User-agent: *\nDisallow: /a","agent":"x","url":"http://h/a"}"#,
        "\n",
        "not json\n",
        // robots_b64 of "User-agent: *\nDisallow: /\xff" and url_b64 of "/%FF".
        r#"{"robots_b64":"VXNlci1hZ2VudDogKgpEaXNhbGxvdzogL/8=","agent":"x","url_b64":"LyVGRg==","k":[1]}"#,
        "\n",
        r#"{"robots":"","agent":"x"}"#,
        "\n",
        r#"{"robots":"","agent":"x","url":"/","z":null}"#,
        "\n",
    );
    let out = robots(&["batch"], input.as_bytes());
    let text = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rows.len(), 5, "{text}");
    assert_eq!(rows[0]["allowed"], false);
    assert_eq!(rows[0]["id"], 7);
    assert!(text.lines().next().unwrap().starts_with(r#"{"id":7,"robots""#), "member order kept");
    assert!(rows[1]["error"].as_str().unwrap().contains("invalid JSON"));
    assert_eq!(rows[1]["line"], 2);
    assert_eq!(rows[2]["allowed"], false);
    assert_eq!(rows[2]["k"], serde_json::json!([1]));
    assert!(rows[3]["error"].as_str().unwrap().contains("missing `url`"));
    assert_eq!(rows[4]["allowed"], true);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn explain_shows_all_matches() {
    let f = temp_file("explain.txt", b"User-agent: *\nDisallow: /a\nAllow: /a/b\nDisallow: /*b\n");
    let out = robots(&["explain", f.to_str().unwrap(), "bot", "http://h/a/b"], b"");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("the * group, starting at line 1"), "{text}");
    let p4 = text.find("priority    4  line 3: Allow: /a/b").expect(&text);
    let p3 = text.find("priority    3  line 4: Disallow: /*b").expect(&text);
    let p2 = text.find("priority    2  line 2: Disallow: /a").expect(&text);
    assert!(p4 < p3 && p3 < p2);
    assert!(text.contains("ALLOWED"));
    assert_eq!(out.status.code(), Some(0));
}

/// The library's reading, and Google's crawler's where it differs, with why;
/// the exit status stays the library's (as `robots check`).
#[test]
fn explain_shows_both_readings_where_they_differ() {
    let f = temp_file("readings.txt", b"User-agent: *\nDisallow: /\n\nUser-agent: Googlebot\nDisallow: /private\n");
    let out = robots(&["explain", f.to_str().unwrap(), "Googlebot-Image", "https://shop.example/about"], b"");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("reading:  Google's open-source robots.txt library"), "{text}");
    assert!(
        text.contains("verdict:  DISALLOWED")
            && text.contains("Google's crawlers, as Google documents them, read it otherwise:"),
        "{text}"
    );
    assert!(text.contains("  verdict:  ALLOWED") && text.contains("obeys Googlebot's group"), "{text}");
    assert_eq!(out.status.code(), Some(1));
    let out = robots(&["explain", f.to_str().unwrap(), "AdsBot-Google", "https://shop.example/about"], b"");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("group:    none (no group names this crawler, and it ignores `*`)"), "{text}");
    let out = robots(&["explain", f.to_str().unwrap(), "Googlebot", "https://shop.example/about"], b"");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("read it otherwise"), "one reading where they agree: {text}");
}

#[test]
fn explain_shows_the_preferences_that_apply() {
    let f = temp_file(
        "prefs.txt",
        b"User-agent: *\nContent-Signal: search=yes, ai-train=no\nContent-Usage: / train-ai=n\nContent-Usage: /blog/ train-ai=y\nDisallow: /private\n\nUser-agent: GPTBot\nDisallow: /\nLicense: https://example.com/rsl.xml\n",
    );
    let out = robots(&["explain", f.to_str().unwrap(), "bingbot", "http://h/blog/x"], b"");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Content-Signal, line 2 (in the group at line 1): search=yes, ai-train=no"), "{text}");
    assert!(
        text.contains("Content-Usage, read as draft-ietf-aipref-attach-05 and draft-ietf-aipref-vocab-08"),
        "{text}"
    );
    assert!(text.contains("line 4 (path /blog/, the longest that matches): train-ai=y"), "{text}");
    assert!(text.contains("train-ai: allowed") && text.contains("search: unknown"), "{text}");
    assert!(text.contains("License, line 9: https://example.com/rsl.xml"), "{text}");
    // A disallowed path has no preferences (attach-05); a rule with no path
    // covers every path; `use=` is explained.
    let out = robots(&["explain", f.to_str().unwrap(), "bingbot", "http://h/private/x"], b"");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("none apply: the group disallows this path"), "{text}");
    let g = temp_file(
        "prefs-nopath.txt",
        b"User-agent: *\nContent-Signal: use=reference\nContent-Usage: train-ai=n\nAllow: /\n",
    );
    let out = robots(&["explain", g.to_str().unwrap(), "bingbot", "http://h/any"], b"");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("line 3 (no path: it covers every path): train-ai=n"), "{text}");
    assert!(text.contains("train-ai: disallowed") && text.contains("use=reference: index it"), "{text}");
    // GPTBot obeys its own group, which states nothing.
    let out = robots(&["explain", f.to_str().unwrap(), "GPTBot", "http://h/blog/x"], b"");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Content-Signal: none in this crawler's group") && text.contains("DISALLOWED"), "{text}");
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn lint_formats_and_exit_codes() {
    let bad = temp_file("bad.txt", b"User-agent: *\nDisallow: private\nDissallow: /x\n");
    let bad = bad.to_str().unwrap();
    let out = robots(&["lint", bad], b"");
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("{bad}:2:11: error[pattern-start]")), "{text}");
    assert!(text.contains("hint: write `/private`"), "{text}");
    assert!(text.contains("bad.txt: 1 error, 1 warning, 0 notes"), "one is one: {text}");
    let out = robots(&["lint", bad, "--format", "json"], b"");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v[0]["code"], "pattern-start");
    assert_eq!(v[1]["code"], "typo");
    let out = robots(&["lint", bad, "--format", "sarif"], b"");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("sarif");
    assert_eq!(v["version"], "2.1.0");
    assert_eq!(v["runs"][0]["results"][0]["ruleId"], "pattern-start");
    assert_eq!(v["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"], 2);
    // The hint is a sentence of its own, not run into the message.
    let message = v["runs"][0]["results"][0]["message"]["text"].as_str().unwrap();
    assert!(message.contains(". Hint: ") && message.ends_with('.'), "{message}");
    let good = temp_file("good.txt", b"User-agent: *\nDisallow: /private\n");
    let out = robots(&["lint", good.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn diff_prints_text_diff_and_flips() {
    let old = temp_file("old.txt", b"User-agent: *\nDisallow: /cart\n");
    let new = temp_file("new.txt", b"User-agent: *\nDisallow: /cart\nDisallow: /products/\n");
    let urls = temp_file("urls.txt", b"https://s/products/1\nhttps://s/cart\n# comment\nhttps://s/about\n");
    let args = [
        "diff",
        old.to_str().unwrap(),
        new.to_str().unwrap(),
        "--agent",
        "Googlebot",
        "--urls",
        urls.to_str().unwrap(),
    ];
    let out = robots(&args, b"");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("+Disallow: /products/"), "{text}");
    assert!(text.contains("1 verdict flip for 3 URLs x 1 crawler:"), "{text}");
    assert!(text.contains("now disallowed (line 3: Disallow: /products/)"), "{text}");
    let same = [
        "diff",
        old.to_str().unwrap(),
        old.to_str().unwrap(),
        "--agent",
        "Googlebot",
        "--urls",
        urls.to_str().unwrap(),
    ];
    let out = robots(&same, b"");
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("no verdict flips"));
    // With neither --agent nor --urls: the crawlers the files name (and
    // Googlebot and bingbot for `*`), and `/` with a path for each rule.
    let old = temp_file("old-named.txt", b"User-agent: *\nDisallow: /cart\n\nUser-agent: GPTBot\nDisallow: /\n");
    let new = temp_file(
        "new-named.txt",
        b"User-agent: *\nDisallow: /cart\nDisallow: /*.pdf$\n\nUser-agent: GPTBot\nDisallow: /\n",
    );
    let out = robots(&["diff", old.to_str().unwrap(), new.to_str().unwrap()], b"");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("2 verdict flips for 3 URLs x 3 crawlers:"), "{text}");
    assert!(text.contains("Googlebot  /x.pdf") && text.contains("bingbot  /x.pdf"), "{text}");
}

/// `robots diff --config`: the site's pins and floor, judged as the
/// gateway's gate judges them, in the same words; exit 1 when it would hold.
#[test]
fn diff_with_config_judges_the_gate() {
    let old = temp_file("gate-old.txt", b"User-agent: *\nDisallow: /private/\n");
    let new = temp_file("gate-new.txt", b"# deploy\nUser-agent: *\nDisallow: /\n");
    let fine = temp_file("gate-fine.txt", b"User-agent: *\nDisallow: /private/\nDisallow: /cart\n");
    let config = temp_file(
        "gate.yaml",
        b"agents: [Googlebot]\nsites:\n  - name: shop\n    url: https://shop.example/robots.txt\n    url_sets:\n      main:\n        - /products/\n        - { url: /private/x, expect: disallowed }\n",
    );
    let run = |new: &std::path::Path| {
        robots(&["diff", old.to_str().unwrap(), new.to_str().unwrap(), "--config", config.to_str().unwrap()], b"")
    };
    let out = run(&new);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("the gate would hold this change for shop: it disallows / for Googlebot and "), "{text}");
    assert!(text.contains(" other search crawlers (line 3: Disallow: /)"), "{text}");
    // Grouped: each page once, with every search crawler the floor covers.
    assert_eq!(text.matches("\n  / disallowed for ").count(), 1, "{text}");
    assert!(text.contains("\n  /products/ disallowed for "), "the floor covers the search crawlers: {text}");
    assert!(text.contains("search crawlers (Googlebot, "), "{text}");
    let out = run(&fine);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("the gate would pass this change for shop"), "{text}");
    // Issue #64: a site with no saved URLs still has its flips shown: `/`,
    // which the floor guards, is tried, never "no verdict flips for 0
    // URLs" above a hold.
    let bare = temp_file(
        "gate-bare.yaml",
        b"agents: [Googlebot, bingbot, GPTBot]\nsites:\n  - name: shop\n    url: https://shop.example/robots.txt\n",
    );
    let out = robots(&["diff", old.to_str().unwrap(), new.to_str().unwrap(), "--config", bare.to_str().unwrap()], b"");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("0 URLs") && !text.contains("no verdict flips"), "{text}");
    assert!(text.contains("3 verdict flips for 1 URL x 3 crawlers:") && text.contains("Googlebot  /\n"), "{text}");
    assert!(text.contains("the gate would hold this change for shop"), "{text}");
    let two = temp_file("gate-two.yaml", b"sites:\n  - { name: a, url: https://a.example/robots.txt }\n  - { name: b, url: https://b.example/robots.txt }\n");
    let out = robots(&["diff", old.to_str().unwrap(), new.to_str().unwrap(), "--config", two.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("name one with --site"));
}

/// google/robotstxt-spec-test's runner waits for `robots check` to exit
/// before it reads the output; output past the 64 KiB pipe buffer would
/// hang both. A 50 KB URL decided by a 16 KB rule must still exit, with
/// the verdict and a shortened URL and rule.
#[test]
fn check_output_never_fills_a_pipe() {
    let rule = format!("/{}", "a".repeat(16 * 1024));
    let f = temp_file("long-rule.txt", format!("User-agent: *\nDisallow: {rule}\n").as_bytes());
    let url = format!("https://x{rule}{}", "b".repeat(34 * 1024));
    for command in ["check", "explain"] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_robots"))
            .args([command, f.to_str().unwrap(), "Googlebot", &url])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn robots");
        let began = std::time::Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait") {
                break status;
            }
            if began.elapsed() > std::time::Duration::from_secs(20) {
                let _ = child.kill();
                panic!("robots {command} did not exit while its output sat unread");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        assert_eq!(status.code(), Some(1), "{command}");
        let out = child.wait_with_output().expect("output");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.len() < 4096, "{command}: {} bytes of output", text.len());
        assert!(text.contains("DISALLOWED") && text.contains("bytes)"), "{command}: {text}");
    }
}

/// `robots lint`, which CI runs, reports everything the monitor's lint
/// does: the catalogue's findings (a token typo, a usage token, a
/// preference that contradicts a group) and preference syntax.
#[test]
fn lint_is_the_whole_lint() {
    let body = b"User-agent: *\nContent-Signal: search=yes,,, =yes, ai-train=YES\nDisallow: /x\n\n\
User-agent: Googelbot\nDisallow: /\n\nUser-agent: Google-Extended\nDisallow: /\n";
    let f = temp_file("whole.txt", body);
    let out = robots(&["lint", f.to_str().unwrap(), "--output", "json"], b"");
    let found: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let codes: Vec<(u64, &str)> =
        found.as_array().unwrap().iter().map(|d| (d["line"].as_u64().unwrap(), d["code"].as_str().unwrap())).collect();
    for want in [(2, "preference-syntax"), (5, "unknown-crawler"), (8, "usage-token")] {
        assert!(codes.contains(&want), "{want:?} in {codes:?}");
    }
    let mut lines: Vec<u64> = codes.iter().map(|c| c.0).collect();
    let sorted = {
        let mut s = lines.clone();
        s.sort();
        s
    };
    assert_eq!(lines, sorted, "by line");
    lines.clear();
    let sarif = robots(&["lint", f.to_str().unwrap(), "--output", "sarif"], b"");
    let text = String::from_utf8_lossy(&sarif.stdout);
    assert!(text.contains("\"ruleId\": \"unknown-crawler\""), "{text}");
}

/// Shell completions for the three shells, and the man pages.
#[test]
fn completions_and_man_pages() {
    for (shell, want) in [("bash", "complete -F"), ("zsh", "#compdef robots"), ("fish", "complete -c robots")] {
        let out = robots(&["completions", shell], b"");
        assert_eq!(out.status.code(), Some(0));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(want) && text.contains("lint") && text.contains("explain"), "{shell}: {text}");
    }
    let out = robots(&["man"], b"");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(".TH robots") && text.contains("check"), "{text}");
    let dir = std::env::temp_dir().join(format!("robots-man-{}", std::process::id()));
    let out = robots(&["man", "--dir", dir.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(0));
    for page in ["robots.1", "robots-check.1", "robots-lint.1", "robots-diff.1"] {
        assert!(dir.join(page).exists(), "{page}");
    }
    let lint = std::fs::read_to_string(dir.join("robots-lint.1")).unwrap();
    assert!(lint.contains("sarif"), "{lint}");
    // Every page, and --help, says what the exit codes mean.
    for page in ["robots.1", "robots-check.1", "robots-diff.1"] {
        let text = std::fs::read_to_string(dir.join(page)).unwrap();
        assert!(text.contains("EXIT STATUS") && text.contains("disallowed"), "{page}: {text}");
    }
    let help = String::from_utf8_lossy(&robots(&["--help"], b"").stdout).into_owned();
    assert!(help.contains("EXIT STATUS:") && help.contains("2  the command could not run"), "{help}");
    // And every subcommand's --help.
    for sub in ["check", "explain", "lint", "diff", "batch"] {
        let help = String::from_utf8_lossy(&robots(&[sub, "--help"], b"").stdout).into_owned();
        assert!(help.contains("EXIT STATUS:"), "{sub} --help: {help}");
    }
}

/// `batch` claims the library's reading too: empty strings are answered as
/// Google's library answers them, never refused.
#[test]
fn batch_answers_empty_strings_as_the_library() {
    let input = concat!(
        r#"{"robots":"user-agent: FooBot\ndisallow: /\n","agent":"FooBot","url":""}"#,
        "\n",
        r#"{"robots":"user-agent: FooBot\ndisallow: /\n","agent":"","url":""}"#,
        "\n",
        r#"{"robots":"","agent":"FooBot","url":""}"#,
        "\n"
    );
    let out = robots(&["batch"], input.as_bytes());
    assert_eq!(out.status.code(), Some(0));
    let allowed: Vec<bool> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["allowed"].as_bool().unwrap())
        .collect();
    assert_eq!(allowed, [false, true, true]);
}

/// `robots diff` names a catalogued crawler as the catalogue spells it,
/// whatever case the file wrote its group in.
#[test]
fn diff_names_crawlers_as_the_catalogue_spells_them() {
    let old = temp_file("case-old.txt", b"User-agent: GOOGLEBOT\nDisallow: /a\n\nUser-agent: somebot\nDisallow: /a\n");
    let new = temp_file("case-new.txt", b"User-agent: GOOGLEBOT\nDisallow: /\n\nUser-agent: somebot\nDisallow: /\n");
    let out = robots(&["diff", old.to_str().unwrap(), new.to_str().unwrap()], b"");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("  Googlebot  "), "{text}");
    assert!(!text.contains("googlebot") && !text.contains("GOOGLEBOT  "), "{text}");
    assert!(text.contains("somebot"), "a token the catalogue does not hold stays as written: {text}");
}

/// Issue #64: `-` is standard input for the robots.txt as for `--urls`,
/// and a `#` line in a URL list is a comment, never judged as a URL.
#[test]
fn robots_from_stdin_and_comments_in_url_lists() {
    let out = robots(&["check", "-", "Googlebot", "https://x/private/a"], FILE);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("line 2: Disallow: /private"));
    for cmd in [&["explain", "-", "Googlebot", "/private/a"][..], &["lint", "-"][..]] {
        let out = robots(cmd, FILE);
        assert!(
            !String::from_utf8_lossy(&out.stderr).contains("cannot read"),
            "{cmd:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = robots(&["check", "-", "--agent", "Googlebot", "--urls", "-"], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not both"));
    let f = temp_file("comments.txt", FILE);
    let out = robots(
        &["check", f.to_str().unwrap(), "--agent", "Googlebot", "--urls", "-"],
        b"# money pages\n/private/a\n\n  # indented\n/ok\n",
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().count(), 3, "a header and two URLs: {text}");
    assert!(!text.contains('#'), "{text}");
}

/// Issue #64, draft-ietf-aipref-vocab-08: `ai-use` is a category again
/// (lint says nothing of it, explain states it), and `search=y` beside a
/// training or AI-use `n` is explained as the override it is.
#[test]
fn the_vocabulary_of_draft_08() {
    let f = temp_file("vocab08.txt", b"User-agent: *\nContent-Usage: / train-ai=n, ai-use=n, search=y\nAllow: /\n");
    let out = robots(&["explain", f.to_str().unwrap(), "bingbot", "http://h/a"], b"");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("ai-use: disallowed") && text.contains("search: allowed"), "{text}");
    assert!(text.contains("note: in draft-ietf-aipref-vocab-08 `search` overrides"), "{text}");
    let out = robots(&["lint", f.to_str().unwrap()], b"");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("ai-use"), "ai-use is no retired label now: {text}");
    // A file written for -07 reads as it did: `ai-use` unknown, no note.
    let old = temp_file("vocab07.txt", b"User-agent: *\nContent-Usage: / train-ai=y, search=y\nAllow: /\n");
    let text =
        String::from_utf8_lossy(&robots(&["explain", old.to_str().unwrap(), "bingbot", "http://h/a"], b"").stdout)
            .into_owned();
    assert!(
        text.contains("train-ai: allowed") && text.contains("ai-use: unknown") && !text.contains("note:"),
        "{text}"
    );
}
