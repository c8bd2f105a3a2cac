//! Pure parsers of the kernel's text files under `/proc`: each takes the file's text and
//! returns named counters, with no I/O, so every format is tested on fixed strings.

pub mod net;
pub mod process;
pub mod system;

use std::collections::BTreeMap;

/// Counters by name, as the kernel names them (`InSegs`, `pgfault`, `rx_bytes`...): its 64
/// bits read as signed, because a few fields are (`Tcp: MaxConn` is -1, "no fixed limit");
/// an unsigned counter past 2^63 wraps to negative, and deltas taken with wrapping
/// arithmetic stay right.
pub type Counters = BTreeMap<String, i64>;

/// Parse a field the kernel wrote as a decimal number, signed or unsigned; 0 if it is none.
pub(crate) fn number(text: &str) -> i64 {
    text.parse::<i64>()
        .or_else(|_| text.parse::<u64>().map(|v| v as i64))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::number;

    #[test]
    fn numbers_signed_and_unsigned() {
        assert_eq!(number("-1"), -1);
        assert_eq!(number("42"), 42);
        assert_eq!(number("x"), 0);
        // An unsigned counter just past 2^63 and one before it: the delta is still 16.
        let (before, after) = (number("9223372036854775797"), number("9223372036854775813"));
        assert_eq!(after.wrapping_sub(before), 16);
    }
}
