//! From a script's events to one plan per flow: where it goes, and its phases (an `ON` and
//! each `MOD` start a phase, the next `MOD` or the `OFF` ends it). The run's duration limit
//! closes every phase that would run past it, and a flow that nothing would stop is a usage
//! error, so every run is bounded.

use crate::rate::Proto;
use crate::script::{Action, Pattern, Script};
use dualbench_common::{Failure, Result};
use std::collections::BTreeMap;
use std::net::SocketAddr;

/// One flow's whole life.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowPlan {
    pub flow: u32,
    pub proto: Proto,
    pub dst: SocketAddr,
    pub src_port: Option<u16>,
    pub txbuffer: Option<usize>,
    /// Line of the `ON` event, to name the flow in messages.
    pub line: usize,
    pub phases: Vec<Phase>,
}

/// A stretch of time with one pattern (ns since the start of the run, end exclusive).
#[derive(Debug, Clone, PartialEq)]
pub struct Phase {
    pub start_ns: u64,
    pub end_ns: u64,
    pub pattern: Pattern,
    /// Messages the flow may send from the event that set this COUNT on (its ON, or a
    /// MOD with COUNT, which starts a new count as MGEN's does; a MOD without COUNT goes
    /// on with the running one). Once they are sent the flow waits for a MOD that sets a
    /// new COUNT, or its end.
    pub count: Option<u64>,
    /// Whether this phase's own event set `count`, so the count starts again from 0 here.
    pub count_starts: bool,
    pub tos: Option<u8>,
    pub ttl: Option<u8>,
}

impl FlowPlan {
    pub fn start_ns(&self) -> u64 {
        self.phases.first().map_or(0, |p| p.start_ns)
    }

    pub fn end_ns(&self) -> u64 {
        self.phases.last().map_or(0, |p| p.end_ns)
    }

    /// The message size of the first phase (MOD may change it later).
    pub fn size(&self) -> u64 {
        self.phases.first().map_or(0, |p| p.pattern.size())
    }
}

/// Build the flow plans. `limit_ns` is `--duration`; without it every flow needs an `OFF`
/// or a `COUNT`.
pub fn plan(script: &Script, limit_ns: Option<u64>) -> Result<Vec<FlowPlan>> {
    let mut flows: BTreeMap<u32, FlowPlan> = BTreeMap::new();
    let mut open: BTreeMap<u32, Phase> = BTreeMap::new();
    for e in &script.events {
        if limit_ns.is_some_and(|l| e.at_ns >= l) {
            continue;
        }
        match &e.action {
            Action::On(spec) => {
                let plan = FlowPlan {
                    flow: e.flow,
                    proto: spec.proto,
                    dst: spec.dst,
                    src_port: spec.src_port,
                    txbuffer: spec.txbuffer.or(script.globals.txbuffer),
                    line: e.line,
                    phases: Vec::new(),
                };
                flows.insert(e.flow, plan);
                let tos = spec.tos.or(script.globals.tos);
                let phase = Phase {
                    start_ns: e.at_ns,
                    end_ns: u64::MAX,
                    pattern: spec.pattern.clone(),
                    count: spec.count,
                    count_starts: spec.count.is_some(),
                    tos,
                    ttl: spec.ttl.or(script.globals.ttl),
                };
                open.insert(e.flow, phase);
            }
            Action::Mod(change) => {
                let Some(prev) = open.remove(&e.flow) else {
                    continue;
                };
                let next = Phase {
                    start_ns: e.at_ns,
                    end_ns: u64::MAX,
                    pattern: change
                        .pattern
                        .clone()
                        .unwrap_or_else(|| prev.pattern.clone()),
                    count: change.count.or(prev.count),
                    count_starts: change.count.is_some(),
                    tos: change.tos.or(prev.tos),
                    ttl: change.ttl.or(prev.ttl),
                };
                close(&mut flows, e.flow, prev, e.at_ns);
                open.insert(e.flow, next);
            }
            Action::Off => {
                if let Some(prev) = open.remove(&e.flow) {
                    close(&mut flows, e.flow, prev, e.at_ns);
                }
            }
        }
    }
    for (flow, phase) in std::mem::take(&mut open) {
        let ends_itself = match &phase.pattern {
            Pattern::Clone(r) => r.repeat.is_some(),
            _ => false,
        };
        if limit_ns.is_none() && phase.count.is_none() && !ends_itself {
            let line = flows.get(&flow).map_or(0, |f| f.line);
            let why = match &phase.pattern {
                Pattern::Clone(r) => format!(
                    "its CLONE of {} repeats for ever (MGEN's default repeat count, -1): give a repeat count (CLONE [tcpdump {} [0]] sends it once), ",
                    r.file, r.file
                ),
                _ => String::new(),
            };
            return Err(Failure::usage(format!(
                "flow {flow} (line {line}) never stops: {why}add an OFF event or a COUNT, or pass --duration SECONDS"
            )));
        }
        let end = limit_ns.unwrap_or(u64::MAX);
        close(&mut flows, flow, phase, end);
    }
    let plans: Vec<FlowPlan> = flows
        .into_values()
        .filter(|f| !f.phases.is_empty())
        .collect();
    if plans.is_empty() {
        return Err(Failure::usage(no_flow(script, limit_ns)));
    }
    check_tcp_ports(&plans)?;
    Ok(plans)
}

