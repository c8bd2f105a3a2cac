//! Pure parsers of the kernel's text files under `/proc`: each takes the file's text and
//! returns named counters, with no I/O, so every format is tested on fixed strings.

pub mod net;
pub mod process;
pub mod system;

use std::collections::BTreeMap;

/// Counters by name, as the kernel names them (`InSegs`, `pgfault`, `rx_bytes`...).
pub type Counters = BTreeMap<String, u64>;

/// Parse a whitespace-separated unsigned number; the kernel never writes signs here except
/// for a few gauges (`MaxConn -1`), which read as 0.
pub(crate) fn number(text: &str) -> u64 {
    text.parse::<u64>().unwrap_or(0)
}
