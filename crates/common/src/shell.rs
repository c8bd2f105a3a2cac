//! Words written so that a shell reads them back as they are: for the commands dualbench
//! prints for a user to run or read (a testbed's plan, a report's command line).

/// `word` as one shell word: as it is when every character is safe unquoted, else in
/// single quotes (a `'` inside written as `'\''`).
pub fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,%@+".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::shell_word;

    #[test]
    fn quotes_only_what_needs_it() {
        assert_eq!(shell_word("results.db"), "results.db");
        assert_eq!(shell_word("/tmp/a-b_c=1,2%@+:"), "/tmp/a-b_c=1,2%@+:");
        assert_eq!(shell_word("my results.db"), "'my results.db'");
        assert_eq!(shell_word(""), "''");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word("$HOME"), "'$HOME'");
    }
}
