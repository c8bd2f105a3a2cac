//! Synthetic runs for the reporter tests: records made from a seeded generator and a simple
//! lane model of concurrency, counted through `FamilyStats::add` as the engine counts them.

use dualbench_common::Family;
use dualbench_load::record::{Outcome, Record};
use dualbench_load::summary::{FamilyStats, LoadModel, RunMeta, RunSummary, TargetInfo};

/// A run's summary and the records it was counted from.
pub type Scenario = (RunSummary, Vec<Record>);

const MS: u64 = 1_000_000;
const US: u64 = 1_000;

/// xorshift64*: a fixed, seeded sequence (no dependency, same on every machine).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    /// A value in `lo..=hi`.
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        lo + self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % (hi - lo + 1)
    }
}

/// How one synthetic request goes: its phase durations (ns) and its ending.
#[derive(Clone, Copy)]
pub struct Shape {
    pub connect: u64,
    pub send: u64,
    pub wait: u64,
    pub transfer: u64,
    pub status: u16,
    pub header_bytes: u64,
    pub body_bytes: u64,
    pub outcome: Outcome,
}

impl Shape {
    /// A normal 200 response with `body` bytes after `header` bytes of headers.
    pub fn ok(rng: &mut Rng, family: Family, header: u64, body: u64) -> Shape {
        let slower = if family == Family::V6 { 8 * US } else { 0 };
        Shape {
            connect: rng.between(40 * US, 90 * US) + slower,
            send: rng.between(5 * US, 15 * US),
            wait: rng.between(300 * US, 1_400 * US) + slower,
            transfer: rng.between(10 * US, 60 * US),
            status: 200,
            header_bytes: header,
            body_bytes: body,
            outcome: Outcome::Normal,
        }
    }

    fn bytes(&self) -> u64 {
        self.header_bytes + self.body_bytes
    }
}

/// Builds a run: records are laid out on `lanes` (closed loop) and counted per family.
pub struct RunBuilder {
    pub summary: RunSummary,
    lanes: Vec<u64>,
    next_slot: u64,
    next_conn: u64,
    /// Per lane: the open connection (id, its start) when keep-alive keeps one.
    open: Vec<Option<(u64, u64)>>,
    pub records: Vec<Record>,
}

impl RunBuilder {
    pub fn new(meta: RunMeta) -> RunBuilder {
        let lanes = meta.concurrency.max(1) as usize;
        RunBuilder {
            summary: RunSummary {
                meta,
                duration_ns: 0,
                families: Default::default(),
            },
            lanes: vec![0; lanes],
            next_slot: 0,
            next_conn: 0,
            open: vec![None; lanes],
            records: Vec::new(),
        }
    }

    /// One request on the lane that is free first; `intended` overrides the intended start
    /// (open loop), `reuse` keeps the lane's connection open for the next request.
    pub fn request(
        &mut self,
        family: Family,
        target: u16,
        shape: Shape,
        intended: Option<u64>,
        reuse: bool,
    ) {
        let lane = (0..self.lanes.len())
            .min_by_key(|l| self.lanes[*l])
            .expect("a lane");
        let start = self.lanes[lane].max(intended.unwrap_or(0));
        let (conn, reused, connect) = match self.open[lane] {
            Some((conn, _)) => (conn, true, 0),
            None => {
                self.next_conn += 1;
                self.stats(family).connections += 1;
                self.open[lane] = Some((self.next_conn, start));
                (self.next_conn, false, shape.connect)
            }
        };
        let r = self.lay_out(
            family, target, conn, reused, start, connect, shape, intended,
        );
        self.lanes[lane] = r.end_ns + 20 * US;
        let doc = self.summary.meta.document_length;
        self.stats(family).add(&r, doc);
        self.stats(family).request_bytes += 80;
        if !reuse || !r.outcome.is_normal() {
            let (_, opened) = self.open[lane].take().expect("an open connection");
            self.stats(family).add_lifetime(r.end_ns - opened);
        }
        self.summary.duration_ns = self.summary.duration_ns.max(r.end_ns);
        self.records.push(r);
    }

