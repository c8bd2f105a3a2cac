//! Quantities in a topology file, parsed from text and checked for sense: link rates
//! (`"100Mbit"`), queue limits (`100` packets or `"64kB"`), durations (`"40ms"`), loss
//! (`"0.1%"`) and Gilbert–Elliott burst loss (`"1%,30%,0%,100%"`). The key names and units
//! are those of the link spec shared with `dualbench wire` (docs/wire.md, "Link spec"); this
//! module parses them itself so the testbed does not depend on the wire crate.

use dualbench_common::link::{MAX_DELAY_NS, MAX_DELAY_WHY};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Slowest and fastest rates a link may have (8 kbit/s .. 100 Gbit/s).
pub const MIN_RATE_BPS: u64 = 8_000;
pub const MAX_RATE_BPS: u64 = 100_000_000_000;
/// The largest frame on a testbed link: 1500 bytes of IP plus 14 of Ethernet header.
pub const MAX_FRAME_BYTES: u64 = 1514;

/// A link rate in bits per second.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rate(pub u64);

/// A queue limit: a count of packets or of bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Queue {
    #[serde(rename = "packets")]
    Packets(u64),
    #[serde(rename = "bytes")]
    Bytes(u64),
}

/// A duration in microseconds (delay, jitter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Micros(pub u64);

/// A probability in parts per million (loss), so it prints back exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ppm(pub u64);

/// Gilbert–Elliott burst loss, as the wire's `burst_loss=p,r,h,k`: p = P(good → bad),
/// r = P(bad → good), h = P(deliver | bad), k = P(deliver | good), each in parts per million.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BurstLoss {
    pub p: Ppm,
    pub r: Ppm,
    pub h: Ppm,
    pub k: Ppm,
}

impl BurstLoss {
    /// Whether any frame can be lost: in the good state (k below 100%), or in a bad state
    /// the chain can reach (p above 0) that loses (h below 100%).
    pub fn loses(&self) -> bool {
        self.k.0 < 1_000_000 || (self.p.0 > 0 && self.h.0 < 1_000_000)
    }

    /// netem's arguments for it, `loss gemodel p r 1-h 1-k`: netem takes the loss
    /// probabilities in the bad and the good state where the wire takes delivery ones.
    pub fn netem_args(&self) -> [String; 6] {
        let lost = |deliver: Ppm| Ppm(1_000_000 - deliver.0).to_string();
        [
            "loss".into(),
            "gemodel".into(),
            self.p.to_string(),
            self.r.to_string(),
            lost(self.h),
            lost(self.k),
        ]
    }
}

impl fmt::Display for BurstLoss {
    /// The wire's spelling: `1%,30%,0%,100%`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{},{},{},{}", self.p, self.r, self.h, self.k)
    }
}

/// `"1%,30%,0%,100%"`: four percentages p, r, h, k, each as a loss is written.
pub fn parse_burst_loss(text: &str) -> Result<BurstLoss, String> {
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    let [p, r, h, k] = parts[..] else {
        return Err(format!(
            "'{text}' is not a burst loss: write four percentages p,r,h,k (P(good to bad), P(bad to good), P(deliver | bad), P(deliver | good)), like \"1%,30%,0%,100%\""
        ));
    };
    let one = |name: &str, part: &str| {
        parse_percent(part, name).map_err(|m| format!("burst loss '{text}': {m}"))
    };
    Ok(BurstLoss {
        p: one("p", p)?,
        r: one("r", r)?,
        h: one("h", h)?,
        k: one("k", k)?,
    })
}

/// Split `"100Mbit"` into `(100.0, "Mbit")`.
fn split_number(text: &str) -> Option<(f64, &str)> {
    let text = text.trim();
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let number: f64 = text[..end].parse().ok()?;
    Some((number, text[end..].trim()))
}

