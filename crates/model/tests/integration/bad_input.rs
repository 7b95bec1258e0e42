//! Malformed input never panics and never half-loads: every case fails with a
//! message naming the file, line and column, the object, the field path, and
//! apiserver's wording where it has one.

use podplace_model::load::{load, LoadErrorKind, Source};

/// One malformed world: its files, the error kind, and text the message must contain.
struct Case {
    name: &'static str,
    files: Vec<(&'static str, Vec<u8>)>,
    kind: LoadErrorKind,
    expect: Vec<String>,
}

fn case(
    name: &'static str,
    file: &'static str,
    text: &str,
    kind: LoadErrorKind,
    expect: &[&str],
) -> Case {
    Case {
        name,
        files: vec![(file, text.as_bytes().to_vec())],
        kind,
        expect: expect.iter().map(|s| s.to_string()).collect(),
    }
}

const NODE: &str = "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n";

/// A pod manifest with `spec_tail` appended under `spec:` (2-space indented).
fn pod(spec_tail: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  namespace: shop\nspec:\n  containers:\n  - name: c\n    image: nginx\n{spec_tail}"
    )
}

const AFF: &str = "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]";

fn billion_laughs() -> String {
    let mut s = String::from("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: lol}\ndata:\n  a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n");
    let mut prev = 'a';
    for c in 'b'..='j' {
        s.push_str(&format!("  {c}: &{c} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]\n"));
        prev = c;
    }
    s
}

