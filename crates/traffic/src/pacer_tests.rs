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
