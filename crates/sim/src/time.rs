//! Simulated time: whole seconds since the scenario started, and the
//! durations scenarios write (`30s`, `10m`, `1h30m`).

use std::fmt;

use serde::{Deserialize, Deserializer};
use thiserror::Error;

/// Why a duration could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DurationError {
    /// Nothing was written.
    #[error("empty duration")]
    Empty,
    /// A negative number of seconds.
    #[error("negative duration {0:?}")]
    Negative(String),
    /// A character that is neither a digit nor a unit.
    #[error("invalid duration {0:?}: expected a number of seconds or units s, m, h, d (e.g. 10m, 1h30m)")]
    BadUnit(String),
    /// A unit with no number before it.
    #[error("invalid duration {0:?}: a unit without a number")]
    UnitWithoutNumber(String),
    /// Digits at the end with no unit after them.
    #[error("invalid duration {0:?}: the last number has no unit")]
    NumberWithoutUnit(String),
    /// Longer than the limit (`podplace_model::load::limits::MAX_DURATION_SECONDS`).
    #[error("duration {0:?} is longer than the limit of 366d (a simulated year)")]
    TooLong(String),
}

/// `Ok` when `seconds` is within the limit on written durations.
fn bounded(text: &str, seconds: i64) -> Result<Duration, DurationError> {
    if seconds > podplace_model::load::limits::MAX_DURATION_SECONDS {
        return Err(DurationError::TooLong(text.to_string()));
    }
    Ok(Duration(seconds))
}

/// A length of simulated time, in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Duration(pub i64);

impl Duration {
    /// Seconds.
    pub fn seconds(self) -> i64 {
        self.0
    }

    /// Parses `90`, `90s`, `10m`, `1h30m`, `2h` (units s, m, h, d).
    pub fn parse(text: &str) -> Result<Duration, DurationError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(DurationError::Empty);
        }
        if let Ok(n) = text.parse::<i64>() {
            return if n < 0 {
                Err(DurationError::Negative(text.to_string()))
            } else {
                bounded(text, n)
            };
        }
        let mut total: i64 = 0;
        let mut number = String::new();
        for c in text.chars() {
            if c.is_ascii_digit() {
                number.push(c);
                continue;
            }
            let unit = match c {
                's' => 1,
                'm' => 60,
                'h' => 3600,
                'd' => 86_400,
                _ => return Err(DurationError::BadUnit(text.to_string())),
            };
            if number.is_empty() {
                return Err(DurationError::UnitWithoutNumber(text.to_string()));
            }
            // More digits than an i64 holds: longer than any limit.
            let n: i64 = number
                .parse()
                .map_err(|_| DurationError::TooLong(text.to_string()))?;
            total = total.saturating_add(n.saturating_mul(unit));
            number.clear();
        }
        if !number.is_empty() {
            return Err(DurationError::NumberWithoutUnit(text.to_string()));
        }
        bounded(text, total)
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = self.0;
        if s == 0 {
            return write!(f, "0s");
        }
        if s < 0 {
            write!(f, "-")?;
            s = -s;
        }
        let (h, m, sec) = (s / 3600, (s % 3600) / 60, s % 60);
        if h > 0 {
            write!(f, "{h}h")?;
        }
        if m > 0 {
            write!(f, "{m}m")?;
        }
        if sec > 0 {
            write!(f, "{sec}s")?;
        }
        Ok(())
    }
}

impl<'de> Deserialize<'de> for Duration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Duration;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a duration such as 30s, 10m or 1h30m, or a number of seconds")
            }
            fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<Duration, E> {
                if n < 0 {
                    return Err(E::custom(format!("negative duration {n}")));
                }
                bounded(&n.to_string(), n).map_err(E::custom)
            }
            fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<Duration, E> {
                let secs = i64::try_from(n).unwrap_or(i64::MAX);
                bounded(&n.to_string(), secs).map_err(E::custom)
            }
            fn visit_i128<E: serde::de::Error>(self, n: i128) -> Result<Duration, E> {
                match i64::try_from(n) {
                    Ok(n) => self.visit_i64(n),
                    Err(_) if n < 0 => Err(E::custom(format!("negative duration {n}"))),
                    Err(_) => Err(E::custom(DurationError::TooLong(n.to_string()))),
                }
            }
            fn visit_u128<E: serde::de::Error>(self, n: u128) -> Result<Duration, E> {
                self.visit_i128(i128::try_from(n).unwrap_or(i128::MAX))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Duration, E> {
                if v < 0.0 {
                    return Err(E::custom(format!("negative duration {v}")));
                }
                if v > podplace_model::load::limits::MAX_DURATION_SECONDS as f64 {
                    return Err(E::custom(DurationError::TooLong(format!("{v}"))));
                }
                if v.fract() != 0.0 || !v.is_finite() {
                    return Err(E::custom(format!(
                        "invalid duration {v}: expected whole seconds or units s, m, h, d (e.g. 10m, 1h30m)"
                    )));
                }
                self.visit_i64(v as i64)
            }
            fn visit_str<E: serde::de::Error>(self, t: &str) -> Result<Duration, E> {
                Duration::parse(t).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

/// A point in simulated time: seconds since the scenario started.
pub type Time = i64;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_durations() {
        for (text, secs, shown) in [
            ("90", 90, "1m30s"),
            ("30s", 30, "30s"),
            ("10m", 600, "10m"),
            ("1h30m", 5400, "1h30m"),
            ("1d", 86_400, "24h"),
            ("0", 0, "0s"),
        ] {
            let d = Duration::parse(text).unwrap();
            assert_eq!(d.seconds(), secs, "{text}");
            assert_eq!(d.to_string(), shown, "{text}");
        }
        for bad in ["", "10x", "m", "10m5", "-3"] {
            assert!(Duration::parse(bad).is_err(), "{bad:?}");
        }
    }
}
