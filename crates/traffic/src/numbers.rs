//! Numbers in error messages, kept to one readable line: plain between 10^-9 and 10^9,
//! else in exponent form with at most four significant digits (a rate of 1e300 printed in
//! full was 301 digits), and long digit runs in other parsers' messages (toml's) likewise.

/// `x` as a user reads it: `0.5`, `10000000`, `1e300`, `3.996e42`, `1e-12`.
pub fn readable(x: f64) -> String {
    if x == 0.0 || !x.is_finite() || (1e-9..1e9).contains(&x.abs()) {
        return x.to_string();
    }
    let short = format!("{x:e}");
    if short.len() <= 10 {
        short
    } else {
        format!("{x:.3e}")
    }
}

/// `text` with every run of more than 15 digits (with its decimal point and fraction)
/// written as [`readable`] writes it.
pub fn shorten_numbers(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(|c: char| c.is_ascii_digit()) {
        out.push_str(&rest[..start]);
        let tail = &rest[start..];
        let end = tail
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(tail.len());
        let run = &tail[..end];
        match run.parse::<f64>() {
            Ok(x) if run.len() > 15 => out.push_str(&readable(x)),
            _ => out.push_str(run),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_stay_short() {
        assert_eq!(readable(0.5), "0.5");
        assert_eq!(readable(1e7), "10000000");
        assert_eq!(readable(1e9), "1e9");
        assert_eq!(readable(1e300), "1e300");
        assert_eq!(readable(-1e-300), "-1e-300");
        assert_eq!(readable(1e-12), "1e-12");
        assert_eq!(readable(3.996_163_682_864_450_4e42), "3.996e42");
        assert_eq!(readable(f64::NAN), "NaN");
        let long = format!(
            "invalid type: floating point `{}`, expected u64",
            "1".to_string() + &"0".repeat(300)
        );
        assert_eq!(
            shorten_numbers(&long),
            "invalid type: floating point `1e300`, expected u64"
        );
        assert_eq!(
            shorten_numbers("line 4, 1460 bytes, 0.5 s"),
            "line 4, 1460 bytes, 0.5 s"
        );
    }
}
