//! The flags of `dualbench wire` (docs/wire.md) and their checks, turned into a
//! [`WireConfig`]. `--both` sets both directions; `--a-to-b`/`--b-to-a` replace it for
//! their direction.

use crate::shell::run::WireConfig;
use crate::spec::parse_link_spec;
use clap::Args;
use dualbench_common::{Failure, Result};
use std::path::PathBuf;

/// Flags of `dualbench wire`.
#[derive(Debug, Args)]
pub struct WireCli {
    /// First interface (frames read here go out on --b).
    #[arg(long = "a", value_name = "IFACE")]
    pub a: String,
    /// Second interface (frames read here go out on --a).
    #[arg(long = "b", value_name = "IFACE")]
    pub b: String,
    /// Shaping of frames from a to b, e.g. "delay=10ms,jitter=1ms,loss=0.1%,rate=100Mbit,queue=100".
    #[arg(long = "a-to-b", value_name = "SPEC")]
    pub a_to_b: Option<String>,
    /// Shaping of frames from b to a.
    #[arg(long = "b-to-a", value_name = "SPEC")]
    pub b_to_a: Option<String>,
    /// Shaping of both directions (a direction's own flag replaces it).
    #[arg(long, value_name = "SPEC")]
    pub both: Option<String>,
    /// Seed of every random choice (the same seed gives the same loss pattern); default: from the clock.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Write JSON counters here every second and at exit.
    #[arg(long, value_name = "FILE")]
    pub stats: Option<PathBuf>,
    /// Stop after this long: seconds (10, 1.5) or a number and its unit (500ms, 10s, 2m, 1h);
    /// default: run until SIGTERM/SIGINT/SIGHUP.
    #[arg(long, value_name = "DURATION", value_parser = dualbench_common::parse_seconds)]
    pub duration: Option<f64>,
    /// Frame buffers shared by both directions (64 KiB+ each, backed only as used).
    #[arg(long, value_name = "N", default_value_t = 8192)]
    pub buffers: usize,
    /// Run under SCHED_FIFO at this priority (1-99) so a busy machine does not delay frames; 0 = normal scheduling.
    #[arg(long = "rt-priority", value_name = "N", default_value_t = 50)]
    pub rt_priority: i64,
    /// Busy-wait for the last MICROSECONDS before a frame is due, instead of sleeping.
    #[arg(long = "spin-us", value_name = "MICROSECONDS", default_value_t = 200)]
    pub spin_us: u64,
}

/// Check the flags and parse the specs.
pub fn config_from_cli(cli: WireCli) -> Result<WireConfig> {
    if cli.a == cli.b {
        return Err(Failure::usage(format!(
            "--a and --b are both {:?}; give two different interfaces",
            cli.a
        )));
    }
    // `--both` is checked even when both directions replace it: a bad spec is never
    // passed over in silence.
    let both =
        parse_link_spec(cli.both.as_deref().unwrap_or("")).map_err(|e| e.context("--both"))?;
    let spec = |own: &Option<String>, flag: &str| match own {
        Some(text) => parse_link_spec(text).map_err(|e| e.context(flag)),
        None => Ok(both.clone()),
    };
    let a_to_b = spec(&cli.a_to_b, "--a-to-b")?;
    let b_to_a = spec(&cli.b_to_a, "--b-to-a")?;
    let duration_ns = cli.duration.map(duration_ns).transpose()?;
    if !(16..=1_000_000).contains(&cli.buffers) {
        return Err(Failure::usage(format!(
            "--buffers {}: give 16 to 1000000",
            cli.buffers
        )));
    }
    if !(0..=99).contains(&cli.rt_priority) {
        return Err(Failure::usage(format!(
            "--rt-priority {}: give 1 to 99, or 0 for normal scheduling",
            cli.rt_priority
        )));
    }
    if cli.spin_us > 10_000 {
        return Err(Failure::usage(format!(
            "--spin-us {}: at most 10000",
            cli.spin_us
        )));
    }
    Ok(WireConfig {
        a: cli.a,
        b: cli.b,
        a_to_b,
        b_to_a,
        spec_flags: [
            if cli.a_to_b.is_some() {
                "--a-to-b"
            } else {
                "--both"
            },
            if cli.b_to_a.is_some() {
                "--b-to-a"
            } else {
                "--both"
            },
        ],
        seed: cli.seed.unwrap_or_else(dualbench_common::clock::unix_ns),
        stats: cli.stats,
        duration_ns,
        buffers: cli.buffers,
        spin_ns: cli.spin_us * 1_000,
        rt_priority: u8::try_from(cli.rt_priority).unwrap_or(0),
    })
}

