//! The link spec string shared by `dualbench wire` and the testbed (docs/wire.md, "Link spec"):
//! `delay=10ms,jitter=2ms,loss=0.1%,rate=100Mbit,queue=100`, parsed strictly into a
//! [`LinkSpec`] (one direction of a link). Parsing only; no I/O.
//!
//! Keys: `delay`, `jitter` (times: `ns`, `us`, `ms`, `s`), `jitter_dist` (`uniform` |
//! `normal`), `keep_order` (flag), `loss`, `duplicate`, `reorder` (percentages, `0.1%`),
//! `burst_loss=p,r,h,k` (Gilbert–Elliott, percentages), `rate` (`bit`, `kbit`, `Mbit`,
//! `Gbit`), `queue` (packets as a plain integer, or bytes: `B`, `kB`, `KiB`, `MB`, `MiB`).

use dualbench_common::link::{MAX_DELAY_NS, MAX_DELAY_WHY};
use dualbench_common::{Failure, Result};
use std::fmt;

/// How jitter is drawn around the constant delay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum JitterDist {
    /// Uniform in `[delay - jitter, delay + jitter]`.
    #[default]
    Uniform,
    /// Normal with mean `delay` and standard deviation `jitter`.
    Normal,
}

/// Gilbert–Elliott burst loss, in the literature's notation: `p` = P(good → bad),
/// `r` = P(bad → good), `h` = P(frame delivered | bad), `k` = P(frame delivered | good).
/// All are probabilities in `[0, 1]`, evaluated once per frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GilbertElliott {
    pub p: f64,
    pub r: f64,
    pub h: f64,
    pub k: f64,
}

/// Which frames the loss stage drops.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Loss {
    #[default]
    None,
    /// Each frame dropped independently with this probability.
    Random(f64),
    /// Bursty loss from a two-state Markov chain.
    Burst(GilbertElliott),
}

/// The bound on the rate limiter's queue: frames waiting for (or in) serialisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueLimit {
    Packets(u64),
    Bytes(u64),
}

/// The queue a rate limit gets when the spec names none (like a default `txqueuelen`).
pub const DEFAULT_QUEUE: QueueLimit = QueueLimit::Packets(1000);

/// One direction of a link. The default is a transparent link.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LinkSpec {
    pub delay_ns: u64,
    pub jitter_ns: u64,
    pub jitter_dist: JitterDist,
    /// Never deliver a frame before one that arrived earlier (jitter then only stretches gaps).
    pub keep_order: bool,
    pub loss: Loss,
    /// Probability that a frame is sent twice.
    pub duplicate: f64,
    /// Probability that a frame skips the constant delay (and so overtakes earlier frames).
    pub reorder: f64,
    /// Bits per second; `None` = no rate limit (and no queue).
    pub rate_bps: Option<u64>,
    /// Set only when `rate_bps` is; `DEFAULT_QUEUE` if the spec named no queue.
    pub queue: Option<QueueLimit>,
}

impl LinkSpec {
    /// True when the spec changes nothing: frames go straight through.
    pub fn is_transparent(&self) -> bool {
        *self == LinkSpec::default()
    }
}

const KEYS: [&str; 10] = [
    "delay",
    "jitter",
    "jitter_dist",
    "keep_order",
    "loss",
    "burst_loss",
    "duplicate",
    "reorder",
    "rate",
    "queue",
];

/// Parse a spec such as `delay=10ms,jitter=2ms,loss=0.1%,rate=100Mbit,queue=100`.
/// An empty string is a transparent link. Errors are usage failures naming the bad part.
pub fn parse_link_spec(text: &str) -> Result<LinkSpec> {
    parse_items(text).map_err(|e| e.context(format!("link spec {text:?}")))
}

