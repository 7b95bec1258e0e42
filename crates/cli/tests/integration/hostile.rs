//! The hostile-input catalog: malformed, hostile and out-of-range manifests,
//! scenarios, policies and standard input, each run through the real
//! binary with the command a user would run. Every row names the exit code
//! and a fragment of the message (file:line:column, object, field and the
//! API server's wording) that must come out; none may panic (exit 101),
//! hang or exhaust memory.

use std::thread;

use crate::support::{podplace_in, podplace_with_stdin_in, Scratch};

/// One row: files written into a scratch directory, the command, what
/// standard input holds, the exit code and a fragment of its output.
struct Row {
    name: String,
    files: Vec<(&'static str, Vec<u8>)>,
    args: Vec<String>,
    stdin: Option<String>,
    code: i32,
    want: String,
}

const NODE: &str = "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\nstatus:\n  allocatable: {cpu: \"4\", memory: 16Gi, pods: \"110\"}\n";

/// A pod `web` in `shop`: `meta` under metadata, `spec` under spec (after the container).
fn pod(meta: &str, container: &str, spec: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  namespace: shop\n{meta}spec:\n  containers:\n  - name: c\n    image: nginx\n{container}{spec}"
    )
}

fn deployment(rolling: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: shop\nspec:\n  replicas: 2\n  selector: {{matchLabels: {{app: web}}}}\n  strategy:\n    rollingUpdate:\n{rolling}  template:\n    metadata: {{labels: {{app: web}}}}\n    spec:\n      containers: [{{name: c, image: x}}]\n"
    )
}

