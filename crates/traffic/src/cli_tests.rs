//! `dualbench traffic` command-line pieces: failure lines, the nothing-sent line, the
//! dry-run plan, output paths, duration and window bounds.

use super::*;

/// UDP sends to a closed port fail one by one and the flow goes on: it gets a line of
/// its own too (it had none: only the total's "19 failed" hinted at it).
#[test]
fn flows_that_failed_get_one_line_each() {
    use crate::send::flow::{ErrorKind, SendError, SendStats};
    use crate::send::{FlowResult, SendRun};
    let script = "0 ON 1 UDP DST 127.0.0.1/9 PERIODIC [100 100] COUNT 50\n\
                  0 ON 2 TCP DST ::1/9 PERIODIC [100 100] COUNT 50\n\
                  0 ON 3 UDP DST ::1/9 PERIODIC [100 100] COUNT 50\n";
    let refused = SendError {
        kind: ErrorKind::Refused,
        fatal: false,
        message: "Connection refused (os error 111)".into(),
    };
    let mut flows = plan(&script::parse(script).unwrap(), None)
        .unwrap()
        .into_iter();
    let mut udp = SendStats {
        scheduled: 50,
        sent: 31,
        ..SendStats::default()
    };
    (0..19).for_each(|_| udp.record_error(&refused));
    let tcp = SendStats::ended(
        SendError {
            fatal: true,
            ..refused.clone()
        },
        50,
    );
    let fine = SendStats {
        scheduled: 50,
        sent: 50,
        ..SendStats::default()
    };
    let run = SendRun {
        t0_ns: 0,
        end_ns: 1_000_000_000,
        flows: [udp, tcp, fine]
            .into_iter()
            .map(|stats| FlowResult {
                plan: flows.next().unwrap(),
                stats,
            })
            .collect(),
        cpu_user_s: 0.0,
        cpu_sys_s: 0.0,
    };
    let summary = send::summary::summarize(&run, "x.mgn", Counting::Ip, 0, None);
    assert_eq!(
        failure_lines(&summary),
        [
            "dualbench traffic: flow 1 (UDP to 127.0.0.1:9): 19 of 50 messages failed (refused 19): Connection refused (os error 111)",
            "dualbench traffic: flow 2 (TCP to [::1]:9): refused: 50 of 50 messages failed: Connection refused (os error 111)",
        ]
    );
    // Flow 3 sent: the run did not fail as a whole.
    assert_eq!(nothing_sent(&summary), None);
    assert_eq!(
        (
            summary.total.scheduled,
            summary.total.sent,
            summary.total.failed
        ),
        (150, 81, 69)
    );
}

/// A run whose every flow failed before sending: one line with the reasons, grouped
/// (it exited 0 with the run's "sent 0 messages" as the only hint).
#[test]
fn a_run_in_which_no_flow_sent_says_why_in_one_line() {
    use crate::send::flow::{ErrorKind, SendError, SendStats};
    use crate::send::{FlowResult, SendRun};
    let script = "0 ON 1 TCP DST 127.0.0.1/9 PERIODIC [100 100] COUNT 50\n\
                  0 ON 2 TCP DST ::1/9 PERIODIC [100 100] COUNT 50\n\
                  0 ON 3 UDP DST ::1/9 PERIODIC [100 100] COUNT 20\n";
    let e = |kind, message: &str| SendError {
        kind,
        fatal: true,
        message: message.into(),
    };
    let refused = e(ErrorKind::Refused, "Connection refused (os error 111)");
    let unreachable = e(
        ErrorKind::Unreachable,
        "Network is unreachable (os error 101)",
    );
    let stats = [
        SendStats::ended(refused.clone(), 50),
        SendStats::ended(refused, 50),
        SendStats::ended(unreachable, 20),
    ];
    let run = SendRun {
        t0_ns: 0,
        end_ns: 1_000_000_000,
        flows: plan(&script::parse(script).unwrap(), None)
            .unwrap()
            .into_iter()
            .zip(stats)
            .map(|(plan, stats)| FlowResult { plan, stats })
            .collect(),
        cpu_user_s: 0.0,
        cpu_sys_s: 0.0,
    };
    let summary = send::summary::summarize(&run, "x.mgn", Counting::Ip, 0, None);
    assert_eq!(
        nothing_sent(&summary).as_deref(),
        Some("no flow delivered anything: 0 of 120 scheduled messages sent; 2 flows refused (Connection refused (os error 111)), 1 flow unreachable (Network is unreachable (os error 101))")
    );
    assert_eq!(
        (
            summary.total.scheduled,
            summary.total.sent,
            summary.total.failed
        ),
        (120, 0, 120)
    );
    // Stopped by a signal before anything left: not a failure.
    let stopped = send::summary::summarize(
        &run,
        "x.mgn",
        Counting::Ip,
        0,
        Some("interrupted by SIGINT".into()),
    );
    assert_eq!(nothing_sent(&stopped), None);
}

