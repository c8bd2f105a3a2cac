//! Pacing exactness: messages per flow per second, counted over the pacer's intended times.

use super::*;
use crate::plan::plan;
use crate::script::parse;

fn pacer_for(script: &str, flow: u32, limit_s: u64) -> FlowPacer {
    let plans = plan(&parse(script).unwrap(), Some(limit_s * 1_000_000_000)).unwrap();
    let p = plans.into_iter().find(|p| p.flow == flow).unwrap();
    FlowPacer::new(p.phases, 42 + flow as u64)
}

fn per_second(pacer: &mut FlowPacer, seconds: usize) -> Vec<u64> {
    let mut counts = vec![0u64; seconds];
    let mut last = 0;
    while let Some(slot) = pacer.take() {
        assert!(slot.intended_ns >= last, "times go backwards");
        last = slot.intended_ns;
        counts[(slot.intended_ns / 1_000_000_000) as usize] += 1;
    }
    counts
}

#[test]
fn periodic_is_exact_per_second_across_mod() {
    let s = "0 ON 1 UDP DST ::1/5000 PERIODIC [1000 100]\n5 MOD 1 PERIODIC [250 100]\n8 OFF 1\n";
    let counts = per_second(&mut pacer_for(s, 1, 10), 10);
    assert_eq!(
        counts,
        vec![1000, 1000, 1000, 1000, 1000, 250, 250, 250, 0, 0]
    );
}

#[test]
fn sequence_numbers_run_on_and_count_stops_the_flow() {
    let s = "1 ON 3 UDP DST 127.0.0.1/5000 PERIODIC [10 100] COUNT 25\n";
    let mut p = pacer_for(s, 3, 60);
    let slots: Vec<Slot> = std::iter::from_fn(|| p.take()).collect();
    assert_eq!(slots.len(), 25);
    assert!(slots.iter().enumerate().all(|(i, s)| s.seq == i as u64));
    assert_eq!(slots[0].intended_ns, 1_000_000_000);
    assert_eq!(slots[24].intended_ns, 3_400_000_000);
}

#[test]
fn regular_fixed_burst_is_exact() {
    // A 0.5 s burst at 100/s every 2 s, over 10 s: 50 messages in each even second.
    let s = "0 ON 1 UDP DST ::1/5000 BURST [REGULAR 2.0 PERIODIC [100 64] FIXED 0.5]\n";
    let counts = per_second(&mut pacer_for(s, 1, 10), 10);
    assert_eq!(counts, vec![50, 0, 50, 0, 50, 0, 50, 0, 50, 0]);
}

#[test]
fn random_bursts_are_seeded() {
    let s = "0 ON 1 UDP DST ::1/5000 BURST [RANDOM 1.0 POISSON [200 64] EXP 0.25]\n";
    let a = per_second(&mut pacer_for(s, 1, 30), 30);
    let b = per_second(&mut pacer_for(s, 1, 30), 30);
    assert_eq!(a, b);
    let total: u64 = a.iter().sum();
    // On about a quarter of the time at 200/s over 30 s: about 1,500 messages.
    assert!((700..2_600).contains(&total), "total {total}");
}

#[test]
fn poisson_mean_rate_holds() {
    let s = "0 ON 1 UDP DST ::1/5000 POISSON [2000 64]\n";
    let counts = per_second(&mut pacer_for(s, 1, 20), 20);
    let total: u64 = counts.iter().sum();
    assert!((39_000..41_000).contains(&total), "total {total}");
}

