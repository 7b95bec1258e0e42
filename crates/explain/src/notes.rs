//! Rules that did not constrain anything, and other things worth knowing:
//! the first-pod-of-a-group exception of required pod affinity (story 3),
//! terms that match no pod anywhere, selectors every node satisfies,
//! preemption, ties.

use podplace_engine::Outcome;
use podplace_model::selector::Requirement;

use crate::analyze::{requirement_key, Analyzer, Prepared};
use crate::model::{Detail, NodeVerdict, Note, NoteKind, TermKind};

/// Whether a selector only says which labels pods must *not* have.
pub(crate) fn only_negative(requirements: &[Requirement]) -> bool {
    !requirements.is_empty()
        && requirements
            .iter()
            .all(|r| matches!(r, Requirement::NotIn(..) | Requirement::DoesNotExist(..)))
}

/// The notes for one pod.
pub(crate) fn notes(
    analyzer: &mut Analyzer<'_>,
    prepared: &Prepared,
    verdicts: &[NodeVerdict],
    outcome: &Outcome,
    placed: bool,
) -> Vec<Note> {
    let mut out = Vec::new();
    let pod = analyzer.pod;
    let affinity_rejected = verdicts.iter().any(|v| {
        v.reasons
            .iter()
            .any(|r| matches!(r.detail, Detail::PodAffinity { .. }))
    });
    if let Some(state) = &prepared.ipa {
        let terms = &pod.affinity.required_affinity;
        if !terms.is_empty() && state.affinity.is_empty() {
            for (i, term) in terms.iter().enumerate() {
                let Some(view) = analyzer.incoming_term(TermKind::RequiredAffinity, i) else {
                    continue;
                };
                let negative = only_negative(term.selector.requirements());
                let mut text = String::new();
                if state.matches_own_affinity {
                    text.push_str(
                        "The podAffinity term matches no pod in any domain; the pod was allowed \
                         because it matches its own term (first pod of a group), so this rule \
                         does not constrain placement.",
                    );
                    if let Some(chosen) = outcome.chosen {
                        text.push_str(&format!(
                            " {} of {} nodes pass every filter, and {} wins on score alone.",
                            outcome.feasible.len(),
                            analyzer.cluster.nodes().len(),
                            analyzer.cluster.node(chosen).name
                        ));
                    }
                    if negative {
                        text.push_str(
                            " Its selector only names labels pods must NOT have: podAffinity \
                             asks for a domain that already holds such a pod, it does not keep \
                             the pod away from labelled pods. To stay away from them, use \
                             podAntiAffinity with Exists/In (see the fix).",
                        );
                    }
                    out.push(Note {
                        kind: NoteKind::FirstPodOfGroup,
                        term: Some(view),
                        text,
                    });
                } else {
                    text.push_str(
                        "No pod matches the podAffinity term(s) in any domain and the pod does \
                         not match them itself, so no node can satisfy this rule until a \
                         matching pod runs.",
                    );
                    out.push(Note {
                        kind: NoteKind::AffinityUnsatisfiable,
                        term: Some(view),
                        text,
                    });
                }
            }
        } else if !terms.is_empty() && !affinity_rejected {
            out.push(Note {
                kind: NoteKind::ConstrainsNothing,
                term: analyzer.incoming_term(TermKind::RequiredAffinity, 0),
                text: "Every node's domain holds a pod matching the podAffinity terms: the rule \
                       rejected no node."
                    .to_string(),
            });
        }
    }
    for (i, &(anywhere, own)) in prepared.anti_anywhere.iter().enumerate() {
        if anywhere == 0 && !own {
            out.push(Note {
                kind: NoteKind::ConstrainsNothing,
                term: analyzer.incoming_term(TermKind::RequiredAntiAffinity, i),
                text: "The podAntiAffinity term matches no pod in any domain (and not the pod \
                       itself): it keeps the pod off no node."
                    .to_string(),
            });
        }
    }
    let preferred = [
        (
            TermKind::PreferredAffinity,
            &prepared.preferred_affinity_anywhere,
            "podAffinity",
        ),
        (
            TermKind::PreferredAntiAffinity,
            &prepared.preferred_anti_anywhere,
            "podAntiAffinity",
        ),
    ];
    for (kind, counts, name) in preferred {
        for (i, &anywhere) in counts.iter().enumerate() {
            if anywhere == 0 {
                out.push(Note {
                    kind: NoteKind::ConstrainsNothing,
                    term: analyzer.incoming_term(kind, i),
                    text: format!(
                        "The preferred {name} term matches no pod in any domain: it changed no \
                         node's score."
                    ),
                });
            }
        }
    }
    // The standard `kubernetes.io/os: linux` (or arch) selector matches
    // every node of a Linux cluster by design: not worth a note.
    let interner = analyzer.cluster.interner();
    let only_kubelet_keys = pod.required_node_affinity.is_none()
        && pod.node_selector.iter().all(|r| {
            let key = interner.resolve(requirement_key(r));
            KUBELET_PLATFORM_LABELS.contains(&key)
        });
    let has_node_rules = (!pod.node_selector.is_empty() || pod.required_node_affinity.is_some())
        && !only_kubelet_keys;
    let node_rejected = verdicts.iter().any(|v| {
        v.reasons
            .iter()
            .any(|r| matches!(r.detail, Detail::NodeAffinity { .. }))
    });
    if has_node_rules && !node_rejected && analyzer.cluster.nodes().len() > 1 {
        out.push(Note {
            kind: NoteKind::ConstrainsNothing,
            term: None,
            text: "The nodeSelector / required node affinity matches every node: it rejected none."
                .to_string(),
        });
    }
    if let Some(p) = &outcome.preemption {
        if let Some(c) = p.candidates.first() {
            let cluster = analyzer.cluster;
            let victims: Vec<String> = c
                .victims
                .iter()
                .take(5)
                .map(|&v| analyzer.base.pod_name(v))
                .collect();
            out.push(Note {
                kind: NoteKind::Preemption,
                term: None,
                text: format!(
                    "kube-scheduler would preempt: evicting {} lower-priority pod(s) on {} makes \
                     room ({}{}).",
                    c.victims.len(),
                    cluster.node(c.node).name,
                    victims.join(", "),
                    if c.victims.len() > 5 { ", ..." } else { "" }
                ),
            });
        }
    }
    if placed && outcome.best.len() > 1 {
        out.push(Note {
            kind: NoteKind::Info,
            term: None,
            text: format!(
                "{} nodes tie for the best score; kube-scheduler picks one of them at random \
                 (podplace picks one reproducibly with --seed).",
                outcome.best.len()
            ),
        });
    }
    out
}

/// Node labels every kubelet sets about the platform; a selector on them
/// alone is the standard one that matches every node of its platform.
const KUBELET_PLATFORM_LABELS: [&str; 4] = [
    "kubernetes.io/os",
    "kubernetes.io/arch",
    "beta.kubernetes.io/os",
    "beta.kubernetes.io/arch",
];