fn cases() -> Vec<Case> {
    use LoadErrorKind::*;
    let mut v = vec![
        case(
            "broken YAML",
            "broken.yaml",
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n   labels: x\n",
            Syntax,
            &["broken.yaml:5:", "invalid YAML"],
        ),
        case(
            "unclosed flow sequence",
            "flow.yaml",
            "apiVersion: v1\nkind: Pod\nmetadata: {name: [web\n",
            Syntax,
            &["flow.yaml:", "invalid YAML"],
        ),
        case(
            "broken JSON",
            "broken.json",
            "{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"Pod\",\n  \"metadata\": {\"name\": \"web\",}\n}\n",
            Syntax,
            &["broken.json:4:", "invalid JSON"],
        ),
        case(
            "duplicate mapping key",
            "dup-key.yaml",
            "apiVersion: v1\nkind: Node\nmetadata:\n  name: a\n  name: b\n",
            Syntax,
            &["dup-key.yaml:5:3: invalid YAML: mapping key \"name\" already defined at line 4"],
        ),
        case(
            "wrong field type: containers is a string",
            "type.yaml",
            &format!("{NODE}---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers: lots\n"),
            Decode,
            &["type.yaml:11:15: Pod/default/web: spec.containers: invalid type: string \"lots\", expected a sequence"],
        ),
        case(
            "a JSON number where a string is expected",
            "num.json",
            "{\"apiVersion\": \"v1\", \"kind\": \"Pod\",\n \"metadata\": {\"name\": \"web\", \"namespace\": \"shop\",\n   \"labels\": {\"app\": 5}},\n \"spec\": {\"containers\": []}}\n",
            Decode,
            &["num.json:3:22: Pod/shop/web: metadata.labels.app: invalid type: integer `5`, expected a string"],
        ),
        case(
            "a pod without containers",
            "req.yaml",
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  nodeName: \"\"\n",
            Invalid,
            &["req.yaml:6:3: Pod/default/web: spec.containers: Required value"],
        ),
        case(
            "unknown selector operator in pod anti-affinity",
            "op.yaml",
            &pod("  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n      - labelSelector:\n          matchExpressions:\n          - {key: app, operator: Foo, values: [web]}\n        topologyKey: kubernetes.io/hostname\n"),
            Invalid,
            &[
                &format!("op.yaml:15:34: Pod/shop/web: {AFF}.labelSelector.matchExpressions[0].operator: Invalid value: \"Foo\": not a valid selector operator"),
            ],
        ),
        case(
            "In with no values",
            "in.yaml",
            &pod("  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n      - labelSelector:\n          matchExpressions:\n          - key: app\n            operator: In\n        topologyKey: kubernetes.io/hostname\n"),
            Invalid,
            &[
                "in.yaml:15:13: Pod/shop/web: ",
                &format!("{AFF}.labelSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"),
            ],
        ),
        case(
            "In with an empty values list in a namespaceSelector",
            "nsin.yaml",
            &pod("  affinity:\n    podAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n      - namespaceSelector:\n          matchExpressions:\n          - {key: team, operator: NotIn, values: []}\n        topologyKey: zone\n"),
            Invalid,
            &["nsin.yaml:15:50: Pod/shop/web: spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].namespaceSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"],
        ),
        case(
            "Exists with values in node affinity",
            "exists.yaml",
            &pod("  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n        - matchExpressions:\n          - {key: disk, operator: Exists, values: [ssd]}\n"),
            Invalid,
            &["exists.yaml:15:51: Pod/shop/web: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"],
        ),
        case(
            "Gt with a non-integer value",
            "gt.yaml",
            &pod("  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n        - matchExpressions:\n          - key: cores\n            operator: Gt\n            values: [\"eight\"]\n"),
            Invalid,
            &["gt.yaml:17:22: Pod/shop/web: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values[0]: Invalid value: \"eight\": for 'Gt', 'Lt' operators, the value must be an integer"],
        ),
        case(
            "Lt with two values",
            "lt.yaml",
            &pod("  affinity:\n    nodeAffinity:\n      preferredDuringSchedulingIgnoredDuringExecution:\n      - weight: 10\n        preference:\n          matchExpressions:\n          - {key: cores, operator: Lt, values: [\"1\", \"2\"]}\n"),
            Invalid,
            &["lt.yaml:16:48: Pod/shop/web: spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0].values: Required value: must be specified single value when `operator` is 'Lt' or 'Gt'"],
        ),
        case(
            "empty topologyKey",
            "topo.yaml",
            &pod("  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n      - labelSelector:\n          matchLabels: {app: web}\n        topologyKey: \"\"\n"),
            Invalid,
            &[
                &format!("topo.yaml:15:22: Pod/shop/web: {AFF}.topologyKey: Required value: can not be empty"),
                &format!("{AFF}.topologyKey: Invalid value: \"\": name part must be non-empty"),
            ],
        ),
        case(
            "maxSkew 0",
            "skew.yaml",
            &pod("  topologySpreadConstraints:\n  - maxSkew: 0\n    topologyKey: zone\n    whenUnsatisfiable: DoNotSchedule\n    labelSelector: {matchLabels: {app: web}}\n"),
            Invalid,
            &["skew.yaml:11:14: Pod/shop/web: spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero"],
        ),
        case(
            "unsupported whenUnsatisfiable",
            "when.yaml",
            &pod("  topologySpreadConstraints:\n  - maxSkew: 1\n    topologyKey: zone\n    whenUnsatisfiable: Sometimes\n"),
            Invalid,
            &["when.yaml:13:24: Pod/shop/web: spec.topologySpreadConstraints[0].whenUnsatisfiable: Unsupported value: \"Sometimes\": supported values: \"DoNotSchedule\", \"ScheduleAnyway\""],
        ),
        case(
            "two spread constraints of one kind",
            "dup.yaml",
            &pod("  topologySpreadConstraints:\n  - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway}\n  - {maxSkew: 2, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway}\n"),
            Invalid,
            // The real kube-apiserver's words (found creating such a pod on it).
            &["dup.yaml:11:5: Pod/shop/web: spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}: Duplicate value: \"{kubernetes.io/hostname, ScheduleAnyway}\""],
        ),
        case(
            "weight 0 in preferred pod anti-affinity",
            "weight.yaml",
            &pod("  affinity:\n    podAntiAffinity:\n      preferredDuringSchedulingIgnoredDuringExecution:\n      - weight: 0\n        podAffinityTerm:\n          labelSelector: {matchLabels: {app: web}}\n          topologyKey: kubernetes.io/hostname\n"),
            Invalid,
            &["weight.yaml:13:17: Pod/shop/web: spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0: must be in the range 1-100"],
        ),
        case(
            "weight 101 in preferred node affinity",
            "weight101.yaml",
            &pod("  affinity:\n    nodeAffinity:\n      preferredDuringSchedulingIgnoredDuringExecution:\n      - weight: 101\n        preference: {matchExpressions: [{key: a, operator: Exists}]}\n"),
            Invalid,
            &["weight101.yaml:13:17: Pod/shop/web: spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 101: must be in the range 1-100"],
        ),
        case(
            "bad quantity in container requests",
            "qty.yaml",
            &pod("    resources:\n      requests:\n        cpu: 1.2.3\n"),
            Invalid,
            &["qty.yaml:12:14: Pod/shop/web: spec.containers[0].resources.requests[cpu]: Invalid value: \"1.2.3\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"],
        ),
        case(
            "bad quantity suffix in node capacity",
            "cap.json",
            "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\"},\n \"status\":{\"capacity\":{\"cpu\":\"8\",\"memory\":\"32ki\"}}}",
            Invalid,
            &["cap.json:2:43: Node/n1: status.capacity[memory]: Invalid value: \"32ki\": unable to parse quantity's suffix"],
        ),
        case(
            "negative limit",
            "neg.yaml",
            &pod("    resources:\n      limits: {memory: -1Gi}\n"),
            Invalid,
            &["neg.yaml:11:24: Pod/shop/web: spec.containers[0].resources.limits[memory]: Invalid value: \"-1Gi\": must be greater than or equal to 0"],
        ),
        case(
            "bad operator in a Deployment's pod template",
            "deploy.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers: [{name: c, image: x}]\n      affinity:\n        podAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n          - labelSelector: {matchExpressions: [{key: app, operator: in, values: [web]}]}\n            topologyKey: zone\n",
            Invalid,
            &["deploy.yaml:13:69: Deployment/shop/web: spec.template.spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchExpressions[0].operator: Invalid value: \"in\": not a valid selector operator"],
        ),
        case(
            "Deployment selector that does not select its template",
            "sel.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata:\n      labels: {app: api}\n    spec:\n      containers: [{name: c, image: x}]\n",
            Invalid,
            &["sel.yaml:8:15: Deployment/shop/web: spec.template.metadata.labels: Invalid value: {\"app\":\"api\"}: `selector` does not match template `labels`"],
        ),
        case(
            "PDB selector with In and no values",
            "pdb.yaml",
            "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: db, namespace: data}\nspec:\n  minAvailable: 1\n  selector:\n    matchExpressions:\n    - {key: app, operator: In}\n",
            Invalid,
            &["pdb.yaml:8:7: PodDisruptionBudget/data/db: spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"],
        ),
        case(
            "negative replicas",
            "replicas.yaml",
            "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db, namespace: data}\nspec:\n  replicas: -1\n  selector: {matchLabels: {app: db}}\n  template:\n    metadata: {labels: {app: db}}\n    spec: {containers: [{name: c, image: x}]}\n",
            Invalid,
            &["replicas.yaml:5:13: StatefulSet/data/db: spec.replicas: Invalid value: -1: must be greater than or equal to 0"],
        ),
        case(
            "toleration with an unknown operator",
            "tol.yaml",
            &pod("  tolerations:\n  - {key: dedicated, operator: Matches, value: infra, effect: NoSchedule}\n"),
            Invalid,
            &["tol.yaml:11:32: Pod/shop/web: spec.tolerations[0].operator: Unsupported value: \"Matches\": supported values: \"Equal\", \"Exists\""],
        ),
        case(
            "taint without an effect",
            "taint.yaml",
            "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nspec:\n  taints:\n  - key: dedicated\n    value: infra\n",
            Invalid,
            &["taint.yaml:6:5: Node/n1: spec.taints[0].effect: Required value"],
        ),
        case(
            "missing kind",
            "nokind.yaml",
            "apiVersion: v1\nmetadata:\n  name: web\n",
            Structure,
            &["nokind.yaml:1:1: (unknown kind)/web: kind: Object 'Kind' is missing"],
        ),
        case(
            "a scalar document",
            "scalar.yaml",
            &format!("{NODE}---\njust a string\n"),
            Structure,
            &["scalar.yaml:6:1: expected a Kubernetes object (a mapping with apiVersion and kind), found a string"],
        ),
        case(
            "a List whose items is not a list",
            "list.json",
            "{\"apiVersion\": \"v1\", \"kind\": \"List\",\n  \"items\": {\"kind\": \"Pod\"}}",
            Structure,
            &["list.json:2:12: List: items: Invalid value: a mapping: must be a list of objects"],
        ),
        case(
            "a List item that is not an object",
            "items.yaml",
            "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata: {name: n1}\n- 42\n",
            Structure,
            &["items.yaml:7:3: expected a Kubernetes object", "found a number"],
        ),
        case(
            "a YAML alias bomb (billion laughs)",
            "bomb.yaml",
            &billion_laughs(),
            Limit,
            &["bomb.yaml:", "safety limits"],
        ),
        case(
            "10,000 nested flow sequences",
            "deep.yaml",
            &format!("{}{}", "[".repeat(10_000), "]".repeat(10_000)),
            Limit,
            &["deep.yaml:1:", "safety limits"],
        ),
        case(
            "deeply nested block mappings",
            "deep-block.yaml",
            &(0..5_000).map(|i| format!("{}k{i}:\n", "  ".repeat(i))).collect::<String>(),
            Limit,
            &["deep-block.yaml:", "safety limits"],
        ),
        case(
            "10,000 nested JSON arrays",
            "deep.json",
            &format!("{}{}", "[".repeat(10_000), "]".repeat(10_000)),
            Limit,
            &["deep.json:1:", "safety limits"],
        ),
        case("an empty file", "empty.yaml", "", Empty, &["empty.yaml: no objects found in empty.yaml"]),
        case(
            "a file of comments and separators",
            "comments.yaml",
            "# nothing here\n---\n# still nothing\n---\n",
            Empty,
            &["comments.yaml: no objects found in comments.yaml"],
        ),
        case(
            "a pod bound to an unknown node",
            "bound.yaml",
            &format!("{NODE}---\n{}", pod("  nodeName: n9\n")),
            UnknownReference,
            &["bound.yaml:15:13: Pod/shop/web: spec.nodeName: Not found: \"n9\""],
        ),
        case(
            "duplicate pod namespace/name in one stream",
            "dup-pod.yaml",
            &format!("{}---\n{}", pod(""), pod("")),
            Duplicate,
            &["dup-pod.yaml:14:9: Pod/shop/web: metadata.name: Duplicate value: \"web\": already defined at dup-pod.yaml:1:1"],
        ),
        case(
            "a pod without name or generateName",
            "noname.yaml",
            "apiVersion: v1\nkind: Pod\nmetadata:\n  labels: {app: x}\nspec:\n  containers: [{name: c, image: x}]\n",
            Invalid,
            &["noname.yaml:4:3: Pod/default/(unnamed): metadata.name: Required value: name or generateName is required"],
        ),
    ];
    v.extend(api_rule_cases());
    v.push(Case {
        name: "duplicate node names across files",
        files: vec![("a.yaml", NODE.as_bytes().to_vec()), ("b.yaml", format!("# again\n{NODE}").into_bytes())],
        kind: LoadErrorKind::Duplicate,
        expect: vec!["b.yaml:5:9: Node/n1: metadata.name: Duplicate value: \"n1\": already defined at a.yaml:1:1".to_string()],
    });
    let mut bad = NODE.as_bytes().to_vec();
    bad.extend_from_slice(b"  labels:\n    zone: \xff\xfe\n");
    v.push(Case {
        name: "non-UTF-8 bytes",
        files: vec![("latin1.yaml", bad)],
        kind: LoadErrorKind::Encoding,
        expect: vec!["latin1.yaml:6:11: invalid UTF-8 at byte offset 67 (byte 0xff)".to_string()],
    });
    v.push(Case {
        name: "UTF-16 with a byte-order mark",
        files: vec![("utf16.yaml", vec![0xFF, 0xFE, b'a', 0, b':', 0])],
        kind: LoadErrorKind::Encoding,
        expect: vec!["utf16.yaml:1:1: the file is UTF-16 encoded".to_string()],
    });
    v
}

