//! Script parser against fixed inputs: valid scripts over both families, and errors that
//! name the line and the token.

use super::*;

const BOTH_FAMILIES: &str = "\
# two constant-rate UDP flows, one per family, and a TCP flow
TOS 0x10
0.0 ON 1 UDP SRC 7001 DST 198.18.0.2/7000 PERIODIC [100 512]
0.0 on 2 udp dst 2001:2::2/7000 periodic [100 512] TOS 32
0.5 ON 3 TCP DST [2001:2::3]/7100 POISSON [ 20 1440 ] COUNT 50
1.5 ON 4 UDP DST ::1/7000 \\
    BURST [RANDOM 2.0 PERIODIC [50 256] EXP 0.5]
2.0 MOD 1 POISSON [200 1024] TTL 9
5 OFF 1
5.0 OFF 2
9.25 OFF 3
";

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

#[test]
fn parses_a_script_over_both_families() {
    let s = parse(BOTH_FAMILIES).unwrap();
    assert_eq!(
        s.globals,
        Globals {
            tos: Some(16),
            ttl: None,
            txbuffer: None,
            txbuffer_line: 0
        }
    );
    assert_eq!(s.events.len(), 8);
    let first = &s.events[0];
    assert_eq!((first.at_ns, first.line, first.flow), (0, 3, 1));
    let Action::On(spec) = &first.action else {
        panic!("ON expected")
    };
    assert_eq!(spec.proto, Proto::Udp);
    assert_eq!(spec.dst, addr("198.18.0.2:7000"));
    assert_eq!(spec.src_port, Some(7001));
    assert_eq!(
        spec.pattern,
        Pattern::Periodic {
            rate: 100.0,
            size: 512
        }
    );

    let Action::On(v6) = &s.events[1].action else {
        panic!("ON expected")
    };
    assert_eq!(v6.dst, addr("[2001:2::2]:7000"));
    assert_eq!(v6.tos, Some(32));

    let Action::On(tcp) = &s.events[2].action else {
        panic!("ON expected")
    };
    assert_eq!((tcp.proto, tcp.count), (Proto::Tcp, Some(50)));
    assert_eq!(tcp.dst, addr("[2001:2::3]:7100"));
    assert_eq!(
        tcp.pattern,
        Pattern::Poisson {
            rate: 20.0,
            size: 1440
        }
    );
    assert_eq!(s.events[2].at_ns, 500_000_000);
}

#[test]
fn burst_continuation_and_mod() {
    let s = parse(BOTH_FAMILIES).unwrap();
    let burst = &s.events[3];
    assert_eq!((burst.line, burst.at_ns), (6, 1_500_000_000));
    let Action::On(spec) = &burst.action else {
        panic!("ON expected")
    };
    assert_eq!(spec.dst, addr("[::1]:7000"));
    let expected = Burst {
        random_interval: true,
        interval_s: 2.0,
        inner: Box::new(Pattern::Periodic {
            rate: 50.0,
            size: 256,
        }),
        random_duration: true,
        duration_s: 0.5,
    };
    assert_eq!(spec.pattern, Pattern::Burst(expected));
    let Action::Mod(change) = &s.events[4].action else {
        panic!("MOD expected")
    };
    assert_eq!(
        change.pattern,
        Some(Pattern::Poisson {
            rate: 200.0,
            size: 1024
        })
    );
    assert_eq!(change.ttl, Some(9));
    assert_eq!(s.events[7].action, Action::Off);
    assert_eq!(s.events[7].at_ns, 9_250_000_000);
}

#[test]
fn events_are_sorted_by_time_stably() {
    let s = parse("3 OFF 1\n0 ON 1 UDP DST 127.0.0.1/9 PERIODIC [1 64]\n").unwrap();
    assert_eq!(
        s.events.iter().map(|e| e.line).collect::<Vec<_>>(),
        vec![2, 1]
    );
}

fn error(text: &str) -> (usize, String, String) {
    let e = parse(text).unwrap_err();
    (e.line, e.token, e.message)
}