fn parse_items(text: &str) -> Result<LinkSpec> {
    let mut spec = LinkSpec::default();
    let mut seen: Vec<String> = Vec::new();
    let mut queue = None;
    for item in split_items(text)? {
        let (key, value) = match item.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (item.as_str(), None),
        };
        if seen.iter().any(|k| k == key) {
            return Err(Failure::usage(format!("{key} is given twice")));
        }
        if let Some(other) = other_loss_model(key, &seen) {
            return Err(Failure::usage(format!(
                "{other} and {key} are two loss models and a link has one: give either \
                 loss=P (independent) or burst_loss=p,r,h,k (Gilbert-Elliott)"
            )));
        }
        seen.push(key.to_string());
        apply(&mut spec, &mut queue, key, value)?;
    }
    finish(spec, queue)
}

/// The loss model's key already given, when `key` names the other one: one would silently
/// replace the other.
fn other_loss_model<'a>(key: &str, seen: &'a [String]) -> Option<&'a str> {
    let other = match key {
        "loss" => "burst_loss",
        "burst_loss" => "loss",
        _ => return None,
    };
    seen.iter().find(|k| *k == other).map(String::as_str)
}

/// Split on commas into `key=value` items; `burst_loss=p,r,h,k` keeps its own commas.
fn split_items(text: &str) -> Result<Vec<String>> {
    let mut items: Vec<String> = Vec::new();
    if text.trim().is_empty() {
        return Ok(items);
    }
    if let Some(space) = text.chars().find(|c| c.is_whitespace()) {
        return Err(Failure::usage(format!(
            "{space:?} in the spec: write it without spaces, e.g. delay=10ms,loss=0.1%"
        )));
    }
    for frag in text.split(',') {
        if frag.is_empty() {
            return Err(Failure::usage(
                "empty item (two commas in a row, or a trailing comma?)",
            ));
        }
        if frag.contains('=') || frag.starts_with(|c: char| c.is_ascii_alphabetic()) {
            items.push(frag.to_string());
            continue;
        }
        match items.last_mut() {
            Some(last) if last.starts_with("burst_loss=") => {
                last.push(',');
                last.push_str(frag);
            }
            _ => {
                return Err(Failure::usage(format!(
                    "{frag:?} has no key; write key=value, e.g. delay=10ms"
                )))
            }
        }
    }
    Ok(items)
}

/// Set one key of `spec` (or the pending `queue`) from its value.
fn apply(
    spec: &mut LinkSpec,
    queue: &mut Option<QueueLimit>,
    key: &str,
    value: Option<&str>,
) -> Result<()> {
    // Before the value: `dealy` is a misspelt key, not a key that lacks a value.
    if !KEYS.contains(&key) {
        return Err(unknown_key(key));
    }
    if key == "keep_order" {
        if value.is_some() {
            return Err(Failure::usage("keep_order is a flag and takes no value"));
        }
        spec.keep_order = true;
        return Ok(());
    }
    let value = value.ok_or_else(|| Failure::usage(format!("{key} needs a value ({key}=...)")))?;
    let ctx = |e: Failure| e.context(format!("{key}={value}"));
    match key {
        "delay" => spec.delay_ns = parse_delay_ns(value).map_err(ctx)?,
        "jitter" => spec.jitter_ns = parse_delay_ns(value).map_err(ctx)?,
        "jitter_dist" => spec.jitter_dist = parse_dist(value).map_err(ctx)?,
        "loss" => spec.loss = nonzero_loss(parse_percent(value).map_err(ctx)?),
        "burst_loss" => spec.loss = Loss::Burst(parse_burst(value).map_err(ctx)?),
        "duplicate" => spec.duplicate = parse_percent(value).map_err(ctx)?,
        "reorder" => spec.reorder = parse_percent(value).map_err(ctx)?,
        "rate" => spec.rate_bps = Some(parse_rate_bps(value).map_err(ctx)?),
        "queue" => *queue = Some(parse_queue(value).map_err(ctx)?),
        _ => return Err(unknown_key(key)),
    }
    Ok(())
}

fn unknown_key(key: &str) -> Failure {
    Failure::usage(format!(
        "unknown key {key:?}; known keys: {}",
        KEYS.join(", ")
    ))
}

fn nonzero_loss(p: f64) -> Loss {
    if p > 0.0 {
        Loss::Random(p)
    } else {
        Loss::None
    }
}

