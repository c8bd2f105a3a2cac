//! Interim JSON report (replaced by the full schema reporter).
use crate::summary::RunSummary;
pub fn to_string(s: &RunSummary) -> String { format!("{{\"duration_s\": {}}}\n", s.duration_s()) }
