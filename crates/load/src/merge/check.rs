//! What `dualbench merge` checks of each input before adding it: that the document agrees
//! with itself as every run's document does, and that its counts, added to the inputs'
//! before it, still fit in a count. A hand-edited or damaged document is refused in one
//! line naming the file and the field ([`Damaged`]), instead of wrapping (or panicking) as
//! its absurd counts are added.
//!
//! Every check here is of something the engine guarantees of every run, complete or cut
//! short, open or closed loop, with keep-alive or not (`crates/load/src/engine/worker`: a
//! request is counted once, when it ends, as completed or failed by its ending; a
//! completed one adds one value to each of its five per-request phases and one status),
//! and that documents written before the fields added since (docs/json-schema.md's
//! "Added" markers) and merged documents keep too. Things that only usually hold (late
//! requests at most the requests, connect values at most the connections) are not checked.
//!
//! Pure: a document's text and what it was read into in, a refusal or nothing out.

use crate::record::Outcome;
use crate::report::from_json::ReadRun;
use crate::report::json::SCHEMA;
use crate::summary::{FamilyStats, LoadModel, RunSummary};
use dualbench_common::Family;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;

/// What is wrong with an input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Two of its figures contradict each other, as no run's do.
    Inconsistent,
    /// A sum of its figures and the inputs' before it (or of its own two families) is
    /// past what the figure can hold; the word is what kind of figure (`counts`, `times`).
    Overflow(&'static str),
    /// A field the checks read is missing or of the wrong type.
    Invalid,
}

/// An input refused: `file` (as given), its `field` (the document's path, as
/// docs/json-schema.md names it: `families.ipv4.requests`), and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damaged {
    pub file: String,
    pub field: String,
    pub what: String,
    pub fault: Fault,
}

impl fmt::Display for Damaged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let again = "merge the documents as 'dualbench run --format json' wrote them";
        match self.fault {
            Fault::Inconsistent => write!(
                f,
                "{}: {}: {}: no run writes that (was the document edited?); {again}",
                self.file, self.field, self.what
            ),
            Fault::Overflow(figures) => write!(
                f,
                "{}: {}: {}: the document's {figures} cannot be real (was it edited?); {again}",
                self.file, self.field, self.what
            ),
            Fault::Invalid => write!(
                f,
                "{}: not a valid {SCHEMA} document: {}",
                self.file, self.what
            ),
        }
    }
}

fn damaged(file: &str, field: impl Into<String>, what: String, fault: Fault) -> Damaged {
    Damaged {
        file: file.to_string(),
        field: field.into(),
        what,
        fault,
    }
}

/// How many counts [`counts`] lists.
const COUNTS: usize = 28;

