//! The cross product of a plan's axes, in a fixed order, as points and runs (a point's
//! counted repeats). Points that differ only in their family selector (family or ratio)
//! form a group: one server set-up, and rounds — each warm-up and each repeat — in which
//! every point of the group runs once, the first point taking turns from round to round,
//! so the families of a repeat run under the same conditions (in a testbed, the same
//! background traffic, started afresh for the round). A run's id is a hash of every
//! parameter that shapes it, so the same plan always yields the same ids and `--resume`
//! can tell which runs a database already holds.

use super::{CaptureHost, Handler, Placement, Plan, Selector, ServerKind};

/// One combination of axis values.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// 0-based position in the plan's order.
    pub index: usize,
    /// 0-based index of its group: the points that differ from it only in the family
    /// selector, which share a server and run round by round.
    pub group: usize,
    pub server: ServerKind,
    pub handler: Handler,
    pub placement: Placement,
    pub selector: Selector,
    pub concurrency: u64,
    pub requests: u64,
    pub rate: Option<f64>,
    pub congestion: String,
    pub link: String,
}

/// One counted run: a point and a repeat number.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSpec {
    pub id: String,
    pub point: Point,
    /// 1-based repeat number.
    pub repeat: u32,
}

impl Point {
    /// The axis values by name, in table order (also stored as the run's parameters);
    /// `ratio` is the family selector: "ipv4", "ipv6" or "V6:V4".
    pub fn params(&self) -> Vec<(&'static str, String)> {
        vec![
            ("server", self.server.key().to_string()),
            ("handler", self.handler.key().to_string()),
            ("placement", self.placement.key().to_string()),
            ("concurrency", self.concurrency.to_string()),
            ("requests", self.requests.to_string()),
            (
                "rate",
                self.rate
                    .map(|r| r.to_string())
                    .unwrap_or_else(|| "-".into()),
            ),
            ("congestion", self.congestion.clone()),
            ("link", self.link.clone()),
            ("ratio", self.selector.key()),
        ]
    }

    /// `server=nginx handler=static family=ipv4 ...`, only the axes that vary in `plan`.
    pub fn label(&self, plan: &Plan) -> String {
        let varying = varying_axes(plan);
        let parts: Vec<String> = self
            .params()
            .into_iter()
            .filter(|(k, _)| varying.contains(k))
            .map(|(k, v)| match (k, self.selector) {
                ("ratio", Selector::Family(_)) => format!("family={v}"),
                _ => format!("{k}={v}"),
            })
            .collect();
        if parts.is_empty() {
            "single point".into()
        } else {
            parts.join(" ")
        }
    }
}

/// The names of the axes that take more than one value in `plan`.
pub fn varying_axes(plan: &Plan) -> Vec<&'static str> {
    let a = &plan.axes;
    let counts = [
        ("server", a.server.len()),
        ("handler", a.handler.len()),
        ("placement", a.placement.len()),
        ("ratio", a.selector.len()),
        ("concurrency", a.concurrency.len()),
        ("requests", a.requests.len()),
        ("rate", a.rate.len()),
        ("congestion", a.congestion.len()),
        ("link", a.link.len()),
    ];
    counts
        .iter()
        .filter(|(_, n)| *n > 1)
        .map(|(k, _)| *k)
        .collect()
}

