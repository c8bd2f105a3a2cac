//! `dualbench testbed status`: a testbed's nodes with their addresses in both families and
//! their own sysctls, its links with their shaping and what does each part (htb/tbf,
//! pfifo/bfifo, netem or the wire emulator), its processes and whether they still run, and
//! the wire emulators' counters. The text is a pure function of the state plus a few
//! liveness facts read beforehand. Also the line `up` prints for each link whose delay,
//! jitter or loss the wire emulates.

use crate::model::{Shaper, Shaping};
use crate::plan::LinkLayout;
use crate::shaping::Emulator;
use crate::state::{Object, State};
use crate::units::Queue;
use std::fmt::Write;

/// What `status` learned from the system for each namespace and process of the state.
pub struct Liveness {
    pub namespace_exists: Vec<bool>,
    pub process_running: Vec<bool>,
    /// Per link (in layout order): the wire emulator's last stats file, if any.
    pub wire_stats: Vec<Option<serde_json::Value>>,
    /// The pid of the `up` still building an incomplete testbed, if it runs.
    pub builder_running: Option<u32>,
}

/// One direction's shaping in words: `rate 100mbit (htb), queue 100p (pfifo), delay 40ms (wire)`.
pub fn describe(shaping: &Shaping, shaper: Shaper, emulator: Option<Emulator>) -> String {
    let mut parts = Vec::new();
    if let Some(rate) = shaping.rate {
        let by = match shaper {
            Shaper::Htb => "htb",
            Shaper::Tbf => "tbf",
        };
        parts.push(format!("rate {rate} ({by})"));
    }
    if let Some(queue) = shaping.queue {
        let by = match (queue, emulator) {
            (_, Some(Emulator::Netem)) if shaping.needs_emulation() => "netem limit",
            (Queue::Packets(_), _) => "pfifo",
            (Queue::Bytes(_), _) if shaper == Shaper::Tbf && shaping.rate.is_some() => "tbf limit",
            (Queue::Bytes(_), _) => "bfifo",
        };
        parts.push(format!("queue {queue} ({by})"));
    }
    let emulated = emulated_parts(shaping);
    if let (false, Some(e)) = (emulated.is_empty(), emulator) {
        parts.push(format!("{} ({e})", emulated.join(" ")));
    }
    if parts.is_empty() {
        return "unshaped".into();
    }
    parts.join(", ")
}

/// The parts netem or the wire does: `["delay 40ms", "jitter 2ms", "keep_order", "loss 0.1%"]`.
/// A part set to zero (`loss = "0%"` to take the link's loss away in one direction) does
/// nothing and is left out: `up` said `loss 0% b -> a by the userspace wire` of a direction
/// the wire was not even given.
fn emulated_parts(shaping: &Shaping) -> Vec<String> {
    let mut parts = Vec::new();
    if let Some(d) = shaping.delay.filter(|d| d.0 > 0) {
        parts.push(format!("delay {d}"));
    }
    if let Some(j) = shaping.jitter.filter(|j| j.0 > 0) {
        parts.push(format!("jitter {j}"));
    }
    if shaping.keeps_order() {
        parts.push("keep_order".into());
    }
    if let Some(l) = shaping.loss.filter(|l| l.0 > 0) {
        parts.push(format!("loss {l}"));
    }
    if let Some(b) = shaping.burst_loss.filter(|b| b.loses()) {
        parts.push(format!("burst_loss {b}"));
    }
    parts
}

/// For a link whose delay, jitter or loss the wire emulates, the line `up` prints, e.g.
/// `link 2 (r1 <-> server): delay 40ms loss 0.1% each way by the userspace wire in
/// namespace db-wan-wire2, not netem (no netem on this kernel)`; `why` is the parenthesis.
pub fn wire_notice(link: &LinkLayout, why: &str) -> Option<String> {
    let ns = link.wire_namespace.as_ref()?;
    let (ab, ba) = (
        emulated_parts(&link.a_to_b).join(" "),
        emulated_parts(&link.b_to_a).join(" "),
    );
    let what = match (ab.is_empty(), ba.is_empty()) {
        (false, false) if ab == ba => format!("{ab} each way"),
        (false, false) => format!(
            "{ab} {} -> {}, {ba} {} -> {}",
            link.a, link.b, link.b, link.a
        ),
        (false, true) => format!("{ab} {} -> {}", link.a, link.b),
        (true, false) => format!("{ba} {} -> {}", link.b, link.a),
        (true, true) => return None,
    };
    Some(format!(
        "link {} ({} <-> {}): {what} by the userspace wire in namespace {ns}, not netem ({why})",
        link.number, link.a, link.b
    ))
}