/// `"100Mbit"`, `"1Gbit"`, `"500kbit"`, `"64000bit"` (k, M, G are powers of 1000, as in tc).
pub fn parse_rate(text: &str) -> Result<Rate, String> {
    let bad =
        || format!("'{text}' is not a rate: write it like \"100Mbit\", \"1Gbit\" or \"500kbit\"");
    let (number, unit) = split_number(text).ok_or_else(bad)?;
    let scale = match unit.to_ascii_lowercase().as_str() {
        "bit" => 1.0,
        "kbit" => 1e3,
        "mbit" => 1e6,
        "gbit" => 1e9,
        "bps" | "kbps" | "mbps" | "gbps" => {
            return Err(format!(
                "'{text}' is ambiguous (tc reads 'bps' as bytes per second): write bits, like \"100Mbit\""
            ))
        }
        _ => return Err(bad()),
    };
    let bps = (number * scale).round() as u64;
    if !(MIN_RATE_BPS..=MAX_RATE_BPS).contains(&bps) {
        return Err(format!(
            "rate '{text}' is impossible: a link rate must be between 8kbit and 100Gbit"
        ));
    }
    Ok(Rate(bps))
}

/// A queue limit from a TOML integer (packets) or a string (`"100"`, `"64kB"`, `"1MB"`,
/// `"4KiB"`, `"1MiB"`, `"1500B"`: the wire's units). Whole packets and whole bytes only: a
/// finer value such as `"1.5"` packets or `"1514.5B"` is refused rather than rounded.
pub fn parse_queue_text(text: &str) -> Result<Queue, String> {
    let bad = || {
        format!("'{text}' is not a queue limit: give packets (100) or bytes (\"64kB\", \"1MiB\", \"3000B\")")
    };
    let (number, unit) = split_digits(text).ok_or_else(bad)?;
    let (scale, what) = match unit {
        "" | "p" | "packets" => (1, "packets"),
        "B" => (1, "bytes"),
        "kB" | "KB" => (1_000, "bytes"),
        "KiB" => (1_024, "bytes"),
        "MB" => (1_000_000, "bytes"),
        "MiB" => (1_048_576, "bytes"),
        _ => return Err(bad()),
    };
    let n = match exact(number, scale) {
        Some(Some(n)) => n,
        Some(None) => return Err(format!("queue '{text}' is not a whole number of {what}")),
        None => return Err(format!("queue '{text}' is impossible: it is too large")),
    };
    check_queue(match what {
        "packets" => Queue::Packets(n),
        _ => Queue::Bytes(n),
    })
}

/// A queue must hold at least one full frame and stay below a million packets / 1 GB.
pub fn check_queue(queue: Queue) -> Result<Queue, String> {
    match queue {
        Queue::Packets(n) if n == 0 || n > 1_000_000 => {
            Err(format!("queue of {n} packets is impossible: use 1 to 1000000 packets"))
        }
        Queue::Bytes(n) if !(MAX_FRAME_BYTES..=1_000_000_000).contains(&n) => Err(format!(
            "queue of {n} bytes is impossible: it must hold one full frame ({MAX_FRAME_BYTES} bytes) and at most 1000MB"
        )),
        ok => Ok(ok),
    }
}

/// `"40ms"`, `"2.5ms"`, `"500us"`, `"1s"`, `"2000ns"`; at most 60 s (the bound the wire
/// shares, [`MAX_DELAY_NS`]). The wire's units,
/// but in whole microseconds (what tc's netem and the testbed's state keep): a finer value
/// such as `"800ns"` or `"0.5us"` is refused rather than rounded.
pub fn parse_duration(text: &str) -> Result<Micros, String> {
    let bad = || format!("'{text}' is not a duration: write it like \"40ms\", \"500us\" or \"1s\"");
    let (number, unit) = split_digits(text).ok_or_else(bad)?;
    // Scale to nanoseconds exactly, then require whole microseconds.
    let scale = match unit {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        _ => return Err(bad()),
    };
    let too_long = || format!("'{text}' is too long: {MAX_DELAY_WHY}");
    let ns = exact(number, scale).ok_or_else(too_long)?.ok_or_else(|| {
        format!("'{text}' is finer than a nanosecond: give a whole number of microseconds")
    })?;
    if ns % 1_000 != 0 {
        return Err(format!(
            "'{text}' is finer than the testbed's resolution of 1us: give a whole number of microseconds (e.g. \"{}us\")",
            (ns / 1_000).max(1)
        ));
    }
    if ns > MAX_DELAY_NS {
        return Err(too_long());
    }
    Ok(Micros(ns / 1_000))
}

