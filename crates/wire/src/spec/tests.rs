//! Unit tests of the link spec parser: units, strictness, cross-key checks, round trip.

use super::*;
use dualbench_common::FailureKind;

fn err(text: &str) -> String {
    let e = parse_link_spec(text).expect_err(text);
    assert_eq!(e.kind, FailureKind::Usage, "{text}");
    e.message
}

#[test]
fn full_spec_parses() {
    let s = parse_link_spec("delay=10ms,jitter=2ms,loss=0.1%,rate=100Mbit,queue=100").unwrap();
    assert_eq!(s.delay_ns, 10_000_000);
    assert_eq!(s.jitter_ns, 2_000_000);
    assert_eq!(s.loss, Loss::Random(0.001));
    assert_eq!(s.rate_bps, Some(100_000_000));
    assert_eq!(s.queue, Some(QueueLimit::Packets(100)));
    assert_eq!(s.jitter_dist, JitterDist::Uniform);
    assert!(!s.keep_order);
}

#[test]
fn times_are_exact() {
    assert_eq!(parse_time_ns("10ms").unwrap(), 10_000_000);
    assert_eq!(parse_time_ns("250us").unwrap(), 250_000);
    assert_eq!(parse_time_ns("250µs").unwrap(), 250_000);
    assert_eq!(parse_time_ns("1.5s").unwrap(), 1_500_000_000);
    assert_eq!(parse_time_ns("0.001ms").unwrap(), 1_000);
    assert_eq!(parse_time_ns("7ns").unwrap(), 7);
    assert_eq!(parse_time_ns("0ms").unwrap(), 0);
}

#[test]
fn delay_and_jitter_share_the_testbeds_bound_of_60s() {
    assert_eq!(
        parse_link_spec("delay=60s").unwrap().delay_ns,
        60_000_000_000
    );
    let e = err("delay=1000000s");
    assert!(
        e.contains("delay=1000000s: 1000000s is too long: delays and jitter are at most 60s ("),
        "{e}"
    );
    assert!(err("delay=1s,jitter=60.000001s").contains("jitter=60.000001s: 60.000001s is too long"));
}

#[test]
fn rates_and_queues() {
    assert_eq!(parse_rate_bps("1Gbit").unwrap(), 1_000_000_000);
    assert_eq!(parse_rate_bps("64kbit").unwrap(), 64_000);
    assert_eq!(parse_rate_bps("1.5Mbit").unwrap(), 1_500_000);
    assert_eq!(parse_rate_bps("9600bit").unwrap(), 9_600);
    assert_eq!(parse_queue("64kB").unwrap(), QueueLimit::Bytes(64_000));
    assert_eq!(parse_queue("1MiB").unwrap(), QueueLimit::Bytes(1_048_576));
    assert_eq!(parse_queue("1500B").unwrap(), QueueLimit::Bytes(1500));
    assert_eq!(parse_queue("100").unwrap(), QueueLimit::Packets(100));
    assert_eq!(parse_percent("0.1%").unwrap(), 0.001);
    assert_eq!(parse_percent("100%").unwrap(), 1.0);
}

#[test]
fn bad_numbers_are_rejected_with_the_cause() {
    assert!(err("delay=10").contains("has no unit"));
    assert!(err("delay=10 ms").contains("without spaces"));
    assert!(err("delay=-5ms").contains("plain decimal"));
    assert!(err("delay=1e3ms").contains("plain decimal"));
    assert!(err("delay=.5ms").contains("plain decimal"));
    assert!(err("delay=5.ms").contains("plain decimal"));
    assert!(err("delay=10min").contains("is not a time"));
    assert!(err("delay=0.5ns").contains("finer than one nanosecond"));
    assert!(err("delay=99999999999999999999s").contains("too large"));
    assert!(err("loss=0.1").contains("with %"));
    assert!(err("loss=101%").contains("above 100%"));
    assert!(err("rate=100MB").contains("is not a rate"));
    assert!(err("rate=0bit").contains("above zero"));
    assert!(err("rate=100Mbit,queue=0").contains("at least one"));
    assert!(err("rate=100Mbit,queue=10kb").contains("packets (100) or bytes"));
}