/// `--dry-run` showed neither COUNT nor TOS nor TTL, so a plan could not be checked
/// against its script; nor the shape of a BURST, nor SRC and TXBUFFER. COUNT is shown
/// where an event starts one (a MOD's COUNT is a new count), not where one runs on.
#[test]
fn a_dry_run_shows_count_tos_ttl_src_txbuffer_and_burst_shape() {
    let script = "0 ON 1 UDP DST 127.0.0.1/5000 PERIODIC [10 100] COUNT 5 TOS 0x20 TTL 7 SRC 6000 TXBUFFER 65536\n\
                  1 MOD 1 POISSON [20 200] TOS 0x10\n3 OFF 1\n\
                  0 ON 2 TCP DST ::1/5000 BURST [RANDOM 2 PERIODIC [10 100] FIXED 0.5] COUNT 30\n\
                  0 ON 3 UDP DST ::1/5000 PERIODIC [1 28]\n0.5 MOD 3 COUNT 2\n1 OFF 3\n";
    let plans = plan(&script::parse(script).unwrap(), None).unwrap();
    assert_eq!(
        describe(&plans),
        "flow 1 UDP IPv4 -> 127.0.0.1:5000 0.000s..1.000s PERIODIC 10.000 msg/s x 100 B COUNT 5 TOS 0x20 TTL 7 SRC 6000 TXBUFFER 65536: payload 0.008 / ip 0.010 / wire 0.013 Mbit/s\n\
         flow 1 UDP IPv4 -> 127.0.0.1:5000 1.000s..3.000s POISSON 20.000 msg/s x 200 B TOS 0x10 TTL 7: payload 0.032 / ip 0.036 / wire 0.043 Mbit/s\n\
         flow 2 TCP IPv6 -> [::1]:5000 0.000s..COUNT BURST [RANDOM 2s FIXED 0.5s] PERIODIC 10.000 msg/s x 100 B COUNT 30: payload 0.002 / ip 0.003 / wire 0.004 Mbit/s\n\
         flow 3 UDP IPv6 -> [::1]:5000 0.000s..0.500s PERIODIC 1.000 msg/s x 28 B: payload 0.000 / ip 0.001 / wire 0.001 Mbit/s\n\
         flow 3 UDP IPv6 -> [::1]:5000 0.500s..1.000s PERIODIC 1.000 msg/s x 28 B COUNT 2: payload 0.000 / ip 0.001 / wire 0.001 Mbit/s\n"
    );
}

