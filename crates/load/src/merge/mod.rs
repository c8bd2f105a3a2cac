//! `dualbench merge`: the runs of several load generators (client hosts run at the same
//! time against one server) as one run of their combined load.
//!
//! Each input is a `dualbench.run/1` document read back into a [`RunSummary`]
//! ([`crate::report::from_json`]). Their families are added with [`crate::summary::FamilyStats::merge`], the
//! merge the engine uses for its workers: counts are summed per family, and each phase's
//! histogram is added, so that percentiles are those of the union of all requests. The
//! merged run's window is the union of the inputs' (earliest start to latest end, on each
//! host's Unix clock); how long they ran together is measured too. The merged summary goes
//! to the ordinary reporters, with caveats that say what the inputs were
//! ([`Merged::text`], [`Merged::json`]).
//!
//! Each input is checked before it is added ([`check`]): a document whose figures
//! contradict each other as no run's do, or whose counts added to the others' would not
//! fit in a count, is refused naming the file and the field, and nothing ever wraps.
//!
//! Pure: documents in, a report out. Reading the files and writing the report is
//! [`cli`]'s.

pub mod check;
pub mod cli;

use crate::report::from_json::ReadRun;
use crate::report::{self, AbFlags};
use crate::summary::{LoadModel, RunSummary, TargetInfo};
pub use check::{Damaged, Fault};
use serde::Serialize;
use std::fmt;

/// Below this share of the merged window spent with every input running, the runs did
/// not run together and the merged req/s is not a rate any moment had: a warning says so.
pub const OVERLAP_WARNING: f64 = 0.9;

/// One input: its name in messages (the file as given) and its document read back.
#[derive(Debug, Clone)]
pub struct Input {
    pub name: String,
    pub run: ReadRun,
}

/// Two inputs whose figures cannot be merged: they differ in `field`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    pub first: String,
    pub other: String,
    /// The document's field, as `docs/json-schema.md` names it (`target.path`).
    pub field: &'static str,
    pub first_value: String,
    pub other_value: String,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} and {} differ in {} ({} and {}): runs of different benchmarks cannot be merged; merge runs made with the same {}",
            self.first,
            self.other,
            self.field,
            self.first_value,
            self.other_value,
            self.field
        )
    }
}

/// Why an input cannot be merged: it differs from the first in a setting, or its figures
/// are damaged (contradict each other, or cannot be added).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    Mismatch(Mismatch),
    Damaged(Damaged),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Mismatch(m) => m.fmt(f),
            Refusal::Damaged(d) => d.fmt(f),
        }
    }
}

impl From<Mismatch> for Refusal {
    fn from(m: Mismatch) -> Self {
        Refusal::Mismatch(m)
    }
}

impl From<Damaged> for Refusal {
    fn from(d: Damaged) -> Self {
        Refusal::Damaged(d)
    }
}

/// Check that every input has the first one's schema name (before any is decoded: a
/// reader of `/1` cannot read `/2`, and must not try).
pub fn same_schema<'a>(
    schemas: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<(), Mismatch> {
    let mut first: Option<(&str, &str)> = None;
    for (name, schema) in schemas {
        match first {
            None => first = Some((name, schema)),
            Some((first_name, first_schema)) if first_schema != schema => {
                return Err(Mismatch {
                    first: first_name.to_string(),
                    other: name.to_string(),
                    field: "schema",
                    first_value: quoted(first_schema),
                    other_value: quoted(schema),
                })
            }
            Some(_) => {}
        }
    }
    Ok(())
}

fn quoted(s: &str) -> String {
    format!("{s:?}")
}

/// What one input was, as the merged reports list it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InputInfo {
    /// The input as named on the command line.
    pub file: String,
    /// The client host the input's run was made on (its `client.host`); `None` in
    /// documents written before the field (added 2026-11-24).
    pub client_host: Option<String>,
    /// `target.host` and `target.port` of the input.
    pub host: String,
    pub port: u16,
    /// Every target address the input sent requests to.
    pub targets: Vec<String>,
    pub start_unix_ns: u64,
    /// Seconds from the merged window's start to this input's.
    pub start_offset_s: f64,
    pub duration_s: f64,
    pub concurrency: u64,
    pub requests: u64,
    pub completed: u64,
    pub rps: f64,
    pub cpu_fraction: f64,
    /// Its generator may have limited its results (as its own report said).
    pub bound: bool,
    /// Why it was cut short; null for a complete run.
    pub interrupted: Option<String>,
}

