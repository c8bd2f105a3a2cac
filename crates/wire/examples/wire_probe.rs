//! The UDP probe of `dualbench_wire::probe` as a command, for the benchmarks in `bench/`:
//! `wire_probe FROM_NS TO_NS TARGET COUNT INTERVAL_US [echo]` prints one JSON line with
//! the datagrams sent and received and the one-way (or round-trip) delay quantiles in µs.

use dualbench_wire::probe::{self, Probe};
use std::time::Duration;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 5 {
        eprintln!("usage: wire_probe FROM_NS TO_NS TARGET COUNT INTERVAL_US [echo]");
        std::process::exit(2);
    }
    let parsed = (args[2].parse(), args[3].parse(), args[4].parse());
    let (Ok(target), Ok(count), Ok(interval_us)) = parsed else {
        eprintln!(
            "wire_probe: TARGET is ip:port (or [ip6]:port), COUNT and INTERVAL_US are integers"
        );
        std::process::exit(2);
    };
    let p = Probe {
        from_ns: args[0].clone(),
        to_ns: args[1].clone(),
        target,
        count,
        interval: Duration::from_micros(interval_us),
        payload: 64,
        echo: args.get(5).map(String::as_str) == Some("echo"),
        linger: Duration::from_millis(500),
    };
    match probe::run(&p) {
        Ok(r) => {
            let us = |q| r.quantile_ns(q) as f64 / 1e3;
            println!(
                "{{\"target\":\"{target}\",\"sent\":{},\"received\":{},\"loss_pct\":{:.4},\"p50_us\":{:.1},\"p99_us\":{:.1},\"max_us\":{:.1}}}",
                r.sent,
                r.received,
                r.loss() * 100.0,
                us(0.5),
                us(0.99),
                us(1.0)
            );
        }
        Err(e) => {
            eprintln!("wire_probe: {e}");
            std::process::exit(1);
        }
    }
}