#[test]
fn the_summary_and_the_mgen_log_must_be_two_files() {
    let dir = std::env::temp_dir().join(format!("dbtr-same-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    let p = |name: &str| dir.join(name);
    // Not made yet: the same name in the same directory, however spelled.
    assert!(names_same_file(&p("x.out"), &p("sub/../x.out")));
    assert!(!names_same_file(&p("x.out"), &p("sub/x.out")));
    // Made: the same file under two names (a hard link), but devices may be shared.
    std::fs::write(p("x.out"), b"log").unwrap();
    std::fs::hard_link(p("x.out"), p("y.out")).unwrap();
    assert!(names_same_file(&p("x.out"), &p("y.out")));
    assert!(!names_same_file(&p("x.out"), &p("z.out")));
    let null = Path::new("/dev/null");
    assert!(!names_same_file(null, null));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Durations that round to 0 ns were taken as 0 (`--duration 1e-12`: "no flow before
/// the duration limit (0 s)", or a sink that stopped at once), and huge ones were
/// printed in full (301 digits for 1e300).
#[test]
fn seconds_are_at_least_a_nanosecond_and_shown_in_one_readable_line() {
    assert_eq!(seconds("--duration", 1e-9), Ok(1));
    assert_eq!(seconds("--duration", 1.5), Ok(1_500_000_000));
    let why = "give a number of seconds of at least 0.000000001 (1 ns) and below 10000000 (about 115 days)";
    for (given, shown) in [
        (1e-12, "1e-12"),
        (4e-10, "4e-10"),
        (0.0, "0"),
        (-1.0, "-1"),
        (1e7, "10000000"),
        (1e300, "1e300"),
        (-1e-300, "-1e-300"),
        (f64::NAN, "NaN"),
        (f64::INFINITY, "inf"),
    ] {
        let e = seconds("--duration", given).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert_eq!(e.message, format!("--duration {shown}: {why}"));
    }
}

#[test]
fn windows_are_bounded_per_flow() {
    let s = |x: f64| (x, seconds("x", x).unwrap());
    assert!(check_windows(s(3600.0), s(1.0)).is_ok());
    assert!(check_windows(s(60.0), s(0.001)).is_ok());
    assert!(check_windows(s(100.0), s(0.001)).is_ok());
    // 1 ns windows: the first message a second in once asked for 97 GB.
    let e = check_windows(s(15.0), s(1e-9)).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert_eq!(
        e.message,
        "--window 0.000000001 over --duration 15 makes 15000000000 windows per flow, more than the 100000 a sink keeps (each flow holds and reports every one): give a longer --window or a shorter --duration"
    );
    // A window (or duration) that rounds to 0 ns is refused first, naming the least.
    let e = seconds("--window", 1e-12).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert_eq!(
        e.message,
        "--window 1e-12: give a number of seconds of at least 0.000000001 (1 ns) and below 10000000 (about 115 days)"
    );
    assert!(check_windows(s(3600.0), s(0.01)).is_err());
}

#[derive(clap::Parser)]
struct Top {
    #[command(subcommand)]
    command: TrafficCommand,
}

fn parsed(args: &[&str]) -> std::result::Result<TrafficCommand, String> {
    use clap::Parser;
    let all = ["traffic"].iter().chain(args);
    Top::try_parse_from(all)
        .map(|t| t.command)
        .map_err(|e| e.to_string())
}

/// `--duration 10s` (send and sink) and `--window 1s` failed with "invalid float literal"
/// where `run -t`, `monitor` and `capture` take units; a unit is read now, and a plain
/// number is still seconds, as in MGEN.
#[test]
fn durations_take_a_unit_or_plain_seconds() {
    let send = |d: &str| match parsed(&["send", "C1B", "--duration", d]) {
        Ok(TrafficCommand::Send(a)) => Ok(a.duration.unwrap()),
        Ok(_) => unreachable!(),
        Err(e) => Err(e),
    };
    assert_eq!(send("1500ms"), Ok(1.5));
    assert_eq!(send("1500ms"), send("1.5"));
    assert_eq!(send("10s"), Ok(10.0));
    assert_eq!(send("2m"), Ok(120.0));
    assert_eq!(send("-1"), Ok(-1.0));
    let sink = |args: &[&str]| match parsed(&[&["sink", "--listen", "127.0.0.1:0"], args].concat())
    {
        Ok(TrafficCommand::Sink(a)) => Ok((a.duration, a.window)),
        Ok(_) => unreachable!(),
        Err(e) => Err(e),
    };
    assert_eq!(sink(&[]), Ok((3600.0, 1.0)));
    assert_eq!(
        sink(&["--duration", "10m", "--window", "250ms"]),
        Ok((600.0, 0.25))
    );
    assert_eq!(
        sink(&["--duration", "600", "--window", "0.25"]),
        Ok((600.0, 0.25))
    );
    // The range check and its message hold for a value with a unit too.
    let e = seconds("--window", sink(&["--window", "0s"]).unwrap().1).unwrap_err();
    assert_eq!(
        e.message,
        "--window 0: give a number of seconds of at least 0.000000001 (1 ns) and below 10000000 (about 115 days)"
    );
    for (flag, given, why) in [
        (
            "--duration",
            "abc",
            "'abc' is not a duration (try 1s, 500ms, 2m)",
        ),
        (
            "--window",
            "10 s",
            "'10 s' is not a duration: no spaces (write '10s'; e.g. 1s, 500ms, 2m)",
        ),
    ] {
        let e = sink(&[flag, given]).unwrap_err();
        assert!(
            e.starts_with(&format!(
                "error: invalid value '{given}' for '{flag} <DURATION>': {why}"
            )),
            "{e}"
        );
    }
}

/// UDP to a port nobody listens on, over 127.0.0.1 and ::1 (ports bound, then closed, here):
/// every message leaves and the peer answers each with ICMP port unreachable, which is
/// counted per flow (`rejected`, `icmp`), gives the flow the status `refused` and a line,
/// and, when no flow delivered anything, fails the run in one line. The run exited 0 with
/// half of the messages `sent` and `completed`: each ICMP failed the next, innocent send.
#[test]
fn udp_to_a_closed_port_counts_every_message_the_peer_refused() {
    let closed = |host: &str| {
        let s = std::net::UdpSocket::bind(format!("{host}:0")).unwrap();
        s.local_addr().unwrap()
    };
    let (v4, v6) = (closed("127.0.0.1"), closed("[::1]"));
    let open = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let live = open.local_addr().unwrap();
    let on = |flow: u32, dst: std::net::SocketAddr| {
        format!(
            "0 ON {flow} UDP DST {}/{} PERIODIC [200 100] COUNT 20\n",
            dst.ip(),
            dst.port()
        )
    };
    let send = |script: &str| {
        let plans = plan(&script::parse(script).unwrap(), None).unwrap();
        let run = send::run(plans, send::SendOptions::default(), &Stop::manual(), None);
        send::summary::summarize(&run, "x.mgn", Counting::Ip, 0, None)
    };
    let summary = send(&format!("{}{}{}", on(1, v4), on(2, v6), on(3, live)));
    let got: Vec<_> = summary
        .flows
        .iter()
        .map(|f| {
            (
                f.status.as_str(),
                f.sent,
                f.failed,
                f.rejected,
                f.icmp.clone(),
            )
        })
        .collect();
    use std::collections::BTreeMap;
    let refused = BTreeMap::from([("refused".to_string(), 20)]);
    assert_eq!(
        got,
        [
            ("refused", 20, 0, 20, refused.clone()),
            ("refused", 20, 0, 20, refused),
            ("completed", 20, 0, 0, BTreeMap::new()),
        ]
    );
    assert_eq!(summary.total.rejected, 40);
    assert_eq!(
        failure_lines(&summary),
        [
            format!("dualbench traffic: flow 1 (UDP to {v4}): refused: the network answered 20 of 20 sent messages with ICMP port unreachable (is a sink listening at {v4}?)"),
            format!("dualbench traffic: flow 2 (UDP to {v6}): refused: the network answered 20 of 20 sent messages with ICMP port unreachable (is a sink listening at {v6}?)"),
        ]
    );
    assert_eq!(nothing_sent(&summary), None, "flow 3 delivered");
    let summary = send(&format!("{}{}", on(1, v4), on(2, v6)));
    assert_eq!(
        nothing_sent(&summary).unwrap(),
        "no flow delivered anything: 40 of 40 scheduled messages sent, and the network answered every one with an ICMP error; 2 flows refused (ICMP port unreachable)"
    );
    drop(open);
}
