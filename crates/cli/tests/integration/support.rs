//! Running the real `podplace` binary the way a user does, for every
//! command's tests: in a directory, without colour, without the caller's
//! kubeconfig, and against the recorded test API server.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use podplace_kube::testserver::TestServer;

/// The bundled story manifests, where most tests run the binary.
pub fn examples() -> &'static Path {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/stories"
    ))
}

/// Runs `podplace` in `examples/stories`: (stdout, stderr, exit code).
pub fn podplace(args: &[&str]) -> (String, String, i32) {
    podplace_in(examples(), args)
}

/// Runs `podplace` in `dir`: (stdout, stderr, exit code).
pub fn podplace_in(dir: &Path, args: &[&str]) -> (String, String, i32) {
    let out = command(dir, args).output().expect("run podplace");
    captured(out)
}

/// Runs `podplace` in `examples/stories` with `stdin` fed in.
pub fn podplace_with_stdin(args: &[&str], stdin: &str) -> (String, String, i32) {
    podplace_with_stdin_in(examples(), args, stdin)
}

/// Runs `podplace` in `dir` with `stdin` fed in.
pub fn podplace_with_stdin_in(dir: &Path, args: &[&str], stdin: &str) -> (String, String, i32) {
    let mut child = command(dir, args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run podplace");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write stdin");
    captured(child.wait_with_output().expect("podplace ends"))
}

fn command(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_podplace"));
    cmd.args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("KUBECONFIG");
    cmd
}

fn captured(out: Output) -> (String, String, i32) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

/// A scratch directory of its own for each test (tests of one binary run
/// in parallel in one process), removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    /// A fresh, empty directory; `name` only makes it recognisable.
    pub fn new(name: &str) -> Scratch {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!(
            "podplace-cli-test-{}-{}-{name}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("scratch dir");
        Scratch(p)
    }

    /// A path inside the directory.
    pub fn join(&self, file: &str) -> PathBuf {
        self.0.join(file)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The test API server and a scratch directory holding a `kubeconfig` for it.
pub fn live_cluster(name: &str) -> (TestServer, Scratch) {
    let server = TestServer::start().expect("test server");
    let dir = Scratch::new(name);
    server
        .write_kubeconfig(&dir.join("kubeconfig"))
        .expect("kubeconfig");
    (server, dir)
}