/// A Deployment of `web` in `shop` with `strategy_tail` under `spec.strategy.rollingUpdate`.
fn deployment(rolling: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: shop\nspec:\n  selector: {{matchLabels: {{app: web}}}}\n  strategy:\n    rollingUpdate:\n{rolling}  template:\n    metadata: {{labels: {{app: web}}}}\n    spec:\n      containers: [{{name: c, image: x}}]\n"
    )
}

/// Names, labels, ports and rolling-update limits the API server refuses,
/// in its words, located at the field.
fn api_rule_cases() -> Vec<Case> {
    use LoadErrorKind::*;
    let long_name = "a".repeat(300);
    vec![
        case(
            "label key with a space",
            "label-key.yaml",
            "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n  labels:\n    bad key: x\n",
            Invalid,
            &["label-key.yaml:6:14: Node/n1: metadata.labels[bad key]: Invalid value: \"bad key\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"],
        ),
        case(
            "label key with an upper-case prefix",
            "label-prefix.yaml",
            "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n  labels:\n    Example.com/zone: a\n",
            Invalid,
            &["metadata.labels[Example.com/zone]: Invalid value: \"Example.com/zone\": prefix part a lowercase RFC 1123 subdomain must consist of"],
        ),
        case(
            "label key with two slashes",
            "label-slashes.yaml",
            "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n  labels:\n    a/b/c: x\n",
            Invalid,
            &["Invalid value: \"a/b/c\": a valid label key must consist of", "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"],
        ),
        case(
            "label value of 64 characters",
            "label-value.yaml",
            &format!("apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n  labels:\n    zone: {}\n", "z".repeat(64)),
            Invalid,
            &["label-value.yaml:6:11: Node/n1: metadata.labels[zone]: Invalid value: \"zzzz", "must be no more than 63 characters"],
        ),
        case(
            "label value ending in a dash",
            "label-dash.yaml",
            "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n  labels:\n    zone: a-\n",
            Invalid,
            &["Invalid value: \"a-\": a valid label must be an empty string or consist of alphanumeric characters"],
        ),
        case(
            "namespace Bad_NS",
            "bad-ns.yaml",
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  namespace: Bad_NS\nspec:\n  containers: [{name: c, image: x}]\n",
            Invalid,
            &["bad-ns.yaml:5:14: Pod/Bad_NS/web: metadata.namespace: Invalid value: \"Bad_NS\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"],
        ),
        case(
            "a 300-character pod name",
            "long-name.yaml",
            &format!("apiVersion: v1\nkind: Pod\nmetadata:\n  name: {long_name}\nspec:\n  containers: [{{name: c, image: x}}]\n"),
            Invalid,
            &["long-name.yaml:4:9:", "metadata.name: Invalid value: \"aaaa", "must be no more than 253 characters"],
        ),
        case(
            "a pod name with a right-to-left override",
            "rtl.yaml",
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: \"web\\u202Egnp.exe\"\nspec:\n  containers: [{name: c, image: x}]\n",
            Invalid,
            &["rtl.yaml:4:9:", "metadata.name: Invalid value: \"web\\u{202e}gnp.exe\": a lowercase RFC 1123 subdomain must consist of"],
        ),
        case(
            "an upper-case node name",
            "node-name.yaml",
            "apiVersion: v1\nkind: Node\nmetadata:\n  name: Worker-1\n",
            Invalid,
            &["node-name.yaml:4:9: Node/Worker-1: metadata.name: Invalid value: \"Worker-1\": a lowercase RFC 1123 subdomain"],
        ),
        case(
            "a namespace name with a dot",
            "ns-dot.yaml",
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop.prod\n",
            Invalid,
            &["Namespace/shop.prod: metadata.name: Invalid value: \"shop.prod\": must not contain dots"],
        ),
        case(
            "a Service name starting with a digit",
            "svc.yaml",
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: 1web\n  namespace: shop\n",
            Invalid,
            &["Service/shop/1web: metadata.name: Invalid value: \"1web\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character"],
        ),
        case(
            "an annotation key with a space",
            "annotation.yaml",
            "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n  annotations:\n    bad key: x\n",
            Invalid,
            &["annotation.yaml:6:14: Node/n1: metadata.annotations[bad key]: Invalid value: \"bad key\": name part must consist of"],
        ),
        case(
            "hostPort 70000",
            "hostport.yaml",
            &pod("    ports:\n    - containerPort: 80\n      hostPort: 70000\n"),
            Invalid,
            &["hostport.yaml:12:17: Pod/shop/web: spec.containers[0].ports[0].hostPort: Invalid value: 70000: must be between 1 and 65535, inclusive"],
        ),
        case(
            "containerPort -1",
            "containerport.yaml",
            &pod("    ports:\n    - containerPort: -1\n"),
            Invalid,
            &["spec.containers[0].ports[0].containerPort: Invalid value: -1: must be between 1 and 65535, inclusive"],
        ),
        case(
            "containerPort 0",
            "port-zero.yaml",
            &pod("    ports:\n    - containerPort: 0\n"),
            Invalid,
            &["spec.containers[0].ports[0].containerPort: Required value"],
        ),
        case(
            "a template label value with a slash",
            "template-label.yaml",
            "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: web, namespace: shop}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web, tier: a/b}}\n    spec:\n      containers: [{name: c, image: x}]\n",
            Invalid,
            &["ReplicaSet/shop/web: spec.template.metadata.labels[tier]: Invalid value: \"a/b\": a valid label must be"],
        ),
        case(
            "a PodDisruptionBudget selecting a bad label key",
            "pdb.yaml",
            "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: web, namespace: shop}\nspec:\n  minAvailable: 1\n  selector:\n    matchExpressions:\n    - {key: \"bad key\", operator: In, values: [\"a b\"]}\n",
            Invalid,
            &["pdb.yaml:8:13: PodDisruptionBudget/shop/web: spec.selector.matchExpressions[0].key: Invalid value: \"bad key\": name part must consist of", "spec.selector.matchExpressions[0].values[0]: Invalid value: \"a b\": a valid label must be"],
        ),
        case(
            "a Deployment selector with a bad label value",
            "selector.yaml",
            &deployment("      maxSurge: 1\n").replace("matchLabels: {app: web}", "matchLabels: {app: \"w b\"}").replace("labels: {app: web}", "labels: {app: \"w b\"}"),
            Invalid,
            &["spec.selector.matchLabels[app]: Invalid value: \"w b\": a valid label must be", "spec.template.metadata.labels[app]: Invalid value: \"w b\""],
        ),
        case(
            "maxSurge abc",
            "surge.yaml",
            &deployment("      maxSurge: abc\n"),
            Invalid,
            &["surge.yaml:10:17: Deployment/shop/web: spec.strategy.rollingUpdate.maxSurge: Invalid value: \"abc\": a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"],
        ),
        case(
            "maxUnavailable 150%",
            "unavailable.yaml",
            &deployment("      maxUnavailable: 150%\n"),
            Invalid,
            &["spec.strategy.rollingUpdate.maxUnavailable: Invalid value: \"150%\": must not be greater than 100%"],
        ),
        case(
            "maxSurge and maxUnavailable both zero",
            "both-zero.yaml",
            &deployment("      maxSurge: 0\n      maxUnavailable: 0%\n"),
            Invalid,
            &["spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0"],
        ),
        case(
            "negative maxSurge",
            "neg-surge.yaml",
            &deployment("      maxSurge: -1\n"),
            Invalid,
            &["spec.strategy.rollingUpdate.maxSurge: Invalid value: -1: must be greater than or equal to 0"],
        ),
        case(
            "a DaemonSet with maxSurge and maxUnavailable zero",
            "ds.yaml",
            "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: agent, namespace: shop}\nspec:\n  selector: {matchLabels: {app: a}}\n  updateStrategy:\n    rollingUpdate: {maxSurge: 0, maxUnavailable: 0}\n  template:\n    metadata: {labels: {app: a}}\n    spec:\n      containers: [{name: c, image: x}]\n",
            Invalid,
            &["DaemonSet/shop/agent: spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0"],
        ),
        case(
            "a JSON object with a repeated key",
            "dup.json",
            "{\"apiVersion\": \"v1\",\n \"kind\": \"Node\",\n \"metadata\": {\"name\": \"n1\"},\n \"kind\": \"Node\"}\n",
            Syntax,
            &["dup.json:4:2: invalid JSON: object key \"kind\" already defined at line 2"],
        ),
        case(
            "malformed JSON on stdin (no extension) is a JSON error, as kubectl sniffs it",
            "-",
            "{\"apiVersion\": \"v1\", \"kind\": \"Node\",\n \"metadata\": {\"name\": \"n1\",}}\n",
            Syntax,
            &["-:2:28: invalid JSON: key must be a string"],
        ),
        case(
            "a JSON object with a repeated nested key",
            "dup-nested.json",
            "{\"apiVersion\": \"v1\", \"kind\": \"Node\",\n \"metadata\": {\"name\": \"n1\",\n   \"labels\": {\"a\": \"1\", \"a\": \"2\"}}}\n",
            Syntax,
            &["dup-nested.json:3:25: Node/n1: invalid JSON: object key \"a\" already defined at line 3"],
        ),
    ]
}

