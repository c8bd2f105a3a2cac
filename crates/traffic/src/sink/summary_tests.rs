//! The sink summary as a pure function of fixed receptions: rates, loss, windows, classes
//! and shares.

use super::*;
use crate::message::Header;
use crate::sink::stats::{Received, SinkStats};
use std::net::SocketAddr;

const START: u64 = 1_000_000_000;

/// Message `header` of `size` bytes from `src` (to itself), received at `recv_ns`.
fn got(proto: Proto, src: SocketAddr, header: Header, size: u64, recv_ns: u64) -> Received {
    Received {
        proto,
        src,
        dst: src,
        header,
        size,
        recv_ns,
    }
}

fn run_with(stats: SinkStats) -> SinkRun {
    SinkRun {
        stats,
        listen: vec!["127.0.0.1:5000".parse().unwrap()],
        start_unix_ns: 7,
        end_ns: START + 4_000_000_000,
        log_error: None,
    }
}

/// Flow 1: UDP over IPv4, 100 messages of 1,000 B at 100/s from 0.5 s, seq 10 missing.
/// Flow 2: TCP over IPv6, 50 messages of 1,440 B at 50/s from 0.5 s.
fn fixed() -> SinkStats {
    let mut s = SinkStats::new(START, 1_000_000_000);
    let v4: SocketAddr = "127.0.0.1:4000".parse().unwrap();
    let v6: SocketAddr = "[::1]:4001".parse().unwrap();
    for seq in (0..101u32).filter(|&q| q != 10) {
        let t = START + 500_000_000 + seq as u64 * 10_000_000;
        let h = Header {
            flow: 1,
            seq,
            len: 1000,
            sent_ns: t - 50_000,
            proto: Proto::Udp,
            run: 7,
        };
        s.record(&got(Proto::Udp, v4, h, 1000, t));
    }
    for seq in 0..50u32 {
        let t = START + 500_000_000 + seq as u64 * 20_000_000;
        let h = Header {
            flow: 2,
            seq,
            len: 1440,
            sent_ns: t - 80_000,
            proto: Proto::Tcp,
            run: 7,
        };
        s.record(&got(Proto::Tcp, v6, h, 1440, t));
        if seq == 0 {
            s.connection(Proto::Tcp, v6, &h);
        }
    }
    s
}

#[test]
fn per_flow_rates_loss_delay_and_windows() {
    let summary = summarize(&run_with(fixed()), None);
    assert_eq!(summary.flows.len(), 2);
    let udp = &summary.flows[0];
    assert_eq!(
        (udp.flow, udp.proto, udp.family),
        (1, Proto::Udp, Family::V4)
    );
    assert_eq!(udp.traffic.messages, 100);
    // 99 messages after the first over 1.0 s: 99 * 1000 * 8 bits/s of payload.
    assert_eq!(udp.traffic.rate_bps.payload, 792_000.0);
    assert_eq!(udp.traffic.rate_bps.ip, 99.0 * 1028.0 * 8.0);
    let l = &udp.traffic.loss;
    assert_eq!(
        (
            l.expected,
            l.received,
            l.lost,
            l.duplicates,
            l.reordered,
            l.ratio
        ),
        (101, 100, 1, 0, 0, 0.009901)
    );
    // 50 µs, within the histogram's 3 significant digits.
    let p50 = udp.traffic.delay_us.as_ref().unwrap().p50;
    assert!((p50 - 50.0).abs() < 0.05, "{p50}");
    assert_eq!(udp.traffic.jitter_us, Some(0.0));
    // Window 0 holds seq 0-49 but 10 (49 messages), window 1 seq 50-100 (51 messages).
    assert_eq!(udp.traffic.windows.payload_bps, vec![392_000.0, 408_000.0]);
    assert_eq!(udp.traffic.goodput_bps, None);
    assert_eq!(udp.connections, None);

    let tcp = &summary.flows[1];
    assert_eq!((tcp.family, tcp.connections), (Family::V6, Some(1)));
    assert_eq!(tcp.traffic.goodput_bps, Some(49.0 * 1440.0 * 8.0 / 0.98));
    assert_eq!(tcp.traffic.loss.lost, 0);
}

