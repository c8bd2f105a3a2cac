//! dualbench's additions after ab's report: the key figures per family side by side
//! (IPv4 | IPv6 | difference), latencies per phase, the open-loop figures, and ANMA's
//! table of how requests ended. With one family, one column and no difference.

use super::table::Table;
use crate::record::Outcome;
use crate::report::format::{difference, ms3, percent, ratio};
use crate::report::latency::Latency;
use crate::report::text::ab::AbFailures;
use crate::summary::{FamilyStats, LoadModel, RunSummary};
use dualbench_common::Family;
use hdrhistogram::Histogram;

/// A latency figure by name, read from a histogram's summary.
type Figure = (&'static str, fn(&Latency) -> f64);

/// The latency figures shown per phase, in µs.
const FIGURES: [Figure; 5] = [
    ("mean", |l| l.mean),
    ("p50", |l| l.p50 as f64),
    ("p90", |l| l.p90 as f64),
    ("p99", |l| l.p99 as f64),
    ("max", |l| l.max as f64),
];

/// The families shown, with their figures.
struct Columns<'a> {
    families: Vec<(Family, &'a FamilyStats)>,
    duration_s: f64,
}

impl<'a> Columns<'a> {
    fn of(s: &'a RunSummary) -> Columns<'a> {
        let families = s
            .families_used()
            .into_iter()
            .map(|f| (f, s.family(f)))
            .collect();
        Columns {
            families,
            duration_s: s.duration_s(),
        }
    }

    fn paired(&self) -> bool {
        self.families.len() == 2
    }

    fn table(&self, title: &str) -> Table {
        let mut header = vec![title.to_string()];
        header.extend(self.families.iter().map(|(f, _)| f.label().to_string()));
        if self.paired() {
            header.push("difference (IPv6 - IPv4)".to_string());
        }
        Table::new(header, self.paired())
    }

    /// One row: the figure per family with `decimals` places, then the difference.
    fn row(
        &self,
        t: &mut Table,
        label: &str,
        decimals: usize,
        figure: impl Fn(&FamilyStats) -> f64,
    ) {
        let values: Vec<f64> = self.families.iter().map(|(_, s)| figure(s)).collect();
        let mut cells = vec![label.to_string()];
        cells.extend(values.iter().map(|v| format!("{v:.decimals$}")));
        if self.paired() {
            cells.push(difference(values[0], values[1], decimals));
        }
        t.row(cells);
    }

    /// Latency rows of one phase, in milliseconds with µs precision.
    fn latency_rows(&self, t: &mut Table, phase: &str, hist: fn(&FamilyStats) -> &Histogram<u64>) {
        let latencies: Vec<Latency> = self
            .families
            .iter()
            .map(|(_, s)| Latency::of(hist(s)))
            .collect();
        for (i, (name, figure)) in FIGURES.iter().enumerate() {
            let label = format!("{:<26}{name}", if i == 0 { phase } else { "" });
            let us: Vec<f64> = latencies.iter().map(figure).collect();
            // A family with nothing measured in this phase has no figure, not 0 ms.
            let measured: Vec<bool> = latencies.iter().map(|l| l.count > 0).collect();
            let mut cells = vec![label];
            cells.extend(us.iter().zip(&measured).map(|(v, m)| match m {
                true => ms3(*v),
                false => "-".to_string(),
            }));
            if self.paired() {
                cells.push(match measured[..] {
                    [true, true] => difference(us[0] / 1000.0, us[1] / 1000.0, 3),
                    _ => "-".to_string(),
                });
            }
            t.row(cells);
        }
    }
}

/// The additions, each table separated by a blank line.
pub fn render(s: &RunSummary) -> String {
    let c = Columns::of(s);
    if c.families.is_empty() {
        return String::new();
    }
    let open = matches!(s.meta.model, LoadModel::Open { .. });
    let mut out = String::new();
    if let LoadModel::Open { rate, poisson } = s.meta.model {
        let arrivals = if poisson { "Poisson" } else { "constant" };
        out.push_str(&format!(
            "Open loop: {rate:.2} requests/s offered, {arrivals} arrivals; latency is measured \
             from each request's intended start\n\n"
        ));
    }
    out.push_str(&counts(&c, open).render());
    out.push('\n');
    out.push_str(&latencies(&c, open).render());
    out.push('\n');
    out.push_str(&endings(&c).render());
    out
}

fn counts(c: &Columns, open: bool) -> Table {
    let secs = c.duration_s;
    let mut t = c.table("Per address family");
    c.row(&mut t, "Requests:", 0, |f| f.requests as f64);
    c.row(&mut t, "Complete requests:", 0, |f| f.completed as f64);
    c.row(&mut t, "Failed requests:", 0, |f| {
        AbFailures::of(f).total() as f64
    });
    c.row(&mut t, "Non-2xx responses:", 0, |f| f.non_2xx as f64);
    c.row(&mut t, "Requests per second:", 2, |f| {
        ratio(f.completed as f64, secs)
    });
    c.row(&mut t, "Transfer rate [Kbytes/sec]:", 2, |f| {
        ratio(f.bytes as f64 / 1024.0, secs)
    });
    c.row(&mut t, "Connections opened:", 0, |f| f.connections as f64);
    if open {
        // Started more than LATE_NS after the intended time.
        c.row(&mut t, "Late slots (>1 ms):", 0, |f| f.late as f64);
        c.row(&mut t, "Unsent slots:", 0, |f| f.unsent as f64);
    }
    t
}

fn latencies(c: &Columns, open: bool) -> Table {
    let mut t = c.table("Latency (ms)");
    c.latency_rows(&mut t, "Connect (establishment)", |f| &f.hist.connect);
    c.latency_rows(&mut t, "Waiting (first byte)", |f| &f.hist.waiting);
    if open {
        c.latency_rows(&mut t, "Total (corrected)", |f| &f.hist.total);
        c.latency_rows(&mut t, "Service (uncorrected)", |f| &f.hist.service);
    } else {
        c.latency_rows(&mut t, "Total", |f| &f.hist.total);
    }
    c.latency_rows(&mut t, "Lifetime (continuation)", |f| &f.hist.lifetime);
    t
}

/// ANMA's classes, with the phase of resets and timeouts on their own lines.
const ENDINGS: [(&str, &[Outcome]); 11] = [
    ("NORMAL", &[Outcome::Normal]),
    (
        "RESET",
        &[
            Outcome::ResetConnect,
            Outcome::ResetRequest,
            Outcome::ResetResponse,
        ],
    ),
    ("  in connect", &[Outcome::ResetConnect]),
    ("  in request", &[Outcome::ResetRequest]),
    ("  in response", &[Outcome::ResetResponse]),
    (
        "TIMEOUT",
        &[Outcome::TimeoutConnect, Outcome::TimeoutResponse],
    ),
    ("  in connect", &[Outcome::TimeoutConnect]),
    ("  in response", &[Outcome::TimeoutResponse]),
    ("REFUSED", &[Outcome::Refused]),
    ("UNREACHABLE", &[Outcome::Unreachable]),
    ("PROTOCOL_ERROR", &[Outcome::ProtocolError]),
];

fn endings(c: &Columns) -> Table {
    let mut header = vec!["How requests ended (ANMA)".to_string()];
    header.extend(c.families.iter().map(|(f, _)| f.label().to_string()));
    let mut t = Table::new(header, false);
    for (label, outcomes) in ENDINGS {
        let mut cells = vec![label.to_string()];
        for (_, s) in &c.families {
            let n: u64 = outcomes.iter().map(|o| s.outcome(*o)).sum();
            cells.push(format!("{n} ({:>6})", percent(n, s.requests)));
        }
        t.row(cells);
    }
    t
}
