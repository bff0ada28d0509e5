//! The README's two commands install what each needs (issue #64): the
//! main job (`scripts/run.sh`) builds and runs the monitor, so it installs
//! the build's system packages only; Chromium, its WebDriver and dnsmasq
//! are for the tests (`scripts/test.sh`). Run against stand-ins for `dpkg`
//! (every package missing) and `apt-get` (which writes down what it was
//! asked), so nothing is installed.

use std::path::Path;
use std::process::Command;

fn asked(setup_for: Option<&str>) -> String {
    let dir = testkit::temp_dir(&format!("setup-{}", setup_for.unwrap_or("run")));
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = dir.join("apt.log");
    for (name, body) in [
        ("dpkg", "#!/bin/sh\nexit 1\n".to_string()),
        ("apt-get", format!("#!/bin/sh\necho \"$@\" >> {}\n", log.display())),
        ("sudo", "#!/bin/sh\nexec \"$@\"\n".to_string()),
    ] {
        let path = bin.join(name);
        std::fs::write(&path, body).unwrap();
        Command::new("chmod").arg("+x").arg(&path).status().unwrap();
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let script = match setup_for {
        Some(v) => format!("SETUP_FOR={v} source scripts/setup.sh"),
        None => "source scripts/setup.sh".to_string(),
    };
    let out = Command::new("bash").arg("-c").arg(script).current_dir(root).env("PATH", path).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::read_to_string(log).unwrap_or_default()
}

#[test]
fn the_main_job_installs_no_browser_and_the_tests_do() {
    let run = asked(None);
    assert!(run.contains("cmake") && run.contains("libssl-dev"), "{run}");
    assert!(!run.contains("chromium") && !run.contains("dnsmasq"), "the main job needs no browser: {run}");
    let tests = asked(Some("tests"));
    assert!(tests.contains("chromium chromium-driver dnsmasq-base"), "{tests}");
    // The two commands ask for it as the README says.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let test_sh = std::fs::read_to_string(root.join("scripts/test.sh")).unwrap();
    assert!(test_sh.contains("SETUP_FOR=tests source scripts/setup.sh"));
    let run_sh = std::fs::read_to_string(root.join("scripts/run.sh")).unwrap();
    assert!(run_sh.contains("\nsource scripts/setup.sh") && !run_sh.contains("SETUP_FOR"));
}
