//! `podplace completion SHELL` and `podplace man`: shell completion scripts
//! and roff man pages, both generated from the clap definition of the
//! command line (clap_complete, clap_mangen), so they never drift from the
//! flags they describe.

use std::io::Write;

use clap::{Args, ValueEnum};

use crate::Exit;

/// How to load the script, shown by `podplace completion --help`.
pub const SETUP: &str = "\
Load the completions in the current shell, or for every new one:

  bash:        source <(podplace completion bash)
               podplace completion bash > ~/.local/share/bash-completion/completions/podplace
  zsh:         source <(podplace completion zsh)
               podplace completion zsh > \"${fpath[1]}/_podplace\"
  fish:        podplace completion fish > ~/.config/fish/completions/podplace.fish
  powershell:  podplace completion powershell | Out-String | Invoke-Expression

Commands, subcommands, flags and flag values (-o formats, --color, file
paths) complete. For pod and namespace names too (from the -f files, else
from the live cluster, given up after 2 s), load the dynamic script, which
asks podplace at each TAB (podplace must be on PATH):

  bash:        source <(podplace completion bash --dynamic)
  zsh:         source <(podplace completion zsh --dynamic)
  fish:        podplace completion fish --dynamic | source";

/// The shells `completion` writes for, spelled as kubectl spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Shell {
    /// GNU bash 4.1 or newer (with bash-completion).
    Bash,
    /// zsh.
    Zsh,
    /// fish.
    Fish,
    /// PowerShell.
    Powershell,
}

/// Arguments of `podplace completion`.
#[derive(Debug, Args)]
pub struct CompletionArgs {
    /// The shell to write the script for.
    #[arg(value_enum)]
    pub shell: Shell,
    /// Write the script that asks podplace at each TAB, so pod names (of
    /// the -f files, else of the live cluster) and namespaces complete too;
    /// the same as `COMPLETE=SHELL podplace`. Needs podplace on PATH.
    #[arg(long = "dynamic")]
    pub dynamic: bool,
}

/// Arguments of `podplace man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// The command whose page to print (`why`, `place`, ...); none: the
    /// page of podplace itself, which lists the commands.
    pub command: Option<String>,
}

/// Writes the completion script of `command` for `args.shell` to stdout.
pub fn completion(args: &CompletionArgs, command: clap::Command) -> anyhow::Result<Exit> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if args.dynamic {
        write_dynamic(args.shell, command.get_name(), &mut out)?;
    } else {
        write_completion(args.shell, command, &mut out)?;
    }
    out.flush()?;
    Ok(Exit::Ok)
}

/// The script of one shell, for `command` named as it is invoked.
pub fn write_completion(
    shell: Shell,
    mut command: clap::Command,
    out: &mut impl Write,
) -> std::io::Result<()> {
    use clap_complete::shells;
    let name = command.get_name().to_string();
    match shell {
        Shell::Bash => clap_complete::generate(shells::Bash, &mut command, name, out),
        Shell::Zsh => clap_complete::generate(shells::Zsh, &mut command, name, out),
        Shell::Fish => clap_complete::generate(shells::Fish, &mut command, name, out),
        Shell::Powershell => clap_complete::generate(shells::PowerShell, &mut command, name, out),
    }
    Ok(())
}

/// The script registering dynamic completion for `name`: at each TAB the
/// shell runs `COMPLETE=SHELL name -- WORDS`, which clap_complete's
/// `CompleteEnv` answers (complete.rs adds pod and namespace names).
pub fn write_dynamic(shell: Shell, name: &str, out: &mut impl Write) -> std::io::Result<()> {
    use clap_complete::env::{Bash, EnvCompleter, Fish, Powershell, Zsh};
    let shell: &dyn EnvCompleter = match shell {
        Shell::Bash => &Bash,
        Shell::Zsh => &Zsh,
        Shell::Fish => &Fish,
        Shell::Powershell => &Powershell,
    };
    shell.write_registration("COMPLETE", name, name, name, out)
}

/// Writes the man page of podplace, or of one of its commands, to stdout.
pub fn man(args: &ManArgs, command: clap::Command) -> anyhow::Result<Exit> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match write_man(args.command.as_deref(), command, &mut out) {
        Ok(()) => {}
        Err(ManError::Unknown(name, known)) => {
            eprintln!("error: no command {name:?}; the commands are: {known}");
            return Ok(Exit::BadInput);
        }
        Err(ManError::Io(e)) => return Err(e.into()),
    }
    out.flush()?;
    Ok(Exit::Ok)
}

/// Why a man page was not written.
#[derive(Debug)]
pub enum ManError {
    /// No such command (its name, and the commands there are).
    Unknown(String, String),
    /// Writing failed.
    Io(std::io::Error),
}

