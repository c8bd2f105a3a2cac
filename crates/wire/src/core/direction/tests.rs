//! A direction driven by a simulated clock: exact times, exact counts, seeded patterns.

use super::*;
use crate::spec::parse_link_spec;

/// Items are arrival numbers; copies are marked by adding 1,000,000.
#[derive(Default)]
struct Ledger {
    recycled: Vec<u64>,
    refuse_copies: bool,
}

impl Frames<u64> for Ledger {
    fn copy(&mut self, item: &u64) -> Option<u64> {
        (!self.refuse_copies).then_some(item + 1_000_000)
    }
    fn recycle(&mut self, item: u64) {
        self.recycled.push(item);
    }
}

fn direction(spec: &str, seed: u64) -> Direction<u64> {
    Direction::new(&parse_link_spec(spec).unwrap(), seed, 0)
}

/// Push `n` frames of `len` bytes `gap` ns apart from t = 0, then drain: (item, due) in order.
fn run(d: &mut Direction<u64>, n: u64, len: u32, gap: u64, ledger: &mut Ledger) -> Vec<(u64, u64)> {
    for i in 0..n {
        d.push(i * gap, len, i, ledger);
    }
    std::iter::from_fn(|| d.pop_due(u64::MAX).map(|(item, _, due)| (item, due))).collect()
}

#[test]
fn constant_delay_releases_exactly_on_time() {
    let mut d = direction("delay=10ms", 1);
    let mut ledger = Ledger::default();
    assert_eq!(
        d.push(5_000, 100, 7, &mut ledger),
        Fate::Queued { copies: 1 }
    );
    assert_eq!(d.next_due(), Some(10_005_000));
    assert_eq!(d.pop_due(10_004_999), None);
    assert_eq!(d.pop_due(10_005_000), Some((7, 100, 10_005_000)));
}

#[test]
fn transparent_link_passes_everything_at_once() {
    let mut d = direction("", 1);
    let out = run(&mut d, 1000, 64, 10, &mut Ledger::default());
    assert_eq!(out, (0..1000).map(|i| (i, i * 10)).collect::<Vec<_>>());
    let c = d.counters();
    assert_eq!(
        (c.packets_in, c.packets_out, c.bytes_out),
        (1000, 1000, 64_000)
    );
}

#[test]
fn rate_then_delay_gives_exact_due_times() {
    // 1500 B at 100 Mbit/s = 120 µs serialisation, then 10 ms propagation.
    let mut d = direction("delay=10ms,rate=100Mbit,queue=1000", 1);
    let out = run(&mut d, 50, 1500, 0, &mut Ledger::default());
    let expected: Vec<(u64, u64)> = (0..50)
        .map(|i| (i, (i + 1) * 120_000 + 10_000_000))
        .collect();
    assert_eq!(out, expected);
}

#[test]
fn queue_tail_drops_at_exactly_the_limit() {
    let mut d = direction("rate=1Mbit,queue=3", 1);
    let mut ledger = Ledger::default();
    let fates: Vec<Fate> = (0..5).map(|i| d.push(0, 1000, i, &mut ledger)).collect();
    let q = Fate::Queued { copies: 1 };
    assert_eq!(fates, vec![q, q, q, Fate::QueueFull, Fate::QueueFull]);
    assert_eq!(ledger.recycled, vec![3, 4]);
    let c = d.counters();
    assert_eq!((c.packets_in, c.dropped_queue, c.bytes_in), (5, 2, 5000));
}

#[test]
fn seeded_loss_pattern_repeats_and_is_near_the_rate() {
    let lost = |seed| {
        let mut d = direction("loss=1%", seed);
        let mut ledger = Ledger::default();
        run(&mut d, 100_000, 100, 1_000, &mut ledger);
        (ledger.recycled, d.counters())
    };
    let (a, ca) = lost(11);
    let (b, _) = lost(11);
    assert_eq!(a, b, "same seed, same lost frames");
    assert_ne!(a, lost(12).0);
    assert_eq!(ca.dropped_loss, a.len() as u64);
    assert_eq!(ca.packets_out + ca.dropped_loss, 100_000);
    let pct = ca.dropped_loss as f64 / 1_000.0;
    assert!((pct - 1.0).abs() <= 0.2, "{pct}%");
}

#[test]
fn loss_pattern_does_not_depend_on_other_stages() {
    let lost = |spec| {
        let mut d = direction(spec, 5);
        let mut ledger = Ledger::default();
        run(&mut d, 10_000, 100, 1_000, &mut ledger);
        ledger.recycled
    };
    assert_eq!(
        lost("loss=3%"),
        lost("delay=1ms,jitter=500us,duplicate=5%,loss=3%")
    );
}

#[test]
fn duplicates_follow_their_original() {
    let mut d = direction("delay=1ms,duplicate=100%", 1);
    let out = run(&mut d, 3, 100, 10, &mut Ledger::default());
    let items: Vec<u64> = out.iter().map(|x| x.0).collect();
    assert_eq!(items, vec![0, 1_000_000, 1, 1_000_001, 2, 1_000_002]);
    let c = d.counters();
    assert_eq!(
        (c.packets_in, c.duplicated, c.packets_out, c.reordered),
        (3, 3, 6, 0)
    );
    // No buffer for a copy: the original still goes, nothing is counted as duplicated.
    let mut d = direction("duplicate=100%", 1);
    let mut ledger = Ledger {
        refuse_copies: true,
        ..Ledger::default()
    };
    assert_eq!(d.push(0, 1, 0, &mut ledger), Fate::Queued { copies: 1 });
    assert_eq!(d.counters().duplicated, 0);
}

#[test]
fn reordered_frames_overtake_and_are_counted() {
    let mut d = direction("delay=10ms,reorder=10%", 3);
    let out = run(&mut d, 10_000, 100, 100_000, &mut Ledger::default());
    let c = d.counters();
    let skipped = out.iter().filter(|(i, due)| *due == i * 100_000).count() as u64;
    assert!((800..1200).contains(&skipped), "{skipped}");
    // RFC 4737: a frame is reordered when it leaves after a later arrival already left.
    let mut highest = 0;
    let late = out
        .iter()
        .filter(|(i, _)| {
            if *i < highest {
                true
            } else {
                highest = *i;
                false
            }
        })
        .count();
    assert_eq!(c.reordered, late as u64);
    assert!(
        c.reordered > skipped,
        "the frames a skipping frame overtakes are the late ones"
    );
    assert_eq!(c.packets_out, 10_000);
}

#[test]
fn counters_balance_after_draining() {
    let mut d = direction(
        "delay=2ms,jitter=1ms,loss=5%,duplicate=5%,rate=10Mbit,queue=20",
        8,
    );
    let mut ledger = Ledger::default();
    run(&mut d, 20_000, 1200, 500_000, &mut ledger);
    let c = d.counters();
    assert_eq!(
        c.packets_in + c.duplicated,
        c.packets_out + c.dropped_loss + c.dropped_queue
    );
    assert_eq!(
        ledger.recycled.len() as u64,
        c.dropped_loss + c.dropped_queue
    );
    assert!(c.dropped_loss > 0 && c.duplicated > 0);
}
