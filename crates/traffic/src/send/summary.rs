//! The JSON summary of a send run (schema `dualbench.traffic.send/1`): per flow what was
//! scheduled, sent and failed, the rates achieved counted three ways, send-time lateness;
//! per class (tcp_v4 ...) and family, the achieved mix; flows cut at their end with data
//! unsent, and how much. A pure function of a [`SendRun`].

use super::flow::{Cut, SendStats};
use super::{FlowResult, SendRun};
use crate::profile::{class_key, CLASSES};
use crate::rate::{Bytes, Counting, Proto};
use crate::report::{round3, round6, shares, Micros, Rates};
use crate::script::Pattern;
use dualbench_common::Family;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Serialize)]
pub struct SendSummary {
    pub schema: &'static str,
    pub source: String,
    /// `--family`: the one family of the source's flows sent (null: both).
    pub family: Option<Family>,
    /// `--part`: this sender's part of the (family's) flows, "K/N" (null: all of them).
    pub part: Option<String>,
    pub counting: Counting,
    pub start_unix_ns: u64,
    pub start_monotonic_ns: u64,
    pub duration_s: f64,
    pub interrupted: Option<String>,
    /// Why the `--mgen-log` file is incomplete (a write failed), if it is.
    pub mgen_log_error: Option<String>,
    /// Flows whose end came while a send still waited for the kernel (a dead or frozen
    /// path), summed; null when none was.
    pub cut: Option<CutTotal>,
    pub generator: Generator,
    pub flows: Vec<FlowSummary>,
    pub classes: BTreeMap<&'static str, Aggregate>,
    pub families: BTreeMap<&'static str, Aggregate>,
    pub total: Aggregate,
}

#[derive(Debug, Serialize)]
pub struct Generator {
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    pub messages: u64,
    pub cpu_ns_per_message: Option<f64>,
}

#[derive(Debug, Serialize)]
pub struct FlowSummary {
    pub flow: u32,
    pub proto: Proto,
    pub family: Family,
    pub dst: String,
    /// completed, interrupted, cut, refused, unreachable, reset, timeout or other.
    pub status: String,
    pub error: Option<String>,
    pub scheduled: u64,
    pub sent: u64,
    pub failed: u64,
    pub errors: BTreeMap<String, u64>,
    /// Of `sent`, the messages the network answered with an ICMP error (UDP: a closed
    /// port, an unreachable host), counted until the flow's end; `icmp` splits them by
    /// kind (refused, unreachable).
    pub rejected: u64,
    pub icmp: BTreeMap<String, u64>,
    pub bytes: Bytes,
    pub active_s: f64,
    pub rate_bps: Rates,
    pub lateness_us: Option<Micros>,
    /// Set when the flow was cut with data unsent (status `cut`, or `timeout` after a stall).
    pub cut: Option<CutSummary>,
}

/// What one cut flow left unsent.
#[derive(Debug, Serialize, Clone, Copy, PartialEq)]
pub struct CutSummary {
    /// When it was cut, seconds since time zero.
    pub at_s: f64,
    /// Messages never (wholly) written, and their payload bytes.
    pub unwritten_messages: u64,
    pub unwritten_bytes: u64,
    /// Bytes written but still queued in the kernel, discarded by the cut (TCP only).
    pub queued_bytes: Option<u64>,
    /// The flow fell more than 1 s behind its schedule by its end (this machine, or a
    /// slow path taking a TCP flow's data, could not keep up), rather than a send waiting
    /// at its end for a path that took nothing.
    pub behind: bool,
}

/// The cut flows of a run, summed.
#[derive(Debug, Serialize, Default, PartialEq)]
pub struct CutTotal {
    pub flows: u64,
    /// Of them, flows that fell behind their schedule.
    pub behind: u64,
    pub unwritten_messages: u64,
    pub unwritten_bytes: u64,
    pub queued_bytes: u64,
}