#[test]
fn errors_name_line_and_token() {
    let ok = "0.0 ON 1 UDP DST 127.0.0.1/5000 PERIODIC [10 100]\n";
    let (line, token, msg) = error(&format!(
        "{ok}\n1.0 ON 2 UDP DST 127.0.0.1/5000 PERIODK [10 100]\n"
    ));
    assert_eq!((line, token.as_str()), (3, "PERIODK"));
    assert!(msg.contains("unknown option"), "{msg}");

    let (line, token, _) = error("0 ON 1 SCTP DST ::1/5000 PERIODIC [1 100]");
    assert_eq!((line, token.as_str()), (1, "SCTP"));

    let (line, token, msg) = error("0 ON 1 UDP DST fe80::zz/5000 PERIODIC [1 100]");
    assert_eq!((line, token.as_str()), (1, "fe80::zz/5000"));
    assert!(msg.contains("not an IPv4 or IPv6 address"), "{msg}");

    let (_, token, msg) = error("0 ON 1 UDP DST ::1/5000 PERIODIC [1 10]");
    assert_eq!(token, "10");
    assert!(msg.contains("28..="), "{msg}");

    let (_, token, _) = error("0 ON 1 UDP DST ::1/5000 PERIODIC [0 100]");
    assert_eq!(token, "0");

    let (_, token, msg) = error("0 ON 1 UDP DST ::1/5000 PERIODIC [5 100] TTL 0");
    assert_eq!(
        (token.as_str(), msg.as_str()),
        ("0", "TTL must be 1-255 (the kernel refuses 0)")
    );

    let (_, token, msg) = error("0 ON 1 UDP DST 224.1.2.3/5000 PERIODIC [5 100]");
    assert_eq!(token, "224.1.2.3/5000");
    assert!(
        msg.contains("multicast address, which is not supported"),
        "{msg}"
    );

    let (_, token, msg) = error("0 ON 1 UDP DST ::1/5000 PERIODIC [5 100");
    assert_eq!(token, "100");
    assert!(msg.contains("line ends"), "{msg}");
}

/// BURST intervals and on-periods below 1 µs are refused, naming the bounds: 1e-300 s
/// rounded to 0 ns and kept the sender busy for a minute sending nothing, and 1 ns bursts
/// (each starts with a message) sent 3.4 million messages in a second asked to be 10/s.
#[test]
fn burst_times_below_a_microsecond_are_refused() {
    for (script, token, what) in [
        (
            "BURST [REGULAR 1e-300 PERIODIC [10 100] FIXED 1]",
            "1e-300",
            "interval",
        ),
        (
            "BURST [RANDOM 1e-9 PERIODIC [10 100] FIXED 1]",
            "1e-9",
            "interval",
        ),
        (
            "BURST [REGULAR 1 PERIODIC [10 100] EXP 0.0000009]",
            "0.0000009",
            "duration",
        ),
        (
            "BURST [REGULAR 1 PERIODIC [10 100] FIXED 1000001]",
            "1000001",
            "duration",
        ),
    ] {
        let (line, got, msg) = error(&format!("0 ON 1 UDP DST ::1/5000 {script} COUNT 5"));
        assert_eq!((line, got.as_str()), (1, token), "{script}");
        assert_eq!(
            msg,
            format!("burst {what} (s) must be a number from 0.000001 to 1000000"),
            "{script}"
        );
    }
    assert!(parse("0 ON 1 UDP DST ::1/5000 BURST [REGULAR 0.000001 PERIODIC [10 100] FIXED 0.000001] COUNT 5\n").is_ok());
}

#[test]
fn flow_order_errors() {
    let on = "0 ON 4 UDP DST ::1/5000 PERIODIC [1 100]\n";
    let (line, token, msg) = error("1 OFF 4\n");
    assert_eq!((line, token.as_str()), (1, "4"));
    assert!(msg.contains("no earlier ON"), "{msg}");
    let (line, _, msg) = error(&format!("{on}2 OFF 4\n3 MOD 4 PERIODIC [2 100]\n"));
    assert_eq!(line, 3);
    assert!(msg.contains("already OFF"), "{msg}");
    let (line, _, msg) = error(&format!("{on}1 ON 4 UDP DST ::1/5000 PERIODIC [1 100]\n"));
    assert_eq!(line, 2);
    assert!(msg.contains("already used"), "{msg}");
    let (line, token, _) = error(&format!("{on}1 MOD 4 DST ::1/6000\n"));
    assert_eq!((line, token.as_str()), (2, "DST"));
}

