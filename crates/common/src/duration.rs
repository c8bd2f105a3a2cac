//! Durations as users write them on command lines: `1s`, `250ms`, `2m`, `1.5` (seconds).

use std::time::Duration;

/// A duration flag's value in seconds, range unchecked: a plain number is seconds as
/// written (`-1`, `1e-12`, `inf` too, so that the flag's own range check names them, as
/// MGEN-style and `wire` flags always did); a number and its unit (`1500ms`, `10s`, `2m`)
/// is read by [`parse_duration`], as `run -t`, `monitor` and `capture` read theirs.
pub fn parse_seconds(text: &str) -> std::result::Result<f64, String> {
    match text.parse::<f64>() {
        Ok(s) => Ok(s),
        Err(_) => parse_duration(text).map(|d| d.as_secs_f64()),
    }
}

/// Parse `1s`, `250ms`, `2m`, `1.5` (seconds): a number and its unit written together,
/// with no whitespace anywhere (`10 ms` and ` 1s` are refused, as `run -t` refuses them),
/// and a duration other than zero at least 1 ns (`1e-12s` would round to zero).
pub fn parse_duration(text: &str) -> std::result::Result<Duration, String> {
    if text.contains(char::is_whitespace) {
        let joined: String = text.split_whitespace().collect();
        return Err(format!(
            "'{text}' is not a duration: no spaces (write '{joined}'; e.g. 1s, 500ms, 2m)"
        ));
    }
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
    match number.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => match Duration::try_from_secs_f64(v * scale) {
            Ok(d) if d.is_zero() && v > 0.0 => Err(format!(
                "'{text}' is shorter than the shortest duration, 0.000000001s (1 ns)"
            )),
            Ok(d) => Ok(d),
            Err(_) => Err(format!("'{text}' is longer than any run can be")),
        },
        _ => Err(format!("'{text}' is not a duration (try 1s, 500ms, 2m)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Plain numbers pass as written, for the flag's own range check; units are read.
    #[test]
    fn seconds_are_plain_numbers_or_durations() {
        assert_eq!(parse_seconds("1.5"), Ok(1.5));
        assert_eq!(parse_seconds("1500ms"), Ok(1.5));
        assert_eq!(parse_seconds("2m"), Ok(120.0));
        assert_eq!(parse_seconds("-1"), Ok(-1.0));
        assert_eq!(parse_seconds("1e-12"), Ok(1e-12));
        assert_eq!(
            parse_seconds("10 s"),
            Err("'10 s' is not a duration: no spaces (write '10s'; e.g. 1s, 500ms, 2m)".into())
        );
    }

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

    /// `10 ms` was accepted (the number was trimmed) where `run -t` refuses it; whitespace
    /// anywhere is refused now, with the form to write instead.
    #[test]
    fn whitespace_is_refused_with_the_form_to_write() {
        for (given, joined) in [
            ("10 ms", "10ms"),
            (" 1s", "1s"),
            ("1s ", "1s"),
            ("\t250ms", "250ms"),
            ("1 .5 s", "1.5s"),
            ("2\nm", "2m"),
        ] {
            assert_eq!(
                parse_duration(given),
                Err(format!(
                    "'{given}' is not a duration: no spaces (write '{joined}'; e.g. 1s, 500ms, 2m)"
                )),
                "{given:?}"
            );
        }
        assert_eq!(parse_duration("10ms"), Ok(Duration::from_millis(10)));
    }

    /// A duration that rounds to zero is refused naming the shortest one; zero itself and
    /// 1 ns are kept (a caller that needs more than zero says so itself).
    #[test]
    fn a_duration_that_rounds_to_zero_is_refused_naming_the_shortest() {
        for given in ["1e-12", "1e-12s", "0.0000000001s", "1e-300ms", "0.0001us"] {
            assert_eq!(
                parse_duration(given),
                Err(format!(
                    "'{given}' is shorter than the shortest duration, 0.000000001s (1 ns)"
                ))
            );
        }
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("0ms"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("0.000000001s"), Ok(Duration::from_nanos(1)));
        assert_eq!(parse_duration("0.001us"), Ok(Duration::from_nanos(1)));
    }
}
