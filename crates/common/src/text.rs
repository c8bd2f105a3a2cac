//! Counts in the text dualbench writes for people: `1 run`, `2 runs`, `2 processes`, so
//! that a count of one never reads "1 samples". Machine-readable output (JSON, CSV keys)
//! does not go through here.

use std::fmt::Display;

/// `1 link`, `2 links`; `2 processes`, `2 switches` (a noun ending in s, x, z, ch or sh
/// takes -es). `noun` may be several words ("TCP connection"): the last one is inflected.
/// `n` is any integer type, so that counts need no cast.
pub fn plural<N: Display + PartialEq + From<u8>>(n: N, noun: &str) -> String {
    if n == N::from(1) {
        return format!("1 {noun}");
    }
    let es = ["s", "x", "z", "ch", "sh"]
        .iter()
        .any(|e| noun.ends_with(e));
    format!("{n} {noun}{}", if es { "es" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::plural;

    /// `down` of a testbed with an unreadable state file said "2 processs (…)".
    #[test]
    fn plurals_of_nouns_ending_in_s_take_es() {
        assert_eq!(plural(1usize, "process"), "1 process");
        assert_eq!(plural(2usize, "process"), "2 processes");
        assert_eq!(plural(0usize, "switch"), "0 switches");
        assert_eq!(plural(3usize, "link"), "3 links");
        assert_eq!(plural(2usize, "frame"), "2 frames");
    }

    /// An audit found "1 samples", "1 retransmissions" and "1 runs stored".
    #[test]
    fn one_of_anything_is_singular() {
        assert_eq!(plural(1u64, "sample"), "1 sample");
        assert_eq!(plural(1u64, "retransmission"), "1 retransmission");
        assert_eq!(plural(1u64, "TCP connection"), "1 TCP connection");
        assert_eq!(plural(0u64, "TCP connection"), "0 TCP connections");
        assert_eq!(plural(12u64, "warm-up run"), "12 warm-up runs");
    }
}