/// An OFF or MOD before its flow's ON in time said "flow 1 has no earlier ON event", though
/// the script has one: it names the ON's line and time.
#[test]
fn an_event_before_its_flows_on_names_the_on() {
    let (line, token, msg) = error("2 ON 1 UDP DST ::1/5000 PERIODIC [1 100]\n1 OFF 1\n");
    assert_eq!((line, token.as_str()), (2, "1"));
    assert_eq!(
        msg,
        "flow 1 is not on yet: its ON (line 1) comes at 2 s, after this event at 1 s; a flow's MOD and OFF come at or after its ON"
    );
    let (line, _, msg) =
        error("1.5 MOD 1 PERIODIC [2 100]\n1.5 ON 1 UDP DST ::1/5000 PERIODIC [1 100]\n3 OFF 1\n");
    assert_eq!(line, 1);
    assert_eq!(
        msg,
        "flow 1 is not on yet: its ON (line 2) is at the same time, 1.5 s, but later in the script: put the ON first"
    );
}

#[test]
fn reception_events_and_bad_times_are_rejected() {
    let (_, token, msg) = error("0.0 LISTEN UDP 5000");
    assert_eq!(token, "LISTEN");
    assert!(msg.contains("dualbench traffic sink"), "{msg}");
    let (_, token, _) = error("-1 ON 1 UDP DST ::1/5000 PERIODIC [1 100]");
    assert_eq!(token, "-1");
    let e = parse("soon ON 1").unwrap_err().into_failure("a.mgn");
    assert_eq!(e.exit_code(), 2);
    assert!(
        e.message.starts_with("a.mgn:1: at 'soon': "),
        "{}",
        e.message
    );
}

#[test]
fn colon_port_forms_are_accepted_too() {
    let text = "0 ON 1 UDP DST [2001:2::9]:7000 PERIODIC [1 100]\n0 ON 2 TCP DST 198.18.0.9:7000 PERIODIC [1 100]\n";
    let dsts: Vec<SocketAddr> = parse(text)
        .unwrap()
        .events
        .iter()
        .map(|e| match &e.action {
            Action::On(spec) => spec.dst,
            _ => panic!("ON expected"),
        })
        .collect();
    assert_eq!(
        dsts,
        vec![addr("[2001:2::9]:7000"), addr("198.18.0.9:7000")]
    );
    let (_, token, msg) = error("0 ON 1 UDP DST [::1]:0 PERIODIC [1 100]");
    assert_eq!(token, "[::1]:0");
    assert!(msg.contains("port 0"), "{msg}");
}

/// An event time out of range was "expected an event time in seconds (or a global
/// TOS/TXBUFFER)", as if it were no number at all.
#[test]
fn an_event_time_out_of_range_says_so() {
    for time in ["1e300", "-1", "inf", "1000000000"] {
        let (line, token, msg) = error(&format!(
            "{time} ON 1 UDP DST ::1/5000 PERIODIC [1 100] COUNT 1"
        ));
        assert_eq!((line, token.as_str()), (1, time));
        assert_eq!(
            msg,
            "an event time must be a number of seconds from 0 to below 1000000000"
        );
    }
    let (_, token, msg) = error("SOON ON 1 UDP DST ::1/5000 PERIODIC [1 100] COUNT 1");
    assert_eq!(token, "SOON");
    assert!(msg.starts_with("expected an event time"), "{msg}");
}

/// Whole numbers too large for their field were "must be a number".
#[test]
fn whole_numbers_too_large_or_not_whole_say_which() {
    for (opts, token, msg) in [
        (
            "COUNT 99999999999999999999999",
            "99999999999999999999999",
            "COUNT is too large",
        ),
        ("COUNT 1e3", "1e3", "COUNT must be a whole number"),
        ("SRC 70000", "70000", "SRC port (1-65535) is too large"),
        ("TTL 256", "256", "TTL (1-255) is too large"),
    ] {
        let (_, got, why) = error(&format!("0 ON 1 UDP DST ::1/5000 PERIODIC [1 100] {opts}"));
        assert_eq!((got.as_str(), why.as_str()), (token, msg), "{opts}");
    }
    let (_, got, why) = error("0 ON 1 UDP DST ::1/5000 PERIODIC [1 1e300] COUNT 1");
    assert_eq!(
        (got.as_str(), why.as_str()),
        ("1e300", "size (bytes) must be a whole number")
    );
}