/// Checks between keys, once all are known.
fn finish(mut spec: LinkSpec, queue: Option<QueueLimit>) -> Result<LinkSpec> {
    if spec.jitter_dist != JitterDist::Uniform && spec.jitter_ns == 0 {
        return Err(Failure::usage(
            "jitter_dist needs jitter=... (e.g. jitter=2ms)",
        ));
    }
    if spec.keep_order && spec.jitter_ns == 0 {
        return Err(Failure::usage(
            "keep_order needs jitter=...: without jitter no frame can overtake another (the testbed refuses it too)",
        ));
    }
    if spec.jitter_ns > 0 && spec.delay_ns == 0 {
        return Err(Failure::usage(
            "jitter needs delay=... to vary around (e.g. delay=10ms,jitter=1ms), as in the testbed and netem",
        ));
    }
    if spec.reorder > 0.0 && spec.delay_ns == 0 {
        return Err(Failure::usage(
            "reorder needs delay=...: reordered frames are the ones that skip the delay",
        ));
    }
    match (spec.rate_bps, queue) {
        (None, Some(_)) => {
            return Err(Failure::usage(
                "queue needs rate=...: the queue holds frames waiting for the rate limiter",
            ))
        }
        (Some(_), q) => spec.queue = Some(q.unwrap_or(DEFAULT_QUEUE)),
        (None, None) => {}
    }
    Ok(spec)
}

fn parse_dist(value: &str) -> Result<JitterDist> {
    match value {
        "uniform" => Ok(JitterDist::Uniform),
        "normal" => Ok(JitterDist::Normal),
        _ => Err(Failure::usage("expected uniform or normal")),
    }
}

fn parse_burst(value: &str) -> Result<GilbertElliott> {
    let parts: Vec<&str> = value.split(',').map(str::trim).collect();
    if parts.len() != 4 {
        return Err(Failure::usage(
            "expected four percentages p,r,h,k (e.g. burst_loss=1%,30%,0%,100%)",
        ));
    }
    let mut v = [0.0; 4];
    for (slot, part) in v.iter_mut().zip(&parts) {
        *slot = parse_percent(part)?;
    }
    Ok(GilbertElliott {
        p: v[0],
        r: v[1],
        h: v[2],
        k: v[3],
    })
}

/// A time with a unit: `10ms`, `250us`, `1.5s`, `800ns` → nanoseconds, exactly.
pub fn parse_time_ns(value: &str) -> Result<u64> {
    let units: &[(&str, u64)] = &[
        ("ns", 1),
        ("us", 1_000),
        ("µs", 1_000),
        ("ms", 1_000_000),
        ("s", 1_000_000_000),
    ];
    let (number, scale) = split_unit(value, units, "a time with a unit, e.g. 10ms, 250us, 1.5s")?;
    scaled(number, scale, "nanosecond")
}

/// A delay or jitter: a time of at most [`MAX_DELAY_NS`] (60 s), the bound the testbed
/// keeps too.
pub fn parse_delay_ns(value: &str) -> Result<u64> {
    match parse_time_ns(value)? {
        ns if ns > MAX_DELAY_NS => Err(Failure::usage(format!(
            "{value} is too long: {MAX_DELAY_WHY}"
        ))),
        ns => Ok(ns),
    }
}

/// A rate: `100Mbit`, `1Gbit`, `64kbit`, `9600bit` → bits per second (SI prefixes), exactly.
pub fn parse_rate_bps(value: &str) -> Result<u64> {
    let units: &[(&str, u64)] = &[
        ("bit", 1),
        ("kbit", 1_000),
        ("Kbit", 1_000),
        ("Mbit", 1_000_000),
        ("mbit", 1_000_000),
        ("Gbit", 1_000_000_000),
        ("gbit", 1_000_000_000),
    ];
    if value.to_ascii_lowercase().ends_with("bps") {
        return Err(Failure::usage(format!(
            "'{value}' is ambiguous (tc reads 'bps' as bytes per second): write bits, like \"100Mbit\""
        )));
    }
    let (number, scale) = split_unit(value, units, "a rate such as 100Mbit, 1Gbit or 64kbit")?;
    match scaled(number, scale, "bit/s")? {
        0 => Err(Failure::usage(
            "a rate must be above zero (leave rate out for no limit)",
        )),
        bps => Ok(bps),
    }
}