/// A MOD's COUNT starts a new count, as MGEN's does, and resumes a flow whose COUNT was
/// spent; a MOD without COUNT goes on with the running one. (A spent COUNT ended the flow
/// for good, and a MOD's COUNT capped the whole flow: this script sent 10 messages.)
#[test]
fn a_mod_with_count_starts_a_new_count() {
    let s = "0 ON 1 UDP DST ::1/5000 PERIODIC [10 100] COUNT 10\n\
             2 MOD 1 PERIODIC [20 100] COUNT 5\n\
             3 MOD 1 PERIODIC [10 100]\n\
             4 MOD 1 COUNT 3\n5 OFF 1\n";
    let mut p = pacer_for(s, 1, 10);
    let slots: Vec<Slot> = std::iter::from_fn(|| p.take()).collect();
    let ms: Vec<u64> = slots.iter().map(|s| s.intended_ns / 1_000_000).collect();
    let mut want: Vec<u64> = (0..10).map(|i| i * 100).collect();
    want.extend([2000, 2050, 2100, 2150, 2200, 4000, 4100, 4200]);
    assert_eq!(ms, want);
    assert!(slots.iter().enumerate().all(|(i, s)| s.seq == i as u64));
    assert!(p.count_ended());
    // A flow whose OFF comes before its COUNT is spent did not end by its COUNT.
    let mut p = pacer_for(
        "0 ON 1 UDP DST ::1/5000 PERIODIC [10 100] COUNT 50\n1 OFF 1\n",
        1,
        10,
    );
    assert_eq!(p.count_rest(100), 10);
    assert!(!p.count_ended());
}

/// A MOD that keeps the pattern (TOS, TTL or COUNT only, or the same pattern again) keeps
/// the schedule, as MGEN keeps its timer; each message takes the phase its time falls in.
/// Such a MOD used to restart the schedule at its time: 11 messages in a second of
/// `PERIODIC [10 100]` (two 50 ms apart), and a burst more of a BURST.
#[test]
fn a_mod_that_keeps_the_pattern_keeps_the_schedule() {
    let s = "0 ON 1 UDP DST ::1/5000 PERIODIC [10 100]\n0.55 MOD 1 TOS 0x20\n\
             0.75 MOD 1 PERIODIC [10 100] TTL 5\n1 OFF 1\n";
    let mut p = pacer_for(s, 1, 10);
    let slots: Vec<Slot> = std::iter::from_fn(|| p.take()).collect();
    let at: Vec<(u64, usize)> = slots
        .iter()
        .map(|s| (s.intended_ns / 1_000_000, s.phase))
        .collect();
    assert_eq!(
        at,
        [
            (0, 0),
            (100, 0),
            (200, 0),
            (300, 0),
            (400, 0),
            (500, 0),
            (600, 1),
            (700, 1),
            (800, 2),
            (900, 2)
        ]
    );
    // Bursts of 20 at 0, 1 and 2 s (there were 10 + 20 + 20 + 20: a burst restarted at 0.1 s).
    let s = "0 ON 1 UDP DST ::1/5000 BURST [REGULAR 1 PERIODIC [100 100] FIXED 0.2]\n\
             0.1 MOD 1 TOS 4\n3 OFF 1\n";
    assert_eq!(per_second(&mut pacer_for(s, 1, 10), 4), [20, 20, 20, 0]);
    // A MOD COUNT in the run counts from the first message at or after its time.
    let s = "0 ON 1 UDP DST ::1/5000 PERIODIC [10 100]\n0.55 MOD 1 COUNT 2\n2 OFF 1\n";
    let mut p = pacer_for(s, 1, 10);
    let ms: Vec<u64> = std::iter::from_fn(|| p.take())
        .map(|s| s.intended_ns / 1_000_000)
        .collect();
    assert_eq!(ms, [0, 100, 200, 300, 400, 500, 600, 700]);
}

/// MGEN's rule for a new PERIODIC rate: the first message comes one new interval after the
/// last one, or at the MOD's time if that interval has passed. A slower rate began at the
/// MOD's time, 50 ms after the last message: one message more than MGEN sends.
#[test]
fn a_new_periodic_rate_follows_the_last_message_by_its_interval() {
    let times = |s: &str| -> Vec<u64> {
        let mut p = pacer_for(s, 1, 10);
        std::iter::from_fn(|| p.take())
            .map(|s| s.intended_ns / 1_000_000)
            .collect()
    };
    let on = "0 ON 1 UDP DST ::1/5000 PERIODIC [10 100]\n";
    assert_eq!(
        times(&format!("{on}0.55 MOD 1 PERIODIC [5 100]\n1 OFF 1\n")),
        [0, 100, 200, 300, 400, 500, 700, 900]
    );
    assert_eq!(
        times(&format!("{on}0.55 MOD 1 PERIODIC [20 100]\n0.8 OFF 1\n")),
        [0, 100, 200, 300, 400, 500, 550, 600, 650, 700, 750]
    );
    // Past the end of the MOD's phase: nothing in it.
    assert_eq!(
        times(&format!("{on}0.55 MOD 1 PERIODIC [1 100]\n0.9 OFF 1\n")),
        [0, 100, 200, 300, 400, 500]
    );
}

