//! Go's `time.ParseDuration` and `Duration.String`, for the
//! `metav1.Duration` fields of plugin args (DynamicResources'
//! `filterTimeout` and `bindingTimeout`): the same accepted syntax, error
//! words and canonical rendering kube-scheduler's messages use.

/// Nanoseconds of a Go duration string, or Go's error.
pub fn parse(text: &str) -> Result<i128, String> {
    let quoted = serde_json::Value::String(text.to_string()).to_string();
    let invalid = || format!("time: invalid duration {quoted}");
    let (neg, mut rest) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number = &rest[..digits];
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return Err(invalid());
        }
        let value: f64 = number.parse().map_err(|_| invalid())?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        if unit.is_empty() {
            return Err(format!("time: missing unit in duration {quoted}"));
        }
        let scale: f64 = match unit {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            other => {
                return Err(format!(
                    "time: unknown unit {} in duration {quoted}",
                    serde_json::Value::String(other.to_string())
                ))
            }
        };
        total += value * scale;
        rest = &rest[unit_len..];
    }
    let ns = total.round() as i128;
    Ok(if neg { -ns } else { ns })
}

/// Go's `Duration.String()`: `1h2m3.5s`, `1m0s`, `500ms`, `0s`.
pub fn render(ns: i128) -> String {
    if ns == 0 {
        return "0s".to_string();
    }
    let sign = if ns < 0 { "-" } else { "" };
    let u = ns.unsigned_abs();
    let frac = |whole: u128, part: u128, digits: usize| {
        if part == 0 {
            whole.to_string()
        } else {
            let f = format!("{part:0digits$}");
            format!("{whole}.{}", f.trim_end_matches('0'))
        }
    };
    if u < 1_000_000_000 {
        let (unit, div, digits) = if u < 1_000 {
            ("ns", 1, 0)
        } else if u < 1_000_000 {
            ("µs", 1_000, 3)
        } else {
            ("ms", 1_000_000, 6)
        };
        return format!("{sign}{}{unit}", frac(u / div, u % div, digits));
    }
    let secs = u / 1_000_000_000;
    let (h, m, s) = (secs / 3600, secs % 3600 / 60, secs % 60);
    let mut out = sign.to_string();
    if h > 0 {
        out.push_str(&format!("{h}h{m}m"));
    } else if m > 0 {
        out.push_str(&format!("{m}m"));
    }
    out.push_str(&frac(s, u % 1_000_000_000, 9));
    out.push('s');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        let table: [(&str, Result<&str, &str>); 9] = [
            ("-1s", Ok("-1s")),
            ("500ms", Ok("500ms")),
            ("90s", Ok("1m30s")),
            ("1.5h", Ok("1h30m0s")),
            ("0", Ok("0s")),
            ("1h0m0.25s", Ok("1h0m0.25s")),
            ("abc", Err("time: invalid duration \"abc\"")),
            ("5", Err("time: missing unit in duration \"5\"")),
            ("5x", Err("time: unknown unit \"x\" in duration \"5x\"")),
        ];
        for (text, want) in table {
            let got = parse(text).map(render);
            assert_eq!(got.as_deref().map_err(String::as_str), want, "{text}");
        }
    }
}
