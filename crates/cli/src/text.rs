//! Small pieces of text shared by the commands' text output.

/// Most tied node names text output lists: on big clusters hundreds of
/// nodes tie (311 of 5,000 in a real case), and the first few say enough;
/// `-o json` lists them all.
pub const TIED_SHOWN: usize = 5;

/// Tied node names for text: the first [`TIED_SHOWN`], then a count of the
/// rest (`n1, n2, n3, n4, n5 and 306 more`).
pub fn tied_names<S: AsRef<str>>(names: &[S]) -> String {
    let shown: Vec<&str> = names.iter().take(TIED_SHOWN).map(AsRef::as_ref).collect();
    let rest = names.len().saturating_sub(TIED_SHOWN);
    if rest == 0 {
        shown.join(", ")
    } else {
        format!("{} and {} more", shown.join(", "), thousands(rest as u64))
    }
}

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{thousands, tied_names};

    #[test]
    fn tied_names_count_the_rest() {
        let names: Vec<String> = (1..=311).map(|i| format!("n{i}")).collect();
        assert_eq!(tied_names(&names[..1]), "n1");
        assert_eq!(tied_names(&names[..5]), "n1, n2, n3, n4, n5");
        assert_eq!(tied_names(&names[..6]), "n1, n2, n3, n4, n5 and 1 more");
        assert_eq!(tied_names(&names), "n1, n2, n3, n4, n5 and 306 more");
        let many: Vec<String> = (0..1234).map(|i| format!("n{i}")).collect();
        assert!(tied_names(&many).ends_with("and 1,229 more"));
    }

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1_999_999_890), "1,999,999,890");
    }
}