/// A queue bound: a plain integer counts packets; `64kB`, `1MiB`, `1500B` count bytes.
pub fn parse_queue(value: &str) -> Result<QueueLimit> {
    let limit = if value.bytes().all(|b| b.is_ascii_digit()) && !value.is_empty() {
        QueueLimit::Packets(scaled(value, 1, "packet")?)
    } else {
        let units: &[(&str, u64)] = &[
            ("B", 1),
            ("kB", 1_000),
            ("KiB", 1_024),
            ("MB", 1_000_000),
            ("MiB", 1_048_576),
        ];
        let (number, scale) =
            split_unit(value, units, "packets (100) or bytes (64kB, 1MiB, 1500B)")?;
        QueueLimit::Bytes(scaled(number, scale, "byte")?)
    };
    match limit {
        QueueLimit::Packets(0) | QueueLimit::Bytes(0) => Err(Failure::usage(
            "a queue must hold at least one packet or byte",
        )),
        ok => Ok(ok),
    }
}

/// A percentage `0.1%` → probability 0.001, within 0–100%.
pub fn parse_percent(value: &str) -> Result<f64> {
    let number = value.strip_suffix('%').ok_or_else(|| {
        Failure::usage(format!(
            "{value:?} is not a percentage; write it with %, e.g. 0.1%"
        ))
    })?;
    check_decimal(number)?;
    let pct: f64 = number
        .parse()
        .map_err(|_| Failure::usage(format!("{value:?} is not a number")))?;
    if pct > 100.0 {
        return Err(Failure::usage(format!("{value} is above 100%")));
    }
    Ok(pct / 100.0)
}

/// Split `1.5ms` into (`1.5`, 1_000_000) using the longest matching unit suffix. The
/// letters after the number must be that unit whole: `64KB` ends in `B`, but its unit is
/// `KB`, which is unknown (not a number `64K` in bytes).
fn split_unit<'a>(value: &'a str, units: &[(&str, u64)], expected: &str) -> Result<(&'a str, u64)> {
    let best = units
        .iter()
        .filter(|(u, _)| value.ends_with(u))
        .max_by_key(|(u, _)| u.len());
    let given = &value[value.trim_end_matches(char::is_alphabetic).len()..];
    match best {
        Some((unit, scale)) if *unit == given => Ok((&value[..value.len() - unit.len()], *scale)),
        Some(_) => Err(Failure::usage(format!(
            "{value:?}: unknown unit {given:?}; expected {expected}"
        ))),
        None if value.bytes().all(|b| b.is_ascii_digit() || b == b'.') && !value.is_empty() => Err(
            Failure::usage(format!("{value:?} has no unit; expected {expected}")),
        ),
        None => Err(Failure::usage(format!("{value:?} is not {expected}"))),
    }
}

/// Digits with at most one decimal point and digits on both sides of it.
fn check_decimal(number: &str) -> Result<()> {
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    let bad_frac = number.contains('.') && frac.is_empty();
    if int.is_empty() || !digits(int) || !digits(frac) || bad_frac {
        return Err(Failure::usage(format!(
            "{number:?} is not a plain decimal number (digits, optionally one '.', no sign or exponent)"
        )));
    }
    Ok(())
}

/// `number × scale` computed exactly in integers; a result that is not whole is an error.
fn scaled(number: &str, scale: u64, unit: &str) -> Result<u64> {
    check_decimal(number)?;
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    let too_big = || Failure::usage(format!("{number:?} is too large"));
    let int: u128 = int.parse().map_err(|_| too_big())?;
    let frac_digits = frac.len() as u32;
    let denom = 10u128.checked_pow(frac_digits).ok_or_else(too_big)?;
    let frac: u128 = if frac.is_empty() {
        0
    } else {
        frac.parse().map_err(|_| too_big())?
    };
    let numer = (int * denom + frac)
        .checked_mul(scale as u128)
        .ok_or_else(too_big)?;
    if numer % denom != 0 {
        return Err(Failure::usage(format!(
            "{number:?} is finer than one {unit}"
        )));
    }
    u64::try_from(numer / denom).map_err(|_| too_big())
}