/// What is wrong with a testbed that was built: namespaces removed from outside (e.g.
/// `ip netns del`) and processes that no longer run, one phrase each.
pub fn problems(state: &State, live: &Liveness) -> Vec<String> {
    let mut namespaces = live.namespace_exists.iter();
    let mut running = live.process_running.iter();
    let mut found = Vec::new();
    for object in &state.objects {
        match object {
            Object::Namespace { name } => {
                if !namespaces.next().copied().unwrap_or(false) {
                    found.push(format!("namespace {name} is missing"));
                }
            }
            Object::Process { role, .. } => {
                if !running.next().copied().unwrap_or(false) {
                    found.push(format!("{role} is not running"));
                }
            }
            Object::EtcNetns { .. } => {}
        }
    }
    found
}

/// The namespaces of the state that no longer exist.
fn missing_namespaces<'s>(state: &'s State, live: &Liveness) -> Vec<&'s str> {
    let namespaces = state.objects.iter().filter_map(|o| match o {
        Object::Namespace { name } => Some(name.as_str()),
        _ => None,
    });
    namespaces
        .zip(&live.namespace_exists)
        .filter(|(_, exists)| !**exists)
        .map(|(name, _)| name)
        .collect()
}

/// The whole status report. Its first line says `up`, `DEGRADED: <problems>` when a built
/// testbed lost a namespace or a process, or `INCOMPLETE` when the build never finished.
pub fn render(state: &State, live: &Liveness) -> String {
    let l = &state.layout;
    let mut out = String::new();
    let found = problems(state, live);
    let progress = if let (false, Some(pid)) = (state.complete, live.builder_running) {
        format!("INCOMPLETE (still being built by `up`, pid {pid})")
    } else if !state.complete {
        "INCOMPLETE (build was interrupted or failed: run down)".to_string()
    } else if found.is_empty() {
        "up".to_string()
    } else {
        format!("DEGRADED: {}", found.join("; "))
    };
    let _ = writeln!(
        out,
        "testbed {} from {}: {progress}",
        l.testbed,
        state.topology_file.display()
    );
    let _ = writeln!(out, "nodes:");
    let missing = missing_namespaces(state, live);
    for node in &l.nodes {
        let kind = format!("{:?}", node.kind).to_lowercase();
        let gone = if missing.contains(&node.namespace.as_str()) {
            " (MISSING)"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "  {:<10} {:<7} namespace {}{gone}",
            node.name, kind, node.namespace
        );
        for i in &node.interfaces {
            let v4 =
                i.v4.map_or(String::from("(bridge port)"), |a| format!("{a}/24"));
            let v6 = i.v6.map_or(String::new(), |a| format!("{a}/64"));
            // A bridge port has no v6 column: no padding left at the end of its line.
            let line = format!("    {:<6} {v4:<18} {v6}", i.device);
            let _ = writeln!(out, "{}", line.trim_end());
        }
        for own in &node.sysctls {
            let _ = writeln!(out, "    sysctl {own}");
        }
    }
    let _ = writeln!(out, "links:");
    for (link, stats) in l.links.iter().zip(&live.wire_stats) {
        link_lines(&mut out, link, stats.as_ref());
    }
    processes(&mut out, state, live);
    out
}

