//! `-o html` pages in a real headless Chromium (issue 20): the page is
//! loaded from file://, its scripts run, and the test reads the DOM a person
//! would see, clicks a node, and fails on any console error or any request
//! other than the page itself. Screenshots are kept under
//! target/tmp/html-report/.
//!
//! Chromium is driven over the DevTools protocol on
//! `--remote-debugging-pipe` (JSON messages ended by NUL on fds 3 and 4),
//! so no client library or network port is needed. Without a `chromium`
//! on PATH (or PODPLACE_CHROMIUM) the tests print one line and pass, unless
//! PODPLACE_BROWSER_REQUIRED=1 (CI, which installs it).

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{json, Value};

/// The Chromium binary, or `None` (after saying so) when the tests should
/// skip.
fn chromium() -> Option<PathBuf> {
    let candidates = std::env::var_os("PODPLACE_CHROMIUM")
        .map(PathBuf::from)
        .into_iter()
        .chain(
            ["chromium", "chromium-browser", "google-chrome"]
                .into_iter()
                .filter_map(|name| {
                    std::env::var_os("PATH").and_then(|paths| {
                        std::env::split_paths(&paths)
                            .map(|d| d.join(name))
                            .find(|p| p.is_file())
                    })
                }),
        );
    let found = candidates.into_iter().next();
    if found.is_none() {
        assert!(
            std::env::var("PODPLACE_BROWSER_REQUIRED").as_deref() != Ok("1"),
            "PODPLACE_BROWSER_REQUIRED=1 but no chromium on PATH"
        );
        eprintln!("browser tests skipped: no chromium on PATH (apt-get install chromium)");
    }
    found
}

