//! `analyze` given a file it cannot read: empty, not a capture, cut inside its header,
//! of link types it does not read (pcap, or pcapng with several interfaces of different
//! types), with packets or without, on standard input too. No network.

use crate::pcapng_block;
use crate::support::{bin_path, succeeded, temp_file};
use std::io::Write;
use std::process::Command;

/// A bad input file is a usage error, as a bad topology, plan or script is for testbed,
/// experiment and traffic (exit 2), on one line naming the cause and what to do. An
/// unsupported link type was exit 1 (`link type 179 is not supported (...)`), and exit 0
/// with an empty report when the file held no packet.
#[test]
fn analyze_rejects_a_file_it_cannot_read_with_one_line_and_exit_2() {
    let (dir, _) = temp_file("x");
    let want = "give a pcap or pcapng file, as dualbench capture -w, tcpdump -w or dumpcap write";
    let links = "not supported (Ethernet, Linux cooked SLL/SLL2, raw IP and BSD loopback are): capture on an Ethernet-like or loopback interface, or on any (Linux cooked)";
    let pcap = |link_type: u32| {
        let mut h = Vec::new();
        for v in [0xa1b2_c3d4u32, 0x0004_0002, 0, 0, 65535, link_type] {
            h.extend(v.to_le_bytes());
        }
        h
    };
    let mut record = pcap(179);
    for v in [1u32, 0, 40, 40] {
        record.extend(v.to_le_bytes());
    }
    record.extend([0u8; 40]);
    let mut shb = Vec::new();
    shb.extend(0x1a2b_3c4du32.to_le_bytes());
    shb.extend([1, 0, 0, 0]);
    shb.extend(u64::MAX.to_le_bytes());
    let shb = pcapng_block(0x0a0d_0d0a, &shb);
    let idb = |link_type: u16| {
        let mut body = link_type.to_le_bytes().to_vec();
        body.extend([0, 0, 0xff, 0xff, 0, 0]);
        pcapng_block(1, &body)
    };
    let epb = |interface: u32| {
        let mut body = Vec::new();
        for v in [interface, 0, 1, 20, 20] {
            body.extend(v.to_le_bytes());
        }
        body.extend([0xab; 20]);
        pcapng_block(6, &body)
    };
    let two_types = [shb.clone(), idb(147), idb(148)].concat();
    let cases: Vec<(&str, Vec<u8>, String)> = vec![
        ("empty.pcap", Vec::new(), format!("empty file, not a capture: {want}")),
        (
            "text.pcap",
            b"hello, not a capture\n".to_vec(),
            format!("not a pcap or pcapng file (unknown magic number 0x6c6c6568): {want}"),
        ),
        (
            "short.pcap",
            b"ab".to_vec(),
            format!("not a pcap or pcapng file (2 bytes): {want}"),
        ),
        (
            "cut.pcap",
            pcap(1)[..10].to_vec(),
            "cut short inside its pcap file header (24 bytes), before any packet: nothing to analyse".into(),
        ),
        ("user2.pcap", record, format!("link type 179 is {links}")),
        ("user2-empty.pcap", pcap(179), format!("link type 179 is {links}")),
        (
            "two.pcapng",
            [two_types.clone(), epb(0), epb(1)].concat(),
            format!("link types 147 and 148 are {links}"),
        ),
        (
            "two-empty.pcapng",
            two_types,
            format!("link types 147 and 148 are {links}"),
        ),
    ];
    for (name, bytes, message) in cases {
        let file = dir.join(name);
        std::fs::write(&file, &bytes).unwrap();
        let out = Command::new(bin_path())
            .arg("analyze")
            .arg(&file)
            .output()
            .unwrap();
        assert_eq!(
            (
                out.status.code(),
                String::from_utf8_lossy(&out.stderr).into_owned()
            ),
            (
                Some(2),
                format!("dualbench: {}: {message}\n", file.display())
            ),
            "{name}"
        );
        assert!(out.stdout.is_empty(), "{name}");
    }
    // From standard input, named as the report names it.
    let mut child = Command::new(bin_path())
        .args(["analyze", "-"])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"junk").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        (out.status.code(), String::from_utf8_lossy(&out.stderr)),
        (
            Some(2),
            format!("dualbench: /dev/stdin: not a pcap or pcapng file (unknown magic number 0x6b6e756a): {want}\n").into()
        )
    );
    // A supported interface beside them, even without packets, is an empty analysis.
    let file = dir.join("mixed.pcapng");
    std::fs::write(&file, [shb, idb(147), idb(1)].concat()).unwrap();
    let out = Command::new(bin_path())
        .args(["analyze", "--format", "csv"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(succeeded(&out).lines().count(), 1, "the header only");
}

/// `analyze -` with a terminal for standard input (a pseudo-terminal `script` makes)
/// waited for a capture to be typed in; it is a usage error now, as `capture -w -` onto
/// a terminal is.
#[test]
fn analyze_of_standard_input_refuses_a_terminal() {
    let mut child = Command::new("script")
        .args(["-qec", &format!("{} analyze -", bin_path()), "/dev/null"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("script (util-linux) is needed for this test");
    let stdin = child.stdin.take(); // kept open: the terminal never ends
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("analyze - waited on a terminal");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    drop(stdin);
    let mut out = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut out).unwrap();
    assert_eq!(
        (status.code(), out.trim_end()),
        (
            Some(2),
            "dualbench: analyze - reads the capture from standard input, a terminal here: pipe one in (dualbench capture -w - | dualbench analyze -) or name a file"
        )
    );
}
