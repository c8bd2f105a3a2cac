//! Durations as users write them on command lines: `1s`, `250ms`, `2m`, `1.5` (seconds).

use std::time::Duration;

/// Parse `1s`, `250ms`, `2m`, `1.5` (seconds).
pub fn parse_duration(text: &str) -> std::result::Result<Duration, String> {
    let (number, scale) = if let Some(n) = text.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = text.strip_suffix("us") {
        (n, 1e-6)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = text.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = text.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (text, 1.0)
    };
    match number.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Duration::try_from_secs_f64(v * scale)
            .map_err(|_| format!("'{text}' is longer than any run can be")),
        _ => Err(format!("'{text}' is not a duration (try 1s, 500ms, 2m)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_bare_seconds() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("soon").is_err());
        assert_eq!(
            parse_duration("1e300s"),
            Err("'1e300s' is longer than any run can be".into())
        );
    }
}