/// The roff page of `subcommand` (None: of podplace), named as `man` files
/// are (`podplace-why(1)`).
pub fn write_man(
    subcommand: Option<&str>,
    command: clap::Command,
    out: &mut impl Write,
) -> Result<(), ManError> {
    let mut command = command;
    command.build();
    let page = match subcommand {
        None => command,
        Some(name) => {
            let root = command.get_name().to_string();
            let Some(sub) = command.find_subcommand(name).cloned() else {
                let known: Vec<&str> = command
                    .get_subcommands()
                    .filter(|c| !c.is_hide_set())
                    .map(|c| c.get_name())
                    .collect();
                return Err(ManError::Unknown(name.to_string(), known.join(", ")));
            };
            let full = format!("{root}-{}", sub.get_name());
            sub.name(full).bin_name(format!("{root} {name}"))
        }
    };
    clap_mangen::Man::new(page)
        .render(out)
        .map_err(ManError::Io)
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;
    use crate::Cli;

    fn script(shell: Shell) -> String {
        let mut out = Vec::new();
        write_completion(shell, Cli::command(), &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// Every shell's script names every visible command and the -o
    /// formats, so it was generated from this definition, not frozen.
    #[test]
    fn scripts_cover_the_commands() {
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish, Shell::Powershell] {
            let text = script(shell);
            for word in [
                "place",
                "why",
                "simulate",
                "lint",
                "rebalance",
                "yaml",
                "completion",
            ] {
                assert!(text.contains(word), "{shell:?} lacks {word}");
            }
        }
    }

    /// A check whose program is not installed is skipped with a message,
    /// unless `PODPLACE_TOOLS_REQUIRED` is set (CI installs bash, zsh and
    /// man-db and sets it), where it fails.
    fn not_runnable(check: &str, e: &std::io::Error) {
        if std::env::var_os("PODPLACE_TOOLS_REQUIRED").is_some() {
            panic!("{check}: not runnable ({e}) and PODPLACE_TOOLS_REQUIRED is set");
        }
        eprintln!("skipped: {check} (not runnable: {e})");
    }

    /// `bash -n` / `zsh -n` parse the scripts (skipped, with a message,
    /// where the shell is not installed).
    #[test]
    fn scripts_parse_in_their_shell() {
        for (shell, program) in [(Shell::Bash, "bash"), (Shell::Zsh, "zsh")] {
            let dir =
                std::env::temp_dir().join(format!("podplace-completion-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let path = dir.join(format!("podplace.{program}"));
            std::fs::write(&path, script(shell)).unwrap();
            match std::process::Command::new(program)
                .arg("-n")
                .arg(&path)
                .output()
            {
                Ok(o) => assert!(
                    o.status.success(),
                    "{program} -n: {}",
                    String::from_utf8_lossy(&o.stderr)
                ),
                Err(e) => not_runnable(&format!("{program} -n"), &e),
            }
            std::fs::remove_dir_all(&dir).ok();
        }
    }

    /// The pages render with `man -l` (skipped, with a message, without
    /// man-db), and name each command's flags.
    #[test]
    fn man_pages_render() {
        let mut top = Vec::new();
        write_man(None, Cli::command(), &mut top).unwrap();
        let mut why = Vec::new();
        write_man(Some("why"), Cli::command(), &mut why).unwrap();
        let why_text = String::from_utf8(why.clone()).unwrap();
        assert!(why_text.contains("podplace\\-why"), "{why_text}");
        assert!(why_text.contains("\\-\\-output"), "{why_text}");
        assert!(matches!(
            write_man(Some("nope"), Cli::command(), &mut Vec::new()),
            Err(ManError::Unknown(..))
        ));
        let dir = std::env::temp_dir().join(format!("podplace-man-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (name, page) in [("podplace.1", top), ("podplace-why.1", why)] {
            let path = dir.join(name);
            std::fs::write(&path, page).unwrap();
            let run = std::process::Command::new("man")
                .arg("-l")
                .arg(&path)
                .env("MANPAGER", "cat")
                .env("PAGER", "cat")
                .env("MANWIDTH", "80")
                .output();
            match run {
                Ok(o) if o.status.success() => {
                    let text = String::from_utf8_lossy(&o.stdout);
                    assert!(text.contains("podplace"), "{name}: {text}");
                }
                Ok(o) => panic!("man -l {name}: {}", String::from_utf8_lossy(&o.stderr)),
                Err(e) => not_runnable(&format!("man -l {name}"), &e),
            }
        }
        std::fs::remove_dir_all(&dir).ok();
    }
}