/// MGEN's CLONE, `CLONE [tcpdump <file> [<repeatCount>]]`: it was refused as not supported.
/// The repeat count is MGEN's: -1 (for ever, the default), 0 (once) or the repeats after
/// the first pass; the capture is not read here. JITTER is read too (it was refused).
#[test]
fn clone_is_read_with_its_repeat_count_and_jitter_is_read() {
    let replay = |script: &str| match parse(script).unwrap().events[0].action.clone() {
        Action::On(FlowSpec {
            pattern: Pattern::Clone(r),
            ..
        }) => (r.file, r.repeat, r.line, r.trace.is_none()),
        other => panic!("{other:?}"),
    };
    for (pattern, repeat) in [
        ("CLONE [tcpdump x.pcap]", None),
        ("clone [TCPDUMP x.pcap [-1]]", None),
        ("CLONE [tcpdump x.pcap [0]]", Some(0)),
        ("CLONE [ tcpdump x.pcap [ 3 ] ]", Some(3)),
    ] {
        let script = format!("# a comment\n0 ON 1 UDP DST ::1/5000 {pattern} COUNT 9\n");
        assert_eq!(
            replay(&script),
            ("x.pcap".to_string(), repeat, 2, true),
            "{pattern}"
        );
    }
    let s =
        parse("0 ON 1 TCP DST ::1/5000 PERIODIC [1 100]\n1 MOD 1 CLONE [tcpdump c.pcapng [2]]\n")
            .unwrap();
    let Action::Mod(change) = &s.events[1].action else {
        panic!("{s:?}")
    };
    let Some(Pattern::Clone(r)) = &change.pattern else {
        panic!("{change:?}")
    };
    assert_eq!(
        (r.file.as_str(), r.repeat, r.line),
        ("c.pcapng", Some(2), 2)
    );
    let repeat = "CLONE's repeat count must be -1 (for ever), 0 (once) or the number of repeats after the first pass";
    for (pattern, token, why) in [
        ("CLONE [pcap x.pcap]", "pcap", "CLONE's file type must be tcpdump (a pcap or pcapng file, as tcpdump -w writes)"),
        ("CLONE [tcpdump]", "]", "CLONE needs a file name after tcpdump"),
        ("CLONE [tcpdump x.pcap [-2]]", "-2", repeat),
        ("CLONE [tcpdump x.pcap [once]]", "once", repeat),
        ("CLONE [tcpdump x.pcap [1]", "]", "line ends where ']' was expected"),
        ("CLONE tcpdump x.pcap", "tcpdump", "expected '['"),
        (
            "BURST [REGULAR 1 CLONE [tcpdump x.pcap] FIXED 1]",
            "CLONE",
            "a BURST cannot contain CLONE: a capture has its own times (give CLONE as the flow's pattern)",
        ),
    ] {
        let script = format!("0 ON 1 UDP DST ::1/5000 {pattern}");
        assert_eq!(
            error(&script),
            (1, token.to_string(), why.to_string()),
            "{script}"
        );
    }
    // MGEN's own example, with its fraction of .5; in a BURST and in a MOD too.
    let s = parse("0 ON 1 UDP DST ::1/5000 JITTER [1.0 1024 .5]\n1 MOD 1 JITTER [2 100 0.1]\n")
        .unwrap();
    let Action::On(spec) = &s.events[0].action else {
        panic!("{s:?}")
    };
    assert_eq!(
        spec.pattern,
        Pattern::Jitter {
            rate: 1.0,
            size: 1024,
            fraction: 0.5
        }
    );
    assert!(parse("0 ON 1 UDP DST ::1/5000 BURST [REGULAR 1 JITTER [10 100 0.5] FIXED 1]").is_ok());
    let bound = "JITTER fraction (of the interval) must be a number above 0 and at most 0.5";
    for (fraction, token) in [("0.6", "0.6"), ("0", "0"), ("-0.1", "-0.1"), ("", "]")] {
        let script = format!("0 ON 1 UDP DST ::1/5000 JITTER [10 100 {fraction}]");
        assert_eq!(
            error(&script),
            (1, token.to_string(), bound.to_string()),
            "{script}"
        );
    }
}

