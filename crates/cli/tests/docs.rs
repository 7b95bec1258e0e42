//! The documentation's examples are tests: every command block of README.md
//! and docs/**/*.md runs, and what it shows is compared with what the
//! commands print, so an example cannot drift from the tool.
//!
//! In the markdown:
//! - A ```` ```console ```` block runs. `$ ` starts a command (a line ending
//!   in `\` continues it), an optional `? N` line right after it gives the
//!   exit status (0 when absent), and every line up to the next `$ ` or the
//!   fence is its output, stdout and stderr together. `...` on a line of its
//!   own matches any number of lines and `[..]` any text within a line
//!   (snapbox's wildcards), for timings, temporary paths and elided output.
//!   Trailing whitespace is ignored.
//! - A command block (`console`, `sh`, `bash`, `shell`) that cannot run here
//!   (it needs a live cluster, builds with cargo, installs packages, prints
//!   this machine's timings) is a placeholder: the line before its fence is
//!   `<!-- placeholder: WHY -->`. It is skipped and listed with the reason.
//!   A `sh` block without that mark fails the test: make it `console` or
//!   say why it cannot run.
//! - `<!-- requires: TOOL -->` before a `console` block runs it only where
//!   TOOL is found (kubectl: on PATH or `PODPLACE_KUBECTL`); elsewhere it is
//!   listed as skipped, and with `PODPLACE_E2E_REQUIRED=1` (CI) a missing
//!   tool fails the test.
//! - A block without an info string fails the test: every block says what
//!   it is (`console`, `text` for output shown without a command, `yaml`,
//!   `json`, ...). `text` blocks are listed, since nothing checks them.
//!
//! Commands run through `sh` in the repository's root with `podplace` (this
//! build's binary) first on PATH, HOME a fresh temporary directory with
//! `~/.local/bin` on PATH, no KUBECONFIG and NO_COLOR set. A command that
//! starts with `cargo run --release -p podplace --` runs this build's
//! `podplace` instead (the same program, without a release build here).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one command may run before the test kills it and fails.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

/// The prefix a command may start with to mean this build's `podplace`.
const CARGO_RUN: &str = "cargo run --release -p podplace --";

/// One fenced block of a markdown file.
struct Block {
    file: String,
    /// 1-based line of the opening fence.
    line: usize,
    lang: String,
    /// The HTML comment on the line before the fence, without its markers.
    mark: Option<String>,
    body: Vec<String>,
}

impl Block {
    fn at(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }
}

/// One `$ ` command of a console block with what the markdown shows.
struct Step {
    line: usize,
    command: String,
    /// The `? N` line's code, if there is one (else 0 is expected).
    status: Option<i32>,
    output: String,
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root exists")
}

fn markdown_files(root: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
            .map(|e| e.expect("a directory entry").path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let mut files = vec![root.join("README.md")];
    walk(&root.join("docs"), &mut files);
    files
}

fn blocks(file: &str, text: &str) -> Result<Vec<Block>, String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let ticks = line.chars().take_while(|&c| c == '`').count();
        if ticks < 3 {
            i += 1;
            continue;
        }
        let fence = &line[..ticks];
        let lang = line[ticks..].trim().to_owned();
        let mark = i
            .checked_sub(1)
            .map(|p| lines[p].trim())
            .and_then(|p| p.strip_prefix("<!--"))
            .and_then(|p| p.strip_suffix("-->"))
            .map(|p| p.trim().to_owned());
        let start = i;
        let mut body = Vec::new();
        i += 1;
        loop {
            let Some(next) = lines.get(i) else {
                return Err(format!("{file}:{}: the block is never closed", start + 1));
            };
            i += 1;
            if next.starts_with(fence) && next.trim_start_matches('`').trim().is_empty() {
                break;
            }
            body.push((*next).to_owned());
        }
        out.push(Block {
            file: file.to_owned(),
            line: start + 1,
            lang,
            mark,
            body,
        });
    }
    Ok(out)
}