/// `--duration` in ns: at least 1 ns (a value that rounds to 0 ns, such as 1e-12, was
/// taken as 0) and below 10^9 s, shown in one readable line when refused.
fn duration_ns(s: f64) -> Result<u64> {
    let ns = (s * 1e9).round();
    if s.is_finite() && ns >= 1.0 && s < 1e9 {
        return Ok(ns as u64);
    }
    let shown = if s == 0.0 || !s.is_finite() || (1e-9..1e9).contains(&s.abs()) {
        s.to_string()
    } else {
        format!("{s:e}")
    };
    Err(Failure::usage(format!(
        "--duration {shown}: give a number of seconds of at least 0.000000001 (1 ns) and below 1e9"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Top {
        #[command(flatten)]
        wire: WireCli,
    }

    fn config(args: &[&str]) -> Result<WireConfig> {
        let mut all = vec!["wire"];
        all.extend_from_slice(args);
        let top = Top::try_parse_from(all).map_err(|e| Failure::usage(e.to_string()))?;
        config_from_cli(top.wire)
    }

    #[test]
    fn both_applies_to_each_direction_unless_replaced() {
        let c = config(&[
            "--a",
            "x",
            "--b",
            "y",
            "--both",
            "delay=5ms",
            "--b-to-a",
            "loss=1%",
            "--seed",
            "3",
        ])
        .unwrap();
        assert_eq!(c.a_to_b.delay_ns, 5_000_000);
        assert_eq!(c.b_to_a.delay_ns, 0);
        assert_eq!(c.seed, 3);
        // Errors found later (a queue too small for the interface) name the flag given.
        assert_eq!(c.spec_flags, ["--both", "--b-to-a"]);
        assert!(config(&["--a", "x", "--b", "y"])
            .unwrap()
            .a_to_b
            .is_transparent());
    }

    #[test]
    fn bad_flags_are_usage_errors_naming_the_flag() {
        let e = config(&["--a", "x", "--b", "y", "--a-to-b", "delay=5"]).unwrap_err();
        assert!(
            e.message.starts_with("--a-to-b: link spec"),
            "{}",
            e.message
        );
        assert_eq!(e.exit_code(), 2);
        assert!(config(&["--a", "x", "--b", "x"])
            .unwrap_err()
            .message
            .contains("two different"));
        assert!(config(&["--a", "x", "--b", "y", "--duration", "0"]).is_err());
        // A bad --both is refused even when both directions have their own spec (it used
        // to be passed over in silence).
        let e = config(&[
            "--a",
            "x",
            "--b",
            "y",
            "--a-to-b",
            "delay=1ms",
            "--b-to-a",
            "delay=1ms",
            "--both",
            "garbage",
        ])
        .unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert_eq!(
            e.message,
            "--both: link spec \"garbage\": unknown key \"garbage\"; known keys: delay, jitter, \
             jitter_dist, keep_order, loss, burst_loss, duplicate, reorder, rate, queue"
        );
        assert!(config(&["--a", "x", "--b", "y", "--duration", "nan"]).is_err());
    }

    /// `--duration 1e-12` rounded to 0 ns and was accepted; now every duration that is
    /// not at least 1 ns is refused in one readable line naming the least one accepted.
    #[test]
    fn a_duration_below_a_nanosecond_is_refused_naming_the_least() {
        let d = |s: &str| config(&["--a", "x", "--b", "y", "--duration", s]);
        assert_eq!(d("0.000000001").unwrap().duration_ns, Some(1));
        assert_eq!(d("2.5").unwrap().duration_ns, Some(2_500_000_000));
        let why = "give a number of seconds of at least 0.000000001 (1 ns) and below 1e9";
        for (given, shown) in [
            ("1e-12", "1e-12"),
            ("0.0000000004", "4e-10"),
            ("0", "0"),
            ("1e300", "1e300"),
            ("1e-300", "1e-300"),
            ("1000000000", "1e9"),
            ("inf", "inf"),
        ] {
            let e = d(given).err().unwrap();
            assert_eq!(e.exit_code(), 2);
            assert_eq!(e.message, format!("--duration {shown}: {why}"), "{given}");
        }
    }

    /// `--duration 10s` failed with "invalid float literal" where `run -t`, `monitor` and
    /// `capture` take units; a unit is read now, and a plain number is still seconds.
    #[test]
    fn a_duration_takes_a_unit_or_plain_seconds() {
        let d = |s: &str| config(&["--a", "x", "--b", "y", "--duration", s]);
        assert_eq!(d("1500ms").unwrap().duration_ns, Some(1_500_000_000));
        assert_eq!(
            d("1500ms").unwrap().duration_ns,
            d("1.5").unwrap().duration_ns
        );
        assert_eq!(d("10s").unwrap().duration_ns, Some(10_000_000_000));
        assert_eq!(d("10").unwrap().duration_ns, Some(10_000_000_000));
        assert_eq!(d("2m").unwrap().duration_ns, Some(120_000_000_000));
        assert_eq!(d("250us").unwrap().duration_ns, Some(250_000));
        // The range check holds for a value with a unit too.
        let e = d("0s").err().unwrap();
        assert_eq!(e.exit_code(), 2);
        assert_eq!(
            e.message,
            "--duration 0: give a number of seconds of at least 0.000000001 (1 ns) and below 1e9"
        );
        for (given, why) in [
            ("abc", "'abc' is not a duration (try 1s, 500ms, 2m)"),
            (
                "10 s",
                "'10 s' is not a duration: no spaces (write '10s'; e.g. 1s, 500ms, 2m)",
            ),
        ] {
            let e = d(given).err().unwrap();
            assert_eq!(e.exit_code(), 2);
            assert!(
                e.message.starts_with(&format!(
                    "error: invalid value '{given}' for '--duration <DURATION>': {why}"
                )),
                "{}",
                e.message
            );
        }
    }
}
