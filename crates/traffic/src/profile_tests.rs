//! Profiles and presets: flow allocation, class shares of the rate, and the script they become.

use super::*;

fn class_bps(p: &Profile) -> [f64; 4] {
    let mut out = [0.0; 4];
    for f in flows(p) {
        let i = CLASSES
            .iter()
            .position(|c| *c == (f.proto, f.family))
            .unwrap();
        // What the sender will emit: messages per second times counted bits per message.
        out[i] +=
            f.rate * 8.0 * message_bytes(f.proto, f.family, f.size).counted(p.counting) as f64;
    }
    out
}

#[test]
fn presets_have_s3_class_shares() {
    let expected: [(&str, [f64; 4], f64); 6] = [
        ("C1B", [45.0, 45.0, 5.0, 5.0], 75e6),
        ("c2b", [22.5, 67.5, 2.5, 7.5], 75e6),
        ("C3B", [67.5, 22.5, 7.5, 2.5], 75e6),
        ("C4B", [45.0, 45.0, 5.0, 5.0], 100e6),
        ("C5B", [22.5, 67.5, 2.5, 7.5], 100e6),
        ("C6B", [67.5, 22.5, 7.5, 2.5], 100e6),
    ];
    for (name, shares, total) in expected {
        let p = preset(name).unwrap();
        let got = class_bps(&p);
        for i in 0..4 {
            let want = total * shares[i] / 100.0;
            assert!(
                (got[i] - want).abs() < 1e-6 * total,
                "{name} class {i}: {} vs {want}",
                got[i]
            );
        }
        assert_eq!(flows(&p).len(), 10);
    }
    assert!(preset("C7B").is_none());
}

#[test]
fn flows_are_allocated_by_share_with_one_per_class() {
    assert_eq!(allocate_flows(&[45.0, 45.0, 5.0, 5.0], 10), [4, 4, 1, 1]);
    assert_eq!(allocate_flows(&[22.5, 67.5, 2.5, 7.5], 10), [2, 6, 1, 1]);
    assert_eq!(allocate_flows(&[67.5, 22.5, 7.5, 2.5], 10), [6, 2, 1, 1]);
    assert_eq!(allocate_flows(&[50.0, 50.0, 0.0, 0.0], 3), [2, 1, 0, 0]);
    assert_eq!(allocate_flows(&[0.0, 0.0, 0.0, 1.0], 4), [0, 0, 0, 4]);
    for flows in 4..40 {
        assert_eq!(
            allocate_flows(&[22.5, 67.5, 2.5, 7.5], flows)
                .iter()
                .sum::<u32>(),
            flows
        );
    }
}

#[test]
fn c1b_message_rates_and_sizes() {
    // 75 Mbit/s of IP bytes: a TCP/IPv4 flow carries 75e6 * 0.45 / 4 bits/s in messages of
    // 1460 payload bytes, 1564 IP bytes (two segments); a UDP/IPv6 flow 75e6 * 0.05 in
    // 1488-byte datagrams.
    let f = flows(&preset("C1B").unwrap());
    assert_eq!(
        (f[0].proto, f[0].family, f[0].size),
        (Proto::Tcp, Family::V4, 1460)
    );
    assert!((f[0].rate - 75e6 * 0.45 / 4.0 / (8.0 * 1564.0)).abs() < 1e-9);
    let last = f.last().unwrap();
    assert_eq!(
        (last.proto, last.family, last.size),
        (Proto::Udp, Family::V6, 1440)
    );
    assert!((last.rate - 75e6 * 0.05 / (8.0 * 1488.0)).abs() < 1e-9);
}

const TOML: &str = r#"
rate = "20Mbit"
counting = "payload"
mix = { tcp_v4 = 1, udp_v6 = 3 }
flows = 4
duration = 2.5
pattern = "poisson"
udp_size = { ipv4 = 500, ipv6 = 1000 }
[destinations]
ipv4 = ["127.0.0.1/5000"]
ipv6 = ["::1/5000", "[::1]:5001"]
"#;