fn link_lines(out: &mut String, link: &LinkLayout, stats: Option<&serde_json::Value>) {
    let _ = writeln!(
        out,
        "  link {}: {} eth{n} <-> {} eth{n}",
        link.number,
        link.a,
        link.b,
        n = link.number
    );
    let _ = writeln!(
        out,
        "    {} -> {}: {}",
        link.a,
        link.b,
        describe(&link.a_to_b, link.shaper, link.emulator)
    );
    let _ = writeln!(
        out,
        "    {} -> {}: {}",
        link.b,
        link.a,
        describe(&link.b_to_a, link.shaper, link.emulator)
    );
    if let Some(ns) = &link.wire_namespace {
        let _ = writeln!(out, "    wire emulator in namespace {ns}");
        match stats {
            Some(json) => {
                for line in wire_counters(json, &link.a, &link.b) {
                    let _ = writeln!(out, "    {line}");
                }
            }
            None => {
                let _ = writeln!(out, "    wire counters: none yet");
            }
        }
    }
}

/// The wire emulator's counters (`dualbench.wire/1` stats file), one line per direction.
pub fn wire_counters(stats: &serde_json::Value, a: &str, b: &str) -> Vec<String> {
    let mut lines = Vec::new();
    for (key, from, to) in [("a_to_b", a, b), ("b_to_a", b, a)] {
        let d = &stats["directions"][key];
        if d.is_null() {
            continue;
        }
        let n = |k: &str| d[k].as_u64().unwrap_or(0);
        let ms = |k: &str| d["delay_us"][k].as_f64().unwrap_or(0.0) / 1000.0;
        lines.push(format!(
            "wire {from} -> {to}: {} in, {} out, {} lost, {} dropped by the queue, delay mean {:.2} ms (p99 {:.2} ms)",
            crate::plural(n("packets_in") as usize, "frame"),
            n("packets_out"),
            n("dropped_loss"),
            n("dropped_queue"),
            ms("mean"),
            ms("p99")
        ));
    }
    if lines.is_empty() {
        lines.push("wire counters: unreadable stats file".into());
    }
    lines
}