fn steps(block: &Block) -> Result<Vec<Step>, String> {
    let mut steps: Vec<Step> = Vec::new();
    let mut lines = block.body.iter().enumerate().peekable();
    while let Some((n, line)) = lines.next() {
        let line_no = block.line + 1 + n;
        let Some(first) = line.strip_prefix("$ ") else {
            return Err(format!(
                "{}:{line_no}: expected a `$ ` command, got `{line}`",
                block.file
            ));
        };
        let mut command = first.to_owned();
        while command.ends_with('\\') {
            let Some((_, more)) = lines.next() else {
                return Err(format!("{}:{line_no}: `\\` ends the block", block.file));
            };
            command.push('\n');
            command.push_str(more);
        }
        let mut status = None;
        if let Some((_, l)) = lines.peek() {
            if let Some(code) = l.strip_prefix("? ") {
                status = Some(code.trim().parse().map_err(|_| {
                    format!("{}:{line_no}: `? {code}` is not an exit code", block.file)
                })?);
                lines.next();
            }
        }
        let mut output = Vec::new();
        while let Some((_, l)) = lines.peek() {
            if l.starts_with("$ ") {
                break;
            }
            output.push(lines.next().expect("peeked").1.as_str());
        }
        steps.push(Step {
            line: line_no,
            command,
            status,
            output: output.join("\n"),
        });
    }
    Ok(steps)
}

/// Runs one command as a user pastes it into a shell; returns its exit
/// status and its stdout and stderr together.
fn run(root: &Path, env: &Env, command: &str) -> Result<(i32, String), String> {
    let command = match command.strip_prefix(CARGO_RUN) {
        Some(rest) => format!("podplace{rest}"),
        None => command.to_owned(),
    };
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("exec 2>&1\n{command}"))
        .current_dir(root)
        .env_clear()
        .env("PATH", &env.path)
        .env("HOME", env.home.path())
        .env("NO_COLOR", "1")
        .env("LANG", "C.UTF-8")
        .env("TMPDIR", std::env::temp_dir())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run sh: {e}"))?;
    let mut stdout = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        stdout.read_to_end(&mut buf).map(|_| buf)
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if started.elapsed() > COMMAND_TIMEOUT {
            // The shell's children keep the pipe open; killing the shell is
            // enough for the test to fail and move on.
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("still running after {COMMAND_TIMEOUT:?}, killed"));
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let out = reader
        .join()
        .expect("the reader thread does not panic")
        .map_err(|e| format!("reading the output: {e}"))?;
    Ok((
        status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out).into_owned(),
    ))
}

/// The environment every command runs in.
struct Env {
    home: TempDir,
    _bin: TempDir,
    path: String,
    kubectl: bool,
}

/// A temporary directory removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("podplace-docs-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        TempDir(dir)
    }
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