#[test]
fn classes_families_and_shares() {
    let summary = summarize(&run_with(fixed()), Some("interrupted by SIGINT".into()));
    assert_eq!(
        summary.interrupted.as_deref(),
        Some("interrupted by SIGINT")
    );
    assert_eq!(
        summary.classes.keys().copied().collect::<Vec<_>>(),
        vec!["tcp_v6", "udp_v4"]
    );
    let udp_ip = 100 * 1028;
    let tcp_ip = 50 * (1440 + 2 * 72);
    assert_eq!(summary.total.traffic.bytes.ip, udp_ip + tcp_ip);
    let share = summary.classes["udp_v4"].share.ip;
    assert_eq!(
        share,
        crate::report::round6(udp_ip as f64 / (udp_ip + tcp_ip) as f64)
    );
    let v6 = &summary.families["ipv6"];
    assert!(v6.udp.is_none());
    assert_eq!(v6.tcp.as_ref().unwrap().traffic.messages, 50);
    assert_eq!(v6.all.share.ip, summary.classes["tcp_v6"].share.ip);
    assert_eq!(summary.duration_s, 4.0);
    let json = serde_json::to_value(&summary).unwrap();
    assert_eq!(json["schema"], "dualbench.traffic.sink/1");
    assert_eq!(json["flows"][0]["loss"]["lost"], 1);
    assert_eq!(json["families"]["ipv4"]["udp"]["messages"], 100);
}

/// `n` messages of 512 B at 10/s on UDP flow `flow` from `from_s` seconds after START.
fn steady(s: &mut SinkStats, src: SocketAddr, flow: u32, from_s: u64, n: u32) {
    for seq in 0..n {
        let t = START + from_s * 1_000_000_000 + seq as u64 * 100_000_000;
        let h = Header {
            flow,
            seq,
            len: 512,
            sent_ns: t - 50_000,
            proto: Proto::Udp,
            run: 7,
        };
        s.record(&got(Proto::Udp, src, h, 512, t));
    }
}

/// A group's rate is over the time its flows covered, each to its last arrival plus one
/// mean gap: four flows at once at 40,960 bit/s each are 163,840 bit/s, as the sender
/// counts them. Taking only the first message of the group out (79 of 80 over 1.9 s) made
/// it 170,302 bit/s, 4 % over, with nothing lost. Flows one after the other keep their rate.
#[test]
fn a_groups_rate_is_its_flows_rates_summed_when_they_run_at_once() {
    let mut s = SinkStats::new(START, 1_000_000_000);
    let srcs: Vec<SocketAddr> = [
        "127.0.0.1:4000",
        "127.0.0.1:4001",
        "[::1]:4002",
        "[::1]:4003",
    ]
    .iter()
    .map(|a| a.parse().unwrap())
    .collect();
    for (i, src) in srcs.iter().enumerate() {
        steady(&mut s, *src, i as u32 + 1, 0, 20);
    }
    let summary = summarize(&run_with(s), None);
    assert!(summary
        .flows
        .iter()
        .all(|f| f.traffic.rate_bps.payload == 40_960.0));
    assert_eq!(summary.total.traffic.rate_bps.payload, 163_840.0);
    assert_eq!(
        summary.families["ipv6"].all.traffic.rate_bps.payload,
        81_920.0
    );
    assert_eq!(summary.classes["udp_v4"].traffic.rate_bps.payload, 81_920.0);

    let mut s = SinkStats::new(START, 1_000_000_000);
    steady(&mut s, srcs[0], 1, 0, 10);
    steady(&mut s, srcs[1], 2, 1, 10);
    let summary = summarize(&run_with(s), None);
    assert_eq!(summary.total.traffic.rate_bps.payload, 40_960.0);
}

/// Flows of one message each have no rate, as one such flow has none: two single messages
/// 136 µs apart (two `COUNT 1` flows sent at once) made the total 11.8 Mbit/s while each
/// flow read 0. A flow with messages to time keeps its rate with a lone one beside it.
#[test]
fn flows_of_one_message_have_no_rate_together_either() {
    let a: SocketAddr = "127.0.0.1:4000".parse().unwrap();
    let b: SocketAddr = "[::1]:4001".parse().unwrap();
    let mut s = SinkStats::new(START, 1_000_000_000);
    steady(&mut s, a, 1, 0, 1);
    let h = Header {
        flow: 2,
        seq: 0,
        len: 512,
        sent_ns: START,
        proto: Proto::Udp,
        run: 7,
    };
    s.record(&got(Proto::Udp, b, h, 512, START + 136_000));
    let summary = summarize(&run_with(s), None);
    assert_eq!(summary.total.traffic.messages, 2);
    assert_eq!(summary.total.traffic.rate_bps, Rates::default());
    assert_eq!(summary.flows[0].traffic.rate_bps, Rates::default());
    let mut s = SinkStats::new(START, 1_000_000_000);
    steady(&mut s, a, 1, 0, 20);
    steady(&mut s, b, 2, 0, 1);
    let summary = summarize(&run_with(s), None);
    // 21 messages of 512 B over the 2 s the first flow covered.
    assert_eq!(summary.total.traffic.rate_bps.payload, 43_008.0);
}