/// A MOD line's SRC and TXBUFFER were "unknown option (supported: DST, SRC, ..., TXBUFFER,
/// ...)": refused with a list that named them as supported.
#[test]
fn a_mod_names_what_it_cannot_change_and_lists_its_own_options() {
    let on = "0 ON 1 UDP DST ::1/5000 PERIODIC [1 100]\n";
    let cases = [
        ("1 MOD 1 SRC 6000", "SRC"),
        ("1 MOD 1 txbuffer 6000", "TXBUFFER"),
        ("1 MOD 1 DST 127.0.0.1/5000", "DST"),
    ];
    for (line, what) in cases {
        let (n, token, msg) = error(&format!("{on}{line}\n"));
        assert_eq!(
            (n, token.to_ascii_uppercase()),
            (2, what.to_string()),
            "{line}"
        );
        assert_eq!(
            msg,
            format!("MOD cannot change {what} (a flow keeps its socket): OFF this flow and ON a new one")
        );
    }
    assert_eq!(
        error(&format!("{on}1 MOD 1 RATE 5\n")),
        (
            2,
            "RATE".to_string(),
            "unknown option (supported: COUNT, TOS, TTL, PERIODIC, POISSON, JITTER, BURST, CLONE)"
                .to_string()
        )
    );
    assert_eq!(
        error("0 ON 1 UDP DST ::1/5000 PERIODIC [1 100] RATE 5\n").2,
        "unknown option (supported: DST, SRC, COUNT, TOS, TTL, TXBUFFER, PERIODIC, POISSON, JITTER, BURST, CLONE)"
    );
}

/// A script saved with a byte-order mark (or CRLF line ends) by a Windows editor: its
/// first line was refused "at '\u{feff}0': expected an event time", the mark invisible.
#[test]
fn a_byte_order_mark_and_crlf_line_ends_are_read() {
    let plain = parse("0 ON 1 UDP DST ::1/5000 PERIODIC [10 100] \\\n COUNT 3\n1 OFF 1\n").unwrap();
    let windows =
        parse("\u{feff}0 ON 1 UDP DST ::1/5000 PERIODIC [10 100] \\\r\n COUNT 3\r\n1 OFF 1\r\n")
            .unwrap();
    assert_eq!(plain.events.len(), 2);
    assert_eq!(windows, plain);
}

/// A flow id past 32 bits is a whole number too: the message said it was not one.
#[test]
fn a_flow_id_out_of_range_names_the_range() {
    let why = "flow id must be a whole number from 0 to 4294967295";
    for id in ["4294967296", "-1", "1.5", "x"] {
        let script = format!("0 ON {id} UDP DST ::1/5000 PERIODIC [1 100]");
        assert_eq!(
            error(&script),
            (1, id.to_string(), why.to_string()),
            "{script}"
        );
    }
    assert!(parse("0 ON 4294967295 UDP DST ::1/5000 PERIODIC [1 100]").is_ok());
}

/// MGEN's global TTL was refused as "expected an event time", and so were its other
/// global commands (TXLOG, SEED, ...), as if they were typos: TTL is a default now, as TOS
/// is, and each of the others says what to do instead.
#[test]
fn mgen_global_commands_are_taken_or_named() {
    let s = parse("TTL 9\n0 ON 1 UDP DST ::1/5000 PERIODIC [10 100] COUNT 2\n0 ON 2 UDP DST ::1/5000 PERIODIC [10 100] TTL 3 COUNT 2\n").unwrap();
    assert_eq!(s.globals.ttl, Some(9));
    let flows = crate::plan::plan(&s, None).unwrap();
    let ttls: Vec<Option<u8>> = flows.iter().map(|f| f.phases[0].ttl).collect();
    assert_eq!(
        ttls,
        [Some(9), Some(3)],
        "the global is a default; a flow's own TTL wins"
    );
    assert_eq!(
        error("TTL 0\n").2,
        "TTL must be 1-255 (the kernel refuses 0)"
    );
    let (line, token, msg) = error("\nTXLOG\n0 ON 1 UDP DST ::1/5000 PERIODIC [10 100]\n1 OFF 1\n");
    assert_eq!((line, token.as_str()), (2, "TXLOG"));
    assert_eq!(
        msg,
        "MGEN's global TXLOG is not supported: the send log is `traffic send --mgen-log FILE`: remove the line and pass that"
    );
    assert_eq!(
        error("seed 5\n").2,
        "MGEN's global SEED is not supported: pass `traffic send --seed N` instead"
    );
    assert_eq!(
        error("FROB 5\n").2,
        "expected an event time in seconds (or a global TOS, TTL or TXBUFFER)"
    );
}

