//! The validation and framework rules of kube-scheduler v1.36, one row per
//! rule, each expected answer taken from the real v1.36.2 kube-scheduler of
//! `../shared/envtest` started with the row's file as `--config` (12:40–13:35
//! UTC, session 6). kube-scheduler prints several errors as one aggregate
//! `[a, b]`; podplace prints one per line, each at its own position, in the
//! same order and words. The sources each rule comes from:
//! - validation.go `ValidateKubeSchedulerConfiguration`,
//!   `validateKubeSchedulerProfile`, `validatePluginConfig`,
//!   `validateCommonQueueSort`, `isPluginInvalid`;
//! - validation_pluginargs.go (every `Validate*Args`, `validateFunctionShape`,
//!   `validateResources`, ValidateLabelName through apimachinery);
//! - component-helpers nodeaffinity `NewNodeSelector` /
//!   `NewPreferredSchedulingTerms` with labels `NewRequirement`;
//! - framework runtime `NewFramework` (plugin creation before the lists,
//!   `updatePluginList`, `expandMultiPointPlugins`, the queue sort and bind
//!   counts, `getScoreWeights`);
//! - the strict decoder of plugin args (`decoding args for plugin X`);
//! - validation.go `validateExtenders` (extenders are validated, not called);
//! - `ValidateDynamicResourcesArgs` (both feature gates on in v1.36) and
//!   `time.ParseDuration`'s errors for its durations.
//!
//! Rows with no expected error were accepted by kube-scheduler (it went on
//! to start).

use super::*;

const HEAD: &str = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n";

