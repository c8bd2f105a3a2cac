//! The open-loop schedule and the family interleaving together, as the load engine uses
//! them: every slot has an intended start and a family, and the counts per family hold
//! exactly in every second of the run, driven by a simulated clock.

use dualbench_pace::{Arrival, Interleave, Pace, Schedule};

/// Drive `schedule` with a clock that advances `step_ns` per turn (a generator waking up
/// on its timer), and count the slots each entry of `mix` gets in each whole second.
fn per_second(mut schedule: Schedule, mix: &Interleave, step_ns: u64) -> Vec<[u64; 2]> {
    let mut seconds: Vec<[u64; 2]> = Vec::new();
    let mut now = 0;
    let mut slot = 0u64;
    loop {
        match schedule.pace(now) {
            Pace::Go { intended_ns } => {
                assert!(intended_ns <= now, "a slot goes only once it is due");
                let second = (intended_ns / 1_000_000_000) as usize;
                if seconds.len() <= second {
                    seconds.resize(second + 1, [0, 0]);
                }
                seconds[second][mix.pick(slot)] += 1;
                slot += 1;
            }
            Pace::Wait(ns) => now += ns.min(step_ns).max(1),
            Pace::Stop => return seconds,
        }
    }
}

#[test]
fn four_to_one_at_1000_per_second_is_exact_in_every_second() {
    // Entry 0 is IPv6 (weight 4), entry 1 IPv4 (weight 1): ANMA's 4:1.
    let mix = Interleave::new(&[4, 1]).unwrap();
    let schedule = Schedule::new(
        Arrival::Constant { rate: 1000.0 },
        None,
        Some(5_000_000_000),
    );
    let seconds = per_second(schedule, &mix, 250_000);
    assert_eq!(seconds, vec![[800, 200]; 5]);
}

#[test]
fn one_to_four_at_20000_per_second_for_ten_seconds() {
    let mix = Interleave::new(&[1, 4]).unwrap();
    let schedule = Schedule::new(
        Arrival::Constant { rate: 20000.0 },
        None,
        Some(10_000_000_000),
    );
    let seconds = per_second(schedule, &mix, 1_000_000);
    assert_eq!(seconds, vec![[4000, 16000]; 10]);
}

#[test]
fn intended_starts_are_evenly_spaced_and_independent_of_wake_ups() {
    // However late the generator wakes, slot n is intended at n / rate.
    for step in [1u64, 37_000, 1_000_000] {
        let mut s = Schedule::new(Arrival::Constant { rate: 3000.0 }, Some(30), None);
        let mut now = 0;
        let mut intended = Vec::new();
        loop {
            match s.pace(now) {
                Pace::Go { intended_ns } => intended.push(intended_ns),
                Pace::Wait(_) => now += step,
                Pace::Stop => break,
            }
        }
        let expected: Vec<u64> = (0..30u64).map(|n| n * 1_000_000_000 / 3000).collect();
        assert_eq!(intended, expected, "waking every {step} ns");
    }
}

#[test]
fn a_count_bound_splits_exactly_by_the_ratio() {
    // 10,000 requests at 4:1 (ANMA sent 8,001 / 1,999): exactly 8,000 / 2,000.
    let mix = Interleave::new(&[4, 1]).unwrap();
    let schedule = Schedule::new(Arrival::Constant { rate: 5000.0 }, Some(10_000), None);
    let seconds = per_second(schedule, &mix, 100_000);
    assert_eq!(seconds, vec![[4000, 1000], [4000, 1000]]);
}
