//! The one-line note of a `PodplaceWhy` Event and the key of its cause.
//!
//! The note says what `podplace why` says first, in the words of its
//! Pending summary ([`main_cause`]): the plugin, the reason, the blocking
//! workload with whose rule it is and on how many nodes; then the first
//! verified fix and the node the pod lands on with it; then the scheduler
//! profile the explanation assumed. Each part is cut at a clause to a
//! share of the API's 1 KB, so the whole always fits and the fix and the
//! profile are never the part cut away.

use podplace_explain::Explanation;
use podplace_kube::events::{cut_note, NOTE_LIMIT};
use podplace_report::text::why::cause::main_cause;

/// Bytes of the note the cause may take.
const CAUSE_BYTES: usize = 560;
/// Bytes the fix's title may take.
const FIX_BYTES: usize = 300;

/// What a note is made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteParts {
    /// `ns/name` of the pod.
    pub pod: String,
    /// The Filter plugin of the main cause (`InterPodAffinity`); empty
    /// when the explanation names none.
    pub plugin: String,
    /// The main cause, as `why`'s Pending summary words it.
    pub cause: String,
    /// The first verified fix: its title, its target and the node the pod
    /// lands on with it.
    pub fix: Option<(String, String, String)>,
    /// The scheduler profile the explanation assumed.
    pub profile: String,
}

impl NoteParts {
    /// The parts of explanation `e`, computed with `profile`.
    pub fn of(e: &Explanation, profile: &str) -> NoteParts {
        let (plugin, cause) = main_cause(e);
        NoteParts {
            pod: e.pod.clone(),
            plugin,
            cause,
            fix: e
                .fixes
                .first()
                .map(|f| (f.title.clone(), f.target.clone(), f.lands_on.clone())),
            profile: profile.to_string(),
        }
    }
}

/// The Event's note: one line, at most [`NOTE_LIMIT`] bytes.
pub fn note(p: &NoteParts) -> String {
    let cause = one_line(&p.cause);
    let cause = cut_note(&cause, CAUSE_BYTES);
    let head = if p.plugin.is_empty() {
        cause
    } else {
        format!("{}: {cause}", p.plugin)
    };
    let fix = match &p.fix {
        Some((title, _, node)) => {
            let title = cut_note(&one_line(title), FIX_BYTES);
            format!("Verified fix: {title}; the pod then lands on {node}.")
        }
        None => "No verified fix found.".to_string(),
    };
    let tail = format!(
        "Assumed scheduler profile {}; podplace why {} shows every reason.",
        p.profile, p.pod
    );
    cut_note(&format!("{head}. {fix} {tail}"), NOTE_LIMIT)
}

/// What makes two explanations the same cause: the plugin, the cause's
/// words and the fix (target and title), with every number blanked out
/// (a node count that moves is the same cause, a different blocker or
/// fix is not). The node the fix lands on is left out for the same reason.
pub fn cause_key(p: &NoteParts) -> String {
    let (fix_title, fix_target) = p
        .fix
        .as_ref()
        .map(|(t, target, _)| (t.as_str(), target.as_str()))
        .unwrap_or_default();
    [
        p.profile.as_str(),
        p.plugin.as_str(),
        &blank_numbers(&p.cause),
        fix_target,
        &blank_numbers(fix_title),
    ]
    .join("|")
}

/// Every run of ASCII digits as `#`.
fn blank_numbers(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_number = false;
    for c in s.chars() {
        if c.is_ascii_digit() {
            if !in_number {
                out.push('#');
            }
            in_number = true;
        } else {
            out.push(c);
            in_number = false;
        }
    }
    out
}

/// Whitespace runs (newlines included) as one space: an Event's note is
/// one line.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(cause: &str, fix: Option<(&str, &str)>) -> NoteParts {
        NoteParts {
            pod: "stokesnet/vault-2".to_string(),
            plugin: "InterPodAffinity".to_string(),
            cause: cause.to_string(),
            fix: fix.map(|(t, n)| (t.to_string(), "StatefulSet/x/y".to_string(), n.to_string())),
            profile: "default-scheduler".to_string(),
        }
    }

    #[test]
    fn a_moving_node_count_is_the_same_cause_a_new_blocker_is_not() {
        let a = parts(
            "blocked by StatefulSet/a/b on 1 of 4 nodes",
            Some(("Narrow", "leela")),
        );
        let b = parts(
            "blocked by StatefulSet/a/b on 12 of 40 nodes",
            Some(("Narrow", "hermes")),
        );
        let c = parts(
            "blocked by StatefulSet/a/c on 1 of 4 nodes",
            Some(("Narrow", "leela")),
        );
        assert_eq!(cause_key(&a), cause_key(&b));
        assert_ne!(cause_key(&a), cause_key(&c));
        assert_ne!(cause_key(&a), cause_key(&parts(&a.cause, None)));
    }

    #[test]
    fn the_note_always_fits_and_keeps_the_fix_and_the_profile() {
        let long_cause = "blocked by StatefulSet/ns/some-very-long-workload-name (the existing \
                          pod's podAntiAffinity term 1, applied symmetrically), "
            .repeat(30);
        let long_title = "Narrow the selector, keep it apart, ".repeat(30);
        for (cause, title) in [
            ("short cause", "short fix"),
            (long_cause.as_str(), "short fix"),
            ("short", long_title.as_str()),
            (long_cause.as_str(), long_title.as_str()),
        ] {
            let n = note(&parts(cause, Some((title, "leela"))));
            assert!(n.len() <= NOTE_LIMIT, "{}", n.len());
            assert!(!n.contains('\n'));
            assert!(n.contains("lands on leela"), "{n}");
            assert!(
                n.contains("Assumed scheduler profile default-scheduler"),
                "{n}"
            );
        }
    }
}
