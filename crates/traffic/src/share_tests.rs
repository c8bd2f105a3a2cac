//! Dealing a source's flows to families and parts: the exact flows of every part of the
//! presets and of a mixed script, parts that add up to the whole, and the refusals.

use super::*;
use crate::plan::plan;
use crate::profile::{self, preset, Profile};
use crate::script::parse;

const PROTO: [(&str, Proto); 2] = [("TCP", Proto::Tcp), ("UDP", Proto::Udp)];

fn part(k: u32, n: u32) -> Option<Part> {
    Some(Part { k, n })
}

fn share(family: Option<Family>, part: Option<Part>) -> Share {
    Share { family, part }
}

/// A preset with one destination per family.
fn preset_with_dsts(name: &str) -> Profile {
    let mut p = preset(name).unwrap();
    p.destinations = [
        vec!["198.18.2.3:5000".parse().unwrap()],
        vec!["[2001:2:0:2::5]:5000".parse().unwrap()],
    ];
    p
}

fn dealt_ids(p: &Profile, s: Share) -> Vec<u32> {
    deal(&profile::source_flows(p), &s, "P").unwrap().flows
}

#[test]
fn part_values_parse_and_bad_ones_say_why() {
    assert_eq!(Part::parse("1/2"), Ok(Part { k: 1, n: 2 }));
    assert_eq!(Part::parse("3/3"), Ok(Part { k: 3, n: 3 }));
    assert_eq!(Part::parse("1/1"), Ok(Part { k: 1, n: 1 }));
    assert_eq!(Part::parse("2/4").unwrap().to_string(), "2/4");
    let how = "give K/N, this sender's part K of N senders (1 <= K <= N), e.g. 1/2";
    assert_eq!(
        Part::parse("0/2").unwrap_err(),
        format!("K = 0 is not one of the parts 1..=2 (they are numbered from 1): {how}")
    );
    assert_eq!(
        Part::parse("3/2").unwrap_err(),
        format!("K = 3 is not one of the parts 1..=2 (they are numbered from 1): {how}")
    );
    assert_eq!(
        Part::parse("1/0").unwrap_err(),
        format!("N = 0 senders: N must be 1..=10000; {how}")
    );
    assert_eq!(
        Part::parse("x").unwrap_err(),
        format!("no '/' in it: {how}")
    );
    assert_eq!(
        Part::parse("1/x").unwrap_err(),
        format!("N 'x' is not a whole number: {how}")
    );
    assert_eq!(
        Part::parse("-1/2").unwrap_err(),
        format!("K '-1' is not a whole number: {how}")
    );
    assert!(Part::parse("1/10001").is_err());
}

#[test]
fn family_values() {
    for (text, family) in [
        ("4", Family::V4),
        ("6", Family::V6),
        ("IPv4", Family::V4),
        ("ipv6", Family::V6),
    ] {
        assert_eq!(parse_family(text), Ok(family), "{text}");
    }
    for bad in ["", "5", "46", "ip"] {
        assert_eq!(
            parse_family(bad).unwrap_err(),
            "give 4 (the IPv4 flows) or 6 (the IPv6 flows)"
        );
    }
}

/// Flow numbers of the presets (profile order: TCP v4, TCP v6, UDP v4, UDP v6), and each
/// of S3's four senders' flows: the family's TCP flows dealt in turn, then its UDP flow to
/// the next part. Every level is 10 flows, each sent once.
#[test]
fn each_preset_family_and_half_gets_exactly_its_flows() {
    // (presets, [v4 1/2, v4 2/2, v6 1/2, v6 2/2])
    let table: [(&[&str], [&[u32]; 4]); 3] = [
        (&["C1B", "C4B"], [&[1, 3, 9], &[2, 4], &[5, 7, 10], &[6, 8]]),
        (&["C2B", "C5B"], [&[1, 9], &[2], &[3, 5, 7, 10], &[4, 6, 8]]),
        (&["C3B", "C6B"], [&[1, 3, 5, 9], &[2, 4, 6], &[7, 10], &[8]]),
    ];
    for (names, parts) in table {
        for name in names {
            let p = preset_with_dsts(name);
            let shares = [
                share(Some(Family::V4), part(1, 2)),
                share(Some(Family::V4), part(2, 2)),
                share(Some(Family::V6), part(1, 2)),
                share(Some(Family::V6), part(2, 2)),
            ];
            let mut all: Vec<u32> = Vec::new();
            for (s, want) in shares.into_iter().zip(parts) {
                assert_eq!(dealt_ids(&p, s), want, "{name} {s:?}");
                all.extend(want);
            }
            all.sort();
            assert_eq!(all, (1..=10).collect::<Vec<u32>>(), "{name}");
        }
    }
}