/// One headless Chromium and one page attached to it.
struct Browser {
    child: Child,
    input: ChildStdin,
    messages: Receiver<Value>,
    next_id: u64,
    session: String,
    /// Every event of the page so far.
    events: Vec<Value>,
    _profile: TempDir,
}

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Browser {
    fn launch(binary: &Path, name: &str) -> Browser {
        let profile = TempDir(out_dir().join(format!("profile-{name}-{}", std::process::id())));
        std::fs::create_dir_all(&profile.0).unwrap();
        // The shell moves our pipes to fds 3 (commands) and 4 (answers).
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(r#"exec "$0" "$@" 3<&0 4>&1 0</dev/null 1>/dev/null"#)
            .arg(binary)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-extensions",
                "--disable-sync",
                "--remote-debugging-pipe",
                "--window-size=1400,900",
            ])
            .arg(format!("--user-data-dir={}", profile.0.display()))
            .arg("about:blank")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            // A group of its own, so every process Chromium starts can be
            // stopped by the group's id (the browser's PID).
            .process_group(0)
            .spawn()
            .expect("chromium starts");
        let input = child.stdin.take().unwrap();
        let output = child.stdout.take().unwrap();
        let (tx, messages) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(output);
            let mut buf = Vec::new();
            while reader.read_until(0, &mut buf).unwrap_or(0) > 0 {
                if buf.last() == Some(&0) {
                    buf.pop();
                }
                if let Ok(v) = serde_json::from_slice::<Value>(&buf) {
                    if tx.send(v).is_err() {
                        break;
                    }
                }
                buf.clear();
            }
        });
        let mut browser = Browser {
            child,
            input,
            messages,
            next_id: 0,
            session: String::new(),
            events: Vec::new(),
            _profile: profile,
        };
        let target = browser.call("Target.createTarget", json!({"url": "about:blank"}));
        let target_id = target["targetId"].as_str().unwrap().to_string();
        let attached = browser.call(
            "Target.attachToTarget",
            json!({"targetId": target_id, "flatten": true}),
        );
        browser.session = attached["sessionId"].as_str().unwrap().to_string();
        for domain in ["Page", "Runtime", "Log", "Network"] {
            browser.call(&format!("{domain}.enable"), json!({}));
        }
        browser
    }

    /// Sends one command (to the page once attached) and waits for its
    /// answer, keeping the events that arrive meanwhile.
    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({"id": id, "method": method, "params": params});
        if !self.session.is_empty() {
            message["sessionId"] = json!(self.session);
        }
        let mut bytes = serde_json::to_vec(&message).unwrap();
        bytes.push(0);
        self.input.write_all(&bytes).unwrap();
        self.input.flush().unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let m = match self.messages.recv_timeout(left) {
                Ok(m) => m,
                Err(RecvTimeoutError::Timeout) => panic!("no answer to {method} in 60 s"),
                Err(RecvTimeoutError::Disconnected) => panic!("chromium exited during {method}"),
            };
            if m["id"] == json!(id) {
                assert!(m.get("error").is_none(), "{method} failed: {m}");
                return m["result"].clone();
            }
            if m.get("method").is_some() {
                self.events.push(m);
            }
        }
    }

    /// Evaluates a JavaScript expression in the page; its value as JSON.
    fn eval(&mut self, expression: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
        );
        assert!(
            r.get("exceptionDetails").is_none(),
            "{expression} threw: {}",
            r["exceptionDetails"]
        );
        r["result"]["value"].clone()
    }

    /// Opens a page and waits for its `data-ready` marker; returns the
    /// time from navigation to the marker (the page's own
    /// `performance.now()` when it set it, in ms).
    fn open(&mut self, page: &Path) -> u64 {
        let url = format!("file://{}", page.display());
        // A page opened before must not answer for this one.
        self.eval("document.body && document.body.removeAttribute('data-ready-ms')");
        // Events are checked per page (assert_clean): start afresh.
        self.events.clear();
        self.call("Page.navigate", json!({"url": url}));
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ready =
                self.eval("document.body ? document.body.getAttribute('data-ready-ms') : null");
            if let Some(ms) = ready.as_str() {
                return ms.parse().unwrap();
            }
            assert!(Instant::now() < deadline, "{url}: no data-ready in 30 s");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Saves a PNG of the viewport under target/tmp/html-report/.
    fn screenshot(&mut self, name: &str) -> PathBuf {
        let shot = self.call("Page.captureScreenshot", json!({"format": "png"}));
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().unwrap())
            .unwrap();
        let path = out_dir().join(format!("{name}.png"));
        std::fs::write(&path, png).unwrap();
        path
    }

    /// Fails on console errors, uncaught exceptions, error log entries (a
    /// blocked request is one) and any request but the page's own.
    fn assert_clean(&mut self, page: &Path) {
        // Drain what arrived after the last answer.
        self.eval("1");
        let own = format!("file://{}", page.display());
        for e in &self.events {
            let p = &e["params"];
            match e["method"].as_str().unwrap_or("") {
                "Runtime.exceptionThrown" => panic!("uncaught exception: {p}"),
                "Runtime.consoleAPICalled" if p["type"] == "error" || p["type"] == "assert" => {
                    panic!("console error: {p}")
                }
                "Log.entryAdded" if p["entry"]["level"] == "error" => {
                    panic!("error logged: {p}")
                }
                "Network.requestWillBeSent" => {
                    let url = p["request"]["url"].as_str().unwrap_or("");
                    assert_eq!(url, own, "the page made a request");
                }
                _ => {}
            }
        }
    }
}