/// Numbers that mean nothing were taken: TXBUFFER 0 (the kernel then gave its smallest
/// buffer) and 99999999999 (wrapped around as setsockopt's int), SRC 0, rates down to
/// 1e-300 (one message at the ON, none after). Each is one line naming the token and what
/// to give, as COUNT, TTL and TOS were (COUNT 0 and -1 now say how to ask for no limit).
#[test]
fn zero_and_absurd_numbers_are_refused_with_what_to_give() {
    let txbuffer_max = "TXBUFFER must be at most 1073741823 bytes (Linux caps a socket's send buffer there): give a smaller size";
    let no_count = "COUNT must be 1 or more messages (for no limit, MGEN's COUNT -1, leave COUNT out of the ON)";
    let rate = "rate (messages per second) must be a number from 0.000001 (one message per 1000000 s) to 10000000";
    for (opts, token, msg) in [
        ("TXBUFFER 0", "0", "TXBUFFER 0 is no send buffer: give its size in bytes (e.g. TXBUFFER 65536), or leave TXBUFFER out for the kernel's default"),
        ("TXBUFFER 000", "000", "TXBUFFER 0 is no send buffer: give its size in bytes (e.g. TXBUFFER 65536), or leave TXBUFFER out for the kernel's default"),
        ("TXBUFFER 1073741824", "1073741824", txbuffer_max),
        ("TXBUFFER 99999999999", "99999999999", txbuffer_max),
        ("TXBUFFER 99999999999999999999999", "99999999999999999999999", txbuffer_max),
        ("TXBUFFER -1", "-1", "TXBUFFER bytes must be a whole number"),
        ("TXBUFFER 64k", "64k", "TXBUFFER bytes must be a whole number"),
        ("COUNT 0", "0", no_count),
        ("COUNT 00", "00", no_count),
        ("COUNT -1", "-1", no_count),
        ("COUNT 1.5", "1.5", "COUNT must be a whole number"),
        ("SRC 0", "0", "SRC 0 is no port: give 1-65535, or leave SRC out for a port the kernel picks (what MGEN's SRC 0 means)"),
        ("SRC -1", "-1", "SRC port (1-65535) must be a whole number"),
        ("TTL 00", "00", "TTL must be 1-255 (the kernel refuses 0)"),
        ("TOS 256", "256", "TOS must be 0-255 (decimal or 0x hex)"),
        ("TOS 0x100", "0x100", "TOS must be 0-255 (decimal or 0x hex)"),
    ] {
        let script = format!("0 ON 1 UDP DST ::1/5000 PERIODIC [1 100] {opts}");
        assert_eq!(
            error(&script),
            (1, token.to_string(), msg.to_string()),
            "{opts}"
        );
    }
    // The same on a MOD, and for a global TXBUFFER.
    let on = "0 ON 1 UDP DST ::1/5000 PERIODIC [1 100]\n";
    assert_eq!(
        error(&format!("{on}1 MOD 1 COUNT 0\n")),
        (2, "0".to_string(), no_count.to_string())
    );
    assert_eq!(
        error(&format!("TXBUFFER 0\n{on}")).2,
        "TXBUFFER 0 is no send buffer: give its size in bytes (e.g. TXBUFFER 65536), or leave TXBUFFER out for the kernel's default"
    );
    // Rates, in every pattern that takes one (BURST's inner one too).
    for pattern in [
        "PERIODIC [{} 100]",
        "POISSON [{} 100]",
        "JITTER [{} 100 0.5]",
        "BURST [REGULAR 1 PERIODIC [{} 100] FIXED 0.5]",
    ] {
        for bad in ["0", "-1", "1e-300", "0.00000099", "10000001", "inf", "NaN"] {
            let script = format!("0 ON 1 UDP DST ::1/5000 {}", pattern.replace("{}", bad));
            assert_eq!(
                error(&script),
                (1, bad.to_string(), rate.to_string()),
                "{script}"
            );
        }
        for good in ["0.000001", "10000000"] {
            let script = format!("0 ON 1 UDP DST ::1/5000 {}", pattern.replace("{}", good));
            assert!(parse(&script).is_ok(), "{script}");
        }
    }
    // The bounds themselves are taken.
    let s = parse("TXBUFFER 1073741823\n0 ON 1 UDP DST ::1/5000 PERIODIC [1 100] SRC 65535 COUNT 1 TXBUFFER 1\n0 ON 2 UDP DST ::1/5000 PERIODIC [1 100] SRC 1\n").unwrap();
    assert_eq!(
        (s.globals.txbuffer, s.globals.txbuffer_line),
        (Some(1_073_741_823), 1)
    );
    let Action::On(spec) = &s.events[0].action else {
        panic!("ON expected")
    };
    assert_eq!(
        (spec.src_port, spec.count, spec.txbuffer),
        (Some(65535), Some(1), Some(1))
    );
}