/// The intended times (ns) of flow 1 of a script, with the run limited to 10 s.
fn times_ns(s: &str) -> Vec<u64> {
    let mut p = pacer_for(s, 1, 10);
    std::iter::from_fn(|| p.take())
        .map(|s| s.intended_ns)
        .collect()
}

/// MGEN's rule holds for every pattern a MOD sets, not only PERIODIC: the first message
/// comes one interval of the new pattern after the last one (a POISSON gap is drawn), or
/// at the MOD's time if that has passed. A POISSON pattern began at the MOD's time plus
/// a gap, with nothing at the MOD's time even when the last message was long before.
#[test]
fn a_mod_to_poisson_follows_the_last_message_by_one_drawn_gap() {
    let on = "0 ON 1 UDP DST ::1/5000 PERIODIC [10 100]\n";
    // 1 message/s on average: the drawn gap runs well past the MOD 100 ns after 0.5 s.
    let t = times_ns(&format!("{on}0.5000001 MOD 1 POISSON [1 100]\n9 OFF 1\n"));
    assert_eq!(t[..6], [0, 1, 2, 3, 4, 5].map(|i| i * 100_000_000));
    // The pacer's first draw (its own generator: flow 1's seed is 43 in `pacer_for`).
    let mut rng = StdRng::seed_from_u64(43 ^ 0x6275_7273_7400);
    let u: f64 = rng.gen_range(f64::MIN_POSITIVE..1.0);
    let first = 500_000_000 + (-u.ln() * 1e9) as u64;
    assert_eq!(t[6], first);
    // Then the POISSON schedule of phase 1 from there: its first slot is one gap on.
    let seed = 43u64.wrapping_add(7919).wrapping_add(first);
    let gap = Schedule::new(Arrival::Poisson { rate: 1.0, seed }, None, None)
        .peek()
        .unwrap();
    assert_eq!(t[7], first + gap);
    // A gap of about 1 µs has passed by a MOD at 0.55 s: the first comes at its time.
    let t = times_ns(&format!(
        "{on}0.55 MOD 1 POISSON [1000000 100]\n0.5500005 OFF 1\n"
    ));
    assert_eq!(t[6], 550_000_000, "{t:?}");
    assert!(t[7..].iter().all(|&x| x > 550_000_000 && x < 550_000_500));
}

/// A MOD to BURST opens its first on-period where its first message falls: one inner
/// interval after the last message (0.5 s + 50 ms), or at the MOD's time if that has
/// passed; bursts then follow every interval from there. They began at the MOD's time.
#[test]
fn a_mod_to_burst_starts_its_bursts_from_the_last_message() {
    let on = "0 ON 1 UDP DST ::1/5000 PERIODIC [10 100]\n";
    let burst = "BURST [REGULAR 1 PERIODIC [20 100] FIXED 0.2]";
    let ms = |t: Vec<u64>| -> Vec<u64> { t.iter().map(|x| x / 1_000_000).collect() };
    let before = [0, 100, 200, 300, 400, 500];
    let mut want = before.to_vec();
    for s in [550, 1550, 2550] {
        want.extend([s, s + 50, s + 100, s + 150]);
    }
    assert_eq!(
        ms(times_ns(&format!("{on}0.52 MOD 1 {burst}\n2.9 OFF 1\n"))),
        want
    );
    let mut want = before.to_vec();
    for s in [580, 1580, 2580] {
        want.extend([s, s + 50, s + 100, s + 150]);
    }
    assert_eq!(
        ms(times_ns(&format!("{on}0.58 MOD 1 {burst}\n2.9 OFF 1\n"))),
        want
    );
}

