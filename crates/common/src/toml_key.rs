//! Which TOML key a parse error is about, read from the text before the error's place: the
//! testbed's topology files and traffic's profiles name it in their errors, where serde
//! names none ("invalid type: integer `100`, expected a string").

/// The key whose value starts right after `prefix` (a line up to the value: `rate = `, or
/// `b_to_a = { rate = `, which gives `b_to_a.rate`); `None` when no bare key is there.
pub fn key_of_value(prefix: &str) -> Option<String> {
    let before = prefix.trim_end().strip_suffix('=')?.trim_end();
    let start = before
        .rfind(|c: char| c == '{' || c == ',' || c.is_ascii_whitespace())
        .map_or(0, |i| i + 1);
    let key = &before[start..];
    let bare = |k: &str| {
        !k.is_empty()
            && k.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    };
    if !bare(key) {
        return None;
    }
    let outer = before[..start]
        .rfind('{')
        .and_then(|i| key_of_value(&before[..i]));
    Some(match outer {
        Some(outer) => format!("{outer}.{key}"),
        None => key.to_string(),
    })
}

/// [`key_of_value`] of the value that starts at byte `at` of `text` (the line up to it).
pub fn key_at(text: &str, at: usize) -> Option<String> {
    let before = text.get(..at.min(text.len()))?;
    key_of_value(before.rsplit('\n').next().unwrap_or(before))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_of_values_and_of_inline_tables() {
        assert_eq!(key_of_value("rate = ").as_deref(), Some("rate"));
        assert_eq!(
            key_of_value("b_to_a = { rate = ").as_deref(),
            Some("b_to_a.rate")
        );
        assert_eq!(
            key_of_value("udp_size = { ipv4 = 1460, ipv6 = ").as_deref(),
            Some("udp_size.ipv6")
        );
        assert_eq!(key_of_value("name\u{3000}x = "), None);
        assert_eq!(key_of_value("[[host]]"), None);
        let text = "rate = \"1Mbit\"\nudp_size = { ipv4 = 1e300 }\n";
        let at = text.find("1e300").unwrap();
        assert_eq!(key_at(text, at).as_deref(), Some("udp_size.ipv4"));
        assert_eq!(key_at(text, 0), None);
    }
}
