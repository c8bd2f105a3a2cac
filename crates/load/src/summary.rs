//! Aggregation: per-family counts and latency histograms, filled by each worker from its
//! own records and merged once at the end. Reporters read a [`RunSummary`] and nothing else.

use crate::record::{Outcome, Record};
use dualbench_common::Family;
use hdrhistogram::Histogram;
use std::borrow::Cow;
use std::collections::BTreeMap;

/// Latency histograms of one family, in microseconds (3 significant digits, up to 1 hour).
#[derive(Debug, Clone, Default)]
pub struct Histograms {
    /// Connection establishment (new connections only).
    pub connect: Hist,
    /// Request sent to first response byte (ab's "Waiting"; time to first byte).
    pub waiting: Hist,
    /// Total minus connect (ab's "Processing").
    pub processing: Hist,
    /// Start to end of each completed request (ab's "Total"); in open loop measured from the
    /// intended start, i.e. corrected for coordinated omission.
    pub total: Hist,
    /// Actual start to end of each completed request (uncorrected service time).
    pub service: Hist,
    /// First response byte to the end of the response.
    pub transfer: Hist,
    /// Connection continuation time: connect to close, one value per connection.
    pub lifetime: Hist,
}

fn new_hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid histogram bounds")
}

/// One latency histogram, allocated when its first value is recorded.
///
/// A histogram of this range is 188 KiB of counts, written out when it is made. A worker
/// keeps seven per family, so an IPv4-only run would otherwise write (and fault in) seven
/// that stay empty, per worker, before its first request. Reading an empty one gives a
/// shared empty histogram; writing (through `DerefMut`) allocates it.
#[derive(Debug, Clone, Default)]
pub struct Hist(Option<Box<Histogram<u64>>>);

impl Hist {
    /// Whether any value was ever recorded (an empty histogram holds no allocation).
    pub fn is_allocated(&self) -> bool {
        self.0.is_some()
    }

    /// Allocate the histogram now, if it is not yet.
    pub fn allocate(&mut self) {
        self.0.get_or_insert_with(|| Box::new(new_hist()));
    }

    /// Add `other`'s counts; an empty `other` costs nothing, and into an empty `self` it
    /// is copied.
    pub fn merge(&mut self, other: &Hist) {
        match (&mut self.0, &other.0) {
            (_, None) => {}
            (None, Some(b)) => self.0 = Some(b.clone()),
            (Some(a), Some(b)) => a.add(&**b).expect("histograms share bounds"),
        }
    }
}

impl From<Histogram<u64>> for Hist {
    fn from(h: Histogram<u64>) -> Self {
        Hist(Some(Box::new(h)))
    }
}

impl std::ops::Deref for Hist {
    type Target = Histogram<u64>;

    fn deref(&self) -> &Histogram<u64> {
        static EMPTY: std::sync::OnceLock<Histogram<u64>> = std::sync::OnceLock::new();
        self.0
            .as_deref()
            .unwrap_or_else(|| EMPTY.get_or_init(new_hist))
    }
}

impl std::ops::DerefMut for Hist {
    fn deref_mut(&mut self) -> &mut Histogram<u64> {
        self.0.get_or_insert_with(|| Box::new(new_hist()))
    }
}

