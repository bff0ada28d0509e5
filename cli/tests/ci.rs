//! `robots` where people use it: the GitHub Actions steps of docs/CI.md,
//! run as written in a scratch repository, and the pre-commit hooks of
//! `.pre-commit-hooks.yaml` run by a real pre-commit.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// A PATH with the built `robots` first.
fn path_with_robots() -> String {
    let bin = Path::new(env!("CARGO_BIN_EXE_robots")).parent().unwrap().display().to_string();
    format!("{bin}:{}", std::env::var("PATH").unwrap_or_default())
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.test")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.test")
        .output()
        .expect("git");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("robots-ci-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The workflow's steps: (name, run) for every step with a `run`.
fn steps() -> Vec<(String, String)> {
    let doc = std::fs::read_to_string(workspace().join("docs/CI.md")).unwrap();
    let start = doc.find("```yaml\nname: robots.txt").expect("the workflow in docs/CI.md") + "```yaml\n".len();
    let yaml = &doc[start..start + doc[start..].find("```").unwrap()];
    let flow: serde_json::Value = serde_saphyr::from_str(yaml).expect("the workflow is YAML");
    flow["jobs"]["robots"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| Some((s["name"].as_str().unwrap_or("").to_string(), s["run"].as_str()?.to_string())))
        .collect()
}

fn run_step(dir: &Path, run: &str) -> Output {
    // As Actions does: expressions first, then `bash -e`.
    let run = run.replace("${{ github.base_ref }}", "main");
    Command::new("bash").args(["-e", "-c", &run]).current_dir(dir).env("PATH", path_with_robots()).output().unwrap()
}

/// A repository whose base branch `main` has `base` and whose head has
/// `head`, with `origin/main` as a checkout with history has it.
fn repo(name: &str, base: &str, head: &str) -> PathBuf {
    let dir = scratch(name);
    std::fs::create_dir_all(dir.join("public")).unwrap();
    std::fs::create_dir_all(dir.join("ci")).unwrap();
    git(&dir, &["init", "-q", "-b", "main"]);
    std::fs::write(dir.join("public/robots.txt"), base).unwrap();
    std::fs::write(dir.join("ci/money-pages.txt"), "/\n/checkout\n/products/shoe\n").unwrap();
    git(&dir, &["add", "."]);
    git(&dir, &["commit", "-q", "-m", "base"]);
    git(&dir, &["update-ref", "refs/remotes/origin/main", "main"]);
    git(&dir, &["checkout", "-q", "-b", "change"]);
    std::fs::write(dir.join("public/robots.txt"), head).unwrap();
    git(&dir, &["commit", "-q", "-am", "head"]);
    dir
}

#[test]
fn the_documented_workflow_runs_as_written() {
    let steps = steps();
    let runnable: Vec<&(String, String)> = steps.iter().filter(|(_, run)| !run.contains("cargo install")).collect();
    assert_eq!(runnable.len(), 3, "lint, the base file, diff: {steps:?}");
    let base = "User-agent: *\nDisallow: /admin\n";

    // A change that blocks /checkout: the diff step fails, naming the flip.
    let dir = repo("flip", base, "User-agent: *\nDisallow: /admin\nDisallow: /checkout\nDissallow: /x\n");
    let mut outputs = Vec::new();
    for (name, run) in &runnable {
        outputs.push((name.clone(), run_step(&dir, run)));
    }
    let (lint, base_file, diff) = (&outputs[0].1, &outputs[1].1, &outputs[2].1);
    assert_eq!(base_file.status.code(), Some(0), "{}", String::from_utf8_lossy(&base_file.stderr));
    assert_eq!(std::fs::read_to_string(dir.join("base-robots.txt")).unwrap(), base);
    // The lint step's SARIF names the typo on its line (it is a warning: exit 0).
    assert!(lint.status.code().is_some(), "{lint:?}");
    let sarif: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("robots.sarif")).unwrap()).unwrap();
    assert_eq!(sarif["version"], "2.1.0");
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    assert!(
        results
            .iter()
            .any(|r| r["ruleId"] == "typo" && r["locations"][0]["physicalLocation"]["region"]["startLine"] == 4),
        "{results:?}"
    );
    assert_eq!(diff.status.code(), Some(1), "a flip fails the check: {}", String::from_utf8_lossy(&diff.stdout));
    let text = String::from_utf8_lossy(&diff.stdout);
    assert!(text.contains("/checkout") && text.contains("Googlebot"), "{text}");

    // A change that flips nothing passes.
    let dir = repo("same", base, "# reviewed\nUser-agent: *\nDisallow: /admin\n");
    for (name, run) in &runnable {
        let out = run_step(&dir, run);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{name}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn pre_commit_runs_the_hook() {
    if Command::new("pre-commit").arg("--version").output().is_err() {
        assert!(std::env::var_os("CI").is_none(), "pre-commit is required under CI (scripts/services.sh installs it)");
        eprintln!("pre-commit not installed; skipping");
        return;
    }
    let dir = scratch("pre-commit");
    git(&dir, &["init", "-q", "-b", "main"]);
    std::fs::write(dir.join("robots.txt"), "User-agent: *\nDisallow: /admin\n").unwrap();
    std::fs::write(dir.join("README"), "not a robots.txt\n").unwrap();
    git(&dir, &["add", "."]);
    let root = workspace();
    let try_repo = |files: &[&str]| {
        let mut args = vec!["try-repo", root.to_str().unwrap(), "robots-lint-system", "--files"];
        args.extend_from_slice(files);
        Command::new("pre-commit")
            .args(&args)
            .current_dir(&dir)
            .env("PATH", path_with_robots())
            .env("PRE_COMMIT_HOME", dir.join(".cache"))
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.test")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.test")
            .output()
            .unwrap()
    };
    let ok = try_repo(&["robots.txt", "README"]);
    let text = String::from_utf8_lossy(&ok.stdout);
    assert_eq!(ok.status.code(), Some(0), "{text}{}", String::from_utf8_lossy(&ok.stderr));
    assert!(text.contains("robots lint") && text.contains("Passed"), "{text}");
    // An HTML page served as robots.txt is an error: the commit fails.
    std::fs::write(dir.join("robots.txt"), "<!DOCTYPE html>\n<html><body>Not found</body></html>\n").unwrap();
    let bad = try_repo(&["robots.txt"]);
    let text = String::from_utf8_lossy(&bad.stdout);
    assert_eq!(bad.status.code(), Some(1), "{text}");
    assert!(text.contains("Failed") && text.contains("html"), "{text}");
}