/// At C1B each family's first sender has 2 TCP and 1 UDP flow, its second 2 TCP flows, as
/// S3's two pairs per family; the flows are the whole preset's, rates and all.
#[test]
fn c1b_halves_are_two_tcp_and_one_udp_and_two_tcp_at_the_presets_rates() {
    let p = preset_with_dsts("C1B");
    let whole = profile::flows(&p);
    for (family, first, second) in [(Family::V4, 1, 2), (Family::V6, 1, 2)] {
        for (k, want) in [(first, [2, 1]), (second, [2, 0])] {
            let ids = dealt_ids(&p, share(Some(family), part(k, 2)));
            for ((name, proto), n) in PROTO.iter().zip(want) {
                let got = ids
                    .iter()
                    .filter(|&&id| whole[id as usize - 1].proto == *proto)
                    .count();
                assert_eq!(got, n, "{family} part {k}: {name}");
            }
        }
    }
    // 8.4375 Mbit/s per TCP flow, 3.75 per UDP flow (IP bytes), as plain C1B.
    let script = profile::to_script_of(&p, Some(10.0), |f| [1, 3, 9].contains(&f)).unwrap();
    let plans = plan(&script, None).unwrap();
    let ids: Vec<u32> = plans.iter().map(|p| p.flow).collect();
    assert_eq!(ids, [1, 3, 9]);
    let ip_bits = |proto| {
        let b = crate::rate::message_bytes(proto, Family::V4, 1460);
        8.0 * b.counted(crate::rate::Counting::Ip) as f64
    };
    let (tcp, udp) = (8.4375e6 / ip_bits(Proto::Tcp), 3.75e6 / ip_bits(Proto::Udp));
    let plain = plan(&profile::to_script(&p, Some(10.0)).unwrap(), None).unwrap();
    let rate_of = |plan: &crate::plan::FlowPlan| match plan.phases[0].pattern {
        crate::script::Pattern::Periodic { rate, .. } => rate,
        ref other => panic!("{other:?}"),
    };
    for (plan, rate) in plans.iter().zip([tcp, tcp, udp]) {
        let got = rate_of(plan);
        assert!(
            (got - rate).abs() < 1e-9,
            "flow {}: {got} vs {rate}",
            plan.flow
        );
        let whole = &plain[plan.flow as usize - 1];
        assert_eq!((whole.flow, whole.dst), (plan.flow, plan.dst));
        assert_eq!(rate_of(whole), got, "flow {}", plan.flow);
    }
}

/// For every preset, family choice and number of parts, the parts' scripts together are
/// the whole preset's script: the same events (flow numbers, destinations, patterns and
/// rates), none twice.
#[test]
fn parts_of_every_preset_add_up_to_the_whole_exactly() {
    for name in profile::preset_names() {
        let p = preset_with_dsts(name);
        let whole = profile::to_script(&p, Some(10.0)).unwrap().events;
        for family in [None, Some(Family::V4), Some(Family::V6)] {
            let want: Vec<_> = whole
                .iter()
                .filter(|e| family.is_none_or(|f| family_of(&whole, e.flow) == f))
                .cloned()
                .collect();
            let most = want.len() as u32 / 2;
            for n in 1..=most {
                let mut got = Vec::new();
                let mut counts = Vec::new();
                for k in 1..=n {
                    let s = share(family, part(k, n));
                    let d = deal(&profile::source_flows(&p), &s, name).unwrap();
                    counts.push(d.flows.len());
                    got.extend(
                        profile::to_script_of(&p, Some(10.0), |f| d.has(f))
                            .unwrap()
                            .events,
                    );
                }
                got.sort_by_key(|e| (e.at_ns, e.flow));
                let mut want = want.clone();
                want.sort_by_key(|e| (e.at_ns, e.flow));
                assert_eq!(got, want, "{name} {family:?} in {n} parts");
                // As even as dealing can be: counts differ by at most one.
                let (lo, hi) = (counts.iter().min(), counts.iter().max());
                assert!(hi.unwrap() - lo.unwrap() <= 1, "{name} {counts:?}");
            }
        }
    }
}

fn family_of(events: &[crate::script::Event], flow: u32) -> Family {
    events
        .iter()
        .find_map(|e| match (&e.action, e.flow == flow) {
            (Action::On(spec), true) => Some(Family::of_addr(&spec.dst)),
            _ => None,
        })
        .unwrap()
}

/// Only the flows kept need destinations: C1B --family 4 with no IPv6 destination.
#[test]
fn one_familys_flows_need_only_that_familys_destination() {
    let mut p = preset("C1B").unwrap();
    p.destinations[0] = vec!["198.18.2.3:5000".parse().unwrap()];
    let d = deal(
        &profile::source_flows(&p),
        &share(Some(Family::V4), None),
        "C1B",
    )
    .unwrap();
    assert_eq!(d.flows, [1, 2, 3, 4, 9]);
    assert_eq!((d.selected, d.total), (5, 10));
    let script = profile::to_script_of(&p, Some(1.0), |f| d.has(f)).unwrap();
    assert_eq!(script.events.len(), 10);
    let e = profile::to_script(&p, Some(1.0)).unwrap_err();
    assert!(e.message.contains("pass --dst6"), "{}", e.message);
}