#[test]
fn toml_profile_becomes_a_script() {
    let p = parse_profile(TOML, "p.toml").unwrap();
    assert_eq!(p.counting, Counting::Payload);
    assert_eq!(allocate_flows(&p.mix, p.flows), [1, 0, 0, 3]);
    let script = to_script(&p, None).unwrap();
    let ons: Vec<&FlowSpec> = script
        .events
        .iter()
        .filter_map(|e| {
            if let Action::On(s) = &e.action {
                Some(s)
            } else {
                None
            }
        })
        .collect();
    assert_eq!(ons.len(), 4);
    let dsts: Vec<String> = ons.iter().map(|s| s.dst.to_string()).collect();
    assert_eq!(
        dsts,
        vec!["127.0.0.1:5000", "[::1]:5000", "[::1]:5001", "[::1]:5000"]
    );
    // 15 Mbit/s of UDP payload over 3 flows of 1000-byte messages: 625 messages/s each.
    assert_eq!(
        ons[1].pattern,
        Pattern::Poisson {
            rate: 625.0,
            size: 1000
        }
    );
    let off = script.events.last().unwrap();
    assert_eq!((off.at_ns, &off.action), (2_500_000_000, &Action::Off));
}

#[test]
fn profile_errors_name_the_file_and_cause() {
    let e = parse_profile("rate = \"75\"\nmix = {tcp_v4 = 1}\nflows = 1\n", "x.toml").unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert!(
        e.message.starts_with("x.toml: rate '75' has no unit"),
        "{}",
        e.message
    );
    let e = parse_profile(
        "rate = \"1Mbit\"\nmix = {tcp_v4 = 1, udp_v4 = 1}\nflows = 1\n",
        "x.toml",
    )
    .unwrap_err();
    assert!(
        e.message.contains("flows = 1 must be between 2"),
        "{}",
        e.message
    );
    let e = parse_profile(
        "rate = \"1Mbit\"\nmix = {tcp_v9 = 1}\nflows = 1\n",
        "x.toml",
    )
    .unwrap_err();
    assert!(e.message.contains("tcp_v9"), "{}", e.message);
    // A TOML syntax error names its line (the one left open, not the end of the file),
    // and prints as one line.
    let e = parse_profile("rate = \"1Mbit\"\nflows = [\n", "x.toml").unwrap_err();
    assert_eq!(
        e.to_string(),
        "x.toml:2: at 'flows = [': not TOML (invalid array: expected `]`): separate a list's items with commas and close it, like ipv4 = [\"198.18.1.2/5000\", \"198.18.1.3/5000\"] (the profile format is in docs/traffic.md, \"Profiles and presets\")"
    );
    let mut p = preset("C1B").unwrap();
    let e = to_script(&p, Some(1.0)).unwrap_err();
    assert!(
        e.message.contains("no IPv4 destination: pass --dst4"),
        "{}",
        e.message
    );
    p.destinations = [
        vec!["127.0.0.1:9".parse().unwrap()],
        vec!["[::1]:9".parse().unwrap()],
    ];
    assert!(to_script(&p, None)
        .unwrap_err()
        .message
        .contains("needs a duration"));
    let e = parse_destinations(&["::1/80".to_string()], Family::V4).unwrap_err();
    assert!(e.contains("not an IPv4 address"), "{e}");
}