fn env() -> Env {
    let bin = TempDir::new("bin");
    let home = TempDir::new("home");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_podplace"), bin.path().join("podplace"))
        .expect("linking podplace");
    let kubectl = std::env::var_os("PODPLACE_KUBECTL")
        .map(PathBuf::from)
        .filter(|p| p.is_file())
        .or_else(|| find_on_path("kubectl"));
    if let Some(kubectl) = &kubectl {
        std::os::unix::fs::symlink(kubectl, bin.path().join("kubectl")).expect("linking kubectl");
    }
    let path = format!(
        "{}:{}:/usr/local/bin:/usr/bin:/bin",
        home.path().join(".local/bin").display(),
        bin.path().display()
    );
    Env {
        home,
        _bin: bin,
        path,
        kubectl: kubectl.is_some(),
    }
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Trailing whitespace at line ends and at the end is not compared.
fn trim(text: &str) -> String {
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    lines.join("\n").trim_end().to_owned()
}

#[test]
fn every_command_block_of_readme_and_docs_runs_as_shown() {
    let root = repo_root();
    let env = env();
    let required = std::env::var_os("PODPLACE_E2E_REQUIRED").is_some_and(|v| v == "1");

    let mut failures: Vec<String> = Vec::new();
    let mut ran: Vec<String> = Vec::new();
    let mut commands = 0;
    let mut skipped: Vec<String> = Vec::new();
    let mut unchecked: Vec<String> = Vec::new();
    let mut others: BTreeMap<String, usize> = BTreeMap::new();

    for path in markdown_files(&root) {
        let file = path
            .strip_prefix(&root)
            .expect("under the root")
            .display()
            .to_string();
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
        let blocks = match blocks(&file, &text) {
            Ok(b) => b,
            Err(e) => {
                failures.push(e);
                continue;
            }
        };
        for block in blocks {
            let is_command = matches!(block.lang.as_str(), "console" | "sh" | "bash" | "shell");
            let placeholder = block
                .mark
                .as_deref()
                .and_then(|m| m.strip_prefix("placeholder:"))
                .map(str::trim);
            let requires = block
                .mark
                .as_deref()
                .and_then(|m| m.strip_prefix("requires:"))
                .map(str::trim);
            match (is_command, placeholder) {
                (true, Some(why)) => {
                    skipped.push(format!("{}: {why}", block.at()));
                    continue;
                }
                (false, Some(_)) => {
                    failures.push(format!(
                        "{}: a placeholder mark on a `{}` block, which does not run anyway",
                        block.at(),
                        block.lang
                    ));
                    continue;
                }
                (false, None) => {
                    if block.lang.is_empty() {
                        failures.push(format!(
                            "{}: a block without an info string: say what it is (`console` to \
                             run it, `text` for output shown without a command, `yaml`, ...)",
                            block.at()
                        ));
                    } else if block.lang == "text" {
                        unchecked.push(block.at());
                    } else {
                        *others.entry(block.lang.clone()).or_default() += 1;
                    }
                    continue;
                }
                (true, None) if block.lang != "console" => {
                    failures.push(format!(
                        "{}: a `{}` block that does not run: make it a `console` block with \
                         `$ ` commands and their output, or mark it \
                         `<!-- placeholder: why it cannot run -->`",
                        block.at(),
                        block.lang
                    ));
                    continue;
                }
                (true, None) => {}
            }
            match requires {
                None => {}
                Some("kubectl") if env.kubectl => {}
                Some("kubectl") => {
                    let why = "kubectl not found (PATH, PODPLACE_KUBECTL)";
                    if required {
                        failures.push(format!(
                            "{}: {why}, and PODPLACE_E2E_REQUIRED=1",
                            block.at()
                        ));
                    } else {
                        skipped.push(format!("{}: {why}", block.at()));
                    }
                    continue;
                }
                Some(other) => {
                    failures.push(format!(
                        "{}: `<!-- requires: {other} -->`: only kubectl is known",
                        block.at()
                    ));
                    continue;
                }
            }
            let steps = match steps(&block) {
                Ok(s) => s,
                Err(e) => {
                    failures.push(e);
                    continue;
                }
            };
            ran.push(block.at());
            for step in steps {
                commands += 1;
                let at = format!("{file}:{}", step.line);
                let started = Instant::now();
                match run(&root, &env, &step.command) {
                    Err(e) => failures.push(format!("{at}: `{}`: {e}", step.command)),
                    Ok((status, output)) => {
                        let took = started.elapsed();
                        if took > Duration::from_secs(10) {
                            eprintln!("{at}: `{}` took {took:?}", step.command);
                        }
                        if status != step.status.unwrap_or(0) {
                            let said = match step.status {
                                Some(code) => format!("`? {code}`"),
                                None => "no `? N` line, so 0".to_owned(),
                            };
                            failures.push(format!(
                                "{at}: `{}` exited {status}, the markdown says {said}; the \
                                 output's last lines:\n{}",
                                step.command,
                                tail(&output, 15)
                            ));
                        }
                        let name = format!("{at} `{}`", step.command);
                        if let Err(e) = snapbox::Assert::new().try_eq(
                            Some(&name),
                            snapbox::Data::text(trim(&output)),
                            snapbox::Data::text(trim(&step.output)),
                        ) {
                            failures.push(format!("{at}: the output differs:\n{e}"));
                        }
                    }
                }
            }
        }
    }

    println!(
        "ran {} console blocks ({commands} commands): {}",
        ran.len(),
        ran.join(", ")
    );
    println!("skipped {} placeholder blocks:", skipped.len());
    for s in &skipped {
        println!("  {s}");
    }
    println!(
        "{} text blocks (diagrams, output shown without a command; not checked): {}",
        unchecked.len(),
        unchecked.join(", ")
    );
    println!("other blocks (not commands): {others:?}");
    assert!(
        failures.is_empty(),
        "{} problem(s) in the documentation's examples:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    assert!(commands > 0, "no command ran");
}