#[derive(Debug, Serialize, Default)]
pub struct Aggregate {
    pub flows: u64,
    /// Messages the flows' plans scheduled: `sent` + `failed` + what cut flows left
    /// unwritten (for a run a signal stopped, only what was sent or failed before it).
    pub scheduled: u64,
    pub sent: u64,
    pub failed: u64,
    /// Of `sent`, the messages the network answered with an ICMP error.
    pub rejected: u64,
    pub bytes: Bytes,
    pub rate_bps: Rates,
    /// Fraction of the whole run's bytes.
    pub share: Rates,
}

/// Build the summary; `unix_at_t0` labels time zero with wall-clock time.
pub fn summarize(
    run: &SendRun,
    source: &str,
    counting: Counting,
    unix_at_t0: u64,
    interrupted: Option<String>,
) -> SendSummary {
    let duration_s = run.end_ns.saturating_sub(run.t0_ns) as f64 / 1e9;
    let flows: Vec<FlowSummary> = run.flows.iter().map(|f| flow_summary(f, run)).collect();
    let windows: Vec<Option<(u64, u64)>> =
        run.flows.iter().map(|f| active_window(f, run)).collect();
    // An aggregate's rate is over the time its flows covered, from the first one's start
    // to the last one's end (as at the sink), not over the longest flow: two flows of 1 s
    // each, 2 s apart, are not twice one flow's rate.
    let span_s = |pick: &dyn Fn(&FlowSummary) -> bool| {
        let (start, end) = flows
            .iter()
            .zip(&windows)
            .filter(|(f, _)| pick(f))
            .filter_map(|(_, w)| *w)
            .fold((u64::MAX, 0), |(s, e), (a, b)| (s.min(a), e.max(b)));
        end.saturating_sub(start) as f64 / 1e9
    };
    let mut total = Aggregate::default();
    for f in &flows {
        add(&mut total, f);
    }
    let mut classes = BTreeMap::new();
    for (proto, family) in CLASSES {
        let pick = |f: &FlowSummary| f.proto == proto && f.family == family;
        let mut agg = Aggregate::default();
        flows
            .iter()
            .filter(|f| pick(f))
            .for_each(|f| add(&mut agg, f));
        if agg.flows > 0 {
            finish(&mut agg, &total.bytes, span_s(&pick));
            classes.insert(class_key(proto, family), agg);
        }
    }
    let mut families = BTreeMap::new();
    for family in Family::ALL {
        let pick = |f: &FlowSummary| f.family == family;
        let mut agg = Aggregate::default();
        flows
            .iter()
            .filter(|f| pick(f))
            .for_each(|f| add(&mut agg, f));
        if agg.flows > 0 {
            finish(&mut agg, &total.bytes, span_s(&pick));
            families.insert(family.key(), agg);
        }
    }
    let whole = total.bytes;
    finish(&mut total, &whole, span_s(&|_| true));
    let messages = total.sent;
    let cut = cut_total(&flows);
    let cpu_ns_per_message =
        (messages > 0).then(|| round3((run.cpu_user_s + run.cpu_sys_s) * 1e9 / messages as f64));
    SendSummary {
        schema: "dualbench.traffic.send/1",
        source: source.to_string(),
        family: None,
        part: None,
        counting,
        start_unix_ns: unix_at_t0,
        start_monotonic_ns: run.t0_ns,
        duration_s: round6(duration_s),
        interrupted,
        mgen_log_error: None,
        cut,
        generator: Generator {
            cpu_user_s: round3(run.cpu_user_s),
            cpu_sys_s: round3(run.cpu_sys_s),
            messages,
            cpu_ns_per_message,
        },
        flows,
        classes,
        families,
        total,
    }
}

fn cut_total(flows: &[FlowSummary]) -> Option<CutTotal> {
    let mut total = CutTotal::default();
    for c in flows.iter().filter_map(|f| f.cut.as_ref()) {
        total.flows += 1;
        total.behind += u64::from(c.behind);
        total.unwritten_messages += c.unwritten_messages;
        total.unwritten_bytes += c.unwritten_bytes;
        total.queued_bytes += c.queued_bytes.unwrap_or(0);
    }
    (total.flows > 0).then_some(total)
}