impl Drop for Browser {
    /// Asks Chromium to close (it then stops its renderer, GPU and
    /// crashpad processes), waits at most 10 s for its PID to exit, then
    /// kills what is left of its process group and waits, at most 10 s
    /// more, until no process of the group remains.
    fn drop(&mut self) {
        use nix::sys::signal::{killpg, Signal};
        use nix::unistd::Pid;
        let group = Pid::from_raw(i32::try_from(self.child.id()).unwrap_or(i32::MAX));
        let mut close = serde_json::to_vec(&json!({"id": 0, "method": "Browser.close"})).unwrap();
        close.push(0);
        if self
            .input
            .write_all(&close)
            .and_then(|()| self.input.flush())
            .is_ok()
        {
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline && matches!(self.child.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = killpg(group, Signal::SIGKILL);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline && killpg(group, None).is_ok() {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn out_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("html-report");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs podplace; its stdout.
fn podplace(args: &[&str]) -> Vec<u8> {
    let out = Command::new(env!("CARGO_BIN_EXE_podplace"))
        .args(args)
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "podplace {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn write_page(name: &str, args: &[&str]) -> PathBuf {
    let path = out_dir().join(format!("{name}.html"));
    std::fs::write(&path, podplace(args)).unwrap();
    path.canonicalize().unwrap()
}

/// Every page in one headless Chromium (one start for the whole binary:
/// CI is over its time budget); each check names itself when it fails.
#[test]
fn pages_show_what_the_json_says() {
    let Some(chromium) = chromium() else { return };
    let mut b = Browser::launch(&chromium, "pages");
    vault_why_page_names_the_blocking_workload_of_a_clicked_node(&mut b);
    place_page_draws_every_node_and_the_pending_pods(&mut b);
    drift_simulate_page_shows_every_step_and_the_collapse(&mut b);
    drift_rebalance_page_draws_one_arrow_per_eviction(&mut b);
}

fn vault_why_page_names_the_blocking_workload_of_a_clicked_node(b: &mut Browser) {
    let why: Value = serde_json::from_slice(&podplace(&[
        "why",
        "stokesnet/vault-2",
        "-f",
        "examples/stories/vault",
        "-o",
        "json",
    ]))
    .unwrap();
    let page = write_page(
        "vault-why",
        &[
            "why",
            "stokesnet/vault-2",
            "-f",
            "examples/stories/vault",
            "-o",
            "html",
        ],
    );
    b.open(&page);
    // One cell per node.
    let cells = b.eval("document.querySelectorAll('#map .node').length");
    assert_eq!(cells, why["node_count"]);
    // The legend's counts are the FailedScheduling line's.
    let message = why["message"].as_str().unwrap();
    let legend = b.eval("[...document.querySelectorAll('#reasons li')].map(li => li.textContent)");
    let legend = legend.as_array().unwrap();
    assert!(!legend.is_empty());
    for line in legend {
        let line = line.as_str().unwrap();
        if let Some((count, rest)) = line.split_once(" × ") {
            let reason = rest.rsplit_once(" (").unwrap().0;
            assert!(
                message.contains(&format!("{count} {reason}")),
                "legend line {line:?} not in {message:?}"
            );
        }
    }
    // A node whose rejection names blocking pods: click it, read the panel.
    let (node, workload) = why["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|n| {
            let r = n["reasons"]
                .as_array()?
                .iter()
                .find(|r| r["blockers"].as_array().is_some_and(|b| !b.is_empty()))?;
            Some((
                n["node"].as_str()?.to_string(),
                r["blockers"][0]["workload"].as_str()?.to_string(),
            ))
        })
        .expect("vault-2 is blocked by pods on some node");
    let panel = b.eval(&format!(
        "document.querySelector('#map .node[data-node=\"{node}\"]').click(); \
         document.getElementById('panel').innerText"
    ));
    let panel = panel.as_str().unwrap();
    assert!(panel.contains(&node), "{panel}");
    assert!(panel.contains(&workload), "panel lacks {workload}: {panel}");
    b.screenshot("vault-why");
    b.assert_clean(&page);
    // A bound pod: its node is outlined as the chosen one, its panel open.
    let bound: Value = serde_json::from_slice(&podplace(&[
        "why",
        "stokesnet/vault-0",
        "-f",
        "examples/stories/vault",
        "-o",
        "json",
    ]))
    .unwrap();
    let page = write_page(
        "vault-0-why",
        &[
            "why",
            "stokesnet/vault-0",
            "-f",
            "examples/stories/vault",
            "-o",
            "html",
        ],
    );
    b.open(&page);
    let chosen =
        b.eval("[...document.querySelectorAll('#map .node.chosen')].map(n => n.dataset.node)");
    assert_eq!(chosen, json!([bound["node"]]));
    let panel = b.eval("document.getElementById('node-name').textContent");
    assert_eq!(panel, bound["node"]);
    b.assert_clean(&page);
}

fn place_page_draws_every_node_and_the_pending_pods(b: &mut Browser) {
    let args = ["place", "-f", "examples/stories/vault"];
    let placed: Value =
        serde_json::from_slice(&podplace(&[&args[..], &["-o", "json"]].concat())).unwrap();
    let page = write_page("vault-place", &[&args[..], &["-o", "html"]].concat());
    b.open(&page);
    // Nodes are named when there are few of them, one cell each, in zone
    // columns.
    let names = b.eval("[...document.querySelectorAll('#map .node')].map(n => n.dataset.node)");
    let names = names.as_array().unwrap();
    let cluster =
        std::fs::read_to_string(repo().join("examples/stories/vault/cluster.yaml")).unwrap();
    assert_eq!(names.len(), cluster.matches("kind: Node\n").count());
    let labels = b.eval("[...document.querySelectorAll('#map .node .label')].length");
    assert_eq!(labels.as_u64(), Some(2 * names.len() as u64));
    // The Pending list counts what `-o json` counts.
    let heading = b.eval("document.querySelector('#pending h2').textContent");
    assert_eq!(
        heading.as_str().unwrap(),
        format!("Pending ({})", placed["pending"])
    );
    // Picking a workload fills its nodes: as many replicas on the map as
    // the placement put on nodes (and were there already).
    let workload = placed["placements"][0]["workload"].as_str().unwrap();
    let shown = b.eval(&format!(
        "const p = document.getElementById('search'); p.value = {w}; \
         p.dispatchEvent(new Event('input')); \
         [...document.querySelectorAll('#map .node .fill')].reduce((a, f) => a + (parseInt(f.textContent) || 0), 0)",
        w = json!(workload)
    ));
    let on_nodes = placed["placements"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["workload"] == workload && !p["node"].is_null())
        .count() as u64;
    assert!(shown.as_u64().unwrap() >= on_nodes, "{shown} < {on_nodes}");
    b.screenshot("vault-place");
    b.assert_clean(&page);
    // --group-by: one column per value of the label (a hostname each here).
    let page = write_page(
        "vault-place-by-host",
        &[
            &args[..],
            &["-o", "html", "--group-by", "kubernetes.io/hostname"],
        ]
        .concat(),
    );
    b.open(&page);
    let columns = b.eval("document.querySelectorAll('#map .group').length");
    assert_eq!(columns.as_u64(), Some(names.len() as u64));
    b.assert_clean(&page);
}

/// Story 2's drift scenario: one list item per step (the initial state
/// and each step of `-o json`), a replicas chart with one bar per step, each
/// step's map holding the replicas `-o json` places on each node, and the
/// collapse at the end (every replica on one node) in the map and the chart.
fn drift_simulate_page_shows_every_step_and_the_collapse(b: &mut Browser) {
    let args = ["simulate", "examples/stories/drift.yaml"];
    let run: Value =
        serde_json::from_slice(&podplace(&[&args[..], &["-o", "json"]].concat())).unwrap();
    let steps = run["steps"].as_array().unwrap();
    let page = write_page("drift-simulate", &[&args[..], &["-o", "html"]].concat());
    b.open(&page);
    let shown = b.eval("document.querySelectorAll('#steps li.step').length");
    assert_eq!(
        shown.as_u64(),
        Some(steps.len() as u64 + 1),
        "simulate: steps listed"
    );
    let slider = b.eval("Number(document.getElementById('step-slider').max)");
    assert_eq!(
        slider.as_u64(),
        Some(steps.len() as u64),
        "simulate: slider range"
    );
    let bars = b.eval(
        "[...document.querySelectorAll('#charts .chart')].map(c => \
         [c.dataset.workload, c.querySelectorAll('.bar').length])",
    );
    let bars = bars.as_array().unwrap();
    assert!(
        bars.iter()
            .any(|c| c[0].as_str().unwrap().ends_with("/demo-app")
                && c[1].as_u64() == Some(steps.len() as u64 + 1)),
        "simulate: a demo-app chart with one bar per step: {bars:?}"
    );
    // Each step's map: per node, at most the replicas `-o json` places there
    // (the JSON also lists terminating pods), and exactly those at the end.
    for (k, step) in steps.iter().enumerate() {
        let on_map = b.eval(&format!(
            "document.querySelectorAll('#steps li.step')[{}].click(); \
             Object.fromEntries([...document.querySelectorAll('#map .node')].map(n => \
               [n.dataset.node, parseInt(n.querySelector('.fill').textContent) || 0]))",
            k + 1
        ));
        let mut placed: std::collections::BTreeMap<String, u64> = Default::default();
        for p in step["placements"].as_array().unwrap() {
            if let Some(node) = p["node"].as_str() {
                *placed.entry(node.to_string()).or_default() += 1;
            }
        }
        for (node, count) in on_map.as_object().unwrap() {
            let json = placed.get(node).copied().unwrap_or(0);
            let count = count.as_u64().unwrap();
            if k + 1 == steps.len() {
                assert_eq!(count, json, "simulate: last step, {node}");
            } else {
                assert!(
                    count <= json,
                    "simulate: step {}, {node}: {count} > {json}",
                    k + 1
                );
            }
        }
        let findings = b.eval("document.querySelectorAll('#findings .finding').length");
        assert_eq!(
            findings.as_u64(),
            Some(step["findings"].as_array().unwrap().len() as u64),
            "simulate: findings of step {}",
            k + 1
        );
    }
    // The collapse: at the last step one node holds every running replica.
    let last = &steps[steps.len() - 1]["placements"];
    let nodes: std::collections::BTreeSet<&str> = last
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["node"].as_str())
        .collect();
    assert_eq!(nodes.len(), 1, "the drift story ends collapsed on one node");
    let filled = b.eval(
        "[...document.querySelectorAll('#map .node .fill')].filter(f => f.textContent).length",
    );
    assert_eq!(filled.as_u64(), Some(1));
    b.screenshot("drift-simulate");
    b.assert_clean(&page);
}

/// The drift rebalance: one arrow per eviction of `-o json` (and per wave
/// when a wave is picked), each strategy's objective before and after, and
/// the after map equal to the before map with each eviction applied.
fn drift_rebalance_page_draws_one_arrow_per_eviction(b: &mut Browser) {
    let args = [
        "rebalance",
        "-f",
        "tests/data/fixtures/snapshots/drift-collapsed.yaml",
    ];
    let plan: Value =
        serde_json::from_slice(&podplace(&[&args[..], &["-o", "json"]].concat())).unwrap();
    let evictions = plan["evictions"].as_array().unwrap();
    assert!(!evictions.is_empty());
    let page = write_page("drift-rebalance", &[&args[..], &["-o", "html"]].concat());
    b.open(&page);
    let arrows = b.eval("document.querySelectorAll('#arrows .arrow').length");
    assert_eq!(
        arrows.as_u64(),
        Some(evictions.len() as u64),
        "rebalance: arrows"
    );
    let listed = b.eval("document.querySelectorAll('#eviction-list li').length");
    assert_eq!(
        listed.as_u64(),
        Some(evictions.len() as u64),
        "rebalance: listed"
    );
    // Per wave.
    for wave in 1..=plan["waves"].as_u64().unwrap() {
        let shown = b.eval(&format!(
            "(() => {{ const w = document.getElementById('wave'); w.value = '{wave}'; \
             w.dispatchEvent(new Event('change')); \
             return [...document.querySelectorAll('#arrows .arrow')].map(a => a.dataset.pod) }})()"
        ));
        let expected: Vec<&Value> = evictions
            .iter()
            .filter(|e| e["wave"].as_u64() == Some(wave))
            .map(|e| &e["pod"])
            .collect();
        assert_eq!(
            shown.as_array().unwrap().iter().collect::<Vec<_>>(),
            expected,
            "rebalance: wave {wave}"
        );
    }
    b.eval("(() => { const w = document.getElementById('wave'); w.value = '0'; w.dispatchEvent(new Event('change')) })()");
    // Objectives, before -> after, as the plan says.
    let rows = b.eval(
        "[...document.querySelectorAll('#objective-table tr')].slice(1).map(r => \
         [...r.querySelectorAll('td')].map(td => td.textContent))",
    );
    let rows = rows.as_array().unwrap();
    let strategies = plan["strategies"].as_array().unwrap();
    assert_eq!(rows.len(), strategies.len(), "rebalance: objective rows");
    for (row, s) in rows.iter().zip(strategies) {
        assert_eq!(row[0], s["strategy"]);
        assert_eq!(row[2].as_str().unwrap(), s["before"].to_string());
        assert_eq!(row[3].as_str().unwrap(), s["after"].to_string());
    }
    // After = before with every eviction applied (the workload the
    // evictions move is the one filled).
    let counts = |side: &str, b: &mut Browser| -> std::collections::BTreeMap<String, i64> {
        let v = b.eval(&format!(
            "Object.fromEntries([...document.querySelectorAll('#{side} .node')].map(n => \
               [n.dataset.node, parseInt(n.querySelector('.fill').textContent) || 0]))"
        ));
        serde_json::from_value(v).unwrap()
    };
    let before = counts("before", b);
    let mut expected = before.clone();
    for e in evictions {
        *expected.get_mut(e["from"].as_str().unwrap()).unwrap() -= 1;
        *expected.get_mut(e["to"].as_str().unwrap()).unwrap() += 1;
    }
    assert_eq!(counts("after", b), expected, "rebalance: after map");
    b.screenshot("drift-rebalance");
    b.assert_clean(&page);
}

/// Regenerates the README's screenshots (docs/img/*.png) from the pages
/// the checks above test: `cargo test -p podplace --test browser -- --ignored readme`.
#[test]
#[ignore = "rewrites docs/img/*.png"]
fn readme_screenshots() {
    let Some(chromium) = chromium() else { return };
    let mut b = Browser::launch(&chromium, "readme");
    b.call(
        "Emulation.setDeviceMetricsOverride",
        json!({"width": 1200, "height": 720, "deviceScaleFactor": 1, "mobile": false}),
    );
    let pages: [(&str, &[&str], &str); 4] = [
        ("place", &["place", "-f", "examples/stories/vault"], ""),
        (
            "why",
            &["why", "stokesnet/vault-2", "-f", "examples/stories/vault"],
            "[...document.querySelectorAll('#map .node')].find(n => n.textContent.includes('InterPodAffinity'))?.click()",
        ),
        (
            "simulate",
            &["simulate", "examples/stories/drift.yaml"],
            "document.querySelectorAll('#steps li.step')[4].click()",
        ),
        (
            "rebalance",
            &[
                "rebalance",
                "-f",
                "tests/data/fixtures/snapshots/drift-collapsed.yaml",
            ],
            "",
        ),
    ];
    let dir = repo().join("docs/img");
    std::fs::create_dir_all(&dir).unwrap();
    for (name, args, action) in pages {
        let page = write_page(&format!("readme-{name}"), &[args, &["-o", "html"]].concat());
        b.open(&page);
        if !action.is_empty() {
            b.eval(action);
        }
        let shot = b.screenshot(&format!("readme-{name}"));
        let size = std::fs::metadata(&shot).unwrap().len();
        assert!(size < 200_000, "{name}: {size} bytes");
        std::fs::copy(&shot, dir.join(format!("html-{name}.png"))).unwrap();
        b.assert_clean(&page);
    }
}

/// The 5,000-node measurement of docs/html-report.md: with
/// PODPLACE_HTML_PAGE=<a place -o html page>, opens it and prints its size
/// and the time from navigation to data-ready (best of three).
#[test]
#[ignore = "needs a generated 5,000-node page (docs/html-report.md)"]
fn measure_a_large_page() {
    let Some(chromium) = chromium() else { return };
    let page = PathBuf::from(std::env::var("PODPLACE_HTML_PAGE").expect("PODPLACE_HTML_PAGE"))
        .canonicalize()
        .unwrap();
    let size = std::fs::metadata(&page).unwrap().len();
    let mut b = Browser::launch(&chromium, "measure");
    let mut times = Vec::new();
    for _ in 0..3 {
        let started = Instant::now();
        let ms = b.open(&page);
        times.push((ms, started.elapsed().as_millis()));
    }
    let cells = b.eval("document.querySelectorAll('#map .node').length");
    b.screenshot("large-place");
    b.assert_clean(&page);
    eprintln!(
        "page: {size} bytes; cells: {cells}; navigation to data-ready (page ms, wall ms): {times:?}"
    );
}