/// Two TCP flows on at once from one pinned SRC port to one destination would need two
/// connections on one port pair: the second connect fails (EADDRNOTAVAIL, which read as
/// `unreachable`), so say so before sending.
fn check_tcp_ports(plans: &[FlowPlan]) -> Result<()> {
    let pinned: Vec<&FlowPlan> = plans
        .iter()
        .filter(|p| p.proto == Proto::Tcp && p.src_port.is_some())
        .collect();
    for (i, a) in pinned.iter().enumerate() {
        for b in &pinned[i + 1..] {
            let overlap = a.start_ns() < b.end_ns() && b.start_ns() < a.end_ns();
            if a.src_port == b.src_port && a.dst == b.dst && overlap {
                return Err(Failure::usage(format!(
                    "flows {} (line {}) and {} (line {}) are both TCP from SRC port {} to {} at the same time: one port pair carries one connection; give one of them another SRC port, or none",
                    a.flow, a.line, b.flow, b.line, a.src_port.unwrap_or(0), a.dst
                )));
            }
        }
    }
    Ok(())
}

/// The `ON` events at or after the duration limit, as (flow, line, seconds): flows that
/// `--duration` leaves out (MGEN drops them too), for the sender to name.
pub fn late_starts(script: &Script, limit_ns: Option<u64>) -> Vec<(u32, usize, f64)> {
    let Some(limit) = limit_ns else {
        return Vec::new();
    };
    script
        .events
        .iter()
        .filter(|e| matches!(e.action, Action::On(_)) && e.at_ns >= limit)
        .map(|e| (e.flow, e.line, e.at_ns as f64 / 1e9))
        .collect()
}

/// Why a script plans no flow at all, in its own terms.
fn no_flow(script: &Script, limit_ns: Option<u64>) -> String {
    let ons = || {
        script
            .events
            .iter()
            .filter(|e| matches!(e.action, Action::On(_)))
    };
    match limit_ns {
        _ if ons().next().is_none() => {
            "the script has no flows: add an ON event, e.g. `0.0 ON 1 UDP DST 127.0.0.1/5000 PERIODIC [10 100]`".into()
        }
        Some(l) if ons().all(|e| e.at_ns >= l) => format!(
            "the script starts no flow before the duration limit ({} s): start one earlier or give a longer --duration",
            l as f64 / 1e9
        ),
        _ => "no flow of the script is ever on: each one's OFF comes at its ON's time".into(),
    }
}