/// A TXBUFFER the kernel would cap (above net.core.wmem_max) or raise (below its smallest
/// buffer) in silence is refused at its line, naming the flow (or the global) and what
/// to give; one it grants as asked passes. Each size is asked once.
#[test]
fn txbuffers_the_kernel_would_change_are_refused() {
    // A kernel with wmem_max 4 MiB and a smallest buffer of 2,304 bytes (Linux on x86-64).
    let asked = std::cell::RefCell::new(Vec::new());
    let kernel = |bytes: usize| {
        asked.borrow_mut().push(bytes);
        Some(bytes.clamp(2304, 4 << 20))
    };
    let script = |text: &str| parse(text).unwrap();
    let ok = script(
        "TXBUFFER 65536\n0 ON 1 UDP DST ::1/5000 PERIODIC [1 100]\n\
         0 ON 2 TCP DST ::1/5000 PERIODIC [1 100] TXBUFFER 4194304\n\
         0 ON 3 TCP DST ::1/5000 PERIODIC [1 100] TXBUFFER 2304\n\
         0 ON 4 TCP DST ::1/5000 PERIODIC [1 100] TXBUFFER 65536\n",
    );
    assert_eq!(check_txbuffers(&ok, kernel), []);
    assert_eq!(*asked.borrow(), [65536, 4194304, 2304]);

    let warned = check_txbuffers(
        &script("0 ON 1 UDP DST ::1/5000 PERIODIC [1 100]\n0 ON 7 UDP DST ::1/5000 PERIODIC [1 100] TXBUFFER 8388608\n"),
        kernel,
    );
    assert_eq!(warned.len(), 1);
    assert_eq!(
        (warned[0].line, warned[0].message.as_str()),
        (2, "flow 7's TXBUFFER 8388608 is above this host's limit, net.core.wmem_max = 4194304: the kernel caps it there; to send with the buffer asked for, raise the limit first (sysctl -w net.core.wmem_max=8388608)")
    );
    let warned = check_txbuffers(
        &script("# small\nTXBUFFER 1000\n0 ON 1 UDP DST ::1/5000 PERIODIC [1 100]\n"),
        kernel,
    );
    assert_eq!(warned.len(), 1);
    assert_eq!(
        (warned[0].line, warned[0].message.as_str()),
        (2, "the global TXBUFFER 1000 is below the kernel's smallest send buffer: it uses 2304 bytes instead")
    );
    // A kernel that cannot be asked (no socket to be had) lets the script through.
    assert_eq!(
        check_txbuffers(
            &script("TXBUFFER 1\n0 ON 1 UDP DST ::1/5000 PERIODIC [1 100]\n"),
            |_| None
        ),
        []
    );
}
