//! Shell completions (clap_complete) and man pages (clap_mangen) for
//! `robots`, `robots-proxy` and `robots-monitor`, written from each
//! command's own clap definition so they cannot drift from it. Each binary
//! exposes them as `completions SHELL` and `man`.

use std::io::Write;

/// The shells completions are written for.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shell {
    /// GNU Bash.
    Bash,
    /// Z shell.
    Zsh,
    /// fish.
    Fish,
}

/// The `completions` and `man` subcommands every robotsgate command has;
/// flattened into each one's own subcommands.
#[derive(clap::Subcommand, Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// Shell completions, for `source <(COMMAND completions bash)`.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: Shell,
    },
    /// The man page; with --dir, every page (one per command) into DIR.
    Man {
        /// Where to write the pages.
        #[arg(long)]
        dir: Option<std::path::PathBuf>,
    },
}

impl Command {
    /// Writes what was asked of `cmd` (the whole command's clap
    /// definition) to stdout, or, for `man --dir`, into the folder.
    pub fn run(&self, cmd: clap::Command) -> std::io::Result<()> {
        let mut out = std::io::stdout().lock();
        match self {
            Command::Completions { shell } => completions(cmd, *shell, &mut out),
            Command::Man { dir } => man(cmd, dir.as_deref(), &mut out),
        }
    }
}

/// Writes `cmd`'s completions for `shell` to `out`. Generated into memory
/// first: clap_complete panics on a failed write (a closed pipe), and this
/// returns the error instead.
pub fn completions(mut cmd: clap::Command, shell: Shell, out: &mut dyn Write) -> std::io::Result<()> {
    let name = cmd.get_name().to_string();
    let shell = match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    let mut text = Vec::new();
    clap_complete::generate(shell, &mut cmd, name, &mut text);
    out.write_all(&text)
}

/// `cmd` with its EXIT STATUS (its `after_help`) on every subcommand that
/// has none of its own, so that `robots check --help` and its man page say
/// what `robots --help` says.
pub fn with_exit_status(cmd: clap::Command) -> clap::Command {
    let Some(exit) = cmd.get_after_help().cloned() else { return cmd };
    cmd.mut_subcommands(|sub| if sub.get_after_help().is_none() { sub.after_help(exit.clone()) } else { sub })
}

/// The process's arguments as `T`, every subcommand's `--help` with the
/// EXIT STATUS ([`with_exit_status`]); on a bad argument, clap's message
/// and exit status 2.
///
/// It also makes a closed standard output end the process quietly, as a
/// Unix tool ends when the reader of its pipe goes (`robots lint F | head`):
/// see [`quiet_on_closed_stdout`].
pub fn parse<T: clap::Parser>() -> T {
    quiet_on_closed_stdout();
    let matches = with_exit_status(T::command()).get_matches();
    T::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

/// The exit status of a process whose standard output was closed under
/// it: what a shell reports for one killed by SIGPIPE (128 + 13).
pub const CLOSED_STDOUT: u8 = 141;

/// Rust ignores SIGPIPE, so `print!` on a pipe whose reader has gone
/// panics ("failed printing to stdout: Broken pipe") and a `write!` fails.
/// This ends the process as SIGPIPE would, with status [`CLOSED_STDOUT`]
/// and nothing on stderr: a panic hook for `print!`, and
/// [`is_closed_stdout`] for the errors `write!` returns.
pub fn quiet_on_closed_stdout() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(i32::from(CLOSED_STDOUT));
        }
        previous(info);
    }));
}

/// Whether `error` (anyhow's chain, or any error) is a write to a closed
/// pipe: the caller then exits with [`CLOSED_STDOUT`], saying nothing.
pub fn is_closed_stdout(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(error);
    while let Some(e) = cause {
        if e.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe) {
            return true;
        }
        cause = e.source();
    }
    false
}

/// `cmd`'s man pages (roff, section 1): its own, then one per
/// subcommand (`robots-check.1`), each with its options. File name first.
pub fn man_pages(cmd: clap::Command) -> std::io::Result<Vec<(String, Vec<u8>)>> {
    let cmd = with_exit_status(cmd).disable_help_subcommand(true);
    let name = cmd.get_name().to_string();
    let mut pages = Vec::new();
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone()).render(&mut page)?;
    pages.push((format!("{name}.1"), page));
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let full = format!("{name}-{}", sub.get_name());
        let mut page = Vec::new();
        clap_mangen::Man::new(sub.clone().name(full.clone())).render(&mut page)?;
        pages.push((format!("{full}.1"), page));
    }
    Ok(pages)
}

/// `man [--dir DIR]`: the command's own page on stdout, or every page
/// written into DIR.
pub fn man(cmd: clap::Command, dir: Option<&std::path::Path>, out: &mut dyn Write) -> std::io::Result<()> {
    let pages = man_pages(cmd)?;
    match dir {
        None => out.write_all(&pages[0].1),
        Some(dir) => {
            std::fs::create_dir_all(dir)?;
            for (file, page) in &pages {
                std::fs::write(dir.join(file), page)?;
                writeln!(out, "{}", dir.join(file).display())?;
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd() -> clap::Command {
        clap::Command::new("demo")
            .about("A demo")
            .subcommand(clap::Command::new("check").about("Checks").arg(clap::Arg::new("file").long("file")))
    }

    #[test]
    fn every_shell_and_a_man_page() {
        for (shell, want) in
            [(Shell::Bash, "complete -F"), (Shell::Zsh, "#compdef demo"), (Shell::Fish, "complete -c demo")]
        {
            let mut out = Vec::new();
            completions(cmd(), shell, &mut out).unwrap();
            let text = String::from_utf8(out).unwrap();
            assert!(text.contains(want) && text.contains("check"), "{shell:?}: {text}");
        }
        let pages = man_pages(cmd()).unwrap();
        let names: Vec<&str> = pages.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["demo.1", "demo-check.1"]);
        let main = String::from_utf8(pages[0].1.clone()).unwrap();
        assert!(main.contains(".TH demo") && main.contains("check"), "{main}");
        let sub = String::from_utf8(pages[1].1.clone()).unwrap();
        assert!(sub.contains("\\-\\-file"), "{sub}");
    }
}