/// A script's flows in mixed order of protocol and family, numbers with gaps, MODs and
/// OFFs: TCP first (2, 3, 7, 8), then UDP (1, 5), dealt in turn; each part keeps its
/// flows' every event and their numbers.
const MIXED: &str = "\
0 ON 1 UDP DST 127.0.0.1/5000 PERIODIC [10 100]
0 ON 2 TCP DST ::1/5000 PERIODIC [5 1000]
0.5 ON 3 TCP DST 127.0.0.1/5001 POISSON [4 500]
1 ON 5 UDP DST ::1/5001 PERIODIC [20 200]
1 MOD 2 PERIODIC [6 1000]
1 ON 7 TCP DST 127.0.0.1/5000 PERIODIC [3 300]
2 ON 8 TCP DST ::1/5000 PERIODIC [2 200]
3 OFF 1
4 OFF 2
";

fn script_part(s: Share) -> std::result::Result<Vec<u32>, Failure> {
    let script = parse(MIXED).unwrap();
    let d = deal(&script_flows(&script), &s, "mixed.mgn")?;
    let kept = keep(script, &d);
    let plans = plan(&kept, Some(5_000_000_000)).unwrap();
    let ids: Vec<u32> = plans.iter().map(|p| p.flow).collect();
    assert_eq!(ids, d.flows);
    Ok(ids)
}

#[test]
fn a_mixed_scripts_flows_are_dealt_tcp_first_and_keep_their_numbers() {
    let v4 = Some(Family::V4);
    let v6 = Some(Family::V6);
    for (s, want) in [
        (share(None, None), vec![1, 2, 3, 5, 7, 8]),
        (share(None, part(1, 2)), vec![1, 2, 7]),
        (share(None, part(2, 2)), vec![3, 5, 8]),
        (share(None, part(1, 3)), vec![2, 8]),
        (share(None, part(2, 3)), vec![1, 3]),
        (share(None, part(3, 3)), vec![5, 7]),
        (share(v4, None), vec![1, 3, 7]),
        (share(v4, part(1, 2)), vec![1, 3]),
        (share(v4, part(2, 2)), vec![7]),
        (share(v6, part(1, 2)), vec![2, 5]),
        (share(v6, part(2, 2)), vec![8]),
        (share(v6, part(3, 3)), vec![5]),
    ] {
        assert_eq!(script_part(s).unwrap(), want, "{s:?}");
    }
    // Flow 2 keeps its MOD and its OFF.
    let script = parse(MIXED).unwrap();
    let d = deal(&script_flows(&script), &share(v6, part(1, 2)), "m").unwrap();
    let kept = keep(script, &d);
    let flow2: Vec<_> = kept.events.iter().filter(|e| e.flow == 2).collect();
    assert_eq!(flow2.len(), 3);
    let plans = plan(&kept, Some(5_000_000_000)).unwrap();
    assert_eq!(plans[0].phases.len(), 2);
    assert_eq!(plans[0].end_ns(), 4_000_000_000);
}

#[test]
fn a_family_without_flows_and_an_empty_part_are_refused() {
    let e = script_part(share(None, part(7, 7))).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert_eq!(
        e.message,
        "--part 7/7: mixed.mgn has 6 flows, so part 7/7 gets none: split them over at most 6 senders (--part K/6)"
    );
    let e = script_part(share(Some(Family::V6), part(4, 4))).unwrap_err();
    assert_eq!(
        e.message,
        "--part 4/4: mixed.mgn has 3 IPv6 flows, so part 4/4 gets none: split them over at most 3 senders (--part K/3)"
    );
    let only_v6 = parse("0 ON 1 UDP DST ::1/5000 PERIODIC [1 100]\n").unwrap();
    let e = deal(
        &script_flows(&only_v6),
        &share(Some(Family::V4), None),
        "v6.mgn",
    )
    .unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert_eq!(
        e.message,
        "--family 4: v6.mgn has no IPv4 flow: leave --family out, or give --family 6"
    );
    // A profile with no IPv6 class.
    let mut p = preset("C1B").unwrap();
    p.mix = [50.0, 0.0, 50.0, 0.0];
    let e = deal(
        &profile::source_flows(&p),
        &share(Some(Family::V6), part(1, 2)),
        "v4.toml",
    )
    .unwrap_err();
    assert_eq!(
        e.message,
        "--family 6: v4.toml has no IPv6 flow: leave --family out, or give --family 4"
    );
}

#[test]
fn the_heading_names_the_share_and_its_flows() {
    let p = preset_with_dsts("C1B");
    let s = share(Some(Family::V4), part(1, 2));
    let d = deal(&profile::source_flows(&p), &s, "C1B").unwrap();
    assert_eq!(
        heading(&s, &d, "C1B"),
        "# C1B --family 4 --part 1/2: flows 1 3 9, 3 of the 5 IPv4 flows (the whole has 10)\n"
    );
    let s = share(None, part(2, 3));
    let d = deal(&profile::source_flows(&p), &s, "C1B").unwrap();
    assert_eq!(
        heading(&s, &d, "C1B"),
        "# C1B --part 2/3: flows 2 5 8, 3 of the 10 flows (the whole has 10)\n"
    );
}
