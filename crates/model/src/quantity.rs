//! Kubernetes `resource.Quantity` arithmetic: `500m`, `1Gi`, `1e3`, `0.5`.
//!
//! The scheduler reads CPU as milli-units (`MilliValue`) and everything else
//! as whole units (`Value`), both rounded up; we compute both exactly from the
//! decimal text with 128-bit integers and saturate at `i64::MAX`.

use thiserror::Error;

/// Why a quantity string is not a valid Kubernetes quantity.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
#[error(
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)]
pub struct QuantityError;

/// A parsed quantity: an exact rational `mantissa × 2^bin_exp × 10^dec_exp`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quantity {
    negative: bool,
    mantissa: u128,
    dec_exp: i32,
    bin_exp: u32,
}

impl Quantity {
    /// Parses the text form, accepting exactly what the API server accepts.
    pub fn parse(text: &str) -> Result<Self, QuantityError> {
        let text = text.trim();
        let (negative, rest) = match text.as_bytes().first() {
            Some(b'-') => (true, &text[1..]),
            Some(b'+') => (false, &text[1..]),
            _ => (false, text),
        };
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, suffix) = rest.split_at(num_end);
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return Err(QuantityError);
        }
        let mut mantissa: u128 = 0;
        let mut dec_exp: i32 = 0;
        let mut after_point = false;
        let mut overflowed = false;
        for c in number.bytes() {
            if c == b'.' {
                after_point = true;
                continue;
            }
            let digit = u128::from(c - b'0');
            match mantissa.checked_mul(10).and_then(|m| m.checked_add(digit)) {
                Some(m) if !overflowed => {
                    mantissa = m;
                    if after_point {
                        dec_exp -= 1;
                    }
                }
                _ => {
                    // Too many digits: drop the least significant ones.
                    overflowed = true;
                    if !after_point {
                        dec_exp += 1;
                    }
                }
            }
        }
        let (suffix_dec, bin_exp) = match suffix {
            "" => (0, 0),
            "n" => (-9, 0),
            "u" => (-6, 0),
            "m" => (-3, 0),
            "k" => (3, 0),
            "M" => (6, 0),
            "G" => (9, 0),
            "T" => (12, 0),
            "P" => (15, 0),
            "E" => (18, 0),
            "Ki" => (0, 10),
            "Mi" => (0, 20),
            "Gi" => (0, 30),
            "Ti" => (0, 40),
            "Pi" => (0, 50),
            "Ei" => (0, 60),
            s if s.starts_with(['e', 'E']) => {
                let exp = &s[1..];
                let digits = exp.strip_prefix(['+', '-']).unwrap_or(exp);
                if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(QuantityError);
                }
                (exp.parse::<i32>().map_err(|_| QuantityError)?, 0)
            }
            _ => return Err(QuantityError),
        };
        Ok(Quantity {
            negative,
            mantissa,
            dec_exp: dec_exp.saturating_add(suffix_dec),
            bin_exp,
        })
    }

    /// The value scaled by `10^scale`, rounded up (towards +infinity), saturated.
    fn scaled_ceil(&self, scale: i32) -> i64 {
        if self.mantissa == 0 {
            return 0;
        }
        let mut value = self.mantissa;
        let mut saturated = false;
        for _ in 0..self.bin_exp {
            match value.checked_mul(2) {
                Some(v) => value = v,
                None => saturated = true,
            }
        }
        let exp = self.dec_exp.saturating_add(scale);
        let mut inexact = false;
        if exp >= 0 {
            for _ in 0..exp.min(60) {
                match value.checked_mul(10) {
                    Some(v) => value = v,
                    None => {
                        saturated = true;
                        break;
                    }
                }
            }
        } else {
            for _ in 0..(-exp).min(60) {
                if !value.is_multiple_of(10) {
                    inexact = true;
                }
                value /= 10;
            }
            if -exp > 60 {
                inexact = true;
                value = 0;
            }
        }
        if saturated || value > i64::MAX as u128 {
            return if self.negative { i64::MIN } else { i64::MAX };
        }
        let v = value as i64;
        match (self.negative, inexact) {
            (false, true) => v.saturating_add(1),
            (true, _) => -v,
            (false, false) => v,
        }
    }

    /// `MilliValue()`: the value in thousandths, rounded up.
    pub fn milli_value(&self) -> i64 {
        self.scaled_ceil(3)
    }

    /// `Value()`: the value in whole units, rounded up.
    pub fn value(&self) -> i64 {
        self.scaled_ceil(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_like_the_api_server() {
        let cases: &[(&str, i64, i64)] = &[
            ("500m", 500, 1),
            ("1", 1000, 1),
            ("0.5", 500, 1),
            ("1Gi", (1 << 30) * 1000, 1 << 30),
            ("128Mi", 128 * 1000 * (1 << 20), 128 << 20),
            ("1e3", 1_000_000, 1000),
            ("1E3", 1_000_000, 1000),
            ("1k", 1_000_000, 1000),
            ("100M", 100_000_000_000, 100_000_000),
            ("1.5Gi", 1_610_612_736_000, 1_610_612_736),
            ("0.1m", 1, 1),
            ("0", 0, 0),
            ("10n", 1, 1),
            ("-1", -1000, -1),
        ];
        for &(text, milli, value) in cases {
            let q = Quantity::parse(text).unwrap();
            assert_eq!((q.milli_value(), q.value()), (milli, value), "{text}");
        }
    }

    #[test]
    fn rejects_what_the_api_server_rejects() {
        for text in ["", "abc", "1.2.3", "1Ki2", "1e", "1x", ".", "1 Gi", "--1"] {
            assert!(
                Quantity::parse(text).is_err(),
                "{text:?} should be rejected"
            );
        }
    }

    #[test]
    fn saturates_instead_of_overflowing() {
        assert_eq!(Quantity::parse("1e100").unwrap().value(), i64::MAX);
        assert_eq!(
            Quantity::parse("99999999999999999999999999999999999999999Ei")
                .unwrap()
                .value(),
            i64::MAX
        );
    }
}