/// Manifests the loader refuses: (name, file name, content, fragment).
fn bad_manifests() -> Vec<(&'static str, &'static str, Vec<u8>, String)> {
    let s = |x: String| x.into_bytes();
    let mut deep = String::from("apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  x: ");
    deep.push_str(&"[".repeat(300));
    deep.push_str(&"]".repeat(300));
    deep.push('\n');
    let mut laughs = String::from("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: lol}\ndata:\n  a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n");
    let mut prev = 'a';
    for c in 'b'..='j' {
        laughs.push_str(&format!(
            "  {c}: &{c} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]\n"
        ));
        prev = c;
    }
    let mut latin1 = NODE.as_bytes().to_vec();
    latin1.extend_from_slice(b"  labels:\n    zone: \xff\n");
    vec![
        ("label key with a space", "bad.yaml", s(pod("  labels:\n    bad key: x\n", "", "")), "bad.yaml:7:14: Pod/shop/web: metadata.labels[bad key]: Invalid value: \"bad key\": name part must consist of alphanumeric characters".to_string()),
        ("label key with an upper-case prefix", "bad.yaml", s(pod("  labels:\n    Example.com/zone: a\n", "", "")), "Invalid value: \"Example.com/zone\": prefix part a lowercase RFC 1123 subdomain must consist of".to_string()),
        ("label key with two slashes", "bad.yaml", s(pod("  labels:\n    a/b/c: x\n", "", "")), "a valid label key must consist of alphanumeric characters".to_string()),
        ("label value of 64 characters", "bad.yaml", s(pod(&format!("  labels:\n    v: {}\n", "z".repeat(64)), "", "")), "metadata.labels[v]: Invalid value: \"zzzz".to_string()),
        ("label value ending in a dot", "bad.yaml", s(pod("  labels:\n    v: a.\n", "", "")), "a valid label must be an empty string or consist of".to_string()),
        ("namespace Bad_NS", "bad.yaml", s(pod("", "", "").replace("namespace: shop", "namespace: Bad_NS")), "Pod/Bad_NS/web: metadata.namespace: Invalid value: \"Bad_NS\": a lowercase RFC 1123 label must consist of".to_string()),
        ("a 300-character pod name", "bad.yaml", s(pod("", "", "").replace("name: web", &format!("name: {}", "a".repeat(300)))), "must be no more than 253 characters".to_string()),
        ("a pod name with a right-to-left override", "bad.yaml", s(pod("", "", "").replace("name: web", "name: \"web\\u202Egnp.exe\"")), "metadata.name: Invalid value: \"web\\u{202e}gnp.exe\": a lowercase RFC 1123 subdomain".to_string()),
        ("an upper-case pod name", "bad.yaml", s(pod("", "", "").replace("name: web", "name: Web")), "metadata.name: Invalid value: \"Web\": a lowercase RFC 1123 subdomain must consist of".to_string()),
        ("an annotation key with a space", "bad.yaml", s(pod("  annotations:\n    bad key: x\n", "", "")), "metadata.annotations[bad key]: Invalid value: \"bad key\"".to_string()),
        ("hostPort 70000", "bad.yaml", s(pod("", "    ports:\n    - containerPort: 80\n      hostPort: 70000\n", "")), "bad.yaml:12:17: Pod/shop/web: spec.containers[0].ports[0].hostPort: Invalid value: 70000: must be between 1 and 65535, inclusive".to_string()),
        ("containerPort 0", "bad.yaml", s(pod("", "    ports:\n    - containerPort: 0\n", "")), "spec.containers[0].ports[0].containerPort: Required value".to_string()),
        ("containerPort 65536", "bad.yaml", s(pod("", "    ports:\n    - containerPort: 65536\n", "")), "containerPort: Invalid value: 65536: must be between 1 and 65535, inclusive".to_string()),
        ("maxSurge abc", "bad.yaml", s(deployment("      maxSurge: abc\n")), "bad.yaml:11:17: Deployment/shop/web: spec.strategy.rollingUpdate.maxSurge: Invalid value: \"abc\": a valid percent string must be a numeric string followed by an ending '%'".to_string()),
        ("maxSurge and maxUnavailable 0", "bad.yaml", s(deployment("      maxSurge: 0\n      maxUnavailable: 0\n")), "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0".to_string()),
        ("maxUnavailable 150%", "bad.yaml", s(deployment("      maxUnavailable: 150%\n")), "maxUnavailable: Invalid value: \"150%\": must not be greater than 100%".to_string()),
        ("maxSurge -1", "bad.yaml", s(deployment("      maxSurge: -1\n")), "maxSurge: Invalid value: -1: must be greater than or equal to 0".to_string()),
        ("a repeated YAML key", "bad.yaml", s(pod("", "", "").replace("kind: Pod\n", "kind: Pod\nkind: Pod\n")), "bad.yaml:3:1: invalid YAML: mapping key \"kind\" already defined at line 2".to_string()),
        ("a repeated JSON key", "bad.json", s("{\"apiVersion\": \"v1\", \"kind\": \"Node\",\n \"metadata\": {\"name\": \"n1\", \"name\": \"n2\"}}\n".to_string()), "bad.json:2:29: invalid JSON: object key \"name\" already defined at line 2".to_string()),
        ("broken YAML indentation", "bad.yaml", s("apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n   labels: x\n".to_string()), "bad.yaml:5:".to_string()),
        ("a trailing comma in JSON", "bad.json", s("{\"apiVersion\": \"v1\", \"kind\": \"Node\", \"metadata\": {\"name\": \"n1\",}}\n".to_string()), "bad.json:1:".to_string()),
        ("non-UTF-8 bytes", "bad.yaml", latin1, "bad.yaml:8:11: invalid UTF-8 at byte offset".to_string()),
        ("UTF-16 with a byte-order mark", "bad.yaml", vec![0xFF, 0xFE, b'a', 0, b':', 0], "the file is UTF-16 encoded".to_string()),
        ("an empty file", "bad.yaml", Vec::new(), "no objects found in bad.yaml".to_string()),
        ("a comment-only file", "bad.yaml", s("# nothing\n---\n".to_string()), "no objects found in bad.yaml".to_string()),
        ("300 levels of nesting", "bad.yaml", s(deep), "input exceeds the loader's safety limits".to_string()),
        ("a billion laughs", "bad.yaml", s(laughs), "input exceeds the loader's safety limits".to_string()),
        ("a quantity that does not parse", "bad.yaml", s(pod("", "    resources: {requests: {cpu: lots}}\n", "")), "spec.containers[0].resources.requests[cpu]: Invalid value: \"lots\": quantities must match the regular expression".to_string()),
        ("a negative replica count", "bad.yaml", s(deployment("      maxSurge: 1\n").replace("replicas: 2", "replicas: -3")), "spec.replicas: Invalid value: -3: must be greater than or equal to 0".to_string()),
        ("a selector that misses the template", "bad.yaml", s(deployment("      maxSurge: 1\n").replace("matchLabels: {app: web}", "matchLabels: {app: other}")), "`selector` does not match template `labels`".to_string()),
        ("containers as a string", "bad.yaml", s("apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers: nginx\n".to_string()), "bad.yaml:5:15: Pod/default/web: spec.containers: invalid type: string \"nginx\", expected a sequence".to_string()),
        ("a Service name starting with a digit", "bad.yaml", s("apiVersion: v1\nkind: Service\nmetadata: {name: 1web, namespace: shop}\n".to_string()), "Service/shop/1web: metadata.name: Invalid value: \"1web\": a DNS-1035 label must consist of".to_string()),
        ("a quoted defaultMode", "bad.yaml", s(pod("", "", "  volumes:\n  - name: v\n    configMap: {name: c, defaultMode: \"0644\"}\n")), "spec.volumes[0].configMap.defaultMode: invalid type: string \"0644\", expected i32".to_string()),
        ("an unquoted yes as a label value", "bad.yaml", s(pod("  labels:\n    enabled: yes\n", "", "")), "metadata.labels.enabled: invalid type: boolean `true`, expected a string".to_string()),
        ("a pod bound to an unknown node", "bad.yaml", s(pod("", "", "  nodeName: n9\n")), "spec.nodeName: Not found: \"n9\"".to_string()),
        ("the same pod twice", "bad.yaml", s(format!("{}---\n{}", pod("", "", ""), pod("", "", ""))), "metadata.name: Duplicate value: \"web\": already defined at bad.yaml:1:1".to_string()),
        ("a pod without a name", "bad.yaml", s("apiVersion: v1\nkind: Pod\nmetadata: {labels: {app: x}}\nspec:\n  containers: [{name: c, image: x}]\n".to_string()), "metadata.name: Required value: name or generateName is required".to_string()),
        ("a topology spread with maxSkew 0", "bad.yaml", s(pod("", "", "  topologySpreadConstraints:\n  - {maxSkew: 0, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}\n")), "spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero".to_string()),
    ]
}