/// As in MGEN, a POISSON flow sends its first message at its ON, and a burst of POISSON
/// messages opens with one at the burst's start (the first came one drawn gap later).
#[test]
fn poisson_stretches_open_with_a_message() {
    let t = times_ns("1 ON 1 UDP DST ::1/5000 POISSON [10 100]\n3 OFF 1\n");
    assert_eq!(t[0], 1_000_000_000);
    assert!(t[1..]
        .iter()
        .all(|&x| x > 1_000_000_000 && x < 3_000_000_000));
    let t =
        times_ns("0 ON 1 UDP DST ::1/5000 BURST [REGULAR 1 POISSON [50 100] FIXED 0.2]\n3 OFF 1\n");
    for s in [0, 1_000_000_000, 2_000_000_000] {
        assert!(t.contains(&s), "no message at {s}: {t:?}");
    }
    assert!(t.iter().all(|&x| x % 1_000_000_000 < 200_000_000), "{t:?}");
}

/// MGEN's JITTER [rate size fraction]: the first message at the ON, then each interval
/// uniformly within interval × (1 ± fraction), seeded. It was refused as unsupported.
#[test]
fn jitter_varies_each_interval_within_its_fraction() {
    let s = "2 ON 1 UDP DST ::1/5000 JITTER [100 64 0.5]\n32 OFF 1\n";
    let times = |seed| {
        let plans = plan(&parse(s).unwrap(), None).unwrap();
        let mut p = FlowPacer::new(plans[0].phases.clone(), seed);
        std::iter::from_fn(|| p.take().map(|s| s.intended_ns)).collect::<Vec<u64>>()
    };
    let a = times(7);
    assert_eq!(a, times(7), "the same seed gives the same times");
    assert_ne!(a, times(8));
    assert_eq!(a[0], 2_000_000_000);
    assert!(*a.last().unwrap() < 32_000_000_000);
    let gaps: Vec<u64> = a.windows(2).map(|w| w[1] - w[0]).collect();
    // 5 to 15 ms, and spread over that range, not PERIODIC's 10 ms each time.
    assert!(
        gaps.iter().all(|g| (5_000_000..=15_000_000).contains(g)),
        "{gaps:?}"
    );
    assert!(gaps.iter().any(|g| *g < 6_000_000) && gaps.iter().any(|g| *g > 14_000_000));
    // A mean interval of 10 ms: about 3,000 messages in 30 s (3 standard deviations of
    // the sum of 3,000 uniform gaps are under 0.5 %).
    assert!((2985..=3015).contains(&a.len()), "{}", a.len());
    // Inside a BURST it keeps to each on-period: 0.5 s at about 100/s every 2 s.
    let s = "0 ON 1 UDP DST ::1/5000 BURST [REGULAR 2 JITTER [100 64 0.2] FIXED 0.5]\n";
    let counts = per_second(&mut pacer_for(s, 1, 10), 10);
    for (i, n) in counts.iter().enumerate() {
        match i % 2 {
            0 => assert!((48..=52).contains(n), "{counts:?}"),
            _ => assert_eq!(*n, 0, "{counts:?}"),
        }
    }
}

/// The capture the CLONE tests play: 5 messages of 100..500 B, gaps 10, 20, 30, 40 ms.
fn five() -> std::sync::Arc<crate::clone::Trace> {
    let messages = [(0, 100), (10, 200), (30, 300), (60, 400), (100, 500)]
        .iter()
        .map(|&(ms, size)| crate::clone::TraceMessage {
            at_ns: ms * 1_000_000,
            size,
        })
        .collect();
    std::sync::Arc::new(crate::clone::Trace {
        messages,
        ..Default::default()
    })
}

