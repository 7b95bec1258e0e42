//! The four lists an inter-pod affinity term can be in: required or
//! preferred, affinity or anti-affinity. The engine's symmetric checks,
//! `why` and `lint` all name terms by this one kind.

use std::fmt;

/// Which list of `spec.affinity` an inter-pod term is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TermKind {
    /// `podAffinity.requiredDuringSchedulingIgnoredDuringExecution`.
    RequiredAffinity,
    /// `podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution`.
    RequiredAntiAffinity,
    /// `podAffinity.preferredDuringSchedulingIgnoredDuringExecution`.
    PreferredAffinity,
    /// `podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution`.
    PreferredAntiAffinity,
}

impl TermKind {
    /// The four kinds, required first.
    pub const ALL: [TermKind; 4] = [
        TermKind::RequiredAffinity,
        TermKind::RequiredAntiAffinity,
        TermKind::PreferredAffinity,
        TermKind::PreferredAntiAffinity,
    ];

    /// The kind from its two properties.
    pub fn new(required: bool, anti: bool) -> TermKind {
        match (required, anti) {
            (true, false) => TermKind::RequiredAffinity,
            (true, true) => TermKind::RequiredAntiAffinity,
            (false, false) => TermKind::PreferredAffinity,
            (false, true) => TermKind::PreferredAntiAffinity,
        }
    }

    /// Whether the term filters (required) rather than scores (preferred).
    pub fn is_required(self) -> bool {
        matches!(
            self,
            TermKind::RequiredAffinity | TermKind::RequiredAntiAffinity
        )
    }

    /// Whether it is an anti-affinity term.
    pub fn is_anti(self) -> bool {
        matches!(
            self,
            TermKind::RequiredAntiAffinity | TermKind::PreferredAntiAffinity
        )
    }

    /// The field of `spec.affinity` it is under: `podAffinity` or `podAntiAffinity`.
    pub fn affinity_field(self) -> &'static str {
        if self.is_anti() {
            "podAntiAffinity"
        } else {
            "podAffinity"
        }
    }

    /// The field of its list under [`TermKind::affinity_field`].
    pub fn list_field(self) -> &'static str {
        if self.is_required() {
            "requiredDuringSchedulingIgnoredDuringExecution"
        } else {
            "preferredDuringSchedulingIgnoredDuringExecution"
        }
    }

    /// The path of its list inside `spec.affinity`
    /// (`podAffinity.requiredDuringSchedulingIgnoredDuringExecution`).
    pub fn path(self) -> &'static str {
        match self {
            TermKind::RequiredAffinity => {
                "podAffinity.requiredDuringSchedulingIgnoredDuringExecution"
            }
            TermKind::RequiredAntiAffinity => {
                "podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution"
            }
            TermKind::PreferredAffinity => {
                "podAffinity.preferredDuringSchedulingIgnoredDuringExecution"
            }
            TermKind::PreferredAntiAffinity => {
                "podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution"
            }
        }
    }

    /// A short name: `podAffinity` / `podAntiAffinity`, with `(preferred)`
    /// for soft rules.
    pub fn short(self) -> &'static str {
        match self {
            TermKind::RequiredAffinity => "podAffinity",
            TermKind::RequiredAntiAffinity => "podAntiAffinity",
            TermKind::PreferredAffinity => "podAffinity (preferred)",
            TermKind::PreferredAntiAffinity => "podAntiAffinity (preferred)",
        }
    }

    /// How the term is named in sentences (`required pod anti-affinity`).
    pub fn describe(self) -> &'static str {
        match self {
            TermKind::RequiredAffinity => "required pod affinity",
            TermKind::RequiredAntiAffinity => "required pod anti-affinity",
            TermKind::PreferredAffinity => "preferred pod affinity",
            TermKind::PreferredAntiAffinity => "preferred pod anti-affinity",
        }
    }
}

impl fmt::Display for TermKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.describe())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_agree_with_their_paths() {
        for k in TermKind::ALL {
            assert_eq!(TermKind::new(k.is_required(), k.is_anti()), k);
            assert_eq!(
                k.path(),
                format!("{}.{}", k.affinity_field(), k.list_field())
            );
            assert!(k.short().starts_with(k.affinity_field()));
            assert_eq!(k.short().ends_with("(preferred)"), !k.is_required());
            assert_eq!(k.describe().contains("anti"), k.is_anti());
        }
    }
}