/// Every point of `plan` in order: placement, link, congestion, server, handler,
/// concurrency, requests, rate, family — the last varies fastest.
pub fn points(plan: &Plan) -> Vec<Point> {
    let a = &plan.axes;
    let mut out = Vec::new();
    for &placement in &a.placement {
        for link in &a.link {
            for congestion in &a.congestion {
                for &server in &a.server {
                    for &handler in &a.handler {
                        for &concurrency in &a.concurrency {
                            for &requests in &a.requests {
                                for &rate in &a.rate {
                                    for &selector in &a.selector {
                                        out.push(Point {
                                            index: out.len(),
                                            group: out.len() / a.selector.len(),
                                            server,
                                            handler,
                                            placement,
                                            selector,
                                            concurrency,
                                            requests,
                                            rate,
                                            congestion: congestion.clone(),
                                            link: link.clone(),
                                        });
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

/// Every counted run of `plan` in the order they run: group by group; within a group
/// repeat by repeat; within a repeat each point of the group, in [`round_order`].
pub fn expand(plan: &Plan) -> Vec<RunSpec> {
    let points = points(plan);
    let mut out = Vec::with_capacity(points.len() * plan.repeats as usize);
    for group in points.chunks(plan.axes.selector.len().max(1)) {
        for repeat in 1..=plan.repeats {
            for point in round_order(group, repeat) {
                out.push(RunSpec {
                    id: run_id(plan, point, repeat),
                    point: point.clone(),
                    repeat,
                });
            }
        }
    }
    out
}

/// A group's points (families or ratios, in the plan's order) as round `round` (1-based:
/// warm-up w is round w, repeat r is round r) runs them: rotated by one place per round,
/// so each goes first, second, … equally often and none is always measured first after
/// the server starts or the background traffic settles.
pub fn round_order<T>(group: &[T], round: u32) -> impl Iterator<Item = &T> {
    let shift = match group.len() {
        0 => 0,
        n => (round.max(1) - 1) as usize % n,
    };
    group[shift..].iter().chain(&group[..shift])
}

/// 16 hex digits of FNV-1a over the canonical text of every parameter of the run: the
/// axis values, the load settings, and for a testbed point the testbed (topology text,
/// hosts, addresses, setup, service and background commands). Settings added after the
/// first version (monitor, capture, capture_host, testbed) enter the text only when they
/// apply (capture_host when it is "server"), so the
/// ids of runs without them stay what they were.
pub fn run_id(plan: &Plan, point: &Point, repeat: u32) -> String {
    let l = &plan.load;
    let mut text = String::new();
    for (k, v) in point.params() {
        text.push_str(&format!("{k}={v};"));
    }
    text.push_str(&format!(
        "keepalive={};timeout={:?};time_limit={:?};arrival={:?};extra={:?};repeat={repeat}",
        l.keepalive, l.timeout_s, l.time_limit_s, l.arrival, l.extra_args
    ));
    if l.monitor {
        text.push_str(";monitor=true");
    }
    if let Some(iface) = &l.capture {
        text.push_str(&format!(";capture={iface:?}"));
    }
    if l.capture_host == CaptureHost::Server {
        text.push_str(";capture_host=server");
    }
    // Until 2026-11-24 every Poisson run had seed 1; repeat R now has seed R. Repeat 1's
    // seed is the same and keeps its id; another seed enters the id, so `--resume` of an
    // experiment stored before does not pool those runs (the arrivals of repeat 1, run
    // again) with runs of their own seeds: it removes them and runs them anew.
    if let Some(seed) = poisson_seed(plan, point, Some(repeat)).filter(|&s| s != 1) {
        text.push_str(&format!(";seed={seed}"));
    }
    if let (Placement::Testbed, Some(t)) = (point.placement, &plan.testbed) {
        text.push_str(&format!(
            ";testbed=topology={:?},text={:?},client={:?},server={:?},v4={:?},v6={:?},setup={:?},services={:?},background={:?},settle={:?}",
            t.topology,
            t.topology_text.as_deref().map(|s| fnv1a(s.as_bytes())),
            t.client,
            t.server,
            t.server_ipv4,
            t.server_ipv6,
            t.setup,
            t.services,
            t.background,
            t.settle_s
        ));
    }
    format!("{:016x}", fnv1a(text.as_bytes()))
}

/// The `--seed` the runner gives a run of `point` with Poisson arrivals: repeat R's counted
/// run gets R, so the repeats are independent samples of the arrivals, and both families
/// of a repeat the same ones. None for a warm-up (`repeat` None: `run`'s seed 1), in
/// closed loop or at a constant rate, and when `load.extra_args` gives a seed of its own.
pub fn poisson_seed(plan: &Plan, point: &Point, repeat: Option<u32>) -> Option<u32> {
    let l = &plan.load;
    let poisson = point.rate.is_some() && l.arrival.as_deref() == Some("poisson");
    let own = l
        .extra_args
        .iter()
        .any(|a| a == "--seed" || a.starts_with("--seed="));
    repeat.filter(|_| poisson && !own)
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(text: &str) -> Plan {
        super::super::parse(text, std::path::Path::new("p.toml")).unwrap()
    }

    /// Poisson runs of an experiment stored before each repeat had its own seed all ran with
    /// seed 1, under the ids they have now: `--resume` kept them, ran only the missing repeats
    /// with seeds 2, 3, …, and the report pooled repeats of one arrival sequence with repeats
    /// of their own. A seed other than 1 is now part of the id, so those runs no longer match
    /// and run anew; repeat 1 (seed 1 before and now) keeps its id.
    #[test]
    fn a_poisson_seed_other_than_one_is_part_of_the_run_id() {
        let text =
            "[experiment]\nname = \"x\"\nrepeats = 2\n[load]\nrequests = 100\narrival = \"poisson\"\n\
                    [axes]\nrate = [500.0]\nfamily = [\"ipv4\"]\n";
        let ids: Vec<String> = expand(&plan(text)).into_iter().map(|r| r.id).collect();
        // FNV-1a of the run's text as stored before (repeat 2's: a9344d2afa228d8f).
        assert_eq!(ids, ["a9344e2afa228f42", "7e61d068e816290a"]);
        // A seed of the plan's own, or constant arrivals: the runner gives no seed.
        let own = text.replace("[axes]", "extra_args = [\"--seed\", \"9\"]\n[axes]");
        let constant = text.replace("poisson", "constant");
        for other in [own, constant] {
            let p = plan(&other);
            let runs = expand(&p);
            assert!(runs
                .iter()
                .all(|r| poisson_seed(&p, &r.point, Some(r.repeat)).is_none()));
        }
    }
}