/// `"0.1%"`, between 0 and 100%, in steps of 0.0001% (one part per million). As in
/// `dualbench wire`, the `%` is required: a bare `"1"` could mean 1% or 100%.
pub fn parse_loss(text: &str) -> Result<Ppm, String> {
    parse_percent(text, "loss")
}

/// A percentage as [`parse_loss`] reads it; `what` names it in errors (`loss`, or `p` of
/// a burst loss).
fn parse_percent(text: &str, what: &str) -> Result<Ppm, String> {
    let bad = || match what {
        "loss" => format!("'{text}' is not a loss rate: write it like \"0.1%\""),
        _ => format!("{what} '{text}' is not a percentage: write it like \"30%\""),
    };
    let (number, unit) = split_digits(text).ok_or_else(bad)?;
    match unit {
        "%" => {}
        "" => {
            return Err(format!(
                "{what} '{text}' has no '%': write a percentage, like \"{number}%\""
            ))
        }
        _ => return Err(bad()),
    }
    let impossible = || format!("{what} '{text}' is impossible: it must be between 0% and 100%");
    let ppm = exact(number, 10_000)
        .ok_or_else(impossible)?
        .ok_or_else(|| {
            format!("{what} '{text}' is finer than the testbed's resolution of 0.0001%: round it to at most four decimals")
        })?;
    if ppm > 1_000_000 {
        return Err(impossible());
    }
    Ok(Ppm(ppm))
}

/// Split `"2.5ms"` into `("2.5", "ms")`: plain decimal digits, then the unit.
fn split_digits(text: &str) -> Option<(&str, &str)> {
    let text = text.trim();
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(end);
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    let ok = !int.is_empty() && !frac.contains('.') && !(number.ends_with('.'));
    ok.then_some((number, unit.trim()))
}

/// `number × scale` exactly: `None` if too large, `Some(None)` if not a whole number.
fn exact(number: &str, scale: u64) -> Option<Option<u64>> {
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    let denom = 10u128.checked_pow(frac.len() as u32)?;
    let int: u128 = int.parse().ok()?;
    let frac: u128 = if frac.is_empty() {
        0
    } else {
        frac.parse().ok()?
    };
    let numer = int
        .checked_mul(denom)?
        .checked_add(frac)?
        .checked_mul(u128::from(scale))?;
    if numer % denom != 0 {
        return Some(None);
    }
    Some(u64::try_from(numer / denom).ok())
}

impl fmt::Display for Rate {
    /// The largest unit that keeps the number whole, in tc's spelling: `100mbit`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bps = self.0;
        for (scale, unit) in [
            (1_000_000_000, "gbit"),
            (1_000_000, "mbit"),
            (1_000, "kbit"),
        ] {
            if bps.checked_rem(scale) == Some(0) {
                return write!(f, "{}{unit}", bps / scale);
            }
        }
        write!(f, "{bps}bit")
    }
}

impl fmt::Display for Queue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Queue::Packets(n) => write!(f, "{n}p"),
            Queue::Bytes(n) => write!(f, "{n}B"),
        }
    }
}

