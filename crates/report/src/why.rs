//! `why`'s report value: the engine's explanation of one pod and the context
//! the renderers word it with (what could not be read, where the world came
//! from). Text, JSON and HTML all render this one value.

use podplace_explain::Explanation;

/// Where the world `why` explains in came from, which says what its
/// FailedScheduling message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `-f` files: the message is podplace's own, computed from them (files
    /// hold no Event for the pod).
    Files,
    /// A live cluster: the message is the one kube-scheduler gives there
    /// (checked word for word by the live suite).
    Cluster,
}

/// `podplace why`'s answer, as every renderer takes it: the explanation is
/// the engine's (podplace-explain), the rest is what the command line knows
/// about how the world was read.
#[derive(Debug, Clone, Copy)]
pub struct WhyAnswer<'a> {
    /// The pod's explanation: phase, every node's reasons, scores, fixes.
    pub explanation: &'a Explanation,
    /// What could not be read from a live cluster (the answer may be
    /// incomplete); empty with files.
    pub unreadable: &'a [String],
    /// Files or a live cluster.
    pub source: Source,
}

/// The unit a resource's quantities are counted in, as JSON names it and
/// text formats it (`cpu` in millicores, memory in bytes).
pub(crate) fn unit(resource: &str) -> &'static str {
    match resource {
        "cpu" => "millicores",
        "pods" => "pods",
        "memory" | "ephemeral-storage" => "bytes",
        r if r.starts_with("hugepages-") => "bytes",
        _ => "units",
    }
}