/// A profile is bounded as a script is: a duration of 1e300 s once saturated its OFF to
/// "never" (a flow without end), and 100 Gbit/s of 28-byte messages asked each flow for
/// 111,607,143 messages/s where a script's PERIODIC refuses more than 10,000,000.
#[test]
fn profile_durations_and_flow_rates_are_bounded() {
    let text = |rate: &str, duration: &str| {
        format!(
            "rate = \"{rate}\"\nduration = {duration}\nflows = 2\nmix = {{ udp_v4 = 1 }}\n\
             udp_size = {{ ipv4 = 28, ipv6 = 28 }}\n[destinations]\nipv4 = [\"127.0.0.1/9\"]\n"
        )
    };
    let e = parse_profile(&text("1Mbit", "1e300"), "x.toml").unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert_eq!(
        e.message,
        "x.toml: duration must be a number of seconds of at least 0.000000001 (1 ns) and below 10000000 (about 115 days)"
    );
    // 1e-12 s rounded to 0: "no flow of the script is ever on".
    let e = parse_profile(&text("1Mbit", "1e-12"), "x.toml").unwrap_err();
    assert_eq!(
        e.message,
        "x.toml: duration must be a number of seconds of at least 0.000000001 (1 ns) and below 10000000 (about 115 days)"
    );
    // As few messages as a script's lowest rate, one per 1,000,000 s, and no fewer:
    // "0.0001bit" over two flows of 56 IP bytes was taken, one message each at the start.
    let p = parse_profile(&text("0.0001bit", "10"), "x.toml").unwrap();
    let e = to_script(&p, None).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert_eq!(
        e.message,
        "each udp_v4 flow would send one message every 8960000 s, longer than the 1000000 s a flow may wait: raise the rate, or give fewer flows or smaller messages"
    );
    assert!(to_script(
        &parse_profile(&text("0.001bit", "10"), "x.toml").unwrap(),
        None
    )
    .is_ok());
    assert!(parse_profile(&text("1Mbit", "9999999"), "x.toml").is_ok());
    assert!(parse_profile(&text("1Mbit", "0.000000001"), "x.toml").is_ok());
    // A huge rate's message count in one readable line (it was 45 digits).
    let p = parse_profile(
        &text("100000000000000000000000000000000000000000Mbit", "10"),
        "x.toml",
    )
    .unwrap();
    assert_eq!(
        to_script(&p, None).unwrap_err().message,
        "each udp_v4 flow would send 1.116e44 messages/s, more than the 10000000 a flow may: lower the rate, or give more flows or larger messages"
    );
    // toml's own message printed 1e300 as 301 digits.
    let bad = text("1Mbit", "10").replace("udp_size = { ipv4 = 28", "udp_size = { ipv4 = 1e300");
    assert_eq!(
        parse_profile(&bad, "x.toml").unwrap_err().message,
        "x.toml:5: key 'udp_size.ipv4': invalid type: floating point `1e300`, expected a whole number: write payload bytes as a whole number, like ipv4 = 1460"
    );
    let p = parse_profile(&text("100Gbit", "10"), "x.toml").unwrap();
    let e = to_script(&p, None).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert_eq!(
        e.message,
        "each udp_v4 flow would send 111607143 messages/s, more than the 10000000 a flow may: lower the rate, or give more flows or larger messages"
    );
    // 2 x 10,000,000 messages/s of 28 + 28 IP bytes: the most two flows may send.
    assert!(to_script(
        &parse_profile(&text("8960Mbit", "10"), "x.toml").unwrap(),
        None
    )
    .is_ok());
}

