//! Every limit podplace holds what it reads to, in one table: input files,
//! API responses, list pagination and request timeouts, with their defaults
//! and the flags that change them.
//!
//! Each default sits above the largest input podplace supports: a snapshot
//! of 5,000 nodes and 150,000 pods (Kubernetes' published scalability
//! limits), about 1.2 GB of JSON as `kubectl get -o json` writes it (1.1 GB
//! as `podplace-bench` generates it). A limit is there so that hostile or
//! broken input (`-f /dev/zero`, an API server streaming an endless body,
//! one that never answers or repeats a `continue` token) ends with an error
//! naming the file or the server, instead of running out of memory or
//! hanging.
//!
//! The loader applies the input limits ([`LoadOptions`](super::LoadOptions));
//! `podplace-kube` applies the API ones.

use std::fmt;
use std::time::Duration;

/// One GiB.
const GIB: u64 = 1 << 30;

/// Largest file (or standard input) the loader reads, per file: 2 GiB,
/// above the ~1.2 GB JSON of the largest supported snapshot.
pub const MAX_INPUT_BYTES: u64 = 2 * GIB;
/// How long opening a FIFO (named pipe) given with `-f` may take: opening
/// one blocks until something opens it for writing.
pub const FIFO_OPEN_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest API response body read: 2 GiB, above the ~1.2 GB of a whole
/// 5,000-node / 150,000-pod cluster in one unpaginated list
/// (`--page-size 0`). With the default page size a page is a few MB.
pub const MAX_RESPONSE_BYTES: u64 = 2 * GIB;
/// Longest one API request may take, from sending it to the last byte of
/// its answer (kubectl's `--request-timeout`; kubectl waits forever by
/// default). Each page of a list is one request.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// Longest a TCP (and TLS) connection to the API server may take to open,
/// never more than the request timeout.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest an answer may go without a byte once it started, never more
/// than the request timeout.
pub const READ_IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// Most objects one list may return over all its pages: over six times a
/// 150,000-pod cluster's pods. A server handing out new `continue` tokens
/// forever is stopped here (a repeated token is stopped at once).
pub const MAX_LIST_OBJECTS: u64 = 1_000_000;
/// Fewest pages a list may take before it is stopped: a list may take
/// `max(MIN_LIST_PAGES, 2 × MAX_LIST_OBJECTS / page size)` pages (4,000
/// at the default page size of 500), so that short pages still fit.
pub const MIN_LIST_PAGES: u64 = 1_000;
/// Deepest YAML nesting the loader parses (real manifests stay far below).
pub const MAX_YAML_DEPTH: usize = 200;
/// Deepest JSON nesting the loader parses (serde_json's recursion limit).
pub const MAX_JSON_DEPTH: usize = 128;
/// Most YAML alias replays (events) in one document stream: a "billion
/// laughs" document is refused.
pub const MAX_YAML_ALIAS_EVENTS: usize = 200_000;

/// Longest duration a scenario or a descheduler policy may write (`wait:`,
/// `readyAfter:`, a drain's `timeout:`): 366 days in seconds, a simulated
/// year. Longer is an error naming the file, line and column, so that a
/// typo cannot saturate the simulated clock.
pub const MAX_DURATION_SECONDS: i64 = 366 * 86_400;

/// The most pages a list of `page_size` objects per page may take before
/// it is stopped (see [`MIN_LIST_PAGES`]); `page_size` 0 (one unpaginated
/// request) allows [`MIN_LIST_PAGES`] too.
pub fn max_list_pages(page_size: u32) -> u64 {
    if page_size == 0 {
        return MIN_LIST_PAGES;
    }
    (2 * MAX_LIST_OBJECTS)
        .div_ceil(u64::from(page_size))
        .max(MIN_LIST_PAGES)
}

/// One row of [`TABLE`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    /// What is limited.
    pub what: &'static str,
    /// The default, as a user would write it.
    pub default: &'static str,
    /// The flag that changes it, if one does.
    pub flag: Option<&'static str>,
}

/// Every limit, for documentation (the README's table) and tests that
/// check the two agree.
pub const TABLE: &[Limit] = &[
    Limit {
        what: "size of one input file or standard input (`-f`)",
        default: "2Gi",
        flag: Some("--max-input-size"),
    },
    Limit {
        what: "opening a FIFO given with `-f` (it blocks until a writer opens it)",
        default: "10s",
        flag: None,
    },
    Limit {
        what: "YAML nesting depth",
        default: "200",
        flag: None,
    },
    Limit {
        what: "JSON nesting depth",
        default: "128",
        flag: None,
    },
    Limit {
        what: "YAML alias expansion (events replayed)",
        default: "200000",
        flag: None,
    },
    Limit {
        what:
            "a duration in a scenario (`wait`, `readyAfter`, a drain's `timeout` and `gracePeriod`)",
        default: "366d",
        flag: None,
    },
    Limit {
        what: "one API request, first byte sent to last byte read (each list page is one)",
        default: "60s",
        flag: Some("--request-timeout"),
    },
    Limit {
        what: "opening a connection to the API server",
        default: "10s (at most the request timeout)",
        flag: None,
    },
    Limit {
        what: "an API answer going without a byte",
        default: "30s (at most the request timeout)",
        flag: None,
    },
    Limit {
        what: "size of one API response body",
        default: "2Gi",
        flag: Some("--max-response-size"),
    },
    Limit {
        what: "objects in one list, over all its pages",
        default: "1000000",
        flag: None,
    },
    Limit {
        what: "pages of one list (a repeated `continue` token stops it at once)",
        default: "max(1000, 2000000 / --page-size)",
        flag: None,
    },
];

