//! Interim text report (replaced by the full ab-shaped reporter).
use crate::summary::RunSummary;
pub fn render(s: &RunSummary) -> String {
    let mut out = String::new();
    for f in s.families_used() {
        let st = s.family(f);
        out += &format!("{f}: requests {} completed {} failed {} bytes {} html {} conns {} outcomes {:?} p50 {}us\n",
            st.requests, st.completed, st.failed, st.bytes, st.body_bytes, st.connections, st.outcomes, st.hist.total.value_at_quantile(0.5));
    }
    out += &format!("duration {:.3}s server {:?} doclen {:?} interrupted {:?}\n", s.duration_s(), s.meta.server_software, s.meta.document_length, s.meta.interrupted);
    out
}