    #[allow(clippy::too_many_arguments)]
    fn lay_out(
        &mut self,
        family: Family,
        target: u16,
        conn: u64,
        reused: bool,
        start: u64,
        connect: u64,
        s: Shape,
        intended: Option<u64>,
    ) -> Record {
        let slot = self.next_slot;
        self.next_slot += 1;
        let connected = start + connect;
        let (sent, first_byte, end) = match s.outcome {
            Outcome::Normal | Outcome::ProtocolError => {
                let sent = connected + s.send;
                let first = sent + s.wait;
                (sent, first, first + s.transfer)
            }
            Outcome::ResetResponse | Outcome::TimeoutResponse => {
                let sent = connected + s.send;
                (sent, 0, sent + s.wait)
            }
            Outcome::ResetRequest => (0, 0, connected + s.send),
            _ => (0, 0, start + s.wait),
        };
        Record {
            slot,
            family,
            target,
            conn,
            reused,
            intended_ns: intended.unwrap_or(start),
            start_ns: start,
            connect_ns: connect,
            sent_ns: sent,
            first_byte_ns: first_byte,
            end_ns: end,
            status: s.status,
            bytes: s.bytes(),
            body_bytes: s.body_bytes,
            outcome: s.outcome,
        }
    }

    fn stats(&mut self, family: Family) -> &mut FamilyStats {
        &mut self.summary.families[family.index()]
    }

    pub fn finish(self) -> Scenario {
        (self.summary, self.records)
    }
}

fn target(addr: &str, family: Family) -> TargetInfo {
    TargetInfo {
        addr: addr.to_string(),
        family,
        weight: 1,
    }
}

/// ab's S1 setting: a 45-byte page, `-c 5 -n 1000`, nginx, over both loopbacks.
pub fn meta(families: &[Family]) -> RunMeta {
    let mut targets = Vec::new();
    for f in families {
        targets.push(match f {
            Family::V4 => target("127.0.0.1:8080", Family::V4),
            Family::V6 => target("[::1]:8080", Family::V6),
        });
    }
    RunMeta {
        server_software: "nginx/1.22.1".to_string(),
        host: if families == [Family::V6] {
            "::1"
        } else {
            "127.0.0.1"
        }
        .to_string(),
        port: 8080,
        path: "/".to_string(),
        method: "GET".to_string(),
        document_length: Some(45),
        concurrency: 5,
        keepalive: false,
        pipeline: 1,
        model: LoadModel::Closed,
        requests_limit: Some(1000),
        time_limit_s: None,
        targets,
        workers: 2,
        start_monotonic_ns: 5_000_000_000,
        start_unix_ns: 1_700_000_000_000_000_000,
        interrupted: None,
        cpu_user_s: 0.05,
        cpu_sys_s: 0.08,
        cores: 2,
        connections_peak: 2,
    }
}

/// `-c 5 -n 1000` over IPv4 and IPv6 at 1:1, every request a 238-byte-header 45-byte page.
pub fn closed_both() -> Scenario {
    let mut b = RunBuilder::new(meta(&[Family::V4, Family::V6]));
    let mut rng = Rng::new(1);
    for i in 0..1000u64 {
        let (family, t) = if i % 2 == 0 {
            (Family::V4, 0)
        } else {
            (Family::V6, 1)
        };
        let shape = Shape::ok(&mut rng, family, 243, 45);
        b.request(family, t, shape, None, false);
    }
    b.finish()
}

/// IPv6 only, keep-alive, 200 requests on 4 connections carrying a 4 KiB file.
pub fn single_family() -> Scenario {
    let mut m = meta(&[Family::V6]);
    m.keepalive = true;
    m.concurrency = 4;
    m.requests_limit = Some(200);
    m.path = "/bytes/4096".to_string();
    m.document_length = Some(4096);
    m.server_software = "dualbench/0.1.0".to_string();
    (m.cpu_user_s, m.cpu_sys_s) = (0.011, 0.019);
    let mut b = RunBuilder::new(m);
    let mut rng = Rng::new(2);
    for i in 0..200u64 {
        let shape = Shape::ok(&mut rng, Family::V6, 120, 4096);
        b.request(Family::V6, 0, shape, None, i < 196);
    }
    b.finish()
}

