//! Sizes and durations with explicit units, as users write them in task files and flags.
//!
//! Sizes are decimal gigabytes (`GB`, as providers bill) and may be written in `MB`, `GB`, `TB`,
//! `PB` or their binary forms (`GiB`, `TiB`). Durations are seconds and may be written as `48h`,
//! `2d`, `90m`, `1h30m`, `3600s` or `1.5h`.

use std::str::FromStr;

use rust_decimal::Decimal;

/// A size or duration that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {what} `{text}`: expected {expected}")]
pub struct UnitError {
    /// `size` or `duration`.
    pub what: &'static str,
    /// The text given.
    pub text: String,
    /// What the text should look like.
    pub expected: &'static str,
}

const SIZE_EXPECTED: &str = "a number with a unit, such as `200GB`, `1.5TB` or `512GiB`";
const DURATION_EXPECTED: &str = "a duration such as `48h`, `2d`, `90m` or `1h30m`";

/// Parses a size into decimal gigabytes (10^9 bytes). A bare number is taken as GB.
pub fn parse_size_gb(text: &str) -> Result<Decimal, UnitError> {
    let err = || UnitError { what: "size", text: text.to_string(), expected: SIZE_EXPECTED };
    let t = text.trim();
    let split = t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value = Decimal::from_str(num.trim()).or_else(|_| Decimal::from_scientific(num.trim())).map_err(|_| err())?;
    if value.is_sign_negative() {
        return Err(err());
    }
    let gib = Decimal::new(1_073_741_824, 9);
    let factor = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "gb" | "g" => Decimal::ONE,
        "b" => Decimal::new(1, 9),
        "kb" => Decimal::new(1, 6),
        "mb" | "m" => Decimal::new(1, 3),
        "tb" | "t" => Decimal::from(1000),
        "pb" => Decimal::from(1_000_000),
        "kib" => Decimal::new(1024, 9),
        "mib" => Decimal::new(1_048_576, 9),
        "gib" => gib,
        "tib" => gib * Decimal::from(1024),
        _ => return Err(err()),
    };
    value.checked_mul(factor).ok_or_else(err)
}

/// Parses a duration into seconds. Fractions are allowed (`1.5h`) and rounded to the second.
pub fn parse_duration_s(text: &str) -> Result<u64, UnitError> {
    let err = || UnitError { what: "duration", text: text.to_string(), expected: DURATION_EXPECTED };
    let t: String = text.trim().to_ascii_lowercase().chars().filter(|c| !c.is_whitespace()).collect();
    if t.is_empty() {
        return Err(err());
    }
    let mut total = 0f64;
    let mut rest = t.as_str();
    while !rest.is_empty() {
        let num_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        if num_end == 0 {
            return Err(err());
        }
        let value: f64 = rest[..num_end].parse().map_err(|_| err())?;
        rest = &rest[num_end..];
        let unit_end = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let unit = &rest[..unit_end];
        rest = &rest[unit_end..];
        let seconds = match unit {
            "s" | "sec" | "secs" | "second" | "seconds" => 1.0,
            "m" | "min" | "mins" | "minute" | "minutes" => 60.0,
            "h" | "hr" | "hrs" | "hour" | "hours" => 3600.0,
            "d" | "day" | "days" => 86_400.0,
            "w" | "week" | "weeks" => 604_800.0,
            _ => return Err(err()),
        };
        total += value * seconds;
    }
    if !total.is_finite() || total > 1e11 {
        return Err(err());
    }
    Ok(total.round() as u64)
}

/// Formats hours compactly for tables: `45m`, `12.3h`, `4.2d`.
pub fn format_hours(hours: f64) -> String {
    if !hours.is_finite() {
        "-".to_string()
    } else if hours < 1.0 {
        format!("{:.0}m", hours * 60.0)
    } else if hours < 72.0 {
        format!("{hours:.1}h")
    } else {
        format!("{:.1}d", hours / 24.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size_gb("200GB").unwrap(), Decimal::from(200));
        assert_eq!(parse_size_gb("1.5 TB").unwrap(), Decimal::from(1500));
        assert_eq!(parse_size_gb("16").unwrap(), Decimal::from(16));
        assert_eq!(parse_size_gb("500MB").unwrap(), Decimal::new(5, 1));
        assert_eq!(parse_size_gb("1GiB").unwrap(), Decimal::new(1_073_741_824, 9));
        assert!(parse_size_gb("-5GB").is_err());
        assert!(parse_size_gb("lots").is_err());
        assert!(parse_size_gb("5 parsecs").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration_s("48h").unwrap(), 48 * 3600);
        assert_eq!(parse_duration_s("2d").unwrap(), 2 * 86_400);
        assert_eq!(parse_duration_s("1h30m").unwrap(), 5400);
        assert_eq!(parse_duration_s("1.5h").unwrap(), 5400);
        assert_eq!(parse_duration_s("1 h 30 m").unwrap(), 5400);
        assert!(parse_duration_s("soon").is_err());
        assert!(parse_duration_s("-3h").is_err());
        assert!(parse_duration_s("h").is_err());
        assert!(parse_duration_s("").is_err());
    }
}