/// The merged run: one summary, and what it was merged from.
#[derive(Debug, Clone)]
pub struct Merged {
    pub summary: RunSummary,
    pub flags: AbFlags,
    pub inputs: Vec<InputInfo>,
    /// The inputs' client hosts, each once, joined with `, `; `None` when no input named
    /// its own.
    pub client_hosts: Option<String>,
    /// How long every input was running at once (the intersection of their windows).
    pub overlap_ns: u64,
    /// The generator-bound warning of each input whose generator was, naming it.
    pub bound_warnings: Vec<String>,
    /// Things that differed between inputs and that a reader of the figures should know.
    pub notes: Vec<String>,
}

/// The settings that must be equal for figures to be merged: their field's name, and the
/// value of a run as text.
type Setting = (&'static str, fn(&ReadRun) -> String);

const SAME: [Setting; 7] = [
    ("target.path", |r| quoted(&r.summary.meta.path)),
    ("target.method", |r| quoted(&r.summary.meta.method)),
    ("settings.keepalive", |r| {
        r.summary.meta.keepalive.to_string()
    }),
    ("settings.pipeline", |r| r.summary.meta.pipeline.to_string()),
    ("settings.model", |r| {
        quoted(match r.summary.meta.model {
            LoadModel::Closed => "closed",
            LoadModel::Open { .. } => "open",
        })
    }),
    ("settings.arrival", |r| match r.summary.meta.model {
        LoadModel::Closed => "null".to_string(),
        LoadModel::Open { poisson: true, .. } => quoted("poisson"),
        LoadModel::Open { poisson: false, .. } => quoted("constant"),
    }),
    ("settings.variable_length", |r| {
        r.flags.variable_length.to_string()
    }),
];

/// The inputs as one run; `inputs` must not be empty. Refused when two differ in a setting
/// that changes what the figures mean (see [`Mismatch`]), or when an input is damaged
/// (see [`check`]).
pub fn merge(inputs: Vec<Input>) -> Result<Merged, Refusal> {
    let mut inputs = inputs.into_iter();
    let mut merger = Merger::try_new(inputs.next().expect("merge of no input"))?;
    for input in inputs {
        merger.add(input)?;
    }
    Ok(merger.finish())
}

/// A merge in progress, one input at a time: each input's histograms (up to 14 of 188 KiB)
/// are added and dropped, so that a hundred inputs cost the memory of two.
#[derive(Debug)]
pub struct Merger {
    /// The first input's name and its settings that the others must share.
    first: (String, Vec<String>),
    /// The inputs so far, added into the first's summary.
    summary: RunSummary,
    flags: AbFlags,
    hosts: Vec<String>,
    /// The inputs' client hosts, each once, in order of first appearance.
    client_hosts: Vec<String>,
    /// Each input's listing, its start offset filled in at the end.
    inputs: Vec<InputInfo>,
    /// The latest start and the earliest end so far (Unix ns): the overlap's bounds.
    latest_start: u64,
    earliest_end: u64,
    latest_end: u64,
    lengths: Vec<(String, u64)>,
    bound_warnings: Vec<String>,
}

impl Merger {
    /// A merge of `first` alone so far, once it is checked ([`check::consistent`]).
    pub fn try_new(first: Input) -> Result<Merger, Refusal> {
        check::consistent(&first.name, &first.run)?;
        Ok(Merger::new(first))
    }

    /// A merge of `first` alone so far, taken as it is, once [`Merger::try_new`] checked it.
    fn new(first: Input) -> Merger {
        let s = &first.run.summary;
        let mut m = Merger {
            first: (
                first.name.clone(),
                SAME.iter().map(|(_, value)| value(&first.run)).collect(),
            ),
            flags: first.run.flags,
            hosts: vec![s.meta.host.clone()],
            client_hosts: Vec::new(),
            inputs: Vec::new(),
            latest_start: s.meta.start_unix_ns,
            earliest_end: end_ns(s),
            latest_end: end_ns(s),
            lengths: Vec::new(),
            bound_warnings: Vec::new(),
            summary: first.run.summary,
        };
        m.note(&first.name, None, first.run.client_host.as_deref());
        m
    }

    /// Add one more input; refused (and nothing added) when it is damaged (its figures
    /// contradict each other, [`check::consistent`]), when it differs from the first in a
    /// setting that must be the same, or when a sum would not fit ([`check::addable`]).
    pub fn add(&mut self, input: Input) -> Result<(), Refusal> {
        check::consistent(&input.name, &input.run)?;
        for ((field, value), first_value) in SAME.iter().zip(&self.first.1) {
            let other_value = value(&input.run);
            if other_value != *first_value {
                return Err(Refusal::Mismatch(Mismatch {
                    first: self.first.0.clone(),
                    other: input.name,
                    field,
                    first_value: first_value.clone(),
                    other_value,
                }));
            }
        }
        check::addable(&input.name, &self.summary, &input.run.summary)?;
        let o = &input.run.summary;
        self.note(&input.name, Some(o), input.run.client_host.as_deref());
        // ab's "Total body sent" is every request byte written: the inputs' are added
        // (per family, with the rest), and the line is there when any input sent a body.
        self.flags.body_sent |= input.run.flags.body_sent;
        self.latest_start = self.latest_start.max(o.meta.start_unix_ns);
        self.earliest_end = self.earliest_end.min(end_ns(o));
        self.latest_end = self.latest_end.max(end_ns(o));
        if !self.hosts.contains(&o.meta.host) {
            self.hosts.push(o.meta.host.clone());
        }
        combine(&mut self.summary, o);
        Ok(())
    }

    /// What an input (`run`, or the first, whose summary is the merge's so far), made on
    /// `client_host`, adds to the listing, the warnings and the notes.
    fn note(&mut self, name: &str, run: Option<&RunSummary>, client_host: Option<&str>) {
        let s = run.unwrap_or(&self.summary);
        let mut listed = info(name, s);
        listed.client_host = client_host.map(str::to_string);
        if let Some(host) = client_host {
            if !self.client_hosts.iter().any(|h| h == host) {
                self.client_hosts.push(host.to_string());
            }
        }
        let warning = report::text::bound_warning(&s.meta, s.duration_s(), Some(name));
        let length = s.meta.document_length;
        self.inputs.push(listed);
        self.bound_warnings.extend(warning);
        if let Some(length) = length {
            self.lengths.push((name.to_string(), length));
        }
    }

    /// The merged run.
    pub fn finish(mut self) -> Merged {
        let start = self.summary.meta.start_unix_ns;
        for i in &mut self.inputs {
            i.start_offset_s = (i.start_unix_ns - start) as f64 / 1e9;
        }
        let window_ns = self.latest_end.saturating_sub(start).max(1);
        self.summary.duration_ns = window_ns;
        self.summary.meta.host = self.hosts.join(", ");
        Merged {
            summary: self.summary,
            flags: self.flags,
            inputs: self.inputs,
            client_hosts: (!self.client_hosts.is_empty()).then(|| self.client_hosts.join(", ")),
            overlap_ns: self
                .earliest_end
                .saturating_sub(self.latest_start)
                .min(window_ns),
            bound_warnings: self.bound_warnings,
            notes: document_lengths(&self.lengths).into_iter().collect(),
        }
    }
}

/// Where a run's window ends on the Unix clock.
fn end_ns(s: &RunSummary) -> u64 {
    s.meta.start_unix_ns.saturating_add(s.duration_ns)
}

/// An input's listing; its start offset is known once every input is.
fn info(name: &str, s: &RunSummary) -> InputInfo {
    let t = s.total();
    let secs = s.duration_s();
    InputInfo {
        file: name.to_string(),
        client_host: None,
        host: s.meta.host.clone(),
        port: s.meta.port,
        targets: s.meta.targets.iter().map(|t| t.addr.clone()).collect(),
        start_unix_ns: s.meta.start_unix_ns,
        start_offset_s: 0.0,
        duration_s: secs,
        concurrency: s.meta.concurrency,
        requests: t.requests,
        completed: t.completed,
        rps: round3(if secs > 0.0 {
            t.completed as f64 / secs
        } else {
            0.0
        }),
        cpu_fraction: (s.meta.cpu_fraction(secs) * 1e4).round() / 1e4,
        bound: report::text::generator_bound(&s.meta, secs),
        interrupted: s.meta.interrupted.clone(),
    }
}

fn round3(x: f64) -> f64 {
    (x * 1e3).round() / 1e3
}

/// A note when the inputs' first responses had bodies of different lengths: each input
/// counted its "Length" failures against its own.
fn document_lengths(lengths: &[(String, u64)]) -> Option<String> {
    let (_, first) = lengths.first()?;
    if lengths.iter().all(|(_, l)| l == first) {
        return None;
    }
    let each: Vec<String> = lengths
        .iter()
        .map(|(name, l)| format!("{l} bytes in {name}"))
        .collect();
    Some(format!(
        "Note: the inputs' documents differ in length ({}); each counted its Length failures against its own, and Document Length is the first's",
        each.join(", ")
    ))
}

/// `other` added into `merged`: families as the engine adds its workers', the settings
/// that may differ combined (summed, or listed). The window and hosts are the caller's.
/// Every sum was checked to fit first ([`check::addable`]).
fn combine(merged: &mut RunSummary, other: &RunSummary) {
    let m = &mut merged.meta;
    let o = &other.meta;
    if m.server_software.is_empty() {
        m.server_software = o.server_software.clone();
    }
    if m.document_length.is_none() {
        m.document_length = o.document_length;
    }
    m.concurrency += o.concurrency;
    if let (
        LoadModel::Open { rate, .. },
        LoadModel::Open {
            rate: other_rate, ..
        },
    ) = (&mut m.model, &o.model)
    {
        *rate += other_rate;
    }
    m.requests_limit = m.requests_limit.zip(o.requests_limit).map(|(a, b)| a + b);
    m.time_limit_s = m.time_limit_s.zip(o.time_limit_s).map(|(a, b)| a.max(b));
    for t in &o.targets {
        add_target(&mut m.targets, t);
    }
    m.workers += o.workers;
    m.cores += o.cores;
    // getrusage's figures are whole microseconds: so are their sums (not 0.012480999…).
    m.cpu_user_s = micros(m.cpu_user_s + o.cpu_user_s);
    m.cpu_sys_s = micros(m.cpu_sys_s + o.cpu_sys_s);
    m.connections_peak += o.connections_peak;
    if o.start_unix_ns < m.start_unix_ns {
        m.start_unix_ns = o.start_unix_ns;
        m.start_monotonic_ns = o.start_monotonic_ns;
    }
    for (a, b) in merged.families.iter_mut().zip(&other.families) {
        a.merge(b);
    }
}

fn micros(seconds: f64) -> f64 {
    (seconds * 1e6).round() / 1e6
}

/// `t` added to `targets`: a new address at the end, a known one's weight summed.
fn add_target(targets: &mut Vec<TargetInfo>, t: &TargetInfo) {
    match targets
        .iter_mut()
        .find(|have| have.addr == t.addr && have.family == t.family)
    {
        Some(have) => have.weight += t.weight,
        None => targets.push(t.clone()),
    }
}

impl Merged {
    /// The merged window, in seconds.
    pub fn window_s(&self) -> f64 {
        self.summary.duration_s()
    }

    /// The share of the window during which every input was running (0..1).
    pub fn overlap(&self) -> f64 {
        self.overlap_ns as f64 / self.summary.duration_ns.max(1) as f64
    }

    /// Inputs whose generators may have limited their results.
    pub fn bound_inputs(&self) -> Vec<&InputInfo> {
        self.inputs.iter().filter(|i| i.bound).collect()
    }

    /// The warning of inputs that did not run together, when they ran together for less
    /// than [`OVERLAP_WARNING`] of the window.
    pub fn overlap_warning(&self) -> Option<String> {
        if self.inputs.len() < 2 || self.overlap() >= OVERLAP_WARNING {
            return None;
        }
        Some(format!(
            "the runs ran together for only {:.3} s of the {:.3} s from the first start to the last end ({:.1}%): the merged requests per second is over the whole span, not a rate they offered at once; start them together (and check the hosts' clocks agree)",
            self.overlap_ns as f64 / 1e9,
            self.window_s(),
            self.overlap() * 100.0
        ))
    }

    /// Why the merged run is called cut short: the inputs that were, with their reasons.
    fn interrupted(&self) -> Option<String> {
        let cut: Vec<String> = self
            .inputs
            .iter()
            .filter_map(|i| Some(format!("{} ({})", i.file, i.interrupted.as_deref()?)))
            .collect();
        if cut.is_empty() {
            return None;
        }
        Some(format!(
            "{} of {} runs {} cut short: {}",
            cut.len(),
            self.inputs.len(),
            if cut.len() == 1 { "was" } else { "were" },
            cut.join(", ")
        ))
    }

    /// The summary as the reporters get it: cut short when any input was.
    fn reported(&self) -> RunSummary {
        let mut s = self.summary.clone();
        s.meta.interrupted = self.interrupted();
        s
    }

    /// The lines above the report: what was merged, then the caveats.
    fn caveats(&self, s: &RunSummary) -> Vec<String> {
        let mut lines = vec![format!(
            "Merged {} run{} over {:.3} s, from {} (the first start) to the last end; all ran together for {:.3} s ({:.1}%):",
            self.inputs.len(),
            if self.inputs.len() == 1 { "" } else { "s" },
            self.window_s(),
            utc(s.meta.start_unix_ns),
            self.overlap_ns as f64 / 1e9,
            self.overlap() * 100.0
        )];
        for i in &self.inputs {
            let on = i
                .client_host
                .as_ref()
                .map_or(String::new(), |h| format!(" (run on {h})"));
            lines.push(format!(
                "  {}{on}: started +{:.3} s, lasted {:.3} s, -c {}, {} requests ({} complete, {:.2}/s) to {}{}",
                i.file,
                i.start_offset_s,
                i.duration_s,
                i.concurrency,
                i.requests,
                i.completed,
                i.rps,
                i.targets.join(" "),
                if i.interrupted.is_some() { ", cut short" } else { "" }
            ));
        }
        if let Some(why) = &s.meta.interrupted {
            lines.push(report::text::interrupted_line(why));
        }
        lines.extend(self.bound_warnings.iter().cloned());
        lines.extend(self.overlap_warning().map(|w| format!("WARNING: {w}")));
        lines.extend(self.notes.iter().cloned());
        lines
    }

    /// The text report: what was merged and its caveats, then ab's report of the combined
    /// load and the figures per family (`dualbench run`'s report).
    pub fn text(&self) -> String {
        let s = self.reported();
        report::text::render_with_caveats(&s, self.flags, &self.caveats(&s))
    }

    /// The merged `dualbench.run/1` document, with `merged_from`.
    pub fn json(&self) -> String {
        #[derive(Serialize)]
        struct MergedFrom<'a> {
            count: usize,
            window_s: f64,
            overlap_s: f64,
            overlap: f64,
            inputs: &'a [InputInfo],
        }
        let from = MergedFrom {
            count: self.inputs.len(),
            window_s: self.window_s(),
            overlap_s: self.overlap_ns as f64 / 1e9,
            overlap: (self.overlap() * 1e4).round() / 1e4,
            inputs: &self.inputs,
        };
        let value = serde_json::to_value(from).expect("plain data");
        let bound = self.inputs.iter().any(|i| i.bound);
        report::json::to_string_merged(
            &self.reported(),
            self.flags,
            bound,
            value,
            self.client_hosts.as_deref(),
        )
    }
}