/// Objects read from a cluster (they carry a `uid`) load even when they
/// break today's naming rules: the API server stored them, so each broken
/// rule is a located warning.
#[test]
fn objects_from_a_cluster_break_naming_rules_with_a_warning() {
    let text = "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n  uid: 0b7c\n  labels:\n    bad key: x\n";
    let inv = load(&[Source::Bytes {
        name: "snap.yaml".to_string(),
        data: text.as_bytes().to_vec(),
    }])
    .expect("a stored object loads");
    assert_eq!(inv.nodes.len(), 1);
    let warning = inv
        .warnings
        .iter()
        .find(|w| w.contains("bad key"))
        .expect("a warning names the label");
    assert!(
        warning.starts_with("snap.yaml:7:14: Node/n1: metadata.labels[bad key]: Invalid value: \"bad key\": name part must consist of")
            && warning.ends_with("(kept: read from a cluster, whose API server stored it)"),
        "{warning}"
    );
}

#[test]
fn malformed_input_fails_with_a_located_message() {
    let cases = cases();
    assert!(cases.len() >= 22);
    let mut failures = Vec::new();
    for c in cases {
        let sources: Vec<Source> = c
            .files
            .iter()
            .map(|(name, data)| Source::Bytes {
                name: (*name).to_string(),
                data: data.clone(),
            })
            .collect();
        match load(&sources) {
            Ok(inv) => failures.push(format!(
                "{}: loaded ({} pods) but should fail",
                c.name,
                inv.pods.len()
            )),
            Err(e) => {
                let msg = e.to_string();
                if e.kind != c.kind {
                    failures.push(format!(
                        "{}: kind {:?}, want {:?}: {msg}",
                        c.name, e.kind, c.kind
                    ));
                }
                for want in &c.expect {
                    if !msg.contains(want.as_str()) {
                        failures.push(format!("{}:\n  got:  {msg}\n  want: {want}", c.name));
                    }
                }
                assert_eq!(e.exit_code(), 2);
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