fn rows() -> Vec<Row> {
    let mut rows = Vec::new();
    for (name, file, content, want) in bad_manifests() {
        for cmd in ["place", "lint", "why"] {
            let mut args: Vec<String> = vec![cmd.to_string()];
            if cmd == "why" {
                args.push("web".to_string());
            }
            args.extend(["-f", "node.yaml", "-f", file].map(String::from));
            rows.push(Row {
                name: format!("{cmd}: {name}"),
                files: vec![
                    ("node.yaml", NODE.as_bytes().to_vec()),
                    (file, content.clone()),
                ],
                args,
                stdin: None,
                code: 2,
                want: want.clone(),
            });
        }
    }
    // Quantities at resource.Quantity's limits: placed, no overflow.
    for (name, node) in [
        (
            "a node of 1e14 cores",
            NODE.replace("cpu: \"4\"", "cpu: \"1e14\""),
        ),
        (
            "a node of 1e30 bytes of memory",
            NODE.replace("memory: 16Gi", "memory: 1e30"),
        ),
        (
            "a node of 9223372036854775807 cores",
            NODE.replace("cpu: \"4\"", "cpu: \"9223372036854775807\""),
        ),
    ] {
        for requests in ["{cpu: 100m}", "{cpu: \"1e14\", memory: 1e30}"] {
            rows.push(Row {
                name: format!("place: {name}, requests {requests}"),
                files: vec![
                    ("node.yaml", node.clone().into_bytes()),
                    (
                        "pod.yaml",
                        pod(
                            "",
                            &format!("    resources: {{requests: {requests}}}\n"),
                            "",
                        )
                        .into_bytes(),
                    ),
                ],
                args: ["place", "-f", "node.yaml", "-f", "pod.yaml"]
                    .map(String::from)
                    .to_vec(),
                stdin: None,
                // place exits 1 with pods Pending (the reason is printed),
                // 0 when every pod is placed.
                code: if requests.contains("1e30") { 1 } else { 0 },
                want: if requests.contains("1e14") && !name.contains("cores") {
                    "Insufficient cpu".to_string()
                } else {
                    "shop/web".to_string()
                },
            });
        }
    }
    scenario_rows(&mut rows);
    policy_rows(&mut rows);
    stdin_rows(&mut rows);
    rows
}