fn add(agg: &mut Aggregate, f: &FlowSummary) {
    agg.flows += 1;
    agg.scheduled += f.scheduled;
    agg.sent += f.sent;
    agg.failed += f.failed;
    agg.rejected += f.rejected;
    agg.bytes.add(f.bytes);
}

fn finish(agg: &mut Aggregate, whole: &Bytes, span_s: f64) {
    agg.rate_bps = Rates::of(&agg.bytes, span_s);
    agg.share = shares(&agg.bytes, whole);
}

fn flow_summary(f: &FlowResult, run: &SendRun) -> FlowSummary {
    let s = &f.stats;
    FlowSummary {
        flow: f.plan.flow,
        proto: f.plan.proto,
        family: Family::of_addr(&f.plan.dst),
        dst: f.plan.dst.to_string(),
        status: status(s),
        error: s.first_error.clone(),
        scheduled: s.scheduled,
        sent: s.sent,
        failed: s.failed,
        errors: s
            .errors
            .iter()
            .map(|(k, n)| (format!("{k:?}").to_lowercase(), *n))
            .collect(),
        rejected: s.rejected.iter().map(|(_, n)| n).sum(),
        icmp: s
            .rejected
            .iter()
            .map(|(k, n)| (format!("{k:?}").to_lowercase(), *n))
            .collect(),
        bytes: s.bytes,
        active_s: round6(active_ns(f, run) as f64 / 1e9),
        rate_bps: Rates::of(&s.bytes, active_ns(f, run) as f64 / 1e9),
        lateness_us: Micros::of(&s.lateness),
        cut: s.cut.map(|c| cut_summary(&c, run.t0_ns)),
    }
}

fn cut_summary(c: &Cut, t0_ns: u64) -> CutSummary {
    CutSummary {
        at_s: round6(c.at_ns.saturating_sub(t0_ns) as f64 / 1e9),
        unwritten_messages: c.unwritten_messages,
        unwritten_bytes: c.unwritten_bytes,
        queued_bytes: c.queued_bytes,
        behind: c.behind,
    }
}

/// How the flow ended; a flow the network answered with an ICMP error for every message
/// it sent (UDP to a closed port) ran to its end but delivered nothing: `refused` (or
/// `unreachable`), the most common kind, as for a TCP flow whose connect was refused.
fn status(s: &SendStats) -> String {
    let rejected: u64 = s.rejected.iter().map(|(_, n)| n).sum();
    let all_rejected = s.sent > 0 && rejected >= s.sent;
    let most = s.rejected.iter().max_by_key(|(_, n)| *n).map(|(k, _)| *k);
    match (s.ended_by, s.interrupted, s.cut.is_some(), most) {
        (Some(kind), _, _, _) => format!("{kind:?}").to_lowercase(),
        (None, true, _, _) => "interrupted".into(),
        (None, false, true, _) => "cut".into(),
        (None, false, false, Some(kind)) if all_rejected => format!("{kind:?}").to_lowercase(),
        (None, false, false, _) => "completed".into(),
    }
}

/// The mean time between two messages of a pattern (of a BURST's inner one), ns.
fn mean_gap_ns(pattern: &Pattern) -> u64 {
    match pattern {
        Pattern::Periodic { rate, .. }
        | Pattern::Poisson { rate, .. }
        | Pattern::Jitter { rate, .. } => (1e9 / rate) as u64,
        Pattern::Burst(b) => mean_gap_ns(&b.inner),
        // A capture's: its span over its gaps.
        Pattern::Clone(r) => r.trace.as_ref().map_or(0, |t| {
            t.span_ns() / (t.messages.len() as u64).saturating_sub(1).max(1)
        }),
    }
}

/// When the flow was on, in ns since time zero: from its start for [`active_ns`]; None if
/// it sent nothing.
fn active_window(f: &FlowResult, run: &SendRun) -> Option<(u64, u64)> {
    let start = f.plan.start_ns();
    (f.stats.sent > 0).then(|| (start, start + active_ns(f, run)))
}