impl Histograms {
    /// The phases by name, in report order.
    pub fn named(&self) -> [(&'static str, &Histogram<u64>); 7] {
        [
            ("connect", &*self.connect),
            ("waiting", &*self.waiting),
            ("processing", &*self.processing),
            ("total", &*self.total),
            ("service", &*self.service),
            ("transfer", &*self.transfer),
            ("lifetime", &*self.lifetime),
        ]
    }

    /// Make every phase's histogram now, ahead of its first value. Made at a family's
    /// first response, the seven stalled its worker for about 0.4 ms in the middle of the
    /// run, holding back the responses that came meanwhile and the slots then due.
    pub fn allocate(&mut self) {
        for h in [
            &mut self.connect,
            &mut self.waiting,
            &mut self.processing,
            &mut self.total,
            &mut self.service,
            &mut self.transfer,
            &mut self.lifetime,
        ] {
            h.allocate();
        }
    }

    fn merge(&mut self, other: &Histograms) {
        for (a, b) in [
            (&mut self.connect, &other.connect),
            (&mut self.waiting, &other.waiting),
            (&mut self.processing, &other.processing),
            (&mut self.total, &other.total),
            (&mut self.service, &other.service),
            (&mut self.transfer, &other.transfer),
            (&mut self.lifetime, &other.lifetime),
        ] {
            a.merge(b);
        }
    }
}

#[inline]
fn us(ns: u64) -> u64 {
    // Round to the nearest microsecond; a histogram's lowest value is 1 µs.
    ((ns + 500) / 1000).max(1)
}

/// Everything counted for one family (or for both merged).
#[derive(Debug, Clone, Default)]
pub struct FamilyStats {
    /// Requests that ended, one way or another (completed + failed).
    pub requests: u64,
    /// Requests with a complete response (any status code).
    pub completed: u64,
    /// Requests that did not complete (every outcome but NORMAL).
    pub failed: u64,
    /// Completed requests whose status was not 2xx.
    pub non_2xx: u64,
    /// Completed requests whose body length differed from the run's document length
    /// (ab's "Length" failures; counted in `completed`, not in `failed`).
    pub length_mismatch: u64,
    /// Requests per outcome, indexed by [`Outcome::index`].
    pub outcomes: [u64; 9],
    /// Completed requests per status code.
    pub statuses: BTreeMap<u16, u64>,
    /// Response bytes on the wire, headers and body (ab's "Total transferred").
    pub bytes: u64,
    /// Response body bytes (ab's "HTML transferred").
    pub body_bytes: u64,
    /// Request bytes written.
    pub request_bytes: u64,
    /// Connections opened (connect attempts).
    pub connections: u64,
    /// Keep-alive runs only: complete responses that did not let their connection stay
    /// open (`Connection: close`, or HTTP/1.0 without keep-alive). The others are ab's
    /// "Keep-Alive requests".
    pub closing_responses: u64,
    /// Open loop: slots whose request could not start at its intended time because no
    /// connection was free or the generator was behind (they were sent late, not dropped).
    pub late: u64,
    /// Open loop: slots never sent because the run ended first.
    pub unsent: u64,
    pub hist: Histograms,
}

impl FamilyStats {
    /// Count one record. `document_length` is the run's reference body length.
    pub fn add(&mut self, r: &Record, document_length: Option<u64>) {
        self.requests += 1;
        self.outcomes[r.outcome.index()] += 1;
        self.bytes += r.bytes;
        self.body_bytes += r.body_bytes;
        if r.connect_ns > 0 {
            self.hist.connect.saturating_record(us(r.connect_ns));
        }
        if !r.outcome.is_normal() {
            self.failed += 1;
            return;
        }
        self.completed += 1;
        *self.statuses.entry(r.status).or_default() += 1;
        if !(200..300).contains(&r.status) {
            self.non_2xx += 1;
        }
        if document_length.is_some_and(|len| len != r.body_bytes) {
            self.length_mismatch += 1;
        }
        let total = r.latency_ns();
        self.hist.total.saturating_record(us(total));
        self.hist.service.saturating_record(us(r.service_ns()));
        self.hist
            .processing
            .saturating_record(us(r.service_ns().saturating_sub(r.connect_ns)));
        self.hist.waiting.saturating_record(us(r.waiting_ns()));
        self.hist.transfer.saturating_record(us(r.transfer_ns()));
    }

    /// Count one closed connection's continuation time (connect to close).
    pub fn add_lifetime(&mut self, lifetime_ns: u64) {
        self.hist.lifetime.saturating_record(us(lifetime_ns));
    }

    pub fn outcome(&self, o: Outcome) -> u64 {
        self.outcomes[o.index()]
    }

    /// Requests in one of ANMA's classes ("RESET" sums its three phases).
    pub fn class(&self, class: &str) -> u64 {
        Outcome::ALL
            .iter()
            .filter(|o| o.class() == class)
            .map(|o| self.outcome(*o))
            .sum()
    }

