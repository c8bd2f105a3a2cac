//! What `traffic send --dry-run` prints: one line per flow phase, with its destination,
//! times, pattern and options as a script writes them, and its rate counted three ways
//! (payload, IP, wire bytes). A pure function of the flow plans.

use crate::numbers::readable;
use crate::plan::FlowPlan;
use crate::rate::message_bytes;
use crate::script;
use dualbench_common::{plural, Family};

/// One line per flow phase: what `--dry-run` prints. A phase's COUNT, TOS and TTL, and the
/// flow's SRC port and TXBUFFER on its first line, follow the pattern as in the script.
pub fn describe(plans: &[FlowPlan]) -> String {
    let mut out = String::new();
    for p in plans {
        let family = Family::of_addr(&p.dst);
        for (i, ph) in p.phases.iter().enumerate() {
            if let script::Pattern::Clone(r) = &ph.pattern {
                out.push_str(&describe_clone(p, i, r));
                continue;
            }
            let (_, rate, size, on_fraction) = pattern_terms(&ph.pattern);
            let kind = pattern_name(&ph.pattern);
            let options = phase_options(p, i);
            let b = message_bytes(p.proto, family, size);
            let mbit = |bytes: u64| rate * on_fraction * 8.0 * bytes as f64 / 1e6;
            let end = match ph.end_ns {
                u64::MAX => "COUNT".to_string(),
                e => format!("{:.3}s", e as f64 / 1e9),
            };
            out.push_str(&format!(
                "flow {} {} {} -> {} {:.3}s..{end} {kind} {rate:.3} msg/s x {size} B{options}: \
                 payload {:.3} / ip {:.3} / wire {:.3} Mbit/s\n",
                p.flow,
                p.proto,
                family,
                p.dst,
                ph.start_ns as f64 / 1e9,
                mbit(b.payload),
                mbit(b.ip),
                mbit(b.wire),
            ));
        }
    }
    out
}

/// The `--dry-run` line of a CLONE phase: the file, its messages and their time span, the
/// repeat count (`for ever`, or the passes and what they send in all) and the rate of a
/// pass as it repeats (messages after the first over the time to the last, as a sink
/// measures a flow), e.g. `CLONE [tcpdump c.pcap [2]] 5 packets over 0.100 s, repeat 2: 13
/// messages over 0.300 s, 40.000 msg/s x 350 B mean`. A phase nothing else ends ends with
/// its last pass.
fn describe_clone(p: &FlowPlan, i: usize, r: &script::Replay) -> String {
    let ph = &p.phases[i];
    let family = Family::of_addr(&p.dst);
    let trace = r.trace.clone().unwrap_or_default();
    let end = match (ph.end_ns, ph.count, trace.total_span_ns(r.repeat)) {
        (u64::MAX, None, Some(span)) => format!("{:.3}s", (ph.start_ns + span) as f64 / 1e9),
        (u64::MAX, _, _) => "COUNT".to_string(),
        (e, _, _) => format!("{:.3}s", e as f64 / 1e9),
    };
    let n = trace.messages.len() as u64;
    let span = |ns: u64| format!("{:.3} s", ns as f64 / 1e9);
    let (repeat, passes) = match (r.repeat, trace.total_messages(r.repeat)) {
        (Some(rep), Some(total)) => (
            format!(" [{rep}]"),
            format!(
                ", repeat {rep}: {} over {}",
                plural(total, "message"),
                span(trace.total_span_ns(r.repeat).unwrap_or(0))
            ),
        ),
        _ => (String::new(), ", repeat for ever".to_string()),
    };
    // One pass as it repeats (from the second message on), or the one pass there is.
    let (mut bytes, mut msgs) = (crate::rate::Bytes::default(), 0u64);
    for m in trace.messages.iter().skip(1) {
        bytes.add(message_bytes(p.proto, family, m.size));
        msgs += 1;
    }
    let secs = trace.span_ns() as f64 / 1e9;
    let per_s = |x: u64| if secs > 0.0 { x as f64 / secs } else { 0.0 };
    let mean_size = match msgs {
        0 => trace.messages.first().map_or(0, |m| m.size),
        m => bytes.payload / m,
    };
    let mbit = |b: u64| per_s(b) * 8.0 / 1e6;
    format!(
        "flow {} {} {} -> {} {:.3}s..{end} CLONE [tcpdump {}{repeat}] {} over {}{passes}, {:.3} msg/s x {mean_size} B mean{}: \
         payload {:.3} / ip {:.3} / wire {:.3} Mbit/s\n",
        p.flow,
        p.proto,
        family,
        p.dst,
        ph.start_ns as f64 / 1e9,
        r.file,
        plural(n, "packet"),
        span(trace.span_ns()),
        per_s(msgs),
        phase_options(p, i),
        mbit(bytes.payload),
        mbit(bytes.ip),
        mbit(bytes.wire),
    )
}

/// A pattern's name as `--dry-run` shows it; a BURST's with its shape.
fn pattern_name(pattern: &script::Pattern) -> String {
    match pattern {
        script::Pattern::Burst(b) => format!(
            "BURST [{} {}s {} {}s] {}",
            if b.random_interval {
                "RANDOM"
            } else {
                "REGULAR"
            },
            readable(b.interval_s),
            if b.random_duration { "EXP" } else { "FIXED" },
            readable(b.duration_s),
            pattern_name(&b.inner)
        ),
        script::Pattern::Jitter { fraction, .. } => format!("JITTER +/-{}", readable(*fraction)),
        other => pattern_terms(other).0.to_string(),
    }
}

/// COUNT (where the phase's event starts one: a running count is not new messages), TOS
/// and TTL of phase `i` of a flow, and on its first phase the flow's SRC port and TXBUFFER,
/// as a script writes them (each with a leading space).
fn phase_options(p: &FlowPlan, i: usize) -> String {
    let ph = &p.phases[i];
    let mut out = String::new();
    if let (Some(n), true) = (ph.count, ph.count_starts) {
        out.push_str(&format!(" COUNT {n}"));
    }
    if let Some(tos) = ph.tos {
        out.push_str(&format!(" TOS 0x{tos:02x}"));
    }
    if let Some(ttl) = ph.ttl {
        out.push_str(&format!(" TTL {ttl}"));
    }
    if let (0, Some(port)) = (i, p.src_port) {
        out.push_str(&format!(" SRC {port}"));
    }
    if let (0, Some(bytes)) = (i, p.txbuffer) {
        out.push_str(&format!(" TXBUFFER {bytes}"));
    }
    out
}

/// Name, message rate, size and mean fraction of time on (BURST) of a pattern.
fn pattern_terms(pattern: &script::Pattern) -> (&'static str, f64, u64, f64) {
    match pattern {
        script::Pattern::Periodic { rate, size } => ("PERIODIC", *rate, *size, 1.0),
        script::Pattern::Poisson { rate, size } => ("POISSON", *rate, *size, 1.0),
        script::Pattern::Jitter { rate, size, .. } => ("JITTER", *rate, *size, 1.0),
        script::Pattern::Burst(b) => {
            let (_, rate, size, _) = pattern_terms(&b.inner);
            ("BURST", rate, size, (b.duration_s / b.interval_s).min(1.0))
        }
        // Described by `describe_clone`.
        script::Pattern::Clone(r) => (
            "CLONE",
            0.0,
            r.trace.as_ref().map_or(0, |t| t.largest.1),
            1.0,
        ),
    }
}