/// `udp_size = { ipv6 = 1200 }` (a profile of IPv6 flows) was refused with serde's
/// "missing field `ipv4`": either family may be left out and keeps its default.
#[test]
fn a_size_may_give_one_family_only() {
    let text = |sizes: &str| {
        format!(
            "rate = \"1Mbit\"\nduration = 1\nflows = 4\n\
             mix = {{ tcp_v4 = 1, tcp_v6 = 1, udp_v4 = 1, udp_v6 = 1 }}\n{sizes}\n"
        )
    };
    let p = parse_profile(&text("udp_size = { ipv6 = 1200 }"), "x.toml").unwrap();
    assert_eq!((p.udp_size, p.tcp_size), ([1460, 1200], [1460, 1440]));
    let p = parse_profile(&text("tcp_size = { ipv4 = 1000 }"), "x.toml").unwrap();
    assert_eq!((p.udp_size, p.tcp_size), ([1460, 1440], [1000, 1440]));
    let p = parse_profile(&text("tcp_size = {}"), "x.toml").unwrap();
    assert_eq!(p.tcp_size, DEFAULT_SIZE);
    // A misspelt family is still refused, and a given size is still checked.
    let e = parse_profile(&text("udp_size = { ipv5 = 1200 }"), "x.toml").unwrap_err();
    assert_eq!(
        e.to_string(),
        "x.toml:5: [udp_size]: unknown key `ipv5` (did you mean `ipv4`?); [udp_size] takes ipv4, ipv6"
    );
    let e = parse_profile(&text("udp_size = { ipv6 = 20 }"), "x.toml").unwrap_err();
    assert_eq!(
        e.to_string(),
        "x.toml: udp_size.ipv6 = 20 must be 28..=65487 bytes (dualbench's header takes 28)"
    );
    // TCP messages may be as large as in a script (16 MiB); UDP's stay within a datagram.
    let p = parse_profile(&text("tcp_size = { ipv6 = 1000000 }"), "x.toml").unwrap();
    assert_eq!(p.tcp_size, [1460, 1_000_000]);
    let e = parse_profile(&text("tcp_size = { ipv4 = 16777217 }"), "x.toml").unwrap_err();
    assert_eq!(
        e.to_string(),
        "x.toml: tcp_size.ipv4 = 16777217 must be 28..=16777216 bytes (dualbench's header takes 28)"
    );
    let e = parse_profile(&text("udp_size = { ipv4 = 65488 }"), "x.toml").unwrap_err();
    assert_eq!(
        e.to_string(),
        "x.toml: udp_size.ipv4 = 65488 must be 28..=65487 bytes (dualbench's header takes 28)"
    );
}

/// A required key left out was serde's "x.toml:1: missing field `rate`", and a negative
/// share "mix needs at least one positive share" though another one was positive.
#[test]
fn missing_keys_and_negative_shares_say_what_to_write() {
    let full = "rate = \"1Mbit\"\nmix = { udp_v4 = 1 }\nflows = 1\nduration = 1\n";
    let cases = [
        ("rate", "x.toml: the profile has no `rate`: add e.g. rate = \"75Mbit\" (the total bit rate)"),
        ("mix", "x.toml: the profile has no `mix`: add e.g. mix = { tcp_v4 = 45, tcp_v6 = 45, udp_v4 = 5, udp_v6 = 5 } (shares of the rate)"),
        ("flows", "x.toml: the profile has no `flows`: add e.g. flows = 10 (split over the classes of the mix)"),
    ];
    for (key, want) in cases {
        let text: String = full
            .lines()
            .filter(|l| !l.starts_with(key))
            .map(|l| format!("{l}\n"))
            .collect();
        let e = parse_profile(&text, "x.toml").unwrap_err();
        assert_eq!((e.exit_code(), e.to_string()), (2, want.to_string()));
    }
    let e = parse_profile(
        &full.replace("udp_v4 = 1", "udp_v4 = -1, tcp_v6 = 1"),
        "x.toml",
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "x.toml: mix: udp_v4 = -1 must be a share of 0 or more"
    );
    let e = parse_profile(&full.replace("udp_v4 = 1", "udp_v4 = 0"), "x.toml").unwrap_err();
    assert_eq!(
        e.to_string(),
        "x.toml: mix needs at least one positive share (tcp_v4, tcp_v6, udp_v4, udp_v6)"
    );
}