impl fmt::Display for LinkSpec {
    /// The canonical spec string, which parses back to the same `LinkSpec`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts: Vec<String> = Vec::new();
        if self.delay_ns > 0 {
            parts.push(format!("delay={}", show_time(self.delay_ns)));
        }
        if self.jitter_ns > 0 {
            parts.push(format!("jitter={}", show_time(self.jitter_ns)));
        }
        if self.jitter_dist == JitterDist::Normal {
            parts.push("jitter_dist=normal".into());
        }
        if self.keep_order {
            parts.push("keep_order".into());
        }
        match self.loss {
            Loss::None => {}
            Loss::Random(p) => parts.push(format!("loss={}", show_pct(p))),
            Loss::Burst(g) => parts.push(format!(
                "burst_loss={},{},{},{}",
                show_pct(g.p),
                show_pct(g.r),
                show_pct(g.h),
                show_pct(g.k)
            )),
        }
        if self.duplicate > 0.0 {
            parts.push(format!("duplicate={}", show_pct(self.duplicate)));
        }
        if self.reorder > 0.0 {
            parts.push(format!("reorder={}", show_pct(self.reorder)));
        }
        if let Some(bps) = self.rate_bps {
            parts.push(format!("rate={}", show_rate(bps)));
        }
        match self.queue {
            Some(QueueLimit::Packets(n)) => parts.push(format!("queue={n}")),
            Some(QueueLimit::Bytes(n)) => parts.push(format!("queue={}", show_bytes(n))),
            None => {}
        }
        f.write_str(&parts.join(","))
    }
}

/// In the largest unit that keeps the number whole, as written: `10ms`, `2s`, `250us`.
fn show_time(ns: u64) -> String {
    match ns {
        n if n >= 1_000_000_000 && n % 1_000_000_000 == 0 => format!("{}s", n / 1_000_000_000),
        n if n % 1_000_000 == 0 => format!("{}ms", n / 1_000_000),
        n if n % 1_000 == 0 => format!("{}us", n / 1_000),
        n => format!("{n}ns"),
    }
}

/// In the largest SI unit that keeps the number whole, spelled as users write it and
/// [`parse_rate_bps`] reads it: `10Mbit`, `1Gbit`, `1500kbit`, `9600bit`.
fn show_rate(bps: u64) -> String {
    let units = [
        (1_000_000_000, "Gbit"),
        (1_000_000, "Mbit"),
        (1_000, "kbit"),
    ];
    match units.iter().find(|(scale, _)| bps.is_multiple_of(*scale)) {
        Some((scale, unit)) => format!("{}{unit}", bps / scale),
        None => format!("{bps}bit"),
    }
}

/// A byte count in the largest unit [`parse_queue`] reads that keeps it whole, decimal
/// units first: `64kB`, `1MB`, `1MiB`, `4KiB`, `1500B`.
fn show_bytes(bytes: u64) -> String {
    let units = [
        (1_000_000, "MB"),
        (1_048_576, "MiB"),
        (1_000, "kB"),
        (1_024, "KiB"),
    ];
    match units.iter().find(|(scale, _)| bytes.is_multiple_of(*scale)) {
        Some((scale, unit)) => format!("{}{unit}", bytes / scale),
        None => format!("{bytes}B"),
    }
}

/// A probability as the shortest percentage that [`parse_percent`] reads back to it:
/// `14.5%`, not the `14.499999999999998%` that `p * 100` gives.
fn show_pct(p: f64) -> String {
    let pct = p * 100.0;
    (0..=17)
        .map(|digits| format!("{pct:.digits$}"))
        .find(|text| text.parse::<f64>().is_ok_and(|v| v / 100.0 == p))
        .map_or_else(|| format!("{pct}%"), |text| format!("{text}%"))
}

#[cfg(test)]
mod tests;