/// A script's flow 1 with every CLONE playing [`five`], run to its end: (ms, size, phase)
/// per message, and whether its CLONE (or COUNT) ended it.
fn clone_slots(script: &str) -> (Vec<(u64, u64, usize)>, bool) {
    let mut s = parse(script).unwrap();
    let trace = five();
    for e in &mut s.events {
        let pattern = match &mut e.action {
            crate::script::Action::On(spec) => Some(&mut spec.pattern),
            crate::script::Action::Mod(c) => c.pattern.as_mut(),
            crate::script::Action::Off => None,
        };
        if let Some(Pattern::Clone(r)) = pattern {
            r.trace = Some(std::sync::Arc::clone(&trace));
        }
    }
    let plans = plan(&s, Some(60_000_000_000)).unwrap();
    let mut p = FlowPacer::new(plans[0].phases.clone(), 7);
    let slots = std::iter::from_fn(|| p.take())
        .map(|s| (s.intended_ns / 1_000_000, s.size, s.phase))
        .collect();
    (slots, p.count_ended())
}

fn ms_sizes(slots: &[(u64, u64, usize)]) -> Vec<(u64, u64)> {
    slots.iter().map(|&(ms, size, _)| (ms, size)).collect()
}

/// CLONE's first message at the ON, then the capture's gaps and sizes; a repeat goes on
/// from the second message one first gap after the last (MGEN's rule); played out, the
/// flow ends as a spent COUNT ends it.
#[test]
fn clone_sends_the_captures_times_and_sizes_from_its_on() {
    let (slots, ended) = clone_slots("1 ON 1 UDP DST ::1/5000 CLONE [tcpdump c.pcap [1]]\n");
    assert_eq!(
        ms_sizes(&slots),
        [
            (1000, 100),
            (1010, 200),
            (1030, 300),
            (1060, 400),
            (1100, 500),
            (1110, 200),
            (1130, 300),
            (1160, 400),
            (1200, 500)
        ]
    );
    assert!(ended);
    // Repeating for ever until its OFF: 11 messages before 250 ms; the OFF ended it.
    let (slots, ended) =
        clone_slots("0 ON 1 UDP DST ::1/5000 CLONE [tcpdump c.pcap]\n0.25 OFF 1\n");
    let times: Vec<u64> = slots.iter().map(|s| s.0).collect();
    assert_eq!(times, [0, 10, 30, 60, 100, 110, 130, 160, 200, 210, 230]);
    assert!(!ended);
    // A COUNT stops it as it stops any pattern.
    let (slots, _) = clone_slots("0 ON 1 UDP DST ::1/5000 CLONE [tcpdump c.pcap] COUNT 3\n");
    assert_eq!(ms_sizes(&slots), [(0, 100), (10, 200), (30, 300)]);
}

/// A MOD to CLONE starts the capture at the MOD; a MOD from it to PERIODIC follows its last
/// message by one interval (or comes at the MOD); a MOD that changes only TOS keeps it
/// playing; a MOD naming a CLONE again starts the file over (MGEN reads it anew).
#[test]
fn mods_to_from_and_within_clone() {
    let (slots, _) = clone_slots(
        "0 ON 1 UDP DST ::1/5000 PERIODIC [10 64]\n\
         0.35 MOD 1 CLONE [tcpdump c.pcap [0]]\n\
         0.5 MOD 1 PERIODIC [20 64]\n\
         0.6 OFF 1\n",
    );
    assert_eq!(
        slots,
        [
            (0, 64, 0),
            (100, 64, 0),
            (200, 64, 0),
            (300, 64, 0),
            (350, 100, 1),
            (360, 200, 1),
            (380, 300, 1),
            (410, 400, 1),
            (450, 500, 1),
            (500, 64, 2),
            (550, 64, 2)
        ]
    );
    let (slots, _) = clone_slots(
        "0 ON 1 UDP DST ::1/5000 CLONE [tcpdump c.pcap [0]]\n0.045 MOD 1 TOS 4\n1 OFF 1\n",
    );
    assert_eq!(
        slots,
        [
            (0, 100, 0),
            (10, 200, 0),
            (30, 300, 0),
            (60, 400, 1),
            (100, 500, 1)
        ]
    );
    let (slots, _) = clone_slots(
        "0 ON 1 UDP DST ::1/5000 CLONE [tcpdump c.pcap [0]]\n\
         0.045 MOD 1 CLONE [tcpdump c.pcap [0]]\n1 OFF 1\n",
    );
    let times: Vec<u64> = slots.iter().map(|s| s.0).collect();
    assert_eq!(times, [0, 10, 30, 45, 55, 75, 105, 145]);
}