/// `queue=64KB` ends in `B`, and was refused as `"64K" is not a plain decimal number`:
/// the number was fine, the unit is what is unknown.
#[test]
fn an_unknown_unit_is_named_as_such() {
    assert_eq!(
        err("rate=1Mbit,queue=64KB"),
        "link spec \"rate=1Mbit,queue=64KB\": queue=64KB: \"64KB\": unknown unit \"KB\"; expected packets (100) or bytes (64kB, 1MiB, 1500B)"
    );
    assert_eq!(
        err("rate=1Tbit"),
        "link spec \"rate=1Tbit\": rate=1Tbit: \"1Tbit\": unknown unit \"Tbit\"; expected a rate such as 100Mbit, 1Gbit or 64kbit"
    );
    assert_eq!(
        err("delay=10Ms"),
        "link spec \"delay=10Ms\": delay=10Ms: \"10Ms\": unknown unit \"Ms\"; expected a time with a unit, e.g. 10ms, 250us, 1.5s"
    );
    assert_eq!(parse_queue("64KiB").unwrap(), QueueLimit::Bytes(65_536));
    assert_eq!(parse_time_ns("10µs").unwrap(), 10_000);
    assert_eq!(parse_rate_bps("1000kbit").unwrap(), 1_000_000);
}

#[test]
fn bad_structure_is_rejected() {
    assert!(err("delay=10ms,delay=5ms").contains("given twice"));
    assert!(err("latency=10ms").contains("unknown key \"latency\""));
    assert!(err("delay").contains("needs a value"));
    // A misspelt key is unknown, whether or not it has a value (it used to "need a value").
    assert_eq!(
        err("dealy"),
        "link spec \"dealy\": unknown key \"dealy\"; known keys: delay, jitter, jitter_dist, \
         keep_order, loss, burst_loss, duplicate, reorder, rate, queue"
    );
    assert!(err("delay=1ms,keep-order").contains("unknown key \"keep-order\""));
    assert!(err("keep_order=1").contains("takes no value"));
    assert!(err("delay=10ms,,loss=1%").contains("empty item"));
    assert!(err("10ms").contains("has no key"));
    assert!(err("queue=100").contains("queue needs rate"));
    assert!(err("reorder=1%").contains("reorder needs delay"));
    assert!(err("jitter_dist=normal").contains("needs jitter"));
    // As the testbed: keep_order without jitter is a slip (it was taken silently).
    assert_eq!(
        err("delay=10ms,keep_order"),
        "link spec \"delay=10ms,keep_order\": keep_order needs jitter=...: without jitter no frame can overtake another (the testbed refuses it too)"
    );
    // As the testbed (and netem): jitter varies a delay, so it needs one.
    assert!(err("jitter=1ms").contains("jitter needs delay"));
    // As the docs say: no spaces (they used to be trimmed silently).
    assert!(err("delay = 10ms").contains("without spaces"));
    assert!(err("delay=10ms, loss=1%").contains("without spaces"));
    // As the testbed and traffic: bps is ambiguous.
    assert!(
        err("rate=10Mbps").contains("'10Mbps' is ambiguous (tc reads 'bps' as bytes per second)")
    );
    assert!(err("jitter=1ms,jitter_dist=pareto").contains("uniform or normal"));
    assert!(err("burst_loss=1%,2%").contains("four percentages"));
    // One loss model per link: the second used to replace the first without a word.
    assert_eq!(
        err("loss=5%,burst_loss=1%,30%,0%,100%"),
        "link spec \"loss=5%,burst_loss=1%,30%,0%,100%\": loss and burst_loss are two loss \
         models and a link has one: give either loss=P (independent) or burst_loss=p,r,h,k \
         (Gilbert-Elliott)"
    );
    assert!(err("burst_loss=1%,30%,0%,100%,delay=1ms,loss=0%")
        .contains("burst_loss and loss are two loss models"));
    // The message names the whole spec and the item.
    let m = err("delay=10ms,loss=x%");
    assert!(
        m.starts_with("link spec \"delay=10ms,loss=x%\": loss=x%:"),
        "{m}"
    );
}

