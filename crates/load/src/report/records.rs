//! Interim records writer (replaced by the full CSV/JSONL sink).
use crate::record::Record;
pub fn write_file(path: &std::path::Path, records: &[Record]) -> std::io::Result<()> {
    let mut s = String::new();
    for r in records { s += &format!("{:?}\n", r); }
    std::fs::write(path, s)
}