/// Open loop at 2,000 requests/s (Poisson) on 2 connections: the server sometimes falls
/// behind, so requests start late; the run ends with 37 slots unsent.
pub fn open_loop() -> Scenario {
    let mut m = meta(&[Family::V4, Family::V6]);
    m.model = LoadModel::Open {
        rate: 2000.0,
        poisson: true,
    };
    m.concurrency = 2;
    m.requests_limit = None;
    m.time_limit_s = Some(0.25);
    let mut b = RunBuilder::new(m);
    let mut rng = Rng::new(3);
    let mut intended = 0;
    for i in 0..463u64 {
        intended += rng.between(50 * US, 950 * US);
        let family = if i % 5 == 0 { Family::V4 } else { Family::V6 };
        let mut shape = Shape::ok(&mut rng, family, 243, 45);
        shape.wait /= 2;
        b.request(family, family.index() as u16, shape, Some(intended), false);
    }
    let (mut s, records) = b.finish();
    for r in &records {
        if r.start_ns > r.intended_ns {
            s.families[r.family.index()].late += 1;
        }
    }
    s.families[0].unsent = 7;
    s.families[1].unsent = 30;
    (s, records)
}

/// Both families, every way a request can end, and non-2xx and length-mismatched answers.
pub fn every_failure() -> Scenario {
    let mut m = meta(&[Family::V4, Family::V6]);
    m.requests_limit = Some(300);
    let mut b = RunBuilder::new(m);
    let mut rng = Rng::new(4);
    let endings = [
        Outcome::ResetConnect,
        Outcome::ResetRequest,
        Outcome::ResetResponse,
        Outcome::TimeoutConnect,
        Outcome::TimeoutResponse,
        Outcome::Refused,
        Outcome::Unreachable,
        Outcome::ProtocolError,
    ];
    for i in 0..300u64 {
        let family = if i % 3 == 0 { Family::V4 } else { Family::V6 };
        let mut shape = Shape::ok(&mut rng, family, 243, 45);
        match i % 25 {
            k @ 0..=7 => failing(&mut shape, endings[k as usize]),
            8 => (shape.status, shape.body_bytes) = (404, 153),
            9 => (shape.status, shape.body_bytes) = (503, 45),
            10 => shape.body_bytes = 44,
            _ => {}
        }
        b.request(family, family.index() as u16, shape, None, false);
    }
    b.finish()
}

fn failing(shape: &mut Shape, outcome: Outcome) {
    shape.outcome = outcome;
    shape.transfer = 0;
    match outcome {
        Outcome::TimeoutConnect | Outcome::TimeoutResponse => shape.wait = 1_000 * MS,
        Outcome::Refused | Outcome::Unreachable | Outcome::ResetConnect => shape.wait = 30 * US,
        _ => {}
    }
    match outcome {
        Outcome::ProtocolError => (shape.header_bytes, shape.body_bytes) = (243, 10),
        _ => (shape.status, shape.header_bytes, shape.body_bytes) = (0, 0, 0),
    }
    if matches!(
        outcome,
        Outcome::Refused | Outcome::Unreachable | Outcome::ResetConnect | Outcome::TimeoutConnect
    ) {
        shape.connect = 0;
    }
}

/// A closed-loop run cut short by Ctrl-C after 1,236 of 5,000 requests (0.24 s: long
/// enough for its CPU figure to count), with a busy generator.
pub fn interrupted() -> Scenario {
    let mut m = meta(&[Family::V4, Family::V6]);
    m.interrupted = Some("interrupted by Ctrl-C (SIGINT)".to_string());
    m.requests_limit = Some(5000);
    let mut b = RunBuilder::new(m);
    let mut rng = Rng::new(5);
    for i in 0..1236u64 {
        let family = if i % 2 == 0 { Family::V4 } else { Family::V6 };
        let shape = Shape::ok(&mut rng, family, 243, 45);
        b.request(family, family.index() as u16, shape, None, false);
    }
    let (mut s, records) = b.finish();
    // 95% of both cores over the run: the generator may have been the bottleneck.
    let core_seconds = s.duration_s() * 2.0;
    let ms = |x: f64| (x * 1000.0).round() / 1000.0;
    (s.meta.cpu_user_s, s.meta.cpu_sys_s) = (ms(core_seconds * 0.40), ms(core_seconds * 0.55));
    (s, records)
}

/// Every scenario by name, as the golden files are named.
pub fn all() -> Vec<(&'static str, RunSummary, Vec<Record>)> {
    let with_name = |name, (s, r): Scenario| (name, s, r);
    vec![
        with_name("closed_both", closed_both()),
        with_name("single_family", single_family()),
        with_name("open_loop", open_loop()),
        with_name("every_failure", every_failure()),
        with_name("interrupted", interrupted()),
    ]
}