fn close(flows: &mut BTreeMap<u32, FlowPlan>, flow: u32, mut phase: Phase, end_ns: u64) {
    phase.end_ns = end_ns;
    if let Some(f) = flows.get_mut(&flow) {
        if phase.end_ns > phase.start_ns {
            f.phases.push(phase);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::parse;

    const S: &str = "\
0 ON 1 UDP DST 127.0.0.1/5000 PERIODIC [10 100] TOS 4
2 MOD 1 PERIODIC [20 100]
4 OFF 1
1 ON 2 TCP DST ::1/5000 PERIODIC [5 1440]
";

    #[test]
    fn phases_follow_mod_and_off() {
        let plans = plan(&parse(S).unwrap(), Some(10_000_000_000)).unwrap();
        assert_eq!(plans.len(), 2);
        let p1 = &plans[0];
        assert_eq!(p1.phases.len(), 2);
        assert_eq!(
            (p1.phases[0].start_ns, p1.phases[0].end_ns),
            (0, 2_000_000_000)
        );
        assert_eq!(
            (p1.phases[1].start_ns, p1.phases[1].end_ns),
            (2_000_000_000, 4_000_000_000)
        );
        assert_eq!(p1.phases[1].tos, Some(4));
        assert_eq!(
            p1.phases[1].pattern,
            Pattern::Periodic {
                rate: 20.0,
                size: 100
            }
        );
        // Flow 2 has no OFF: the duration limit ends it.
        assert_eq!(
            (plans[1].start_ns(), plans[1].end_ns()),
            (1_000_000_000, 10_000_000_000)
        );
    }

    #[test]
    fn duration_cuts_phases_and_drops_late_flows() {
        let plans = plan(&parse(S).unwrap(), Some(1_000_000_000)).unwrap();
        assert_eq!(plans.len(), 1);
        assert_eq!(plans[0].end_ns(), 1_000_000_000);
        // The flow left out is named: flow 2, line 4, due at 1 s.
        assert_eq!(
            late_starts(&parse(S).unwrap(), Some(1_000_000_000)),
            [(2, 4, 1.0)]
        );
        assert!(late_starts(&parse(S).unwrap(), Some(1_000_000_001)).is_empty());
        assert!(late_starts(&parse(S).unwrap(), None).is_empty());
    }

    #[test]
    fn unbounded_flow_is_a_usage_error() {
        let e = plan(&parse(S).unwrap(), None).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(
            e.message.starts_with("flow 2 (line 4) never stops"),
            "{}",
            e.message
        );
        let counted = "0 ON 1 UDP DST ::1/9 PERIODIC [1 100] COUNT 3\n";
        assert_eq!(
            plan(&parse(counted).unwrap(), None).unwrap()[0].end_ns(),
            u64::MAX
        );
    }

    /// CLONE repeats for ever by default (MGEN's -1): without an OFF, a COUNT or
    /// `--duration` such a flow is refused, in words that say how to bound it; a repeat
    /// count ends the flow by itself.
    #[test]
    fn a_clone_that_repeats_for_ever_needs_an_end() {
        let e = plan(
            &parse("0 ON 1 UDP DST ::1/5000 CLONE [tcpdump c.pcap]\n").unwrap(),
            None,
        )
        .unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert_eq!(
            e.message,
            "flow 1 (line 1) never stops: its CLONE of c.pcap repeats for ever (MGEN's default repeat count, -1): give a repeat count (CLONE [tcpdump c.pcap [0]] sends it once), add an OFF event or a COUNT, or pass --duration SECONDS"
        );
        for ok in [
            "0 ON 1 UDP DST ::1/5000 CLONE [tcpdump c.pcap [2]]\n",
            "0 ON 1 UDP DST ::1/5000 CLONE [tcpdump c.pcap] COUNT 5\n",
            "0 ON 1 UDP DST ::1/5000 CLONE [tcpdump c.pcap]\n9 OFF 1\n",
        ] {
            assert!(plan(&parse(ok).unwrap(), None).is_ok(), "{ok}");
        }
    }

    /// Flow 2's connect failed at run time as `unreachable`, "Cannot assign requested
    /// address", with nothing naming the SRC port both flows pinned.
    #[test]
    fn two_tcp_flows_on_one_port_pair_at_once_are_a_usage_error() {
        let s = "0 ON 1 TCP SRC 6001 DST ::1/5000 PERIODIC [10 100]\n\
                 0.5 ON 2 TCP SRC 6001 DST [::1]:5000 PERIODIC [10 200]\n\
                 2 OFF 1\n2 OFF 2\n";
        let e = plan(&parse(s).unwrap(), None).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert_eq!(
            e.message,
            "flows 1 (line 1) and 2 (line 2) are both TCP from SRC port 6001 to [::1]:5000 at the same time: one port pair carries one connection; give one of them another SRC port, or none"
        );
        // One after the other, to another destination, over UDP or with no SRC: fine.
        for ok in [
            "0 ON 1 TCP SRC 6001 DST ::1/5000 PERIODIC [10 100]\n1 OFF 1\n1 ON 2 TCP SRC 6001 DST ::1/5000 PERIODIC [10 100]\n2 OFF 2\n",
            "0 ON 1 TCP SRC 6001 DST ::1/5000 PERIODIC [10 100]\n0 ON 2 TCP SRC 6001 DST ::1/5001 PERIODIC [10 100]\n",
            "0 ON 1 UDP SRC 6001 DST ::1/5000 PERIODIC [10 100]\n0 ON 2 UDP SRC 6001 DST ::1/5000 PERIODIC [10 100]\n",
            "0 ON 1 TCP DST ::1/5000 PERIODIC [10 100]\n0 ON 2 TCP DST ::1/5000 PERIODIC [10 100]\n",
        ] {
            assert!(plan(&parse(ok).unwrap(), Some(3_000_000_000)).is_ok(), "{ok}");
        }
    }

    #[test]
    fn an_empty_plan_says_why_in_the_scripts_terms() {
        let why = |text: &str, limit: Option<u64>| {
            plan(&parse(text).unwrap(), limit).unwrap_err().message
        };
        // No duration was given, so the duration limit is not the reason.
        assert!(why("# nothing\n", None).starts_with("the script has no flows: add an ON event"));
        assert!(why("TOS 4\n", Some(1_000_000_000)).starts_with("the script has no flows"));
        assert_eq!(
            why("5 ON 1 UDP DST ::1/9 PERIODIC [1 100]\n", Some(2_000_000_000)),
            "the script starts no flow before the duration limit (2 s): start one earlier or give a longer --duration"
        );
        assert!(why("1 ON 1 UDP DST ::1/9 PERIODIC [1 100]\n1 OFF 1\n", None).contains("ever on"));
    }
}
