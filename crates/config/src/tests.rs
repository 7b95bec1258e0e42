//! Table tests: defaulting and plugin merging as kube-scheduler v1.36
//! does them, and errors in its words (the expected messages were taken
//! from the v1.36.2 kube-scheduler of `../shared/envtest` run with each
//! file as `--config`), at the line and column they are about.

use podplace_engine::profile::{ScoringStrategy, ShapePoint, SpreadDefaults};
use podplace_engine::status::Plugin;

use super::*;

const HEAD: &str = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n";

fn ok(body: &str) -> SchedulerConfig {
    match parse("c.yaml", &format!("{HEAD}{body}")) {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    }
}

fn err(body: &str) -> String {
    match parse("c.yaml", &format!("{HEAD}{body}")) {
        Ok(_) => panic!("accepted:\n{body}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn no_profiles_is_the_default_profile() {
    let c = ok("");
    assert_eq!(c.profiles.len(), 1);
    assert_eq!(*c.profiles[0], Profile::default());
    assert_eq!(c.parallelism, 16);
    assert_eq!(c.percentage_of_nodes_to_score, 0);
    let c = ok("profiles:\n- schedulerName: default-scheduler\n");
    assert_eq!(*c.profiles[0], Profile::default());
}

#[test]
fn plugin_sets_merge_and_expand() {
    // (plugins: YAML, score plugins and weights, filter check)
    let table: Vec<(&str, Vec<(Plugin, i64)>)> = vec![
        (
            // A disabled score plugin and a custom weight.
            "    score:\n      disabled:\n      - name: ImageLocality\n      enabled:\n      - name: NodeResourcesFit\n        weight: 5\n",
            vec![
                (Plugin::NodeResourcesFit, 5),
                (Plugin::TaintToleration, 3),
                (Plugin::NodeAffinity, 2),
                (Plugin::PodTopologySpread, 2),
                (Plugin::InterPodAffinity, 2),
                (Plugin::DynamicResources, 1),
                (Plugin::NodeResourcesBalancedAllocation, 1),
            ],
        ),
        (
            // `*` at score: only what score enables.
            "    score:\n      disabled:\n      - name: '*'\n      enabled:\n      - name: NodeResourcesFit\n        weight: 0\n",
            vec![(Plugin::NodeResourcesFit, 1)],
        ),
        (
            // multiPoint weights replace the defaults in place.
            "    multiPoint:\n      enabled:\n      - name: ImageLocality\n        weight: 7\n",
            vec![
                (Plugin::TaintToleration, 3),
                (Plugin::NodeAffinity, 2),
                (Plugin::NodeResourcesFit, 1),
                (Plugin::PodTopologySpread, 2),
                (Plugin::InterPodAffinity, 2),
                (Plugin::DynamicResources, 1),
                (Plugin::NodeResourcesBalancedAllocation, 1),
                (Plugin::ImageLocality, 7),
            ],
        ),
    ];
    let table = table.into_iter().chain(weight_rows());
    for (plugins, want) in table {
        let c = ok(&format!("profiles:\n- plugins:\n{plugins}"));
        let mut got = c.profiles[0].scores.clone();
        let mut want = want;
        got.sort();
        want.sort();
        assert_eq!(got, want, "{plugins}");
    }
    // Disabling a filter; disabling everything at multiPoint.
    let c =
        ok("profiles:\n- plugins:\n    filter:\n      disabled:\n      - name: NodeResourcesFit\n");
    assert!(!c.profiles[0].filters_with(Plugin::NodeResourcesFit));
    assert!(c.profiles[0].filters_with(Plugin::TaintToleration));
    // `*` at multiPoint drops the queue sort and binder too: they must be
    // named again (NewFramework wants one queue sort and a binder).
    let c = ok("profiles:\n- plugins:\n    multiPoint:\n      disabled:\n      - name: '*'\n      enabled:\n      - name: PrioritySort\n      - name: DefaultBinder\n      - name: NodeResourcesFit\n    postFilter:\n      enabled:\n      - name: DefaultPreemption\n");
    assert_eq!(c.profiles[0].filters, vec![Plugin::NodeResourcesFit]);
    assert_eq!(c.profiles[0].scores, vec![(Plugin::NodeResourcesFit, 1)]);
    assert!(c.profiles[0].preemption);
    let c = ok("profiles:\n- plugins:\n    postFilter:\n      disabled:\n      - name: DefaultPreemption\n");
    assert!(!c.profiles[0].preemption);
}

/// getScoreWeights: the score point's own entries are looked at before
/// multiPoint's, and the first one met wins even without a weight (0 and
/// unset mean 1); mergePluginSet replaces a default in place; a plugin
/// disabled at multiPoint can be enabled again at score, and one disabled
/// at score is not brought back by multiPoint.
fn weight_rows() -> Vec<(&'static str, Vec<(Plugin, i64)>)> {
    let defaults_but = |changed: &[(Plugin, Option<i64>)]| {
        let mut out: Vec<(Plugin, i64)> = DEFAULT_SCORES_FOR_TESTS
            .iter()
            .copied()
            .filter(|(p, _)| !changed.iter().any(|(c, _)| c == p))
            .collect();
        out.extend(changed.iter().filter_map(|(p, w)| w.map(|w| (*p, w))));
        out
    };
    vec![
        (
            // score's own weight beats multiPoint's default 3.
            "    score:\n      enabled:\n      - name: TaintToleration\n        weight: 5\n",
            defaults_but(&[(Plugin::TaintToleration, Some(5))]),
        ),
        (
            // score names it without a weight: 1, not multiPoint's 4.
            "    multiPoint:\n      enabled:\n      - name: TaintToleration\n        weight: 4\n    score:\n      enabled:\n      - name: TaintToleration\n",
            defaults_but(&[(Plugin::TaintToleration, Some(1))]),
        ),
        (
            // multiPoint's weight replaces the default's in place.
            "    multiPoint:\n      enabled:\n      - name: TaintToleration\n        weight: 4\n",
            defaults_but(&[(Plugin::TaintToleration, Some(4))]),
        ),
        (
            // Disabled at multiPoint, enabled again at score only.
            "    multiPoint:\n      disabled:\n      - name: TaintToleration\n    score:\n      enabled:\n      - name: TaintToleration\n        weight: 2\n",
            defaults_but(&[(Plugin::TaintToleration, Some(2))]),
        ),
        (
            // Disabled at score: multiPoint's entry does not bring it back.
            "    score:\n      disabled:\n      - name: ImageLocality\n    multiPoint:\n      enabled:\n      - name: ImageLocality\n        weight: 4\n",
            defaults_but(&[(Plugin::ImageLocality, None)]),
        ),
        (
            // A weight of 0 at multiPoint means 1.
            "    multiPoint:\n      enabled:\n      - name: InterPodAffinity\n        weight: 0\n",
            defaults_but(&[(Plugin::InterPodAffinity, Some(1))]),
        ),
        (
            // A negative multiPoint weight is accepted and kept (only the
            // score point's are refused).
            "    multiPoint:\n      enabled:\n      - name: ImageLocality\n        weight: -3\n",
            defaults_but(&[(Plugin::ImageLocality, Some(-3))]),
        ),
    ]
}

/// v1.36's default score plugins and weights.
const DEFAULT_SCORES_FOR_TESTS: [(Plugin, i64); 8] = podplace_engine::profile::DEFAULT_SCORES;

#[test]
fn plugin_args_defaulted() {
    let c = ok(r#"percentageOfNodesToScore: 30
parallelism: 1
profiles:
- schedulerName: packer
  percentageOfNodesToScore: 100
  pluginConfig:
  - name: NodeResourcesFit
    args:
      ignoredResources: [example.com/foo]
      ignoredResourceGroups: [example.org]
      scoringStrategy:
        type: RequestedToCapacityRatio
        resources:
        - name: cpu
          weight: 3
        - name: memory
        requestedToCapacityRatio:
          shape:
          - {utilization: 0, score: 0}
          - {utilization: 100, score: 10}
  - name: NodeResourcesBalancedAllocation
    args:
      resources: [{name: cpu}, {name: example.com/gpu, weight: 1}]
  - name: PodTopologySpread
    args:
      defaultingType: List
      defaultConstraints:
      - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}
  - name: InterPodAffinity
    args: {hardPodAffinityWeight: 0, ignorePreferredTermsOfExistingPods: true}
  - name: NodeAffinity
    args:
      addedAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions: [{key: pool, operator: In, values: [a]}]
  - name: DefaultPreemption
    args: {minCandidateNodesPercentage: 0, minCandidateNodesAbsolute: 5}
- schedulerName: spreader
"#);
    assert_eq!(c.parallelism, 1);
    assert_eq!(c.percentage_of_nodes_to_score, 30);
    let p = &c.profiles[0];
    assert_eq!(p.scheduler_name, "packer");
    assert_eq!(p.percentage_of_nodes_to_score, Some(100));
    assert_eq!(
        p.fit.strategy,
        ScoringStrategy::RequestedToCapacityRatio(vec![
            ShapePoint {
                utilization: 0,
                score: 0
            },
            ShapePoint {
                utilization: 100,
                score: 10
            }
        ])
    );
    assert_eq!(p.fit.resources[0].weight, 3);
    assert_eq!(p.fit.resources[1].weight, 1);
    assert_eq!(p.fit.ignored_resources, vec!["example.com/foo"]);
    assert_eq!(p.fit.ignored_resource_groups, vec!["example.org"]);
    assert_eq!(p.balanced.len(), 2);
    assert!(matches!(&p.spread, SpreadDefaults::List(l) if l.len() == 1 && l[0].do_not_schedule));
    assert_eq!(p.hard_pod_affinity_weight, 0);
    assert!(p.ignore_preferred_terms_of_existing_pods);
    assert!(p.added_affinity.is_some());
    assert_eq!(
        (
            p.min_candidate_nodes_percentage,
            p.min_candidate_nodes_absolute
        ),
        (0, 5)
    );
    assert_eq!(
        *c.profiles[1],
        Profile {
            scheduler_name: "spreader".into(),
            ..Profile::default()
        }
    );
    assert!(c.profile_for("").is_none());
    assert!(c.profile_for("spreader").is_some());
}

#[test]
fn errors_in_kube_schedulers_words_at_their_position() {
    let table = [
        (
            "percentageOfNodesToScore: 120\nprofiles:\n- schedulerName: a\n  plugins:\n    score:\n      enabled:\n      - name: Foo\n  pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: Bogus\n  - name: InterPodAffinity\n    args:\n      hardPodAffinityWeight: 200\n- schedulerName: a\n",
            "c.yaml:17:30: profiles[0].pluginConfig[1].args.hardPodAffinityWeight: Invalid value: 200: not in valid range [0, 100]\nc.yaml:18:18: profiles[1].schedulerName: Duplicate value: {}\nc.yaml:3:27: percentageOfNodesToScore: Invalid value: 120: not in valid range [0-100]",
        ),
        (
            "profiles:\n- plugins:\n    score:\n      enabled:\n      - name: Foo\n",
            "c.yaml:7:9: initializing profiles: creating profile for scheduler name default-scheduler: ScorePlugin \"Foo\" does not exist",
        ),
        (
            "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: Bogus\n",
            "c.yaml:8:15: initializing profiles: creating profile for scheduler name default-scheduler: initializing plugin \"NodeResourcesFit\": scoringStrategy.type: Unsupported value: \"Bogus\": supported values: \"LeastAllocated\", \"MostAllocated\", \"RequestedToCapacityRatio\"",
        ),
        (
            "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: RequestedToCapacityRatio\n",
            "c.yaml:8:15: initializing profiles: creating profile for scheduler name default-scheduler: initializing plugin \"NodeResourcesFit\": scoringStrategy.requestedToCapacityRatio: Required value: must be specified when type is RequestedToCapacityRatio",
        ),
        (
            "profilez: []\n",
            "c.yaml:3:11: strict decoding error: unknown field \"profilez\"",
        ),
        (
            "profiles:\n- pluginConfig:\n  - name: PodTopologySpread\n    args:\n      defaultConstraints:\n      - maxSkew: 0\n        topologyKey: zone\n        whenUnsatisfiable: DoNotSchedule\n",
            "c.yaml:6:7: profiles[0].pluginConfig[0].args.defaultingType: Invalid value: \"System\": when .defaultConstraints are not empty\nc.yaml:8:9: profiles[0].pluginConfig[0].args.defaultConstraints[0].maxSkew: Invalid value: 0: not in valid range (0, inf)",
        ),
        (
            "parallelism: many\n",
            "c.yaml:3:14: json: cannot unmarshal string into Go struct field KubeSchedulerConfiguration.parallelism of type int32",
        ),
        (
            "profiles:\n- schedulerName: a\n- {}\n",
            "c.yaml:5:3: profiles[1].schedulerName: Required value",
        ),
    ];
    for (body, want) in table {
        let got = err(body);
        // The validation's own ordering is checked; positions are ours.
        assert_eq!(strip_positions(&got), strip_positions(want), "{body}");
        assert!(got.lines().all(|l| l.starts_with("c.yaml:")), "{got}");
    }
}

/// The messages without `file:line:column: `.
fn strip_positions(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.splitn(4, ':').nth(3).unwrap_or(l).trim().to_string())
        .collect()
}

#[test]
fn positions_point_at_the_value() {
    let got = err("profiles:\n- pluginConfig:\n  - name: InterPodAffinity\n    args:\n      hardPodAffinityWeight: -1\n");
    assert!(got.starts_with("c.yaml:7:30: "), "{got}");
    let got = err("profilez: []\n");
    assert!(got.starts_with("c.yaml:3:"), "{got}");
    // addedAffinity errors point at the requirement (or the value) they
    // are about, preferred terms' `preference` included.
    let got = err("profiles:\n- pluginConfig:\n  - name: NodeAffinity\n    args:\n      addedAffinity:\n        requiredDuringSchedulingIgnoredDuringExecution:\n          nodeSelectorTerms:\n          - matchExpressions:\n            - {key: pool, operator: In}\n        preferredDuringSchedulingIgnoredDuringExecution:\n        - weight: 1\n          preference:\n            matchExpressions:\n            - {key: \"a b\", operator: Exists}\n");
    let lines: Vec<&str> = got.lines().collect();
    assert!(lines[0].starts_with("c.yaml:11:15: "), "{got}");
    assert!(lines[1].starts_with("c.yaml:16:21: "), "{got}");
}

#[test]
fn wrong_api_version_and_json() {
    let got = parse(
        "c.json",
        r#"{"apiVersion": "kubescheduler.config.k8s.io/v1beta3", "kind": "KubeSchedulerConfiguration"}"#,
    )
    .unwrap_err()
    .to_string();
    assert!(got.contains("no kind \"KubeSchedulerConfiguration\" is registered for version \"kubescheduler.config.k8s.io/v1beta3\""), "{got}");
    let c = parse(
        "c.json",
        r#"{"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "profiles": [{"pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}]}]}"#,
    )
    .expect("json config");
    assert_eq!(c.profiles[0].fit.strategy, ScoringStrategy::MostAllocated);
}