#[test]
fn burst_loss_keeps_its_commas() {
    let s = parse_link_spec("delay=5ms,burst_loss=1%,30%,0%,100%,keep_order,jitter=1ms").unwrap();
    assert_eq!(
        s.loss,
        Loss::Burst(GilbertElliott {
            p: 0.01,
            r: 0.3,
            h: 0.0,
            k: 1.0
        })
    );
    assert!(s.keep_order);
    assert_eq!(s.jitter_ns, 1_000_000);
}

#[test]
fn defaults_and_transparency() {
    assert!(parse_link_spec("").unwrap().is_transparent());
    assert!(parse_link_spec("loss=0%").unwrap().is_transparent());
    let s = parse_link_spec("rate=1Gbit").unwrap();
    assert_eq!(s.queue, Some(DEFAULT_QUEUE));
}

#[test]
fn display_round_trips() {
    for text in [
        "delay=10ms,jitter=250us,jitter_dist=normal,keep_order,loss=1%,duplicate=0.5%,reorder=2%,rate=100Mbit,queue=100",
        "delay=1ms,burst_loss=1%,30%,0%,100%,rate=1kbit,queue=64kB",
        "delay=2s,rate=9600bit,queue=1500B",
        "",
    ] {
        let spec = parse_link_spec(text).unwrap();
        assert_eq!(spec.to_string(), text);
        assert_eq!(parse_link_spec(&spec.to_string()).unwrap(), spec);
    }
}

#[test]
fn display_writes_units_as_users_do() {
    // The stats file's `spec` is this string: `rate=10Mbit` used to read `rate=10000000bit`.
    let shown = |text: &str| parse_link_spec(text).unwrap().to_string();
    assert_eq!(shown("rate=10Mbit"), "rate=10Mbit,queue=1000");
    assert_eq!(shown("rate=10mbit"), "rate=10Mbit,queue=1000");
    assert_eq!(shown("rate=1Gbit,queue=1MB"), "rate=1Gbit,queue=1MB");
    assert_eq!(shown("rate=1.5Mbit"), "rate=1500kbit,queue=1000");
    assert_eq!(shown("rate=64kbit,queue=1MiB"), "rate=64kbit,queue=1MiB");
    assert_eq!(shown("rate=100Mbit,queue=4KiB"), "rate=100Mbit,queue=4KiB");
    assert_eq!(shown("rate=12345bit"), "rate=12345bit,queue=1000");
    assert_eq!(shown("delay=1.5s,jitter=7ns"), "delay=1500ms,jitter=7ns");
    assert_eq!(shown("delay=3s"), "delay=3s");
}

#[test]
fn display_writes_percentages_as_written() {
    // `p * 100` of 0.145 is 14.499999999999998: the stats file showed that for loss=14.5%.
    let shown = |text: &str| parse_link_spec(text).unwrap().to_string();
    assert_eq!(shown("loss=14.5%"), "loss=14.5%");
    assert_eq!(shown("loss=0.0001%"), "loss=0.0001%");
    assert_eq!(
        shown("delay=1ms,loss=0.3%,duplicate=57.7%,reorder=0.07%"),
        "delay=1ms,loss=0.3%,duplicate=57.7%,reorder=0.07%"
    );
    assert_eq!(
        shown("burst_loss=0.1%,14.5%,0%,99.9%"),
        "burst_loss=0.1%,14.5%,0%,99.9%"
    );
    for tenths in 0..=1000 {
        let text = format!("loss={}.{}%", tenths / 10, tenths % 10);
        let spec = parse_link_spec(&text).unwrap();
        let back = parse_link_spec(&spec.to_string()).unwrap();
        assert_eq!(back, spec, "{text}");
        assert!(
            spec.to_string().len() <= text.len(),
            "{text} shows as {spec}"
        );
    }
}