/// (row, body after apiVersion/kind, kube-scheduler's errors in order).
const ROWS: &[(&str, &str, &[&str])] = &[
    (
        "allstar",
        r##"profiles:
- plugins:
    multiPoint:
      disabled:
      - name: "*"
      enabled:
      - name: NodeResourcesFit
"##,
        &[
            r##"initializing profiles: creating profile for scheduler name default-scheduler: only one queue sort plugin required for profile with scheduler name "default-scheduler", but got 0"##,
        ],
    ),
    (
        "ba",
        r##"profiles:
- pluginConfig:
  - name: NodeResourcesBalancedAllocation
    args:
      resources: [{name: cpu, weight: 2}, {name: cpu}]
"##,
        &[
            r##"profiles[0].pluginConfig[0].args.resources[0].weight: Invalid value: 2: must be 1"##,
            r##"profiles[0].pluginConfig[0].args.resources[1].name: Duplicate value: "cpu""##,
        ],
    ),
    (
        "backoff",
        r##"podInitialBackoffSeconds: 0
podMaxBackoffSeconds: -1
"##,
        &[
            r##"podInitialBackoffSeconds: Invalid value: 0: must be greater than 0"##,
            r##"podMaxBackoffSeconds: Invalid value: -1: must be greater than or equal to PodInitialBackoffSeconds"##,
        ],
    ),
    (
        "cfgunknownplugin",
        r##"profiles:
- pluginConfig:
  - name: Foo
    args: {a: 1}
"##,
        &[],
    ),
    (
        "dp00",
        r##"profiles:
- pluginConfig:
  - name: DefaultPreemption
    args: {minCandidateNodesPercentage: 0, minCandidateNodesAbsolute: 0}
"##,
        &[
            r##"profiles[0].pluginConfig[0].args.minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute"##,
            r##"profiles[0].pluginConfig[0].args.minCandidateNodesAbsolute: Invalid value: 0: cannot be zero at the same time as minCandidateNodesPercentage"##,
        ],
    ),
    (
        "dp101",
        r##"profiles:
- pluginConfig:
  - name: DefaultPreemption
    args: {minCandidateNodesPercentage: 101, minCandidateNodesAbsolute: -1}
"##,
        &[
            r##"profiles[0].pluginConfig[0].args.minCandidateNodesPercentage: Invalid value: 101: not in valid range [0, 100]"##,
            r##"profiles[0].pluginConfig[0].args.minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)"##,
        ],
    ),
    (
        "dup",
        r##"profiles:
- schedulerName: a
- schedulerName: a
"##,
        &[r##"profiles[1].schedulerName: Duplicate value: {}"##],
    ),
    (
        "dupcfg",
        r##"profiles:
- pluginConfig:
  - name: InterPodAffinity
    args: {}
  - name: InterPodAffinity
    args: {}
"##,
        &[r##"profiles[0].pluginConfig[1]: Duplicate value: "InterPodAffinity""##],
    ),
    (
        "ebs",
        r##"profiles:
- plugins:
    filter:
      enabled:
      - name: EBSLimits
"##,
        &[
            r##"profiles[0].plugins.filter.enabled[0]: Invalid value: "EBSLimits": was invalid in version "v1" (KubeSchedulerConfiguration is version "kubescheduler.config.k8s.io/v1")"##,
        ],
    ),
    (
        "ebscfg",
        r##"profiles:
- pluginConfig:
  - name: EBSLimits
    args: {}
"##,
        &[
            r##"profiles[0].pluginConfig[0]: Invalid value: "EBSLimits": was invalid in version "v1" (KubeSchedulerConfiguration is version "kubescheduler.config.k8s.io/v1")"##,
        ],
    ),
    (
        "fitandunk",
        r##"profiles:
- plugins:
    score:
      enabled:
      - name: Foo
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: Bogus
"##,
        &[
            r##"initializing profiles: creating profile for scheduler name default-scheduler: initializing plugin "NodeResourcesFit": scoringStrategy.type: Unsupported value: "Bogus": supported values: "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio""##,
        ],
    ),
    (
        "fitdisabled",
        r##"profiles:
- plugins:
    multiPoint:
      disabled:
      - name: NodeResourcesFit
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: Bogus
"##,
        &[],
    ),
    (
        "fitforbid",
        r##"profiles:
- pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        requestedToCapacityRatio: {shape: [{utilization: 0, score: 0}]}
"##,
        &[
            r##"initializing profiles: creating profile for scheduler name default-scheduler: initializing plugin "NodeResourcesFit": scoringStrategy.requestedToCapacityRatio: Forbidden: must be nil when type is not RequestedToCapacityRatio"##,
        ],
    ),
    (
        "fitign",
        r##"profiles:
- pluginConfig:
  - name: NodeResourcesFit
    args:
      ignoredResources: ["a b"]
      ignoredResourceGroups: ["example.com/x", "c d"]
"##,
        &[
            r##"initializing profiles: creating profile for scheduler name default-scheduler: initializing plugin "NodeResourcesFit": [ignoredResources[0]: Invalid value: "a b": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]'), ignoredResourceGroups[0]: Invalid value: "example.com/x": resource group name can't contain '/', ignoredResourceGroups[1]: Invalid value: "c d": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')]"##,
        ],
    ),
    (
        "fitnotype",
        r##"profiles:
- pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        resources: [{name: cpu, weight: 101}, {name: memory, weight: -1}]
"##,
        &[
            r##"initializing profiles: creating profile for scheduler name default-scheduler: initializing plugin "NodeResourcesFit": [scoringStrategy.type: Unsupported value: "": supported values: "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio", scoringStrategy.resources[0].weight: Invalid value: 101: resource weight of cpu not in valid range (0, 100], scoringStrategy.resources[1].weight: Invalid value: -1: resource weight of memory not in valid range (0, 100]]"##,
        ],
    ),
    (
        "fitrtcr",
        r##"profiles:
- pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: RequestedToCapacityRatio
        requestedToCapacityRatio:
          shape:
          - {utilization: 50, score: 11}
          - {utilization: 40, score: -1}
          - {utilization: 101, score: 5}
"##,
        &[
            r##"initializing profiles: creating profile for scheduler name default-scheduler: initializing plugin "NodeResourcesFit": [scoringStrategy.requestedToCapacityRatio.shape[1].utilization: Invalid value: 40: values must be sorted in increasing order, scoringStrategy.requestedToCapacityRatio.shape[0].score: Invalid value: 11: not in valid range [0, 10], scoringStrategy.requestedToCapacityRatio.shape[1].score: Invalid value: -1: not in valid range [0, 10], scoringStrategy.requestedToCapacityRatio.shape[2].utilization: Invalid value: 101: not in valid range [0, 100]]"##,
        ],
    ),
    (
        "fitrtcrempty",
        r##"profiles:
- pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: RequestedToCapacityRatio
        requestedToCapacityRatio: {}
"##,
        &[
            r##"initializing profiles: creating profile for scheduler name default-scheduler: initializing plugin "NodeResourcesFit": scoringStrategy.requestedToCapacityRatio.shape: Required value: at least one point must be specified"##,
        ],
    ),
    (
        "ipa",
        r##"profiles:
- pluginConfig:
  - name: InterPodAffinity
    args: {hardPodAffinityWeight: -1}
"##,
        &[
            r##"profiles[0].pluginConfig[0].args.hardPodAffinityWeight: Invalid value: -1: not in valid range [0, 100]"##,
        ],
    ),
    (
        "mptwice",
        r##"profiles:
- plugins:
    multiPoint:
      enabled:
      - name: ImageLocality
      - name: ImageLocality
"##,
        &[
            r##"initializing profiles: creating profile for scheduler name default-scheduler: plugin "ImageLocality" already registered as "ScorePlugin""##,
        ],
    ),
    (
        "na",
        r##"profiles:
- pluginConfig:
  - name: NodeAffinity
    args:
      addedAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions: [{key: pool, operator: Bogus, values: [a]}, {key: pool, operator: In}]
        preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 1
          preference:
            matchExpressions: [{key: "a b", operator: Exists}]
"##,
        &[
            r##"profiles[0].pluginConfig[0].args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator: Unsupported value: "Bogus": supported values: "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt""##,
            r##"profiles[0].pluginConfig[0].args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[1].values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"##,
            r##"profiles[0].pluginConfig[0].args.addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].matchExpressions[0].key: Invalid value: "a b": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"##,
        ],
    ),
    (
        "negweight",
        r##"profiles:
- plugins:
    score:
      enabled:
      - name: ImageLocality
        weight: -5
"##,
        &[
            r##"initializing profiles: creating profile for scheduler name default-scheduler: score plugins: total score of Score plugins could overflow"##,
        ],
    ),
    (
        "nobind",
        r##"profiles:
- plugins:
    multiPoint:
      disabled:
      - name: DefaultBinder
"##,
        &[
            r##"initializing profiles: creating profile for scheduler name default-scheduler: at least one bind plugin is needed for profile with scheduler name "default-scheduler""##,
        ],
    ),
    (
        "noname",
        r##"profiles:
- schedulerName: a
- plugins: {}
"##,
        &[r##"profiles[1].schedulerName: Required value"##],
    ),
    (
        "notext",
        r##"profiles:
- plugins:
    filter:
      enabled:
      - name: ImageLocality
"##,
        &[
            r##"initializing profiles: creating profile for scheduler name default-scheduler: plugin "ImageLocality" does not extend FilterPlugin plugin"##,
        ],
    ),
    (
        "par0",
        r##"parallelism: 0
"##,
        &[r##"parallelism: Invalid value: 0: should be an integer value greater than zero"##],
    ),
    (
        "pct101",
        r##"percentageOfNodesToScore: 101
"##,
        &[r##"percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]"##],
    ),
    (
        "ppct",
        r##"profiles:
- schedulerName: a
  percentageOfNodesToScore: -1
"##,
        &[
            r##"profiles[0].percentageOfNodesToScore: Invalid value: -1: not in valid range [0-100]"##,
        ],
    ),
    (
        "ptsbad",
        r##"profiles:
- pluginConfig:
  - name: PodTopologySpread
    args:
      defaultingType: Foo
"##,
        &[
            r##"profiles[0].pluginConfig[0].args.defaultingType: Unsupported value: "Foo": supported values: "System", "List""##,
        ],
    ),
    (
        "ptscons",
        r##"profiles:
- pluginConfig:
  - name: PodTopologySpread
    args:
      defaultingType: List
      defaultConstraints:
      - {maxSkew: 0, topologyKey: "", whenUnsatisfiable: ""}
      - {maxSkew: 1, topologyKey: "a b", whenUnsatisfiable: Bogus}
      - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {a: b}}}
      - {maxSkew: 2, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}
"##,
        &[
            r##"profiles[0].pluginConfig[0].args.defaultConstraints[0].maxSkew: Invalid value: 0: not in valid range (0, inf)"##,
            r##"profiles[0].pluginConfig[0].args.defaultConstraints[0].topologyKey: Required value: can not be empty"##,
            r##"profiles[0].pluginConfig[0].args.defaultConstraints[0].whenUnsatisfiable: Required value: can not be empty"##,
            r##"profiles[0].pluginConfig[0].args.defaultConstraints[1].topologyKey: Invalid value: "a b": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"##,
            r##"profiles[0].pluginConfig[0].args.defaultConstraints[1].whenUnsatisfiable: Unsupported value: "Bogus": supported values: "DoNotSchedule", "ScheduleAnyway""##,
            r##"profiles[0].pluginConfig[0].args.defaultConstraints[2].labelSelector: Forbidden: constraint must not define a selector, as they deduced for each pod"##,
            r##"profiles[0].pluginConfig[0].args.defaultConstraints[3]: Duplicate value: "{zone, DoNotSchedule}""##,
        ],
    ),
    (
        "ptssys",
        r##"profiles:
- pluginConfig:
  - name: PodTopologySpread
    args:
      defaultConstraints:
      - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}
"##,
        &[
            r##"profiles[0].pluginConfig[0].args.defaultingType: Invalid value: "System": when .defaultConstraints are not empty"##,
        ],
    ),
    (
        "qsort",
        r##"profiles:
- schedulerName: a
- schedulerName: b
  plugins:
    queueSort:
      disabled:
      - name: "*"
"##,
        &[
            r##"profiles[1].plugins.queueSort: Invalid value: {"Enabled":null,"Disabled":[{"Name":"*","Weight":0}]}: must be the same for all profiles"##,
        ],
    ),
    (
        "twice",
        r##"profiles:
- plugins:
    score:
      enabled:
      - name: ImageLocality
      - name: ImageLocality
"##,
        &[
            r##"initializing profiles: creating profile for scheduler name default-scheduler: plugin "ImageLocality" already registered as "ScorePlugin""##,
        ],
    ),
    (
        "unkarg",
        r##"profiles:
- pluginConfig:
  - name: InterPodAffinity
    args: {hardPodAffinityWeight: 1, foo: 2}
"##,
        &[
            r##"strict decoding error: decoding .profiles[0].pluginConfig[0]: strict decoding error: decoding args for plugin InterPodAffinity: strict decoding error: unknown field "foo""##,
        ],
    ),
    (
        "unkplug",
        r##"profiles:
- plugins:
    score:
      enabled:
      - name: Foo
"##,
        &[
            r##"initializing profiles: creating profile for scheduler name default-scheduler: ScorePlugin "Foo" does not exist"##,
        ],
    ),
    (
        "vb",
        r##"profiles:
- pluginConfig:
  - name: VolumeBinding
    args:
      bindTimeoutSeconds: -1
      shape: [{utilization: 0, score: 20}]
"##,
        &[
            r##"profiles[0].pluginConfig[0].args.bindTimeoutSeconds: Invalid value: -1: invalid BindTimeoutSeconds, should not be a negative value"##,
            r##"profiles[0].pluginConfig[0].args.shape: Invalid value: [{"Utilization":0,"Score":20}]: unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring"##,
        ],
    ),
    (
        "wrongargs",
        r##"profiles:
- pluginConfig:
  - name: InterPodAffinity
    args: [1]
"##,
        &[
            r##"decoding .profiles[0].pluginConfig[0]: decoding args for plugin InterPodAffinity: couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct { APIVersion string "json:\"apiVersion,omitempty\""; Kind string "json:\"kind,omitempty\"" }"##,
        ],
    ),
    (
        "argsnull",
        r##"profiles:
- pluginConfig:
  - name: InterPodAffinity
"##,
        &[],
    ),
    (
        "argtype",
        r##"profiles:
- pluginConfig:
  - name: InterPodAffinity
    args: {hardPodAffinityWeight: abc}
"##,
        &[
            r##"decoding .profiles[0].pluginConfig[0]: decoding args for plugin InterPodAffinity: json: cannot unmarshal string into Go struct field InterPodAffinityArgs.hardPodAffinityWeight of type int32"##,
        ],
    ),
    (
        "bigw",
        r##"profiles:
- plugins:
    score:
      enabled:
      - name: ImageLocality
        weight: 2147483647
"##,
        &[],
    ),
    (
        "mpnegw",
        r##"profiles:
- plugins:
    multiPoint:
      enabled:
      - name: ImageLocality
        weight: -3
"##,
        &[],
    ),
    (
        "negw1",
        r##"profiles:
- plugins:
    score:
      enabled:
      - name: ImageLocality
        weight: -1
"##,
        &[
            r##"initializing profiles: creating profile for scheduler name default-scheduler: score plugins: total score of Score plugins could overflow"##,
        ],
    ),
    (
        "plugname",
        r##"profiles:
- plugins:
    score:
      enabled:
      - name: ImageLocality
        weight: 1
        foo: 2
"##,
        &[r##"strict decoding error: unknown field "profiles[0].plugins.score.enabled[0].foo""##],
    ),
    (
        "unk2",
        r##"profiles:
- pluginConfig:
  - name: InterPodAffinity
    args: {foo: 2, bar: 3}
  - name: DefaultPreemption
    args: {baz: 1}
parallelism: 0
"##,
        &[
            r##"strict decoding error: decoding .profiles[0].pluginConfig[0]: strict decoding error: decoding args for plugin InterPodAffinity: strict decoding error: unknown field "foo""##,
            r##"strict decoding error: decoding .profiles[0].pluginConfig[0]: strict decoding error: decoding args for plugin InterPodAffinity: strict decoding error: unknown field "bar""##,
            r##"strict decoding error: decoding .profiles[0].pluginConfig[1]: strict decoding error: decoding args for plugin DefaultPreemption: strict decoding error: unknown field "baz""##,
        ],
    ),
    (
        "unkfit",
        r##"profiles:
- pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated, foo: 1}}
"##,
        &[
            r##"strict decoding error: decoding .profiles[0].pluginConfig[0]: strict decoding error: decoding args for plugin NodeResourcesFit: strict decoding error: unknown field "scoringStrategy.foo""##,
        ],
    ),
    (
        "unkprof",
        r##"profiles:
- foo: 1
  pluginConfig:
  - name: InterPodAffinity
    args: {foo: 2}
"##,
        &[
            r##"strict decoding error: unknown field "profiles[0].foo""##,
            r##"strict decoding error: decoding .profiles[0].pluginConfig[0]: strict decoding error: decoding args for plugin InterPodAffinity: strict decoding error: unknown field "foo""##,
        ],
    ),
    (
        "fitkeys",
        r##"profiles:
- pluginConfig:
  - name: NodeResourcesFit
    args:
      ignoredResources: ["a/b/c", "/x"]
      ignoredResourceGroups: [""]
"##,
        &[
            r##"initializing profiles: creating profile for scheduler name default-scheduler: initializing plugin "NodeResourcesFit": [ignoredResources[0]: Invalid value: "a/b/c": a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName'), ignoredResources[1]: Invalid value: "/x": prefix part must be non-empty, ignoredResourceGroups[0]: Invalid value: "": name part must be non-empty, ignoredResourceGroups[0]: Invalid value: "": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')]"##,
        ],
    ),
    (
        "ilargs",
        r##"profiles:
- pluginConfig:
  - name: ImageLocality
    args: {a: 1}
"##,
        &[],
    ),
    (
        "keys",
        r##"profiles:
- pluginConfig:
  - name: NodeAffinity
    args:
      addedAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions: [{key: "a/b/c", operator: Exists, values: [x]}, {key: "/b", operator: Gt, values: [x, "1"]}, {key: "Ex.com/b", operator: Lt}]
            matchFields: [{key: metadata.name, operator: In, values: [a, b]}, {key: metadata.name, operator: Exists}]
          - matchExpressions: [{key: k, operator: In, values: ["bad value!"]}]
        preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 0
          preference:
            matchExpressions: [{key: "a b", operator: Exists}]
"##,
        &[
            r##"profiles[0].pluginConfig[0].args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key: Invalid value: "a/b/c": a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"##,
            r##"profiles[0].pluginConfig[0].args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values: Invalid value: ["x"]: values set must be empty for exists and does not exist"##,
            r##"profiles[0].pluginConfig[0].args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[1].key: Invalid value: "/b": prefix part must be non-empty"##,
            r##"profiles[0].pluginConfig[0].args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[1].values: Invalid value: ["x","1"]: for 'Gt', 'Lt' operators, exactly one value is required"##,
            r##"profiles[0].pluginConfig[0].args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[1].values[0]: Invalid value: "x": for 'Gt', 'Lt' operators, the value must be an integer"##,
            r##"profiles[0].pluginConfig[0].args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[2].key: Invalid value: "Ex.com/b": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"##,
            r##"profiles[0].pluginConfig[0].args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[2].values: Invalid value: null: for 'Gt', 'Lt' operators, exactly one value is required"##,
            r##"profiles[0].pluginConfig[0].args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].values: Invalid value: ["a","b"]: must have one element"##,
            r##"profiles[0].pluginConfig[0].args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[1].operator: Unsupported value: "Exists": supported values: "In", "NotIn""##,
            r##"profiles[0].pluginConfig[0].args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[1].matchExpressions[0].values[0][k]: Invalid value: "bad value!": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"##,
        ],
    ),
    (
        "qs2",
        r##"profiles:
- plugins:
    queueSort:
      enabled:
      - name: PrioritySort
- schedulerName: b
"##,
        &[
            r##"profiles[0].schedulerName: Required value"##,
            r##"profiles[1].plugins.queueSort: Invalid value: {"Enabled":null,"Disabled":null}: must be the same for all profiles"##,
        ],
    ),
    (
        "twoerr",
        r##"profiles:
- plugins:
    preFilter:
      enabled:
      - name: ImageLocality
    multiPoint:
      enabled:
      - name: Foo
"##,
        &[
            r##"initializing profiles: creating profile for scheduler name default-scheduler: plugin "ImageLocality" does not extend PreFilterPlugin plugin"##,
        ],
    ),
    (
        "huge",
        r##"profiles:
- plugins:
    score:
      enabled:
      - name: ImageLocality
        weight: 2147483647
      - name: TaintToleration
        weight: 2147483647
"##,
        &[],
    ),
    (
        "negdisabled",
        r##"profiles:
- plugins:
    score:
      disabled:
      - name: ImageLocality
      enabled:
      - name: ImageLocality
        weight: -2
"##,
        &[
            r##"initializing profiles: creating profile for scheduler name default-scheduler: score plugins: total score of Score plugins could overflow"##,
        ],
    ),
    (
        "negfilter",
        r##"profiles:
- plugins:
    filter:
      enabled:
      - name: NodeName
        weight: -1
"##,
        &[],
    ),
    (
        "negtt",
        r##"profiles:
- plugins:
    score:
      enabled:
      - name: TaintToleration
        weight: -1
"##,
        &[
            r##"initializing profiles: creating profile for scheduler name default-scheduler: score plugins: total score of Score plugins could overflow"##,
        ],
    ),
    (
        "extenders",
        r##"extenders:
- urlPrefix: http://x
  prioritizeVerb: p
  weight: 0
"##,
        &[r##"extenders[0].weight: Invalid value: 0: must have a positive weight applied to it"##],
    ),
    (
        "extenders-all-rules",
        r##"extenders:
- urlPrefix: http://x
  prioritizeVerb: p
  weight: 0
- urlPrefix: http://y
  bindVerb: b
  managedResources: [{name: "example.com/a"}, {name: cpu}, {name: "a b"}, {name: "example.com/a"}]
- urlPrefix: http://z
  bindVerb: c
"##,
        &[
            r##"extenders[0].weight: Invalid value: 0: must have a positive weight applied to it"##,
            r##"extenders[1].managedResources[1].name: Invalid value: "cpu": is an invalid extended resource name"##,
            r##"extenders[1].managedResources[2].name: Invalid value: "a b": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"##,
            r##"extenders[1].managedResources[3].name: Invalid value: "example.com/a": duplicate extender managed resource name"##,
            r##"extenders: Invalid value: "found 2 extenders implementing bind": only one extender can implement bind"##,
        ],
    ),
    (
        "extenders-strict",
        r##"extenders:
- urlPrefix: http://x
  foo: 1
"##,
        &[r##"strict decoding error: unknown field "extenders[0].foo""##],
    ),
    (
        "extenders-valid",
        r##"extenders:
- urlPrefix: http://x
  filterVerb: f
  weight: 3
  managedResources: [{name: "example.com/gpu", ignoredByScheduler: true}]
"##,
        &[],
    ),
    (
        "dynamic-resources-timeouts",
        r##"profiles:
- pluginConfig:
  - name: DynamicResources
    args: {filterTimeout: -1s, bindingTimeout: 500ms}
"##,
        &[
            r##"profiles[0].pluginConfig[0].args.filterTimeout: Invalid value: "-1s": must be zero or positive"##,
            r##"profiles[0].pluginConfig[0].args.bindingTimeout: Invalid value: "500ms": must be at least 1 second"##,
        ],
    ),
    (
        "dynamic-resources-valid",
        r##"profiles:
- pluginConfig:
  - name: DynamicResources
    args: {filterTimeout: 5s}
"##,
        &[],
    ),
    (
        "dynamic-resources-bad-duration",
        r##"profiles:
- pluginConfig:
  - name: DynamicResources
    args: {filterTimeout: abc}
"##,
        &[
            r##"decoding .profiles[0].pluginConfig[0]: decoding args for plugin DynamicResources: time: invalid duration "abc""##,
        ],
    ),
];

#[test]
fn every_rule_as_kube_scheduler_words_it() {
    for (row, body, want) in ROWS {
        let got = match parse("c.yaml", &format!("{HEAD}{body}")) {
            Ok(_) => Vec::new(),
            Err(e) => e.0,
        };
        let messages: Vec<&str> = got.iter().map(|e| e.message.as_str()).collect();
        assert_eq!(&messages, want, "row {row}");
        for e in &got {
            assert!(
                e.line >= 3 && e.column >= 1,
                "row {row}: {e} does not point into the file"
            );
        }
    }
}