/// Every count of a family by its place in the document's `<family>` object, in a fixed
/// order; statuses apart (their codes differ from run to run). A histogram counts as its
/// number of values (`latency_us.<phase>.count`): they are added as the counts are.
fn counts(f: &FamilyStats) -> [(&'static str, u64); COUNTS] {
    // Every field by name, so that a field added to FamilyStats is a compile error here
    // until it is checked too.
    let FamilyStats {
        requests,
        completed,
        failed,
        non_2xx,
        length_mismatch,
        outcomes,
        statuses: _,
        bytes,
        body_bytes,
        request_bytes,
        connections,
        closing_responses,
        late,
        unsent,
        hist,
    } = f;
    let o = |outcome: Outcome| outcomes[outcome.index()];
    [
        ("requests", *requests),
        ("completed", *completed),
        ("failed", *failed),
        ("non_2xx", *non_2xx),
        ("length_mismatch", *length_mismatch),
        ("bytes", *bytes),
        ("html_bytes", *body_bytes),
        ("request_bytes", *request_bytes),
        ("connections", *connections),
        ("closing_responses", *closing_responses),
        ("late", *late),
        ("unsent", *unsent),
        ("close.normal", o(Outcome::Normal)),
        ("close_detail.reset_connect", o(Outcome::ResetConnect)),
        ("close_detail.reset_request", o(Outcome::ResetRequest)),
        ("close_detail.reset_response", o(Outcome::ResetResponse)),
        ("close_detail.timeout_connect", o(Outcome::TimeoutConnect)),
        ("close_detail.timeout_response", o(Outcome::TimeoutResponse)),
        ("close.refused", o(Outcome::Refused)),
        ("close.unreachable", o(Outcome::Unreachable)),
        ("close.protocol_error", o(Outcome::ProtocolError)),
        ("latency_us.connect.count", hist.connect.len()),
        ("latency_us.ttfb.count", hist.waiting.len()),
        ("latency_us.processing.count", hist.processing.len()),
        ("latency_us.total.count", hist.total.len()),
        ("latency_us.service.count", hist.service.len()),
        ("latency_us.transfer.count", hist.transfer.len()),
        ("latency_us.lifetime.count", hist.lifetime.len()),
    ]
}

/// The most a count holds: 64 bits.
const MOST: u128 = u64::MAX as u128;

/// The most a count named `name` (as [`counts`] names them) holds, and what holds it. A
/// histogram's values are fewer: its document form (HdrHistogram's V2) takes counts of
/// 63 bits, and a histogram of more values could not be written out.
fn most(name: &str) -> (u128, &'static str) {
    if name.starts_with("latency_us.") {
        (i64::MAX as u128, "a histogram")
    } else {
        (MOST, "a count")
    }
}

/// `run` (the input `file`) agrees with itself as a run's figures do, and its two
/// families add up (its `total`) within a count. What [`super::Merger`] checks of every
/// input, before anything of it is added.
pub fn consistent(file: &str, run: &ReadRun) -> Result<(), Damaged> {
    let s = &run.summary;
    let used = s.families_used();
    for family in Family::ALL {
        let at = format!("families.{}", family.key());
        let f = s.family(family);
        if !used.contains(&family) {
            if !f.statuses.is_empty() || counts(f).iter().any(|(_, n)| *n > 0) {
                return Err(damaged(
                    file,
                    at,
                    format!("{family} counts, and targets has no {family} address"),
                    Fault::Inconsistent,
                ));
            }
            continue;
        }
        family_consistent(f, s, run.flags.variable_length).map_err(|(field, what)| {
            damaged(file, format!("{at}.{field}"), what, Fault::Inconsistent)
        })?;
    }
    // Its `total` (what every report of it adds up) fits.
    let [a, b] = &s.families;
    for ((field, x), (_, y)) in counts(a).into_iter().zip(counts(b)) {
        let (most, holder) = most(field);
        if x as u128 + y as u128 > most {
            return Err(damaged(
                file,
                format!("total.{field}"),
                format!("the families' {x} and {y} add up to more than {holder} holds ({most})"),
                Fault::Overflow("counts"),
            ));
        }
    }
    for (code, x) in &a.statuses {
        let y = b.statuses.get(code).copied().unwrap_or(0);
        if *x as u128 + y as u128 > MOST {
            return Err(damaged(
                file,
                format!("total.statuses.{code}"),
                format!("the families' {x} and {y} add up to more than a count holds ({MOST})"),
                Fault::Overflow("counts"),
            ));
        }
    }
    if s.meta.start_unix_ns.checked_add(s.duration_ns).is_none() {
        return Err(damaged(
            file,
            "duration_s",
            format!(
                "from start_unix_ns {}, the run ends past the last instant 64-bit nanoseconds hold ({})",
                s.meta.start_unix_ns,
                super::utc(u64::MAX)
            ),
            Fault::Overflow("times"),
        ));
    }
    Ok(())
}

/// One used family's invariants: the field (under `families.<family>.`) and what is wrong.
fn family_consistent(
    f: &FamilyStats,
    s: &RunSummary,
    variable_length: bool,
) -> Result<(), (String, String)> {
    let fail = |field: &str, what: String| Err((field.to_string(), what));
    // Every request ended one way: completed (NORMAL) or failed (any other ending).
    if f.requests as u128 != f.completed as u128 + f.failed as u128 {
        return fail(
            "requests",
            format!(
                "{} is not completed + failed ({} + {})",
                f.requests, f.completed, f.failed
            ),
        );
    }
    let normal = f.outcome(Outcome::Normal);
    if normal != f.completed {
        return fail(
            "close.normal",
            format!("{normal} is not completed ({})", f.completed),
        );
    }
    let other: u128 = Outcome::ALL
        .iter()
        .filter(|o| !o.is_normal())
        .map(|o| f.outcome(*o) as u128)
        .sum();
    if other != f.failed as u128 {
        return fail(
            "failed",
            format!(
                "{} is not the sum of the endings other than close.normal ({other})",
                f.failed
            ),
        );
    }
    // One status per completed request.
    let statuses: u128 = f.statuses.values().map(|n| *n as u128).sum();
    if statuses != f.completed as u128 {
        return fail(
            "statuses",
            format!(
                "they add up to {statuses}, not to completed ({})",
                f.completed
            ),
        );
    }
    let not_2xx: u128 = f
        .statuses
        .iter()
        .filter(|(code, _)| !(200..300).contains(*code))
        .map(|(_, n)| *n as u128)
        .sum();
    if not_2xx != f.non_2xx as u128 {
        return fail(
            "non_2xx",
            format!(
                "{} is not the statuses outside 2xx added ({not_2xx})",
                f.non_2xx
            ),
        );
    }
    if f.length_mismatch > f.completed {
        return fail(
            "length_mismatch",
            format!(
                "{} is more than completed ({})",
                f.length_mismatch, f.completed
            ),
        );
    }
    if variable_length && f.length_mismatch > 0 {
        return fail(
            "length_mismatch",
            format!(
                "{} with settings.variable_length, where no response is a Length failure",
                f.length_mismatch
            ),
        );
    }
    if f.closing_responses > f.completed {
        return fail(
            "closing_responses",
            format!(
                "{} is more than completed ({})",
                f.closing_responses, f.completed
            ),
        );
    }
    if !s.meta.keepalive && f.closing_responses > 0 {
        return fail(
            "closing_responses",
            format!(
                "{} without keep-alive (settings.keepalive false), where it is always 0",
                f.closing_responses
            ),
        );
    }
    // Each completed request adds one value to each per-request phase.
    for (phase, h) in [
        ("ttfb", &f.hist.waiting),
        ("processing", &f.hist.processing),
        ("total", &f.hist.total),
        ("service", &f.hist.service),
        ("transfer", &f.hist.transfer),
    ] {
        if h.len() != f.completed {
            return fail(
                &format!("histograms.{phase}"),
                format!(
                    "it holds {} values, not one per completed request ({})",
                    h.len(),
                    f.completed
                ),
            );
        }
    }
    // A closed loop has no schedule: no request is late, no slot unsent.
    if s.meta.model == LoadModel::Closed {
        for (field, n) in [("late", f.late), ("unsent", f.unsent)] {
            if n > 0 {
                return fail(
                    field,
                    format!("{n} in a closed-loop run (settings.model \"closed\"), where it is always 0"),
                );
            }
        }
    }
    Ok(())
}

/// `other` (the input `file`) can be added to `merged` (the inputs before it): every sum
/// of a count, per family and of both, and of the settings that are added, fits.
pub fn addable(file: &str, merged: &RunSummary, other: &RunSummary) -> Result<(), Damaged> {
    let overflow = |field: String, x: u128, y: u128, (most, holder): (u128, &str)| {
        Err(damaged(
            file,
            field,
            format!(
                "{x} here and {y} in the inputs before it add up to more than {holder} holds ({most})"
            ),
            Fault::Overflow("counts"),
        ))
    };
    let mut totals = [(0u128, 0u128); COUNTS];
    for family in Family::ALL {
        let (m, o) = (merged.family(family), other.family(family));
        for (i, ((field, y), (_, x))) in counts(m).into_iter().zip(counts(o)).enumerate() {
            let (x, y) = (x as u128, y as u128);
            if x + y > most(field).0 {
                let at = format!("families.{}.{field}", family.key());
                return overflow(at, x, y, most(field));
            }
            totals[i].0 += x;
            totals[i].1 += y;
        }
        for (code, x) in &o.statuses {
            let y = m.statuses.get(code).copied().unwrap_or(0);
            if *x as u128 + y as u128 > MOST {
                let at = format!("families.{}.statuses.{code}", family.key());
                return overflow(at, *x as u128, y as u128, most("statuses"));
            }
        }
    }
    // Both families of the merged run: what its `total` (and every report) adds up.
    let names = counts(&FamilyStats::default()).map(|(name, _)| name);
    for (name, (x, y)) in names.into_iter().zip(totals) {
        if x + y > most(name).0 {
            return overflow(format!("total.{name}"), x, y, most(name));
        }
    }
    let mut codes: BTreeMap<u16, (u128, u128)> = BTreeMap::new();
    for family in Family::ALL {
        for (code, n) in &other.family(family).statuses {
            codes.entry(*code).or_default().0 += *n as u128;
        }
        for (code, n) in &merged.family(family).statuses {
            codes.entry(*code).or_default().1 += *n as u128;
        }
    }
    for (code, (x, y)) in codes {
        if x + y > MOST {
            return overflow(format!("total.statuses.{code}"), x, y, most("statuses"));
        }
    }
    // The settings the merge adds.
    let (m, o) = (&merged.meta, &other.meta);
    let mut added = vec![
        (
            "settings.concurrency".to_string(),
            o.concurrency,
            m.concurrency,
        ),
        ("settings.workers".to_string(), o.workers, m.workers),
        ("generator.cores".to_string(), o.cores, m.cores),
        (
            "generator.connections_peak".to_string(),
            o.connections_peak,
            m.connections_peak,
        ),
    ];
    if let (Some(x), Some(y)) = (o.requests_limit, m.requests_limit) {
        added.push(("settings.requests_limit".to_string(), x, y));
    }
    for (i, t) in o.targets.iter().enumerate() {
        if let Some(have) = m
            .targets
            .iter()
            .find(|have| have.addr == t.addr && have.family == t.family)
        {
            added.push((format!("targets[{i}].weight"), t.weight, have.weight));
        }
    }
    for (field, x, y) in added {
        if x as u128 + y as u128 > MOST {
            return overflow(field, x as u128, y as u128, most("settings"));
        }
    }
    let mut reals = vec![
        ("generator.cpu_user_s", o.cpu_user_s, m.cpu_user_s),
        ("generator.cpu_sys_s", o.cpu_sys_s, m.cpu_sys_s),
    ];
    if let (LoadModel::Open { rate: x, .. }, LoadModel::Open { rate: y, .. }) = (&o.model, &m.model)
    {
        reals.push(("settings.rate", *x, *y));
    }
    for (field, x, y) in reals {
        // Summed, and (CPU times) rounded to whole microseconds, as the merge does.
        if !((x + y) * 1e6).is_finite() {
            return Err(damaged(
                file,
                field,
                format!(
                    "{x} here and {y} in the inputs before it add up to more than a number holds"
                ),
                Fault::Overflow("figures"),
            ));
        }
    }
    Ok(())
}

/// The figures of `text` (the input `file`, read into `run`) that the reader derives
/// again rather than reads: `requests`, `bytes` and the `total` object (the families
/// added), each family's `close.reset` and `close.timeout` (their phases added) and
/// `latency_us.<phase>.count` (its histogram's values). A run writes them from the same
/// counts, so they agree; a document where they do not was edited (or damaged).
pub fn agrees(file: &str, text: &str, run: &ReadRun) -> Result<(), Damaged> {
    let doc: Derived =
        serde_json::from_str(text).map_err(|e| damaged(file, "", e.to_string(), Fault::Invalid))?;
    let s = &run.summary;
    let inconsistent =
        |field: String, what: String| Err(damaged(file, field, what, Fault::Inconsistent));
    let used = s.families_used();
    for family in Family::ALL {
        let listed = doc.families.contains_key(family.key());
        if listed != used.contains(&family) {
            let what = if listed {
                format!("{family} counts, and targets has no {family} address")
            } else {
                format!("no {family} counts, and targets has an {family} address")
            };
            return inconsistent(format!("families.{}", family.key()), what);
        }
    }
    for (key, fam) in &doc.families {
        let Some(family) = Family::ALL.into_iter().find(|f| f.key() == key) else {
            continue;
        };
        let at = format!("families.{key}");
        for ((field, written), (_, read)) in fam.counts().into_iter().zip(counts(s.family(family)))
        {
            if written != read {
                // Only a histogram's count is not read itself.
                let what = match field
                    .strip_prefix("latency_us.")
                    .and_then(|f| f.strip_suffix(".count"))
                {
                    Some(phase) => format!(
                        "{written} is not the number of values in histograms.{phase} ({read})"
                    ),
                    None => format!("{written} is not what was read ({read})"),
                };
                return inconsistent(format!("{at}.{field}"), what);
            }
        }
        fam.close_sums().map_err(|(field, what)| {
            damaged(file, format!("{at}.{field}"), what, Fault::Inconsistent)
        })?;
    }
    let t = &doc.total;
    let [a, b] = &s.families;
    let sums: Vec<(&str, u128)> = counts(a)
        .into_iter()
        .zip(counts(b))
        .map(|((name, x), (_, y))| (name, x as u128 + y as u128))
        .collect();
    let sum_of = |name: &str| sums.iter().find(|(n, _)| *n == name).map_or(0, |(_, v)| *v);
    for ((field, written), (_, sum)) in t.counts().into_iter().zip(&sums) {
        if written as u128 != *sum {
            return inconsistent(
                format!("total.{field}"),
                format!("{written} is not the families' added ({sum})"),
            );
        }
    }
    t.close_sums().map_err(|(field, what)| {
        damaged(file, format!("total.{field}"), what, Fault::Inconsistent)
    })?;
    let mut codes: BTreeMap<String, (Option<u64>, u128)> = BTreeMap::new();
    for (code, n) in &t.statuses {
        codes.entry(code.clone()).or_default().0 = Some(*n);
    }
    for f in [a, b] {
        for (code, n) in &f.statuses {
            codes.entry(code.to_string()).or_default().1 += *n as u128;
        }
    }
    for (code, (written, sum)) in codes {
        if written.map(u128::from) != Some(sum) {
            let written = written.map_or("none".to_string(), |n| n.to_string());
            return inconsistent(
                format!("total.statuses.{code}"),
                format!("{written} is not the families' added ({sum})"),
            );
        }
    }
    for (field, written, name) in [
        ("requests.total", doc.requests.total, "requests"),
        ("requests.completed", doc.requests.completed, "completed"),
        ("requests.failed", doc.requests.failed, "failed"),
        ("requests.non_2xx", doc.requests.non_2xx, "non_2xx"),
        ("bytes.total", doc.bytes.total, "bytes"),
        ("bytes.html", doc.bytes.html, "html_bytes"),
    ] {
        let sum = sum_of(name);
        if written as u128 != sum {
            return inconsistent(
                field.to_string(),
                format!("{written} is not the families' {name} added ({sum})"),
            );
        }
    }
    Ok(())
}

/// The derived figures of a document, as `report/json.rs` writes them.
#[derive(Deserialize)]
struct Derived {
    requests: RequestsDoc,
    bytes: BytesDoc,
    families: BTreeMap<String, FamilyDoc>,
    total: FamilyDoc,
}

#[derive(Deserialize)]
struct RequestsDoc {
    total: u64,
    completed: u64,
    failed: u64,
    non_2xx: u64,
}

#[derive(Deserialize)]
struct BytesDoc {
    total: u64,
    html: u64,
}

/// A `<family>` object's counts.
#[derive(Deserialize)]
struct FamilyDoc {
    requests: u64,
    completed: u64,
    failed: u64,
    non_2xx: u64,
    length_mismatch: u64,
    bytes: u64,
    html_bytes: u64,
    request_bytes: u64,
    connections: u64,
    /// Added 2026-11-24.
    #[serde(default)]
    closing_responses: u64,
    late: u64,
    unsent: u64,
    close: CloseDoc,
    close_detail: CloseDetailDoc,
    statuses: BTreeMap<String, u64>,
    latency_us: PhasesDoc,
}

#[derive(Deserialize)]
struct CloseDoc {
    normal: u64,
    reset: u64,
    timeout: u64,
    refused: u64,
    unreachable: u64,
    protocol_error: u64,
}

#[derive(Deserialize)]
struct CloseDetailDoc {
    reset_connect: u64,
    reset_request: u64,
    reset_response: u64,
    timeout_connect: u64,
    timeout_response: u64,
}

#[derive(Deserialize)]
struct PhasesDoc {
    connect: CountDoc,
    ttfb: CountDoc,
    processing: CountDoc,
    total: CountDoc,
    service: CountDoc,
    transfer: CountDoc,
    lifetime: CountDoc,
}

#[derive(Deserialize)]
struct CountDoc {
    count: u64,
}

impl FamilyDoc {
    /// The counts as written, in [`counts`]' order.
    fn counts(&self) -> [(&'static str, u64); COUNTS] {
        let (c, d, l) = (&self.close, &self.close_detail, &self.latency_us);
        [
            ("requests", self.requests),
            ("completed", self.completed),
            ("failed", self.failed),
            ("non_2xx", self.non_2xx),
            ("length_mismatch", self.length_mismatch),
            ("bytes", self.bytes),
            ("html_bytes", self.html_bytes),
            ("request_bytes", self.request_bytes),
            ("connections", self.connections),
            ("closing_responses", self.closing_responses),
            ("late", self.late),
            ("unsent", self.unsent),
            ("close.normal", c.normal),
            ("close_detail.reset_connect", d.reset_connect),
            ("close_detail.reset_request", d.reset_request),
            ("close_detail.reset_response", d.reset_response),
            ("close_detail.timeout_connect", d.timeout_connect),
            ("close_detail.timeout_response", d.timeout_response),
            ("close.refused", c.refused),
            ("close.unreachable", c.unreachable),
            ("close.protocol_error", c.protocol_error),
            ("latency_us.connect.count", l.connect.count),
            ("latency_us.ttfb.count", l.ttfb.count),
            ("latency_us.processing.count", l.processing.count),
            ("latency_us.total.count", l.total.count),
            ("latency_us.service.count", l.service.count),
            ("latency_us.transfer.count", l.transfer.count),
            ("latency_us.lifetime.count", l.lifetime.count),
        ]
    }

    /// `close.reset` and `close.timeout` are their phases' (`close_detail`) added.
    fn close_sums(&self) -> Result<(), (String, String)> {
        let d = &self.close_detail;
        let resets = [d.reset_connect, d.reset_request, d.reset_response];
        let timeouts = [d.timeout_connect, d.timeout_response];
        for (field, written, phases, names) in [
            (
                "close.reset",
                self.close.reset,
                &resets[..],
                "reset_connect, reset_request and reset_response",
            ),
            (
                "close.timeout",
                self.close.timeout,
                &timeouts[..],
                "timeout_connect and timeout_response",
            ),
        ] {
            let sum: u128 = phases.iter().map(|n| *n as u128).sum();
            if written as u128 != sum {
                return Err((
                    field.to_string(),
                    format!("{written} is not close_detail's {names} added ({sum})"),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge::{merge, Input, Refusal};
    use crate::report::from_json::{from_json, tests::run};
    use crate::report::json;
    use crate::summary::TargetInfo;
    use serde_json::Value;

    const MAX: u64 = u64::MAX;
    const AGAIN: &str = "merge the documents as 'dualbench run --format json' wrote them";

    /// `s` through its document and back, as the command reads it, named `name`.
    fn input(name: &str, s: &RunSummary) -> Input {
        Input {
            name: name.into(),
            run: from_json(&json::to_string(s)).unwrap(),
        }
    }

    /// Two runs of 20 requests per family (18 complete, 2 reset), a second apart.
    fn two() -> (RunSummary, RunSummary) {
        let a = run(20, 3);
        let mut b = run(20, 3);
        b.meta.start_unix_ns += 1_000_000_000;
        (a, b)
    }

    /// Set the count `name` (as [`counts`] names it) of `f` to `n`.
    fn set(f: &mut FamilyStats, name: &str, n: u64) {
        if let Some(phase) = name
            .strip_prefix("latency_us.")
            .and_then(|p| p.strip_suffix(".count"))
        {
            let h = match phase {
                "connect" => &mut f.hist.connect,
                "ttfb" => &mut f.hist.waiting,
                "processing" => &mut f.hist.processing,
                "total" => &mut f.hist.total,
                "service" => &mut f.hist.service,
                "transfer" => &mut f.hist.transfer,
                "lifetime" => &mut f.hist.lifetime,
                other => panic!("phase {other}"),
            };
            *h = Default::default();
            h.record_n(1_000, n).unwrap();
            return;
        }
        if name.starts_with("close") {
            let o = Outcome::ALL
                .into_iter()
                .find(|o| name.ends_with(o.key()))
                .unwrap();
            f.outcomes[o.index()] = n;
            return;
        }
        *match name {
            "requests" => &mut f.requests,
            "completed" => &mut f.completed,
            "failed" => &mut f.failed,
            "non_2xx" => &mut f.non_2xx,
            "length_mismatch" => &mut f.length_mismatch,
            "bytes" => &mut f.bytes,
            "html_bytes" => &mut f.body_bytes,
            "request_bytes" => &mut f.request_bytes,
            "connections" => &mut f.connections,
            "closing_responses" => &mut f.closing_responses,
            "late" => &mut f.late,
            "unsent" => &mut f.unsent,
            other => panic!("count {other}"),
        } = n;
    }

    /// A family of `n` requests that all completed with 200, consistent however large.
    fn completed(n: u64) -> FamilyStats {
        let mut f = FamilyStats::default();
        for name in [
            "requests",
            "completed",
            "close.normal",
            "latency_us.ttfb.count",
            "latency_us.processing.count",
            "latency_us.total.count",
            "latency_us.service.count",
            "latency_us.transfer.count",
        ] {
            set(&mut f, name, n);
        }
        f.statuses.insert(200, n);
        f
    }

    #[test]
    fn every_count_is_named_as_the_document_names_it() {
        let doc: Value = serde_json::from_str(&json::to_string(&run(20, 3))).unwrap();
        let family = &doc["families"]["ipv4"];
        let s = run(20, 3);
        for (name, n) in counts(&s.families[0]) {
            let mut at = family;
            for key in name.split('.') {
                at = &at[key];
            }
            assert_eq!(at.as_u64(), Some(n), "{name}");
        }
        // And as the `total` object is read for the check of derived figures.
        let derived: Derived = serde_json::from_value(doc.clone()).unwrap();
        let read = counts(&s.families[0]).map(|(name, _)| name);
        assert_eq!(derived.total.counts().map(|(name, _)| name), read);
    }

    /// A family of `n` requests that all failed (refused): consistent however large, and
    /// with no histogram.
    fn refused(n: u64) -> FamilyStats {
        let mut f = FamilyStats::default();
        for name in ["requests", "failed", "close.refused"] {
            set(&mut f, name, n);
        }
        f
    }

    #[test]
    fn every_count_that_would_pass_the_largest_is_refused_by_name() {
        for name in counts(&FamilyStats::default()).map(|(name, _)| name) {
            let (most, holder) = most(name);
            let top = most as u64;
            let (mut a, mut b) = two();
            set(&mut a.families[1], name, top);
            set(&mut b.families[1], name, 1);
            let e = addable("b.json", &a, &b).unwrap_err();
            assert_eq!(e.fault, Fault::Overflow("counts"));
            assert_eq!(
                e.to_string(),
                format!("b.json: families.ipv6.{name}: 1 here and {top} in the inputs before it add up to more than {holder} holds ({top}): the document's counts cannot be real (was it edited?); {AGAIN}")
            );
            // One less fits in the family; with the other family's, not in the total.
            set(&mut a.families[1], name, top - 1);
            set(&mut b.families[0], name, 1);
            let e = addable("b.json", &a, &b).unwrap_err();
            assert_eq!(e.field, format!("total.{name}"), "{e}");
        }
        let (mut a, mut b) = two();
        a.families[0].statuses.insert(200, MAX);
        let e = addable("b.json", &a, &b).unwrap_err();
        assert_eq!(e.field, "families.ipv4.statuses.200");
        a.families[0].statuses.insert(200, MAX - 16);
        b.families[1].statuses.remove(&200);
        let e = addable("b.json", &a, &b).unwrap_err();
        assert_eq!(e.field, "total.statuses.200");
        // Whole runs, through their documents and merge: each consistent, too large to
        // add to the other.
        let (mut a, mut b) = two();
        a.families = [refused(MAX), FamilyStats::default()];
        b.families = [refused(MAX), FamilyStats::default()];
        let (a, b) = (input("a.json", &a), input("b.json", &b));
        let e = merge(vec![a, b]).unwrap_err();
        assert_eq!(e.to_string(), format!("b.json: families.ipv4.requests: {MAX} here and {MAX} in the inputs before it add up to more than a count holds ({MAX}): the document's counts cannot be real (was it edited?); {AGAIN}"));
        let i63 = i64::MAX as u64;
        let (mut a, mut b) = two();
        a.families = [completed(i63), FamilyStats::default()];
        b.families = [completed(1), FamilyStats::default()];
        let e = merge(vec![input("a.json", &a), input("b.json", &b)]).unwrap_err();
        assert_eq!(e.to_string(), format!("b.json: families.ipv4.latency_us.ttfb.count: 1 here and {i63} in the inputs before it add up to more than a histogram holds ({i63}): the document's counts cannot be real (was it edited?); {AGAIN}"));
    }

    #[test]
    fn the_two_families_of_the_merged_run_must_fit_together() {
        let (mut a, mut b) = two();
        let half = 1u64 << 63;
        a.families = [refused(half), FamilyStats::default()];
        b.families = [FamilyStats::default(), refused(half)];
        let e = merge(vec![input("a.json", &a), input("b.json", &b)]).unwrap_err();
        assert_eq!(e.to_string(), format!("b.json: total.requests: {half} here and {half} in the inputs before it add up to more than a count holds ({MAX}): the document's counts cannot be real (was it edited?); {AGAIN}"));
        // Histograms: the merged run's `total` one could not be written out.
        let quarter = 1u64 << 62;
        a.families = [completed(quarter), FamilyStats::default()];
        b.families = [FamilyStats::default(), completed(quarter)];
        let e = merge(vec![input("a.json", &a), input("b.json", &b)]).unwrap_err();
        assert!(e.to_string().starts_with(&format!("b.json: total.latency_us.ttfb.count: {quarter} here and {quarter} in the inputs before it add up to more than a histogram holds ({})", i64::MAX)), "{e}");
        // One run's own families, too (its report adds them).
        // (Not through its document: writing it adds them.)
        let mut one = input("a.json", &a);
        one.run.summary.families = [refused(half), refused(half)];
        let e = merge(vec![one]).unwrap_err();
        assert_eq!(e.to_string(), format!("a.json: total.requests: the families' {half} and {half} add up to more than a count holds ({MAX}): the document's counts cannot be real (was it edited?); {AGAIN}"));
    }

    #[test]
    fn the_settings_that_are_added_must_fit() {
        type Change = fn(&mut RunSummary);
        let cases: [(Change, &str, &str); 9] = [
            (|s| s.meta.concurrency = MAX, "settings.concurrency", "4 here and 18446744073709551615 in the inputs before it add up to more than a count holds (18446744073709551615)"),
            (|s| s.meta.workers = MAX, "settings.workers", "2 here and 18446744073709551615 in"),
            (|s| s.meta.cores = MAX, "generator.cores", "4 here and 18446744073709551615 in"),
            (|s| s.meta.connections_peak = MAX, "generator.connections_peak", "4 here and 18446744073709551615 in"),
            (|s| s.meta.requests_limit = Some(MAX), "settings.requests_limit", "40 here and 18446744073709551615 in"),
            (|s| s.meta.targets[1].weight = MAX, "targets[1].weight", "1 here and 18446744073709551615 in"),
            (|s| s.meta.cpu_user_s = f64::MAX, "generator.cpu_user_s", "0.25 here and 1797693134862315"),
            (|s| s.meta.cpu_sys_s = 1e303, "generator.cpu_sys_s", "0.5 here and 1000000000000000"),
            (
                |s| {
                    s.meta.model = LoadModel::Open {
                        rate: f64::MAX,
                        poisson: false,
                    }
                },
                "settings.rate",
                "1797693134862315",
            ),
        ];
        for (change, field, what) in cases {
            let (mut a, mut b) = two();
            change(&mut a);
            if let LoadModel::Open { .. } = a.meta.model {
                b.meta.model = LoadModel::Open {
                    rate: 1.0,
                    poisson: false,
                };
            }
            let e = merge(vec![input("a.json", &a), input("b.json", &b)])
                .err()
                .unwrap_or_else(|| panic!("{field}"));
            let Refusal::Damaged(d) = &e else {
                panic!("{e}")
            };
            assert_eq!(d.field, field, "{e}");
            assert!(d.what.contains(what), "{e}");
            assert!(
                e.to_string().starts_with(&format!("b.json: {field}: ")),
                "{e}"
            );
        }
        let (mut a, b) = two();
        a.meta.cpu_sys_s = 1e303;
        let e = merge(vec![input("a.json", &a), input("b.json", &b)])
            .err()
            .unwrap();
        assert!(e.to_string().ends_with(&format!("add up to more than a number holds: the document's figures cannot be real (was it edited?); {AGAIN}")), "{e}");
        // A target of its own is not added to another's weight.
        let (mut a, mut b) = two();
        a.meta.targets[1].weight = MAX;
        b.meta.targets[1] = TargetInfo {
            addr: "[::2]:8080".into(),
            family: Family::V6,
            weight: 1,
        };
        assert!(merge(vec![input("a.json", &a), input("b.json", &b)]).is_ok());
    }

    #[test]
    fn a_run_that_would_end_after_2554_is_refused() {
        let mut s = run(20, 3);
        s.duration_ns = MAX - s.meta.start_unix_ns + 2_000_000_000;
        let e = merge(vec![input("a.json", &s)]).err().unwrap();
        assert_eq!(e.to_string(), format!("a.json: duration_s: from start_unix_ns 1764000000123456789, the run ends past the last instant 64-bit nanoseconds hold (2554-07-21 23:34:33.709 UTC): the document's times cannot be real (was it edited?); {AGAIN}"));
        s.duration_ns -= 4_000_000_000;
        assert!(merge(vec![input("a.json", &s)]).is_ok());
    }

    /// Each invariant, broken by one change of an input: refused naming the field.
    #[test]
    fn what_contradicts_itself_is_refused_by_field() {
        type Change = fn(&mut Input);
        let cases: [(Change, &str); 14] = [
            (|i| i.run.summary.families[0].requests += 1, "families.ipv4.requests: 21 is not completed + failed (18 + 2)"),
            (
                |i| {
                    let f = &mut i.run.summary.families[0];
                    f.outcomes[Outcome::Normal.index()] -= 1;
                    f.outcomes[Outcome::Refused.index()] += 1;
                },
                "families.ipv4.close.normal: 17 is not completed (18)",
            ),
            (
                |i| i.run.summary.families[1].outcomes[Outcome::TimeoutConnect.index()] += 1,
                "families.ipv6.failed: 2 is not the sum of the endings other than close.normal (3)",
            ),
            (|i| *i.run.summary.families[0].statuses.get_mut(&200).unwrap() += 1, "families.ipv4.statuses: they add up to 19, not to completed (18)"),
            (|i| i.run.summary.families[0].non_2xx += 1, "families.ipv4.non_2xx: 4 is not the statuses outside 2xx added (3)"),
            (|i| i.run.summary.families[0].length_mismatch = 19, "families.ipv4.length_mismatch: 19 is more than completed (18)"),
            (
                |i| {
                    i.run.flags.variable_length = true;
                    i.run.summary.families[1].length_mismatch = 1;
                },
                "families.ipv6.length_mismatch: 1 with settings.variable_length, where no response is a Length failure",
            ),
            (|i| i.run.summary.families[0].closing_responses = 1, "families.ipv4.closing_responses: 1 without keep-alive (settings.keepalive false), where it is always 0"),
            (
                |i| {
                    i.run.summary.meta.keepalive = true;
                    i.run.summary.families[0].closing_responses = 19;
                },
                "families.ipv4.closing_responses: 19 is more than completed (18)",
            ),
            (|i| i.run.summary.families[0].hist.total.record(5).unwrap(), "families.ipv4.histograms.total: it holds 19 values, not one per completed request (18)"),
            (|i| i.run.summary.families[1].hist.waiting.reset(), "families.ipv6.histograms.ttfb: it holds 0 values, not one per completed request (18)"),
            (|i| i.run.summary.families[0].late = 1, "families.ipv4.late: 1 in a closed-loop run (settings.model \"closed\"), where it is always 0"),
            (|i| i.run.summary.families[1].unsent = 2, "families.ipv6.unsent: 2 in a closed-loop run (settings.model \"closed\"), where it is always 0"),
            (|i| {
                i.run.summary.meta.targets.remove(0);
            }, "families.ipv4: IPv4 counts, and targets has no IPv4 address"),
        ];
        for (change, message) in cases {
            let (a, b) = two();
            let (a, mut b) = (input("a.json", &a), input("b.json", &b));
            change(&mut b);
            let e = merge(vec![a.clone(), b.clone()]).unwrap_err();
            assert_eq!(
                e.to_string(),
                format!(
                    "b.json: {message}: no run writes that (was the document edited?); {AGAIN}"
                )
            );
            // As the first input too.
            let e = merge(vec![b, a]).unwrap_err();
            assert!(
                e.to_string().starts_with(&format!("b.json: {message}:")),
                "{e}"
            );
        }
        // An open loop's late requests and unsent slots are its own.
        let mut a = run(20, 3);
        a.meta.model = LoadModel::Open {
            rate: 100.0,
            poisson: false,
        };
        a.families[0].late = 5;
        a.families[0].unsent = 7;
        assert!(merge(vec![input("a.json", &a)]).is_ok());
    }

    /// `doc` with the value at `path` changed by `change`, as text.
    fn edited(doc: &Value, path: &str, change: impl FnOnce(&mut Value)) -> String {
        let mut d = doc.clone();
        let mut at = &mut d;
        for key in path.split('.') {
            at = &mut at[key];
        }
        change(at);
        d.to_string()
    }

    fn add(v: &mut Value, n: i64) {
        *v = (v.as_u64().unwrap() as i64 + n).into();
    }

    #[test]
    fn derived_figures_must_be_the_counts_added() {
        let s = run(20, 3);
        let doc: Value = serde_json::from_str(&json::to_string(&s)).unwrap();
        let check = |text: String| {
            let run = from_json(&text).unwrap();
            agrees("x.json", &text, &run).map_err(|e| e.to_string())
        };
        assert_eq!(check(doc.to_string()), Ok(()));
        let cases = [
            ("total.requests", "total.requests: 41 is not the families' added (40)"),
            ("total.html_bytes", "total.html_bytes: 1801 is not the families' added (1800)"),
            ("total.close_detail.reset_response", "total.close_detail.reset_response: 5 is not the families' added (4)"),
            ("total.latency_us.lifetime.count", "total.latency_us.lifetime.count: 41 is not the families' added (40)"),
            ("total.statuses.404", "total.statuses.404: 7 is not the families' added (6)"),
            ("requests.total", "requests.total: 41 is not the families' requests added (40)"),
            ("requests.non_2xx", "requests.non_2xx: 7 is not the families' non_2xx added (6)"),
            ("bytes.total", "bytes.total: 8001 is not the families' bytes added (8000)"),
            ("bytes.html", "bytes.html: 1801 is not the families' html_bytes added (1800)"),
            ("families.ipv4.close.reset", "families.ipv4.close.reset: 3 is not close_detail's reset_connect, reset_request and reset_response added (2)"),
            ("total.close.timeout", "total.close.timeout: 1 is not close_detail's timeout_connect and timeout_response added (0)"),
            ("families.ipv6.latency_us.total.count", "families.ipv6.latency_us.total.count: 19 is not the number of values in histograms.total (18)"),
        ];
        for (path, message) in cases {
            let text = edited(&doc, path, |v| add(v, 1));
            assert_eq!(
                check(text),
                Err(format!(
                    "x.json: {message}: no run writes that (was the document edited?); {AGAIN}"
                )),
                "{path}"
            );
        }
        // A status in the total that no family had.
        let text = edited(&doc, "total.statuses", |v| {
            v["500"] = 1.into();
        });
        assert_eq!(check(text), Err(format!("x.json: total.statuses.500: 1 is not the families' added (0): no run writes that (was the document edited?); {AGAIN}")));
        // Families and targets: each family's counts, and only those, with its targets.
        let text = edited(&doc, "families", |v| {
            v.as_object_mut().unwrap().remove("ipv6");
        });
        assert_eq!(check(text), Err(format!("x.json: families.ipv6: no IPv6 counts, and targets has an IPv6 address: no run writes that (was the document edited?); {AGAIN}")));
        let mut one = s.clone();
        one.meta.targets.remove(1);
        one.families[1] = FamilyStats::default();
        let v4: Value = serde_json::from_str(&json::to_string(&one)).unwrap();
        assert_eq!(check(v4.to_string()), Ok(()));
        let text = edited(&v4, "families", |v| {
            v["ipv6"] = v["ipv4"].clone();
        });
        let e = check(text).unwrap_err();
        assert!(
            e.starts_with("x.json: families.ipv6: IPv6 counts, and targets has no IPv6 address: "),
            "{e}"
        );
        // A derived field missing: named with its place.
        let text = edited(&doc, "total", |v| {
            v.as_object_mut().unwrap().remove("late");
        });
        let e = check(text).unwrap_err();
        assert!(e.starts_with("x.json: not a valid dualbench.run/1 document: missing field `late` at line 1 column "), "{e}");
        // Documents written before `closing_responses` (added 2026-11-24) lack it everywhere.
        let mut older = doc.clone();
        for key in ["ipv4", "ipv6"] {
            older["families"][key]
                .as_object_mut()
                .unwrap()
                .remove("closing_responses");
        }
        older["total"]
            .as_object_mut()
            .unwrap()
            .remove("closing_responses");
        assert_eq!(check(older.to_string()), Ok(()));
    }
}