/// A byte size that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid size {text:?}: expected bytes, or a number with a suffix Ki, Mi, Gi, Ti (powers of 1024) or k, M, G, T (powers of 1000), e.g. 4Gi"
)]
pub struct SizeError {
    /// The text given.
    pub text: String,
}

/// Reads a byte size as Kubernetes quantities write it (`4Gi`, `500M`,
/// `1048576`): a whole number with an optional binary or decimal suffix.
pub fn parse_size(text: &str) -> Result<u64, SizeError> {
    let err = || SizeError {
        text: text.to_string(),
    };
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    if digits == 0 {
        return Err(err());
    }
    let number: u64 = t[..digits].parse().map_err(|_| err())?;
    let factor: u64 = match &t[digits..] {
        "" => 1,
        "k" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        "T" => 1_000_000_000_000,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        "Ti" => 1 << 40,
        _ => return Err(err()),
    };
    number.checked_mul(factor).ok_or_else(err)
}

/// A byte count for messages: `2 GiB`, `512 MiB`, `1000 bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bytes(pub u64);

impl Bytes {
    /// `2 GiB (2147483648 bytes)`, or `1000 bytes` when that is all.
    pub fn with_exact(self) -> String {
        let short = self.to_string();
        if short.ends_with(" bytes") {
            short
        } else {
            format!("{short} ({} bytes)", self.0)
        }
    }
}

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        for (unit, size) in [
            ("TiB", 1u64 << 40),
            ("GiB", 1 << 30),
            ("MiB", 1 << 20),
            ("KiB", 1 << 10),
        ] {
            if n >= size && n.is_multiple_of(size) {
                return write!(f, "{} {unit}", n / size);
            }
        }
        write!(f, "{n} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_quantities() {
        let table = [
            ("0", 0),
            ("1048576", 1 << 20),
            ("4Gi", 4 << 30),
            ("512Mi", 512 << 20),
            ("3k", 3_000),
            ("2G", 2_000_000_000),
            ("1Ti", 1 << 40),
        ];
        for (text, want) in table {
            assert_eq!(parse_size(text), Ok(want), "{text}");
        }
        for bad in ["", "Gi", "-1", "1.5Gi", "4GB", "4 Gi", "99999999999999Ti"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_table_agrees_with_the_constants() {
        let default = |flag: &str| {
            TABLE
                .iter()
                .find(|l| l.flag == Some(flag))
                .map(|l| l.default)
                .unwrap()
        };
        assert_eq!(parse_size(default("--max-input-size")), Ok(MAX_INPUT_BYTES));
        assert_eq!(
            parse_size(default("--max-response-size")),
            Ok(MAX_RESPONSE_BYTES)
        );
        assert_eq!(
            default("--request-timeout"),
            format!("{}s", REQUEST_TIMEOUT.as_secs())
        );
        // Above the largest supported snapshot (~1.2 GB of JSON).
        const {
            assert!(MAX_INPUT_BYTES > 1_200_000_000 && MAX_RESPONSE_BYTES > 1_200_000_000);
            assert!(
                CONNECT_TIMEOUT.as_secs() <= REQUEST_TIMEOUT.as_secs()
                    && READ_IDLE_TIMEOUT.as_secs() <= REQUEST_TIMEOUT.as_secs()
            );
        }
        let duration = TABLE
            .iter()
            .find(|l| l.what.starts_with("a duration"))
            .map(|l| l.default)
            .unwrap();
        assert_eq!(duration, format!("{}d", MAX_DURATION_SECONDS / 86_400));
        assert_eq!(max_list_pages(500), 4_000);
        assert_eq!(max_list_pages(0), MIN_LIST_PAGES);
        assert_eq!(max_list_pages(1), 2_000_000);
        assert_eq!(max_list_pages(u32::MAX), MIN_LIST_PAGES);
        // 150,000 pods fit at any page size.
        for page in [1, 7, 500, 5_000] {
            assert!(max_list_pages(page) * u64::from(page) >= 150_000, "{page}");
        }
    }

    #[test]
    fn byte_counts_read_as_binary_units() {
        assert_eq!(Bytes(2 << 30).to_string(), "2 GiB");
        assert_eq!(Bytes(1536).to_string(), "1536 bytes");
        assert_eq!(Bytes(3 << 10).to_string(), "3 KiB");
        assert_eq!(Bytes(1000).to_string(), "1000 bytes");
        assert_eq!(Bytes(1000).with_exact(), "1000 bytes");
        assert_eq!(Bytes(1 << 20).with_exact(), "1 MiB (1048576 bytes)");
    }
}