/// Unix nanoseconds as UTC to the millisecond: `2026-11-24 20:31:02.123 UTC`.
pub fn utc(unix_ns: u64) -> String {
    let secs = (unix_ns / 1_000_000_000) as i64;
    let ms = unix_ns % 1_000_000_000 / 1_000_000;
    let (y, mo, d) = dualbench_common::clock::civil_from_days(secs.div_euclid(86_400));
    let rem = secs.rem_euclid(86_400);
    format!(
        "{y:04}-{mo:02}-{d:02} {:02}:{:02}:{:02}.{ms:03} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::from_json::{from_json, tests::run};
    use crate::report::json;
    use dualbench_common::Family;
    use serde_json::Value;

    const SEC: u64 = 1_000_000_000;

    /// An input named `name`: `run(n, spread_ms)` started at `start_s` (seconds after a
    /// fixed instant) and lasting `duration_s`.
    fn input(name: &str, n: u64, spread_ms: u64, start_s: f64, duration_s: f64) -> Input {
        let mut s = run(n, spread_ms);
        s.meta.start_unix_ns = 1_764_000_000 * SEC + (start_s * 1e9) as u64;
        s.duration_ns = (duration_s * 1e9) as u64;
        // Through the document and back, as the command reads it.
        Input {
            name: name.into(),
            run: from_json(&json::to_string(&s)).unwrap(),
        }
    }

    #[test]
    fn counts_add_per_family_and_histograms_are_the_union() {
        let a = input("a.json", 100, 5, 0.0, 1.0);
        let b = input("b.json", 300, 40, 0.0, 1.0);
        let (fa, fb) = (
            a.run.summary.families.clone(),
            b.run.summary.families.clone(),
        );
        let m = merge(vec![a, b]).unwrap();
        for f in Family::ALL {
            let (x, y, got) = (&fa[f.index()], &fb[f.index()], m.summary.family(f));
            assert_eq!(got.requests, 400);
            assert_eq!(got.requests, x.requests + y.requests);
            assert_eq!(got.completed, 360);
            assert_eq!(got.failed, 40);
            assert_eq!(got.outcome(crate::record::Outcome::ResetResponse), 40);
            assert_eq!(got.bytes, x.bytes + y.bytes);
            assert_eq!(got.connections, 400);
            assert_eq!(got.statuses[&404] + got.statuses[&200], 360);
            assert_eq!(got.statuses[&404], x.statuses[&404] + y.statuses[&404]);
            for ((phase, h), ((_, hx), (_, hy))) in got
                .hist
                .named()
                .into_iter()
                .zip(x.hist.named().into_iter().zip(y.hist.named()))
            {
                assert_eq!(h.len(), hx.len() + hy.len(), "{phase}");
            }
            // The union's median is not the mean of the two medians.
            let (p50a, p50b) = (
                x.hist.total.value_at_quantile(0.5),
                y.hist.total.value_at_quantile(0.5),
            );
            let mut union = (*x.hist.total).clone();
            union.add(&*y.hist.total).unwrap();
            let p50 = got.hist.total.value_at_quantile(0.5);
            assert_eq!(p50, union.value_at_quantile(0.5));
            assert_eq!((p50a / 1000, p50b / 1000, p50 / 1000), (2, 17, 12));
            assert_eq!((p50a + p50b) / 2 / 1000, 9);
        }
        // One family's document says so, and the JSON has the union's figures.
        let doc: Value = serde_json::from_str(&m.json()).unwrap();
        assert_eq!(doc["families"]["ipv6"]["requests"], 400);
        assert_eq!(doc["total"]["requests"], 800);
        assert_eq!(doc["families"]["ipv4"]["latency_us"]["total"]["count"], 360);
        assert_eq!(
            doc["families"]["ipv4"]["latency_us"]["total"]["p50"],
            m.summary.families[0].hist.total.value_at_quantile(0.5)
        );
    }

    #[test]
    fn the_window_is_the_union_and_the_overlap_is_measured() {
        // a: 0 to 1 s; b: 0.5 to 1.5 s: 1.5 s in all, together for 0.5 s.
        let m = merge(vec![
            input("a.json", 100, 5, 0.0, 1.0),
            input("b.json", 100, 5, 0.5, 1.0),
        ])
        .unwrap();
        assert_eq!(m.summary.duration_ns, 3 * SEC / 2);
        assert_eq!(m.overlap_ns, SEC / 2);
        assert_eq!(m.summary.meta.start_unix_ns, 1_764_000_000 * SEC);
        assert_eq!(
            m.overlap_warning().unwrap(),
            "the runs ran together for only 0.500 s of the 1.500 s from the first start to the last end (33.3%): the merged requests per second is over the whole span, not a rate they offered at once; start them together (and check the hosts' clocks agree)"
        );
        let doc: Value = serde_json::from_str(&m.json()).unwrap();
        assert_eq!(doc["duration_s"], 1.5);
        // 180 + 180 complete over 1.5 s.
        assert_eq!(doc["rps"], 240.0);
        assert_eq!(doc["merged_from"]["count"], 2);
        assert_eq!(doc["merged_from"]["overlap"], 0.3333);
        assert_eq!(doc["merged_from"]["inputs"][1]["start_offset_s"], 0.5);
        assert_eq!(doc["merged_from"]["inputs"][1]["file"], "b.json");
        let text = m.text();
        assert!(
            text.starts_with("Merged 2 runs over 1.500 s, from 2025-11-24 16:00:00.000 UTC (the first start) to the last end; all ran together for 0.500 s (33.3%):\n  a.json: started +0.000 s, lasted 1.000 s, -c 4, 200 requests (180 complete, 180.00/s) to 127.0.0.1:8080 [::1]:8080\n  b.json: started +0.500 s, lasted 1.000 s,"),
            "{text}"
        );
        assert!(text.contains("\nWARNING: the runs ran together for only 0.500 s"));
        assert!(text.contains("\nRequests per second:    240.00 [#/sec] (mean)\n"));
        // Runs one after the other never ran together; runs side by side did throughout.
        let apart = merge(vec![
            input("a.json", 10, 5, 0.0, 1.0),
            input("b.json", 10, 5, 2.0, 1.0),
        ])
        .unwrap();
        assert_eq!((apart.overlap_ns, apart.summary.duration_ns), (0, 3 * SEC));
        let together = merge(vec![
            input("a.json", 10, 5, 0.0, 1.0),
            input("b.json", 10, 5, 0.05, 0.95),
        ])
        .unwrap();
        assert_eq!(together.overlap(), 0.95);
        assert_eq!(together.overlap_warning(), None);
        assert!(!together.text().contains("WARNING"));
    }

    #[test]
    fn settings_that_may_differ_are_combined() {
        let mut a = input("a.json", 10, 5, 0.0, 1.0);
        let mut b = input("b.json", 10, 5, 0.0, 1.0);
        b.run.summary.meta.concurrency = 6;
        b.run.summary.meta.host = "::1".into();
        // b sent no IPv4 request: its IPv4 counts are none.
        b.run.summary.meta.targets.remove(0);
        b.run.summary.families[0] = Default::default();
        b.run.summary.meta.targets.push(TargetInfo {
            addr: "[::2]:8080".into(),
            family: Family::V6,
            weight: 3,
        });
        b.run.summary.meta.cpu_user_s = 0.1;
        a.run.summary.meta.time_limit_s = Some(5.0);
        let m = merge(vec![a, b]).unwrap();
        let meta = &m.summary.meta;
        assert_eq!(meta.concurrency, 10);
        assert_eq!(meta.host, "127.0.0.1, ::1");
        assert_eq!(meta.requests_limit, Some(40));
        assert_eq!(meta.time_limit_s, None);
        assert_eq!((meta.workers, meta.cores, meta.connections_peak), (4, 8, 8));
        assert_eq!((meta.cpu_user_s, meta.cpu_sys_s), (0.35, 1.0));
        let targets: Vec<(&str, u64)> = meta
            .targets
            .iter()
            .map(|t| (t.addr.as_str(), t.weight))
            .collect();
        assert_eq!(
            targets,
            [("127.0.0.1:8080", 1), ("[::1]:8080", 2), ("[::2]:8080", 3)]
        );
        // Open loops offered their rates at once: the merged rate is their sum.
        let mut a = input("a.json", 10, 5, 0.0, 1.0);
        let mut b = input("b.json", 10, 5, 0.0, 1.0);
        for (i, rate) in [(&mut a, 100.0), (&mut b, 250.5)] {
            i.run.summary.meta.model = LoadModel::Open {
                rate,
                poisson: false,
            };
        }
        let m = merge(vec![a, b]).unwrap();
        assert_eq!(
            m.summary.meta.model,
            LoadModel::Open {
                rate: 350.5,
                poisson: false
            }
        );
    }

    #[test]
    fn runs_of_different_benchmarks_are_refused_naming_both_and_the_field() {
        type Change = fn(&mut ReadRun);
        let cases: [(Change, &str); 7] = [
            (
                |r| r.summary.meta.path = "/delay/20".into(),
                "target.path (\"/\" and \"/delay/20\")",
            ),
            (
                |r| r.summary.meta.method = "HEAD".into(),
                "target.method (\"GET\" and \"HEAD\")",
            ),
            (
                |r| r.summary.meta.keepalive = true,
                "settings.keepalive (false and true)",
            ),
            (
                |r| r.summary.meta.pipeline = 4,
                "settings.pipeline (1 and 4)",
            ),
            (
                |r| {
                    r.summary.meta.model = LoadModel::Open {
                        rate: 5.0,
                        poisson: false,
                    }
                },
                "settings.model (\"closed\" and \"open\")",
            ),
            (
                |r| {
                    r.summary.meta.model = LoadModel::Open {
                        rate: 5.0,
                        poisson: false,
                    }
                },
                "settings.arrival (\"poisson\" and \"constant\")",
            ),
            (
                |r| r.flags.variable_length = true,
                "settings.variable_length (false and true)",
            ),
        ];
        for (i, (change, what)) in cases.into_iter().enumerate() {
            let mut a = input("a.json", 10, 5, 0.0, 1.0);
            if i == 5 {
                a.run.summary.meta.model = LoadModel::Open {
                    rate: 5.0,
                    poisson: true,
                };
            }
            let mut c = input("c.json", 10, 5, 0.0, 1.0);
            c.run.summary.meta.model = a.run.summary.meta.model.clone();
            change(&mut c.run);
            let b = a.clone();
            let e = merge(vec![
                a,
                Input {
                    name: "b.json".into(),
                    ..b
                },
                c,
            ])
            .unwrap_err();
            let Refusal::Mismatch(m) = &e else {
                panic!("{e}")
            };
            assert_eq!(
                e.to_string(),
                format!("a.json and c.json differ in {what}: runs of different benchmarks cannot be merged; merge runs made with the same {}", m.field)
            );
        }
        let e = same_schema([
            ("a.json", "dualbench.run/1"),
            ("b.json", "dualbench.run/1"),
            ("c.json", "dualbench.run/2"),
        ])
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "a.json and c.json differ in schema (\"dualbench.run/1\" and \"dualbench.run/2\"): runs of different benchmarks cannot be merged; merge runs made with the same schema"
        );
        assert_eq!(same_schema([("a", "dualbench.run/1")]), Ok(()));
    }

    #[test]
    fn inputs_cut_short_or_generator_bound_are_named() {
        let a = input("a.json", 10, 5, 0.0, 1.0);
        let mut b = input("b.json", 10, 5, 0.0, 1.0);
        b.run.summary.meta.interrupted = Some("interrupted by Ctrl-C (SIGINT)".into());
        // 1.9 s of CPU over 1 s on 2 workers: 95%; the merged figure is 2.65 / (1 s × 4).
        b.run.summary.meta.cpu_user_s = 1.4;
        let m = merge(vec![a, b]).unwrap();
        let text = m.text();
        assert!(text.contains("\nInterrupted: 1 of 2 runs was cut short: b.json (interrupted by Ctrl-C (SIGINT)) — figures cover what was measured until then\nWARNING: the load generator of b.json used 95% of 2 CPU cores (2 workers): results may be generator-bound; more workers (--workers) may help\n\nServer Software:"), "{text}");
        assert!(
            text.contains("to 127.0.0.1:8080 [::1]:8080, cut short\n"),
            "{text}"
        );
        let doc: Value = serde_json::from_str(&m.json()).unwrap();
        assert_eq!(
            doc["interrupted"],
            "1 of 2 runs was cut short: b.json (interrupted by Ctrl-C (SIGINT))"
        );
        assert_eq!(doc["generator"]["bound"], true);
        assert_eq!(doc["generator"]["cpu_fraction"], 0.6625);
        assert_eq!(doc["merged_from"]["inputs"][0]["bound"], false);
        assert_eq!(doc["merged_from"]["inputs"][1]["bound"], true);
        assert_eq!(doc["merged_from"]["inputs"][0]["interrupted"], Value::Null);
        assert_eq!(
            doc["merged_from"]["inputs"][1]["interrupted"],
            "interrupted by Ctrl-C (SIGINT)"
        );
    }

    #[test]
    fn one_input_is_its_own_report_again() {
        let a = input("a.json", 50, 9, 0.0, 1.0);
        let original = json::to_string(&a.run.summary);
        let m = merge(vec![a]).unwrap();
        let mut doc: Value = serde_json::from_str(&m.json()).unwrap();
        assert_eq!(doc["merged_from"]["overlap"], 1.0);
        doc.as_object_mut().unwrap().remove("merged_from");
        assert_eq!(doc, serde_json::from_str::<Value>(&original).unwrap());
        assert_eq!(m.overlap_warning(), None);
    }

    /// An input made on host `client`, with or without a `-p`/`-u` body, through its
    /// document and back.
    fn input_on(name: &str, start_s: f64, client: Option<&str>, body_sent: bool) -> Input {
        let mut s = run(20, 3);
        s.meta.start_unix_ns = 1_764_000_000 * SEC + (start_s * 1e9) as u64;
        let flags = AbFlags {
            body_sent,
            ..AbFlags::default()
        };
        Input {
            name: name.into(),
            run: from_json(&json::to_string_of_client(&s, flags, client)).unwrap(),
        }
    }

    /// Each input's client host is listed beside its file (`merged_from.inputs[].client_host`,
    /// and the text's list); the merged `client.host` names each once. ab's "Total body
    /// sent" is the inputs' request bytes added, there when any input sent a body.
    #[test]
    fn client_hosts_are_named_and_the_body_sent_is_added() {
        let m = merge(vec![
            input_on("a.json", 0.0, Some("alpha"), true),
            input_on("b.json", 0.5, Some("beta"), true),
            input_on("c.json", 0.25, Some("alpha"), true),
            input_on("old.json", 0.75, None, false),
        ])
        .unwrap();
        let text = m.text();
        assert!(
            text.contains("\n  a.json (run on alpha): started +0.000 s"),
            "{text}"
        );
        assert!(
            text.contains("\n  b.json (run on beta): started +0.500 s"),
            "{text}"
        );
        assert!(text.contains("\n  old.json: started +0.750 s"), "{text}");
        // Four runs of 80 request bytes for each of 20 requests per family.
        assert_eq!(m.summary.total().request_bytes, 4 * 2 * 20 * 80);
        assert!(text.contains("\nTotal body sent:        12800\n"), "{text}");
        assert!(text.contains(" kb/s sent\n"), "{text}");
        let doc: Value = serde_json::from_str(&m.json()).unwrap();
        assert_eq!(doc["client"]["host"], "alpha, beta");
        assert_eq!(doc["settings"]["body_sent"], true);
        let hosts: Vec<&Value> = (0..4)
            .map(|i| &doc["merged_from"]["inputs"][i]["client_host"])
            .collect();
        assert_eq!(
            hosts,
            [
                &"alpha".into(),
                &"beta".into(),
                &"alpha".into(),
                &Value::Null
            ]
        );
        for f in ["ipv4", "ipv6"] {
            assert_eq!(doc["families"][f]["request_bytes"], 4 * 20 * 80);
        }
        // No input sent a body: no such line; no input named its host: null.
        let m = merge(vec![
            input_on("a.json", 0.0, None, false),
            input_on("b.json", 0.5, None, false),
        ])
        .unwrap();
        assert!(!m.text().contains("Total body sent"));
        assert!(!m.text().contains("(run on"));
        let doc: Value = serde_json::from_str(&m.json()).unwrap();
        assert_eq!(doc["client"]["host"], Value::Null);
        assert_eq!(doc["settings"]["body_sent"], false);
    }

    #[test]
    fn different_document_lengths_are_noted() {
        let a = input("a.json", 10, 5, 0.0, 1.0);
        let mut b = input("b.json", 10, 5, 0.0, 1.0);
        b.run.summary.meta.document_length = Some(50);
        let m = merge(vec![a, b]).unwrap();
        assert_eq!(m.summary.meta.document_length, Some(45));
        assert!(m.text().contains("\nNote: the inputs' documents differ in length (45 bytes in a.json, 50 bytes in b.json); each counted its Length failures against its own, and Document Length is the first's\n"));
    }

    #[test]
    fn utc_times() {
        assert_eq!(utc(0), "1970-01-01 00:00:00.000 UTC");
        assert_eq!(
            utc(1_764_015_062_123_999_999),
            "2025-11-24 20:11:02.123 UTC"
        );
    }
}