fn scenario_rows(rows: &mut Vec<Row>) {
    let table: Vec<(&str, String, &str)> = vec![
        ("a wait of 999999999999999999d", "steps:\n  - wait: 999999999999999999d\n".into(), "s.yaml:2:11: duration \"999999999999999999d\" is longer than the limit of 366d (a simulated year)"),
        ("a wait of 367d", "steps:\n  - wait: 367d\n".into(), "s.yaml:2:11: duration \"367d\" is longer than the limit of 366d"),
        ("a wait of 1e30 seconds", "steps:\n  - wait: 1e30\n".into(), "s.yaml:2:11: duration \"1000000000000000000000000000000\" is longer than the limit"),
        ("a negative wait", "steps:\n  - wait: -5\n".into(), "s.yaml:2:11: negative duration -5"),
        ("a fractional wait", "steps:\n  - wait: 1.5\n".into(), "s.yaml:2:11: invalid duration 1.5"),
        ("readyAfter of 400d", "readyAfter: {\"*\": 400d}\nsteps:\n  - wait: 1s\n".into(), "s.yaml:1:19: duration \"400d\" is longer than the limit"),
        ("a drain timeout of -5m", "steps:\n  - drain: {node: n1, timeout: -5m}\n".into(), "s.yaml:2:32: invalid duration \"-5m\""),
        ("a drain gracePeriod of 9999d", "steps:\n  - drain: {node: n1, gracePeriod: 9999d}\n".into(), "duration \"9999d\" is longer than the limit"),
        ("a drain of the wrong shape", "steps:\n  - drain: 5\n".into(), "expected a node name, a list of node names, or a mapping of kubectl drain's options (node or nodes, podSelector, force, timeout, gracePeriod)"),
        ("a misspelt drain option", "steps:\n  - drain: {node: n1, tiemout: 1m}\n".into(), "s.yaml:2:23: unknown field `tiemout`, expected one of node, nodes"),
        ("uncordon of a mapping", "steps:\n  - uncordon: {node: n1}\n".into(), "expected a name or a list of names"),
        ("apply of a number", "steps:\n  - apply: 3\n".into(), "expected a file, a list of files, or a mapping with `files` and `objects`"),
        ("scale to -1", "steps:\n  - scale: {workload: deployment/web, replicas: -1}\n".into(), "replicas: Invalid value: -1: must be greater than or equal to 0"),
        ("scale beyond 32 bits", "steps:\n  - scale: {workload: deployment/web, replicas: 4294967296}\n".into(), "replicas: Invalid value: 4294967296: must be at most 2147483647"),
        ("a repeated key", "steps:\n  - wait: 1s\n    wait: 2s\n".into(), "s.yaml:3:5: invalid YAML: mapping key \"wait\" already defined at line 2"),
        ("a step with two keys", "steps:\n  - wait: 1s\n    drain: n1\n".into(), "a step is a mapping with one key naming what to do"),
        ("a misspelt step", "steps:\n  - scael: {workload: deployment/x, replicas: 2}\n".into(), "s.yaml:2:5: unknown variant `scael`"),
        ("no steps", "cluster: []\n".into(), "the scenario has no `steps:`"),
        ("an inline node with a bad name", "nodes:\n  - apiVersion: v1\n    kind: Node\n    metadata: {name: Node_1}\nsteps:\n  - wait: 1s\n".into(), "s.yaml:4:22: Node/Node_1: metadata.name: Invalid value: \"Node_1\""),
        ("an applied pod with hostPort 70000", "nodes:\n  - {apiVersion: v1, kind: Node, metadata: {name: n1}}\nsteps:\n  - apply:\n      objects:\n        - apiVersion: v1\n          kind: Pod\n          metadata: {name: web}\n          spec:\n            containers: [{name: c, image: x, ports: [{containerPort: 80, hostPort: 70000}]}]\n".into(), "s.yaml:10:84: Pod/default/web: spec.containers[0].ports[0].hostPort: Invalid value: 70000"),
    ];
    for (name, text, want) in table {
        rows.push(Row {
            name: format!("simulate: {name}"),
            files: vec![("s.yaml", text.into_bytes())],
            args: ["simulate", "s.yaml"].map(String::from).to_vec(),
            stdin: None,
            code: 2,
            want: want.to_string(),
        });
    }
    let mut latin1 = b"steps:\n  - wait: 1s\n# caf".to_vec();
    latin1.extend_from_slice(b"\xe9\n");
    rows.push(Row {
        name: "simulate: a non-UTF-8 scenario".to_string(),
        files: vec![("s.yaml", latin1)],
        args: ["simulate", "s.yaml"].map(String::from).to_vec(),
        stdin: None,
        code: 2,
        want: "s.yaml:3:6: invalid UTF-8 at byte offset 25 (byte 0xe9)".to_string(),
    });
}