    pub fn merge(&mut self, other: &FamilyStats) {
        self.requests += other.requests;
        self.completed += other.completed;
        self.failed += other.failed;
        self.non_2xx += other.non_2xx;
        self.length_mismatch += other.length_mismatch;
        for (a, b) in self.outcomes.iter_mut().zip(other.outcomes) {
            *a += b;
        }
        for (code, n) in &other.statuses {
            *self.statuses.entry(*code).or_default() += n;
        }
        self.bytes += other.bytes;
        self.body_bytes += other.body_bytes;
        self.request_bytes += other.request_bytes;
        self.connections += other.connections;
        self.closing_responses += other.closing_responses;
        self.late += other.late;
        self.unsent += other.unsent;
        self.hist.merge(&other.hist);
    }
}

/// One target address as the run used it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetInfo {
    /// The socket address, e.g. `127.0.0.1:8080` or `[::1]:8080` (with `%zone` if any).
    pub addr: String,
    pub family: Family,
    /// Weight in the interleaving (requests per cycle).
    pub weight: u64,
}

/// How the load was offered.
#[derive(Debug, Clone, PartialEq)]
pub enum LoadModel {
    /// Closed loop with this many requests in flight at most.
    Closed,
    /// Open loop at this rate (requests/s), constant or Poisson.
    Open { rate: f64, poisson: bool },
}

/// The run's settings and context, as the reports print them.
#[derive(Debug, Clone)]
pub struct RunMeta {
    /// The `Server:` header of the first response ("" if none).
    pub server_software: String,
    /// Host as written in the URL (without brackets).
    pub host: String,
    pub port: u16,
    /// Request path with query, e.g. `/index.html`.
    pub path: String,
    pub method: String,
    /// Body length of the first completed response (ab's "Document Length").
    pub document_length: Option<u64>,
    pub concurrency: u64,
    pub keepalive: bool,
    pub pipeline: u64,
    pub model: LoadModel,
    /// `-n`, if given.
    pub requests_limit: Option<u64>,
    /// `-t` in seconds, if given.
    pub time_limit_s: Option<f64>,
    pub targets: Vec<TargetInfo>,
    pub workers: u64,
    /// The run's start on the shared monotonic clock (see `dualbench_common::clock`).
    pub start_monotonic_ns: u64,
    /// The run's start as Unix time in nanoseconds.
    pub start_unix_ns: u64,
    /// True when the run was cut short (Ctrl-C or a fatal error): the figures cover what
    /// was measured until then.
    pub interrupted: Option<String>,
    /// The generator's own CPU time over the run (user, system), in seconds.
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    /// CPU cores available to the generator.
    pub cores: u64,
    /// The most connections the generator had open at once: the sum of each worker's
    /// most (at most `concurrency` with keep-alive).
    pub connections_peak: u64,
}

impl RunMeta {
    /// Cores the generator's workers could keep busy: one per worker thread, at most the
    /// machine's.
    pub fn usable_cores(&self) -> u64 {
        self.workers.min(self.cores).max(1)
    }

    /// The generator's CPU use as a fraction of the cores its workers could use over
    /// `duration_s` (0..1): one worker on a 2-core machine is saturated at 1.0, not 0.5.
    pub fn cpu_fraction(&self, duration_s: f64) -> f64 {
        if duration_s <= 0.0 || self.cores == 0 {
            return 0.0;
        }
        (self.cpu_user_s + self.cpu_sys_s) / (duration_s * self.usable_cores() as f64)
    }
}

/// A finished (or interrupted) run: what every reporter reads.
#[derive(Debug, Clone)]
pub struct RunSummary {
    pub meta: RunMeta,
    /// Wall time from the first request's start to the last one's end.
    pub duration_ns: u64,
    /// Per family, indexed by [`Family::index`] (IPv4 first).
    pub families: [FamilyStats; 2],
}

impl RunSummary {
    pub fn family(&self, f: Family) -> &FamilyStats {
        &self.families[f.index()]
    }

    /// Families that had any target in this run, IPv4 first.
    pub fn families_used(&self) -> Vec<Family> {
        Family::ALL
            .into_iter()
            .filter(|f| self.meta.targets.iter().any(|t| t.family == *f))
            .collect()
    }