/// A value of the wrong type said serde's words and no key (`x.toml:4: invalid type:
/// string "10s", expected f64`): it names the key and how to write it.
#[test]
fn a_value_of_the_wrong_type_names_its_key_and_how_to_write_it() {
    let base = "rate = \"10Mbit\"\nmix = { udp_v4 = 1 }\nflows = 1\nduration = 1\n";
    let cases = [
        ("duration = 1", "duration = \"10s\"", "x.toml:4: key 'duration': invalid type: string \"10s\", expected a number: write seconds as a number without quotes, like duration = 60"),
        ("rate = \"10Mbit\"", "rate = 10", "x.toml:1: key 'rate': invalid type: integer `10`, expected a string: write it in quotes with its unit, like rate = \"75Mbit\""),
        ("flows = 1", "flows = \"1\"", "x.toml:3: key 'flows': invalid type: string \"1\", expected a whole number: write a whole number, like flows = 10"),
        ("mix = { udp_v4 = 1 }", "mix = { udp_v4 = \"5%\" }", "x.toml:2: key 'mix.udp_v4': invalid type: string \"5%\", expected a number: write a share as a number, like udp_v4 = 45"),
    ];
    for (good, bad, want) in cases {
        let text = base.replace(good, bad);
        assert_eq!(
            parse_profile(&text, "x.toml").unwrap_err().message,
            want,
            "{bad}"
        );
    }
    let text = format!("{base}[destinations]\nipv4 = \"127.0.0.1/5000\"\n");
    assert_eq!(
        parse_profile(&text, "x.toml").unwrap_err().message,
        "x.toml:6: key 'ipv4': invalid type: string \"127.0.0.1/5000\", expected a sequence: write a list of addresses, like ipv4 = [\"198.18.1.2/5000\"]"
    );
}

/// A profile that is not TOML printed toml's message alone ("expected `.`, `=`"), at the
/// end of the file for a bracket left open, and nothing of what to write: one line now,
/// naming the file, the line and its text, with what to write and where the format is.
#[test]
fn toml_syntax_errors_say_what_to_write_and_where_the_format_is() {
    let head = "# C1B over loopback\nrate = \"75Mbit\"\nmix = { tcp_v4 = 45, udp_v4 = 5 }\n";
    let doc = "(the profile format is in docs/traffic.md, \"Profiles and presets\")";
    for (tail, expected) in [
        ("flows 10\n", "x.toml:4: at 'flows 10': not TOML (expected `.`, `=`): write each setting as key = value, like flows = 10"),
        ("flows = 10\n[destinations\n", "x.toml:5: at '[destinations': not TOML (invalid table header: expected `.`, `]`): write a table's name alone on its line, like [destinations]"),
        ("flows = 10\n[destinations]\nipv4 = [\"127.0.0.1/5000\"\n\n# the end\n", "x.toml:6: at 'ipv4 = [\"127.0.0.1/5000\"': not TOML (invalid array: expected `]`): separate a list's items with commas and close it, like ipv4 = [\"198.18.1.2/5000\", \"198.18.1.3/5000\"]"),
        ("flows = 10\ntcp_size = { ipv4 = 1000\n", "x.toml:5: at 'tcp_size = { ipv4 = 1000': not TOML (invalid inline table: expected `}`): write an inline table on one line and close it, like mix = { tcp_v4 = 45, udp_v4 = 5 }"),
        ("flows = 10\npattern = \"poisson\n", "x.toml:5: at 'pattern = \"poisson': not TOML (invalid basic string): close the quotes on the same line, like rate = \"75Mbit\""),
        ("flows = 10\npattern = poisson\n", "x.toml:5: at 'pattern = poisson': not TOML (invalid string: expected `\"`, `'`): write text in quotes, like pattern = \"periodic\""),
        ("flows = 10\nduration =\n", "x.toml:5: at 'duration =': not TOML (invalid string: expected `\"`, `'`): give the key its value, like duration = 60"),
        ("flows = 10 20\n", "x.toml:4: at 'flows = 10 20': not TOML (expected newline, `#`): give one value per line, text in quotes, like rate = \"75Mbit\""),
        ("flows = 10\nrate = \"1Mbit\"\n", "x.toml:5: at 'rate = \"1Mbit\"': not TOML (duplicate key `rate` in document root): give each key once"),
    ] {
        let e = parse_profile(&format!("{head}{tail}"), "x.toml").unwrap_err();
        assert_eq!(e.exit_code(), 2, "{tail}");
        assert_eq!(e.message, format!("{expected} {doc}"), "{tail}");
        assert_eq!(e.to_string().lines().count(), 1, "{tail}");
    }
    // A long line is cut to 60 characters.
    let long = format!(
        "flows = 10\n[destinations]\nipv4 = [{}\n",
        "\"127.0.0.1/5000\", ".repeat(5)
    );
    let e = parse_profile(&format!("{head}{long}"), "x.toml").unwrap_err();
    assert!(
        e.message.starts_with("x.toml:6: at 'ipv4 = [\"127.0.0.1/5000\", \"127.0.0.1/5000\", \"127.0.0.1/50...': not TOML (invalid array"),
        "{}",
        e.message
    );
    // A well-formed profile with a wrong key or value keeps its own message.
    let e = parse_profile(&format!("{head}flows = 10\nfoo = 1\n"), "x.toml").unwrap_err();
    assert!(
        e.message
            .starts_with("x.toml:5: unknown key `foo`; a profile takes "),
        "{}",
        e.message
    );
}