/// How long the flow was meant to be on: 0 if it sent nothing; its planned window (cut
/// short by a stop; for a flow that fell behind, to its cut, up to 1 s past its end); for a flow its COUNT ended, or a COUNT-only flow, the intended time of
/// its last message plus one mean gap of that message's pattern (never past the planned
/// window). A COUNT reached long before the flow's OFF or `--duration` must not spread its
/// messages over the idle rest; and the schedule, not when sends happened to leave or
/// which of them failed, says how long it was on (50 at 100/s are 0.5 s, not 0.499957 s).
fn active_ns(f: &FlowResult, run: &SendRun) -> u64 {
    if f.stats.sent == 0 {
        return 0;
    }
    let start = f.plan.start_ns();
    let run_end = run.end_ns.saturating_sub(run.t0_ns);
    let by_last = f
        .stats
        .last_intended
        .map(|(at, phase)| at + mean_gap_ns(&f.plan.phases[phase].pattern));
    let planned = f.plan.end_ns();
    let end = if planned == u64::MAX {
        by_last.unwrap_or(run_end)
    } else {
        let planned = if f.stats.interrupted {
            planned.min(run_end)
        } else {
            planned
        };
        match by_last {
            Some(last) if f.stats.count_ended => last.min(planned),
            _ => planned,
        }
    };
    // A flow that fell behind sent on past its end until it was cut: its messages left
    // over that longer time, and its rate is over it.
    let end = match f.stats.cut {
        Some(c) if c.behind => end.max(c.at_ns.saturating_sub(run.t0_ns)),
        _ => end,
    };
    end.saturating_sub(start)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pacer::FlowPacer;
    use crate::plan::plan;
    use crate::script::parse;
    use crate::send::flow::{BatchResult, Outgoing, Transmit, Wait};
    use crate::send::FlowResult;
    use std::sync::atomic::AtomicBool;

    struct Sim(u64);
    impl crate::send::clock::Clock for Sim {
        fn now_ns(&self) -> u64 {
            self.0
        }
        fn sleep_until(&mut self, t: u64) {
            self.0 = self.0.max(t);
        }
    }

    struct Sent(Family, Proto);
    impl Transmit for Sent {
        fn enter_phase(&mut self, _: &crate::plan::Phase) {}
        fn send(&mut self, batch: &mut [Outgoing], _: &Wait) -> BatchResult {
            BatchResult {
                sent: batch.len(),
                ..BatchResult::default()
            }
        }
        fn bytes(&self, size: u64) -> Bytes {
            crate::rate::message_bytes(self.1, self.0, size)
        }
    }

    /// The flows of `script` run against a simulated clock, the run ending at `end_s`.
    fn sim_run(script: &str, duration_ns: Option<u64>, end_s: u64) -> SendRun {
        sim_run_with(script, duration_ns, end_s, |p| {
            Sent(Family::of_addr(&p.dst), p.proto)
        })
    }

    /// [`sim_run`], each flow sending through the transmitter `tx` makes for it.
    fn sim_run_with<T: Transmit>(
        script: &str,
        duration_ns: Option<u64>,
        end_s: u64,
        tx: impl Fn(&crate::plan::FlowPlan) -> T,
    ) -> SendRun {
        let t0 = 1_000;
        let flows = plan(&parse(script).unwrap(), duration_ns)
            .unwrap()
            .into_iter()
            .map(|p| {
                let mut tx = tx(&p);
                let mut pacer = FlowPacer::new(p.phases.clone(), 1);
                let stats = crate::send::flow::run_flow(
                    &mut pacer,
                    t0,
                    0,
                    &mut Sim(t0),
                    &mut tx,
                    &AtomicBool::new(false),
                );
                FlowResult { plan: p, stats }
            })
            .collect();
        SendRun {
            t0_ns: t0,
            end_ns: t0 + end_s * 1_000_000_000,
            flows,
            cpu_user_s: 0.1,
            cpu_sys_s: 0.1,
        }
    }

    /// Sends every message but those whose sequence number is in `.0` (each fails alone).
    struct FailSome(Vec<u64>);
    impl Transmit for FailSome {
        fn enter_phase(&mut self, _: &crate::plan::Phase) {}
        fn send(&mut self, batch: &mut [Outgoing], _: &Wait) -> BatchResult {
            let sent = batch
                .iter()
                .take_while(|m| !self.0.contains(&m.seq))
                .count();
            let error = (sent < batch.len()).then(|| crate::send::flow::SendError {
                kind: crate::send::flow::ErrorKind::Refused,
                fatal: false,
                message: "refused".into(),
            });
            BatchResult {
                sent,
                error,
                gave_up: false,
            }
        }
        fn bytes(&self, size: u64) -> Bytes {
            crate::rate::message_bytes(Proto::Udp, Family::V4, size)
        }
    }

    /// A COUNT-ended flow is on to its last scheduled message plus one gap of its pattern,
    /// whichever of its messages failed: 3 at 10/s are 0.3 s. It was the last *sent*
    /// message plus the mean gap between sent ones: 0.2 s when the last one failed, so the
    /// rate read 50 % high.
    #[test]
    fn a_count_ended_flow_is_on_until_its_last_scheduled_message() {
        let s = "0 ON 1 UDP DST 127.0.0.1/9 PERIODIC [10 100] COUNT 3\n5 OFF 1\n";
        for failing in [vec![], vec![1], vec![2]] {
            let run = sim_run_with(s, None, 5, |_| FailSome(failing.clone()));
            let f = &summarize(&run, "x.mgn", Counting::Payload, 5, None).flows[0];
            let sent = 3 - failing.len() as u64;
            assert_eq!((f.sent, f.active_s), (sent, 0.3), "failing {failing:?}");
            assert_eq!(f.rate_bps.payload, round3(sent as f64 * 800.0 / 0.3));
        }
    }

    /// Two flows run against a simulated clock: TCP/IPv4 at 90/s and UDP/IPv6 at 10/s for 2 s.
    fn fixed_run() -> SendRun {
        let s = "0 ON 1 TCP DST 127.0.0.1/9 PERIODIC [90 1000]\n0 ON 2 UDP DST ::1/9 PERIODIC [10 1000]\n";
        sim_run(s, Some(2_000_000_000), 2)
    }

    /// Flows one after the other: each family's rate is its flow's, and the total is over
    /// the 3 s from the first start to the last end, as the sink measures it (it was over
    /// the longest flow's 1 s: 1.6 Mbit/s, twice what either flow sent at).
    #[test]
    fn an_aggregate_rate_is_over_the_time_its_flows_covered() {
        let s = "0 ON 1 UDP DST 127.0.0.1/9 PERIODIC [100 1000] COUNT 100\n\
                 2 ON 2 UDP DST ::1/9 PERIODIC [100 1000] COUNT 100\n";
        let s = summarize(&sim_run(s, None, 3), "x.mgn", Counting::Ip, 5, None);
        assert_eq!((s.flows[0].active_s, s.flows[1].active_s), (1.0, 1.0));
        assert_eq!(s.families["ipv4"].rate_bps.payload, 800_000.0);
        assert_eq!(s.families["ipv6"].rate_bps.payload, 800_000.0);
        assert_eq!(s.classes["udp_v6"].rate_bps.payload, 800_000.0);
        assert_eq!(s.total.rate_bps.payload, 533_333.333);
    }

    #[test]
    fn flows_classes_and_mix() {
        let s = summarize(&fixed_run(), "x.mgn", Counting::Ip, 5, None);
        assert_eq!(s.flows[0].status, "completed");
        assert_eq!((s.flows[0].scheduled, s.flows[0].sent), (180, 180));
        assert_eq!(s.flows[0].rate_bps.payload, 720_000.0);
        assert_eq!(s.flows[1].bytes.ip, 20 * 1048);
        assert_eq!((s.total.scheduled, s.total.sent), (200, 200));
        assert_eq!(s.classes["udp_v6"].scheduled, 20);
        // Payload shares are exactly 90 % / 10 %; IP shares follow the header sizes.
        assert_eq!(s.classes["tcp_v4"].share.payload, 0.9);
        assert_eq!(s.classes["udp_v6"].share.payload, 0.1);
        let tcp_ip = 180.0 * (1000.0 + 52.0);
        let udp_ip = 20.0 * 1048.0;
        assert_eq!(
            s.families["ipv4"].share.ip,
            crate::report::round6(tcp_ip / (tcp_ip + udp_ip))
        );
        assert_eq!(s.generator.cpu_ns_per_message, Some(1_000_000.0));
        assert_eq!(s.flows[0].lateness_us.as_ref().unwrap().max, 0.001);
    }

    #[test]
    fn cut_flows_are_named_and_summed() {
        let mut run = fixed_run();
        for (f, queued) in run.flows.iter_mut().zip([Some(1000), None]) {
            f.stats.cut = Some(Cut {
                at_ns: run.t0_ns + 2_000_000_000,
                unwritten_messages: 10,
                unwritten_bytes: 10_000,
                queued_bytes: queued,
                behind: false,
            });
        }
        run.flows[1].stats.ended_by = Some(crate::send::flow::ErrorKind::Timeout);
        let s = summarize(&run, "x.mgn", Counting::Ip, 5, None);
        assert_eq!(s.flows[0].status, "cut");
        assert_eq!(
            s.flows[1].status, "timeout",
            "a stalled flow ends as a timeout"
        );
        assert_eq!(
            s.flows[0].cut,
            Some(CutSummary {
                at_s: 2.0,
                unwritten_messages: 10,
                unwritten_bytes: 10_000,
                queued_bytes: Some(1000),
                behind: false,
            })
        );
        assert_eq!(
            s.cut,
            Some(CutTotal {
                flows: 2,
                behind: 0,
                unwritten_messages: 20,
                unwritten_bytes: 20_000,
                queued_bytes: 1000,
            })
        );
        assert_eq!(
            summarize(&fixed_run(), "x", Counting::Ip, 5, None).cut,
            None
        );
    }

    /// A flow that fell behind its schedule sends for up to 1 s past its end before it is
    /// cut: its rate is over the time its messages left, to the cut. It was over its
    /// planned window: `PERIODIC [10000000 1000]` for 0.5 s read 5.1 Gbit/s of payload
    /// where its 319,040 messages left over 1.5 s (1.7 Gbit/s, as the sink measured).
    #[test]
    fn a_flow_that_fell_behind_has_its_rate_over_the_time_it_sent() {
        let mut run = fixed_run();
        run.end_ns = run.t0_ns + 3_000_000_000;
        run.flows[0].stats.cut = Some(Cut {
            at_ns: run.t0_ns + 3_000_000_000,
            unwritten_messages: 10,
            unwritten_bytes: 10_000,
            queued_bytes: None,
            behind: true,
        });
        let s = summarize(&run, "x.mgn", Counting::Ip, 5, None);
        assert_eq!(
            (s.flows[0].status.as_str(), s.flows[0].active_s),
            ("cut", 3.0)
        );
        assert_eq!(s.flows[0].rate_bps.payload, 480_000.0);
        // Cut at its end by a path that took nothing: its planned window still.
        run.flows[0].stats.cut.as_mut().unwrap().behind = false;
        let s = summarize(&run, "x.mgn", Counting::Ip, 5, None);
        assert_eq!(s.flows[0].active_s, 2.0);
    }

    /// A COUNT that ends a flow long before its OFF: the rate is over the time it sent,
    /// not over the idle rest of its window (it was 1234 messages over 4 s, a quarter).
    #[test]
    fn a_flow_its_count_ends_early_has_the_rate_it_sent_at() {
        let s = "0 ON 1 UDP DST 127.0.0.1/9 PERIODIC [100 1000] COUNT 50\n4 OFF 1\n";
        let run = sim_run(s, None, 4);
        let s = summarize(&run, "x.mgn", Counting::Ip, 5, None);
        assert_eq!((s.flows[0].scheduled, s.flows[0].sent), (50, 50));
        assert_eq!(s.flows[0].active_s, 0.5);
        assert_eq!(s.flows[0].rate_bps.payload, 800_000.0);
        // A flow whose OFF comes first keeps its planned window.
        let f = fixed_run();
        assert_eq!(
            summarize(&f, "x", Counting::Ip, 5, None).flows[0].active_s,
            2.0
        );
    }
}