fn processes(out: &mut String, state: &State, live: &Liveness) {
    let mut namespaces = live.namespace_exists.iter();
    let mut running = live.process_running.iter();
    let mut lines = Vec::new();
    for object in &state.objects {
        match object {
            Object::Namespace { name } => {
                if !namespaces.next().copied().unwrap_or(false) {
                    lines.push(format!("  namespace {name}: MISSING"));
                }
            }
            Object::Process { role, pid, .. } => {
                let up = if running.next().copied().unwrap_or(false) {
                    "running"
                } else {
                    "NOT RUNNING"
                };
                let pid = pid.map_or("?".to_string(), |p| p.to_string());
                lines.push(format!("  {role}: pid {pid}, {up}"));
            }
            Object::EtcNetns { .. } => {}
        }
    }
    if !lines.is_empty() {
        let _ = writeln!(out, "processes:");
        for line in lines {
            let _ = writeln!(out, "{line}");
        }
    }
    for s in &state.layout.services {
        let _ = writeln!(
            out,
            "  log of {} on {}: {}",
            s.name,
            s.node,
            s.log.display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::{Micros, Ppm, Rate};

    #[test]
    fn wire_counters_read_per_direction() {
        let stats: serde_json::Value = serde_json::from_str(
            r#"{"schema":"dualbench.wire/1","directions":{
                "a_to_b":{"packets_in":82,"packets_out":78,"dropped_loss":1,"dropped_queue":0,"delay_us":{"mean":40005.3,"p99":40036.4}},
                "b_to_a":{"packets_in":78,"packets_out":78,"dropped_loss":0,"dropped_queue":2,"delay_us":{"mean":40014.5,"p99":40067.1}}}}"#,
        )
        .unwrap();
        assert_eq!(
            wire_counters(&stats, "r1", "server"),
            [
                "wire r1 -> server: 82 frames in, 78 out, 1 lost, 0 dropped by the queue, delay mean 40.01 ms (p99 40.04 ms)",
                "wire server -> r1: 78 frames in, 78 out, 0 lost, 2 dropped by the queue, delay mean 40.01 ms (p99 40.07 ms)",
            ]
        );
    }

    fn wired(a_to_b: Shaping, b_to_a: Shaping) -> LinkLayout {
        LinkLayout {
            number: 2,
            a: "r1".into(),
            b: "server".into(),
            shaper: Shaper::Htb,
            a_to_b,
            b_to_a,
            emulator: Some(Emulator::Wire),
            wire_namespace: Some("db-wan-wire2".into()),
            wire_stats: None,
        }
    }

    #[test]
    fn up_says_which_links_the_wire_emulates_and_why() {
        let wan = Shaping {
            rate: Some(Rate(100_000_000)),
            delay: Some(Micros(40_000)),
            loss: Some(Ppm(1_000)),
            ..Shaping::default()
        };
        assert_eq!(
            wire_notice(&wired(wan, wan), "no netem on this kernel").as_deref(),
            Some("link 2 (r1 <-> server): delay 40ms loss 0.1% each way by the userspace wire in namespace db-wan-wire2, not netem (no netem on this kernel)")
        );
        let jittery = Shaping {
            jitter: Some(Micros(2_000)),
            keep_order: true,
            ..wan
        };
        assert_eq!(
            wire_notice(&wired(wan, jittery), "--delay-by wire").as_deref(),
            Some("link 2 (r1 <-> server): delay 40ms loss 0.1% r1 -> server, delay 40ms jitter 2ms keep_order loss 0.1% server -> r1 by the userspace wire in namespace db-wan-wire2, not netem (--delay-by wire)")
        );
        let plain = Shaping {
            rate: Some(Rate(100_000_000)),
            ..Shaping::default()
        };
        assert_eq!(
            wire_notice(&wired(plain, wan), "x").as_deref(),
            Some("link 2 (r1 <-> server): delay 40ms loss 0.1% server -> r1 by the userspace wire in namespace db-wan-wire2, not netem (x)")
        );
        // A direction whose loss is taken away (`loss = "0%"`) is not the wire's work.
        let lossless = Shaping {
            loss: Some(Ppm(0)),
            ..plain
        };
        assert_eq!(
            wire_notice(&wired(wan, lossless), "x").as_deref(),
            Some("link 2 (r1 <-> server): delay 40ms loss 0.1% r1 -> server by the userspace wire in namespace db-wan-wire2, not netem (x)")
        );
        assert_eq!(
            describe(&lossless, Shaper::Htb, Some(Emulator::Wire)),
            "rate 100mbit (htb)"
        );
        let netem = LinkLayout {
            emulator: Some(Emulator::Netem),
            wire_namespace: None,
            ..wired(wan, wan)
        };
        assert_eq!(wire_notice(&netem, "x"), None);
    }

    /// A built two-host testbed `lab` whose state lists its namespaces and one service.
    fn built() -> State {
        let text = "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n\
            sysctl = { \"net.ipv4.tcp_no_metrics_save\" = \"1\", \"net.ipv4.tcp_sack\" = 0 }\n\
            [[link]]\na = \"a\"\nb = \"b\"\n";
        let topology = crate::model::parse(text).unwrap();
        let settings = crate::plan::Settings {
            testbed: "lab",
            state_dir: std::path::Path::new("/tmp/lab"),
            emulator: Emulator::Wire,
        };
        let layout = crate::plan::plan(&topology, &settings).layout;
        let mut objects: Vec<Object> = layout
            .nodes
            .iter()
            .map(|n| Object::Namespace {
                name: n.namespace.clone(),
            })
            .collect();
        objects.push(Object::Process {
            role: "service web on b".into(),
            namespace: "db-lab-b".into(),
            program: "x".into(),
            pid: Some(1),
            start_time: Some(1),
        });
        State {
            testbed: "lab".into(),
            topology_file: "lab.toml".into(),
            created_unix_ns: 0,
            complete: true,
            builder: None,
            layout,
            objects,
        }
    }

    /// While `up` still ran, the report's first line told the user the build "was
    /// interrupted or failed: run down", and its last line to wait for it.
    #[test]
    fn an_incomplete_testbed_whose_up_still_runs_says_so() {
        let mut state = built();
        state.complete = false;
        let mut live = Liveness {
            namespace_exists: vec![true, true],
            process_running: vec![true],
            wire_stats: vec![None],
            builder_running: Some(4242),
        };
        let first = |live: &Liveness| render(&state, live).lines().next().unwrap().to_string();
        assert_eq!(
            first(&live),
            "testbed lab from lab.toml: INCOMPLETE (still being built by `up`, pid 4242)"
        );
        live.builder_running = None;
        assert_eq!(
            first(&live),
            "testbed lab from lab.toml: INCOMPLETE (build was interrupted or failed: run down)"
        );
    }

    #[test]
    fn a_namespace_deleted_from_outside_makes_the_testbed_degraded() {
        let state = built();
        let live = |a: bool, b: bool, web: bool| Liveness {
            namespace_exists: vec![a, b],
            process_running: vec![web],
            wire_stats: vec![None],
            builder_running: None,
        };
        let healthy = render(&state, &live(true, true, true));
        assert!(
            healthy.starts_with("testbed lab from lab.toml: up\n"),
            "{healthy}"
        );
        assert!(problems(&state, &live(true, true, true)).is_empty());
        let broken = live(true, false, false);
        assert_eq!(
            problems(&state, &broken),
            [
                "namespace db-lab-b is missing",
                "service web on b is not running"
            ]
        );
        let text = render(&state, &broken);
        assert!(
            text.starts_with("testbed lab from lab.toml: DEGRADED: namespace db-lab-b is missing; service web on b is not running\n"),
            "{text}"
        );
        assert!(
            text.contains("  b          host    namespace db-lab-b (MISSING)\n"),
            "{text}"
        );
        assert!(
            text.contains("  a          host    namespace db-lab-a\n"),
            "{text}"
        );
    }

    /// A switch's ports were listed as `    eth2   (bridge port)      `, padded to a column
    /// that stays empty.
    #[test]
    fn no_line_of_the_report_ends_in_spaces() {
        let text =
            "[[host]]\nname = \"a\"\n[[switch]]\nname = \"sw\"\n[[link]]\na = \"a\"\nb = \"sw\"\n";
        let topology = crate::model::parse(text).unwrap();
        let settings = crate::plan::Settings {
            testbed: "lab",
            state_dir: std::path::Path::new("/tmp/lab"),
            emulator: Emulator::Wire,
        };
        let state = State {
            layout: crate::plan::plan(&topology, &settings).layout,
            complete: true,
            ..State::empty_lab()
        };
        let live = Liveness {
            namespace_exists: vec![],
            process_running: vec![],
            wire_stats: vec![None],
            builder_running: None,
        };
        let text = render(&state, &live);
        assert!(
            text.contains("  sw         switch  namespace db-lab-sw\n    eth1   (bridge port)\n"),
            "{text}"
        );
        assert!(text.lines().all(|l| l == l.trim_end()), "{text:?}");
    }

    #[test]
    fn a_nodes_own_sysctls_are_listed_under_it() {
        let live = Liveness {
            namespace_exists: vec![true, true],
            process_running: vec![true],
            wire_stats: vec![None],
            builder_running: None,
        };
        let text = render(&built(), &live);
        assert!(
            text.contains(
                "  b          host    namespace db-lab-b\n    eth1   198.18.1.2/24      2001:2:0:1::2/64\n    sysctl net.ipv4.tcp_no_metrics_save=1\n    sysctl net.ipv4.tcp_sack=0\nlinks:\n"
            ),
            "{text}"
        );
        assert_eq!(text.matches("sysctl").count(), 2, "{text}");
    }

    #[test]
    fn each_part_names_its_mechanism() {
        let s = Shaping {
            rate: Some(Rate(100_000_000)),
            queue: Some(Queue::Packets(100)),
            delay: Some(Micros(40_000)),
            jitter: None,
            loss: Some(Ppm(1_000)),
            burst_loss: None,
            keep_order: false,
        };
        assert_eq!(
            describe(&s, Shaper::Htb, Some(Emulator::Wire)),
            "rate 100mbit (htb), queue 100p (pfifo), delay 40ms loss 0.1% (wire)"
        );
        assert_eq!(
            describe(&s, Shaper::Tbf, Some(Emulator::Netem)),
            "rate 100mbit (tbf), queue 100p (netem limit), delay 40ms loss 0.1% (netem)"
        );
        assert_eq!(describe(&Shaping::default(), Shaper::Htb, None), "unshaped");
    }
}