fn policy_rows(rows: &mut Vec<Row>) {
    let table: Vec<(&str, Vec<u8>, &str)> = vec![
        ("an empty policy", Vec::new(), "p.yaml: the policy file is empty: write a descheduler/v1alpha2 DeschedulerPolicy"),
        ("a comment-only policy", b"# later\n".to_vec(), "p.yaml: the policy file is empty"),
        ("a repeated key", b"apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nkind: DeschedulerPolicy\n".to_vec(), "p.yaml:3:1: invalid YAML: mapping key \"kind\" already defined at line 2"),
        ("maxPodLifeTimeSeconds beyond time.Duration", b"profiles: [{name: p, pluginConfig: [{name: PodLifeTime, args: {maxPodLifeTimeSeconds: 18446744073709551615}}], plugins: {deschedule: {enabled: [PodLifeTime]}}}]\n".to_vec(), "maxPodLifeTimeSeconds: Invalid value: 18446744073709551615: must be at most 9223372036 seconds"),
        ("minPodLifetimeSeconds beyond time.Duration", b"profiles: [{name: p, pluginConfig: [{name: RemoveFailedPods, args: {minPodLifetimeSeconds: 9223372037}}], plugins: {deschedule: {enabled: [RemoveFailedPods]}}}]\n".to_vec(), "minPodLifetimeSeconds: Invalid value: 9223372037"),
        ("non-UTF-8 bytes", b"profiles: []\n# \xff\n".to_vec(), "p.yaml:2:3: invalid UTF-8 at byte offset 15 (byte 0xff)"),
        ("a misspelt plugin", b"profiles: [{name: p, pluginConfig: [{name: RemoveDuplicate}], plugins: {}}]\n".to_vec(), "did you mean \"RemoveDuplicates\"?"),
        ("the v1alpha1 format", b"strategies: {RemoveDuplicates: {enabled: true}}\n".to_vec(), "descheduler/v1alpha1, which podplace does not read"),
        ("a negative gracePeriodSeconds", b"gracePeriodSeconds: -1\nprofiles: []\n".to_vec(), "gracePeriodSeconds: must be a non-negative integer"),
    ];
    for (name, text, want) in table {
        rows.push(Row {
            name: format!("rebalance --policy: {name}"),
            files: vec![("node.yaml", NODE.as_bytes().to_vec()), ("p.yaml", text)],
            args: ["rebalance", "-f", "node.yaml", "--policy", "p.yaml"]
                .map(String::from)
                .to_vec(),
            stdin: None,
            code: 2,
            want: want.to_string(),
        });
    }
}

fn stdin_rows(rows: &mut Vec<Row>) {
    let table: Vec<(&str, String, &str)> = vec![
        (
            "malformed JSON is a JSON error",
            "{\"apiVersion\": \"v1\", \"kind\": \"Node\", \"metadata\": {\"name\": \"n1\",}}\n"
                .into(),
            "-:1:",
        ),
        (
            "malformed JSON names JSON",
            "{\"apiVersion\": \"v1\",\n \"kind\": }\n".into(),
            "invalid JSON",
        ),
        (
            "a repeated YAML key",
            "apiVersion: v1\nkind: Node\nkind: Node\nmetadata: {name: n1}\n".into(),
            "-:3:1: invalid YAML: mapping key \"kind\" already defined at line 2",
        ),
        ("nothing", String::new(), "no objects found in -"),
        (
            "a bad label on stdin",
            NODE.replace("name: n1\n", "name: n1\n  labels: {\"a b\": c}\n"),
            "-:5:19: Node/n1: metadata.labels[a b]",
        ),
    ];
    for (name, text, want) in table {
        rows.push(Row {
            name: format!("place -f -: {name}"),
            files: Vec::new(),
            args: ["place", "-f", "-"].map(String::from).to_vec(),
            stdin: Some(text),
            code: 2,
            want: want.to_string(),
        });
    }
}

#[test]
fn the_hostile_input_catalog() {
    let rows = rows();
    assert!(rows.len() >= 100, "{} rows", rows.len());
    // Four at a time: each row is one run of the binary.
    let failures: Vec<String> = thread::scope(|scope| {
        let chunks: Vec<_> = rows.chunks(rows.len().div_ceil(4)).collect();
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                scope.spawn(move || {
                    let mut failures = Vec::new();
                    for row in chunk {
                        let dir = Scratch::new("hostile");
                        for (name, data) in &row.files {
                            std::fs::write(dir.join(name), data).expect("write input");
                        }
                        let args: Vec<&str> = row.args.iter().map(String::as_str).collect();
                        let (stdout, stderr, code) = match &row.stdin {
                            Some(input) => podplace_with_stdin_in(&dir.0, &args, input),
                            None => podplace_in(&dir.0, &args),
                        };
                        let output = format!("{stdout}{stderr}");
                        if code != row.code || !output.contains(&row.want) {
                            failures.push(format!(
                                "{}: exit {code} (want {}), output:\n{output}\n  want: {}",
                                row.name, row.code, row.want
                            ));
                        }
                    }
                    failures
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a row's thread"))
            .collect()
    });
    assert!(
        failures.is_empty(),
        "{} of {} rows failed:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
}