impl fmt::Display for Micros {
    /// `40ms`, `2500us`, `1s`: whole numbers in the largest exact unit (tc and wire read these).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let us = self.0;
        if us != 0 && us.checked_rem(1_000_000) == Some(0) {
            write!(f, "{}s", us / 1_000_000)
        } else if us.checked_rem(1_000) == Some(0) {
            write!(f, "{}ms", us / 1_000)
        } else {
            write!(f, "{us}us")
        }
    }
}

impl fmt::Display for Ppm {
    /// Percent with as many decimals as needed: `0.1%`, `5%`, `0.0001%`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let whole = self.0 / 10_000;
        let rest = self.0 % 10_000;
        if rest == 0 {
            return write!(f, "{whole}%");
        }
        let decimals = format!("{rest:04}");
        write!(f, "{whole}.{}%", decimals.trim_end_matches('0'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_use_powers_of_1000_and_print_back() {
        assert_eq!(parse_rate("100Mbit"), Ok(Rate(100_000_000)));
        assert_eq!(parse_rate("1Gbit"), Ok(Rate(1_000_000_000)));
        assert_eq!(
            parse_rate("1.5Mbit").map(|r| r.to_string()),
            Ok("1500kbit".into())
        );
        assert_eq!(Rate(100_000_000).to_string(), "100mbit");
        assert!(parse_rate("100Mbps").unwrap_err().contains("ambiguous"));
        assert!(parse_rate("0Mbit").unwrap_err().contains("impossible"));
        assert!(parse_rate("900Gbit").unwrap_err().contains("impossible"));
        assert!(parse_rate("fast").unwrap_err().contains("not a rate"));
    }

    /// burst_loss takes delivery probabilities h and k, netem's gemodel loss ones: the
    /// netem words are 1-h and 1-k, exactly.
    #[test]
    fn burst_loss_parses_prints_back_and_turns_into_netem_loss_probabilities() {
        let b = parse_burst_loss("1%,30%,0%,100%").unwrap();
        assert_eq!(
            b,
            BurstLoss {
                p: Ppm(10_000),
                r: Ppm(300_000),
                h: Ppm(0),
                k: Ppm(1_000_000)
            }
        );
        assert_eq!(b.to_string(), "1%,30%,0%,100%");
        assert_eq!(
            b.netem_args(),
            ["loss", "gemodel", "1%", "30%", "100%", "0%"]
        );
        let b = parse_burst_loss("0.1%, 14.5%, 20%, 99.9999%").unwrap();
        assert_eq!(b.to_string(), "0.1%,14.5%,20%,99.9999%");
        assert_eq!(
            b.netem_args(),
            ["loss", "gemodel", "0.1%", "14.5%", "80%", "0.0001%"]
        );
        assert!(b.loses());
        // Nothing lost: every state delivers, or the lossy one is never reached.
        assert!(!parse_burst_loss("5%,30%,100%,100%").unwrap().loses());
        assert!(!parse_burst_loss("0%,30%,0%,100%").unwrap().loses());
        assert!(parse_burst_loss("0%,30%,0%,99%").unwrap().loses());
        assert_eq!(
            parse_burst_loss("1%,30%"),
            Err("'1%,30%' is not a burst loss: write four percentages p,r,h,k (P(good to bad), P(bad to good), P(deliver | bad), P(deliver | good)), like \"1%,30%,0%,100%\"".into())
        );
        assert_eq!(
            parse_burst_loss("1%,30,0%,100%"),
            Err(
                "burst loss '1%,30,0%,100%': r '30' has no '%': write a percentage, like \"30%\""
                    .into()
            )
        );
        assert_eq!(
            parse_burst_loss("1%,30%,0%,101%"),
            Err("burst loss '1%,30%,0%,101%': k '101%' is impossible: it must be between 0% and 100%".into())
        );
        assert_eq!(
            parse_burst_loss("x,30%,0%,100%"),
            Err(
                "burst loss 'x,30%,0%,100%': p 'x' is not a percentage: write it like \"30%\""
                    .into()
            )
        );
    }

    #[test]
    fn queues_durations_and_loss() {
        assert_eq!(parse_queue_text("64kB"), Ok(Queue::Bytes(64_000)));
        assert_eq!(parse_queue_text("100"), Ok(Queue::Packets(100)));
        assert!(parse_queue_text("100B")
            .unwrap_err()
            .contains("one full frame"));
        // "1.9" used to be 1 packet and "1514.5B" 1515 bytes; KiB and MiB (the wire's) were refused.
        assert_eq!(
            parse_queue_text("1.9"),
            Err("queue '1.9' is not a whole number of packets".into())
        );
        assert_eq!(
            parse_queue_text("1514.5B"),
            Err("queue '1514.5B' is not a whole number of bytes".into())
        );
        assert_eq!(parse_queue_text("1.6kB"), Ok(Queue::Bytes(1_600)));
        assert_eq!(parse_queue_text("4KiB"), Ok(Queue::Bytes(4_096)));
        assert_eq!(parse_queue_text("1MiB"), Ok(Queue::Bytes(1_048_576)));
        assert_eq!(parse_queue_text("100p"), Ok(Queue::Packets(100)));
        assert_eq!(
            parse_queue_text("1001MB"),
            Err("queue of 1001000000 bytes is impossible: it must hold one full frame (1514 bytes) and at most 1000MB".into())
        );
        assert!(parse_queue_text("1e3")
            .unwrap_err()
            .contains("not a queue limit"));
        assert_eq!(parse_duration("40ms"), Ok(Micros(40_000)));
        assert_eq!(Micros(2_500).to_string(), "2500us");
        assert_eq!(Micros(1_000_000).to_string(), "1s");
        assert_eq!(parse_loss("0.1%"), Ok(Ppm(1_000)));
        assert_eq!(Ppm(1_000).to_string(), "0.1%");
        assert_eq!(Ppm(50_000).to_string(), "5%");
        assert!(parse_loss("120%").unwrap_err().contains("impossible"));
        assert_eq!(parse_loss("0%"), Ok(Ppm(0)));
        assert_eq!(parse_loss("100%"), Ok(Ppm(1_000_000)));
        assert_eq!(parse_loss("0.0001%"), Ok(Ppm(1)));
    }

    #[test]
    fn loss_needs_a_percent_sign_and_the_resolution() {
        // "1" used to be read as a fraction: 100% loss; "0.1" as 10%.
        assert_eq!(
            parse_loss("1").unwrap_err(),
            "loss '1' has no '%': write a percentage, like \"1%\""
        );
        assert!(parse_loss("0.1").unwrap_err().contains("\"0.1%\""));
        // Below 0.0001% used to vanish (0.00001%) or round (0.00005% to 0.0001%).
        for fine in ["0.00001%", "0.00005%"] {
            assert!(
                parse_loss(fine)
                    .unwrap_err()
                    .contains("resolution of 0.0001%"),
                "{fine}"
            );
        }
        assert!(parse_loss("-1%").unwrap_err().contains("not a loss rate"));
    }

    #[test]
    fn durations_are_exact_microseconds() {
        assert_eq!(parse_duration("2.5ms"), Ok(Micros(2_500)));
        assert_eq!(parse_duration("2000ns"), Ok(Micros(2)));
        assert_eq!(parse_duration("60s"), Ok(Micros(60_000_000)));
        // "0.5us" used to round to 1us; "800ns" was "not a duration".
        for fine in ["0.5us", "800ns", "1.0005ms"] {
            assert!(
                parse_duration(fine)
                    .unwrap_err()
                    .contains("resolution of 1us"),
                "{fine}"
            );
        }
        assert!(parse_duration("61s").unwrap_err().contains("too long"));
        assert!(parse_duration("1.2.3ms")
            .unwrap_err()
            .contains("not a duration"));
    }
}