/// An unknown key is one line (exit 2) naming the line, its table, the key, a close key
/// or where it goes, and what the table takes; toml/serde said `unknown field `foo`,
/// expected one of …` without the table or a close match.
#[test]
fn unknown_keys_name_their_table_and_what_it_takes() {
    let base = "rate = \"10Mbit\"\nmix = { udp_v4 = 1 }\nflows = 1\nduration = 1\n";
    let top = "a profile takes rate, counting, mix, flows, duration, pattern, tcp_size, udp_size, [destinations]";
    let cases = [
        (
            base.replace("mix = { udp_v4 = 1 }", "mix = { udpv4 = 1 }"),
            "x.toml:2: [mix]: unknown key `udpv4` (did you mean `udp_v4`?); [mix] takes tcp_v4, tcp_v6, udp_v4, udp_v6".to_string(),
        ),
        (
            format!("{base}tcp_size = {{ IPv6 = 1200 }}\n"),
            "x.toml:5: [tcp_size]: unknown key `IPv6` (did you mean `ipv6`?); [tcp_size] takes ipv4, ipv6".to_string(),
        ),
        (
            format!("{base}[destinations]\nipv4 = [\"127.0.0.1/5000\"]\nipv5 = []\n"),
            "x.toml:7: [destinations]: unknown key `ipv5` (did you mean `ipv4`?); [destinations] takes ipv4, ipv6".to_string(),
        ),
        (
            "rate = \"10Mbit\"\nflows = 1\n[destinations]\nipv4 = [\"127.0.0.1/5000\"]\nmix = { udp_v4 = 1 }\n".to_string(),
            "x.toml:5: [destinations]: unknown key `mix` (a top-level key: write it above the first table); [destinations] takes ipv4, ipv6".to_string(),
        ),
        (
            format!("{base}[destinations]\ntcp_v4 = 45\n"),
            "x.toml:6: [destinations]: unknown key `tcp_v4` (a key of [mix]); [destinations] takes ipv4, ipv6".to_string(),
        ),
        (
            base.replace("duration = 1", "duraton = 1"),
            format!("x.toml:4: unknown key `duraton` (did you mean `duration`?); {top}"),
        ),
        (
            format!("{base}ipv6 = [\"::1/5000\"]\n"),
            format!("x.toml:5: unknown key `ipv6` (it goes under [tcp_size] or [udp_size] or [destinations]); {top}"),
        ),
        (
            format!("{base}[destination]\nipv4 = [\"127.0.0.1/5000\"]\n"),
            format!("x.toml:5: unknown table [destination] (did you mean [destinations]?); {top}"),
        ),
    ];
    for (text, want) in cases {
        let e = parse_profile(&text, "x.toml").unwrap_err();
        assert_eq!(
            (e.message.as_str(), e.exit_code()),
            (want.as_str(), 2),
            "{text}"
        );
    }
}