    /// Both families merged; a run of one family is that family's counts, not a copy.
    pub fn total(&self) -> Cow<'_, FamilyStats> {
        match self.families_used()[..] {
            [only] => Cow::Borrowed(self.family(only)),
            _ => {
                let mut t = self.families[0].clone();
                t.merge(&self.families[1]);
                Cow::Owned(t)
            }
        }
    }

    pub fn duration_s(&self) -> f64 {
        self.duration_ns as f64 / 1e9
    }

    /// When requests ended but none with a response, the run's closing line: how they
    /// ended per ANMA class, most first (`no request completed (12 TIMEOUT, 8 RESET)`),
    /// and where every one was refused, the addresses nobody listened at.
    pub fn nothing_completed(&self) -> Option<String> {
        let t = self.total();
        if t.requests == 0 || t.completed > 0 {
            return None;
        }
        let mut classes: Vec<(&str, u64)> = Vec::new();
        for o in Outcome::ALL {
            let n = t.outcome(o);
            match classes.iter_mut().find(|(c, _)| *c == o.class()) {
                Some((_, sum)) => *sum += n,
                None => classes.push((o.class(), n)),
            }
        }
        classes.retain(|(_, n)| *n > 0);
        classes.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
        let ended: Vec<String> = classes.iter().map(|(c, n)| format!("{n} {c}")).collect();
        let hint = if t.outcome(Outcome::Refused) == t.requests {
            let addrs: Vec<&str> = self.meta.targets.iter().map(|t| t.addr.as_str()).collect();
            let more = if addrs.len() > 3 { ", ..." } else { "" };
            format!(
                "is a server listening at {}{more}? Check the URL and its port",
                addrs[..addrs.len().min(3)].join(", ")
            )
        } else {
            "the report above shows how each family's requests ended".to_string()
        };
        Some(format!(
            "no request completed ({}): {hint}",
            ended.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_histogram_reads_as_empty_and_holds_nothing() {
        let h = Hist::default();
        assert!(!h.is_allocated());
        assert_eq!((h.len(), h.max(), h.mean()), (0, 0, 0.0));
        assert_eq!((h.low(), h.high()), (new_hist().low(), new_hist().high()));
    }

    #[test]
    fn recording_allocates_and_merging_adds_without_allocating_for_empties() {
        let mut a = Hist::default();
        a.merge(&Hist::default());
        assert!(!a.is_allocated());
        let mut b = Hist::default();
        b.saturating_record(7);
        b.saturating_record(1_000);
        a.merge(&b);
        a.merge(&b);
        assert!(a.is_allocated());
        assert_eq!((a.len(), a.min(), a.max()), (4, 7, 1_000));
        assert_eq!(a.count_at(7), 2);
    }

    #[test]
    fn allocating_ahead_makes_every_phase_and_records_nothing() {
        let mut h = Histograms::default();
        h.allocate();
        for (name, hist) in h.named() {
            assert_eq!(hist.len(), 0, "{name}");
        }
        assert!(h.connect.is_allocated() && h.lifetime.is_allocated());
        assert!(h.waiting.is_allocated() && h.transfer.is_allocated());
    }

    #[test]
    fn a_worker_allocates_only_the_phases_its_records_have() {
        let mut f = FamilyStats::default();
        let r = Record {
            slot: 0,
            family: Family::V4,
            target: 0,
            conn: 0,
            reused: true,
            intended_ns: 0,
            start_ns: 0,
            connect_ns: 0,
            sent_ns: 1_000,
            first_byte_ns: 50_000,
            end_ns: 60_000,
            status: 200,
            bytes: 100,
            body_bytes: 45,
            outcome: Outcome::Normal,
        };
        f.add(&r, Some(45));
        let allocated: Vec<&str> = [
            ("connect", &f.hist.connect),
            ("waiting", &f.hist.waiting),
            ("processing", &f.hist.processing),
            ("total", &f.hist.total),
            ("service", &f.hist.service),
            ("transfer", &f.hist.transfer),
            ("lifetime", &f.hist.lifetime),
        ]
        .into_iter()
        .filter(|(_, h)| h.is_allocated())
        .map(|(name, _)| name)
        .collect();
        assert_eq!(
            allocated,
            ["waiting", "processing", "total", "service", "transfer"]
        );
        assert_eq!(f.hist.total.max(), 60);
        assert_eq!(f.hist.waiting.max(), 49);
    }
}
