//! The profile form of a traffic run: a total bit rate split over four classes (TCP/UDP ×
//! IPv4/IPv6) by percentage, a number of flows, a duration and destinations per family —
//! read from TOML or taken from the named presets `C1B`…`C6B` (study S3's congestion
//! levels). A profile becomes an ordinary [`Script`]: one PERIODIC (or POISSON) `ON` per
//! flow at time 0 and an `OFF` at the duration, so scripts and profiles run alike.
//!
//! ```toml
//! rate = "75Mbit"            # total, counting `counting` bytes (payload | ip | wire; default ip)
//! mix = { tcp_v4 = 45, tcp_v6 = 45, udp_v4 = 5, udp_v6 = 5 }
//! flows = 10                 # each class with a share gets at least one flow
//! duration = 30              # seconds (or --duration)
//! pattern = "periodic"       # or "poisson"
//! tcp_size = { ipv4 = 1460, ipv6 = 1440 }   # message payload bytes (the defaults; either may be left out)
//! udp_size = { ipv4 = 1460, ipv6 = 1440 }
//! [destinations]
//! ipv4 = ["198.18.1.2/5000"] # flows of a family take its destinations in turn
//! ipv6 = ["2001:2:0:1::2/5000"]
//! ```

use crate::rate::{message_bytes, parse_bitrate, Counting, Proto};
use crate::script::{parse_addr_port, Action, Event, FlowSpec, Pattern, Script};
use dualbench_common::{unknown_key, Failure, Family, Result};
use serde::Deserialize;
use std::net::SocketAddr;

/// The four classes in report order.
pub const CLASSES: [(Proto, Family); 4] = [
    (Proto::Tcp, Family::V4),
    (Proto::Tcp, Family::V6),
    (Proto::Udp, Family::V4),
    (Proto::Udp, Family::V6),
];

/// `"tcp_v4"`, as in a profile's `mix` and in reports.
pub fn class_key(proto: Proto, family: Family) -> &'static str {
    match (proto, family) {
        (Proto::Tcp, Family::V4) => "tcp_v4",
        (Proto::Tcp, Family::V6) => "tcp_v6",
        (Proto::Udp, Family::V4) => "udp_v4",
        (Proto::Udp, Family::V6) => "udp_v6",
    }
}

/// A checked profile.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    pub rate_bps: f64,
    pub counting: Counting,
    /// Percentages in [`CLASSES`] order.
    pub mix: [f64; 4],
    pub flows: u32,
    pub duration_s: Option<f64>,
    pub poisson: bool,
    pub tcp_size: [u64; 2],
    pub udp_size: [u64; 2],
    pub destinations: [Vec<SocketAddr>; 2],
}

/// S3's six levels: TCP v4, TCP v6, UDP v4, UDP v6 percentages and total Mbit/s.
const PRESETS: [(&str, [f64; 4], f64); 6] = [
    ("C1B", [45.0, 45.0, 5.0, 5.0], 75.0),
    ("C2B", [22.5, 67.5, 2.5, 7.5], 75.0),
    ("C3B", [67.5, 22.5, 7.5, 2.5], 75.0),
    ("C4B", [45.0, 45.0, 5.0, 5.0], 100.0),
    ("C5B", [22.5, 67.5, 2.5, 7.5], 100.0),
    ("C6B", [67.5, 22.5, 7.5, 2.5], 100.0),
];

/// The preset of that name (case-insensitive), with no destinations and no duration yet.
pub fn preset(name: &str) -> Option<Profile> {
    let (_, mix, mbit) = PRESETS
        .iter()
        .find(|(n, _, _)| n.eq_ignore_ascii_case(name))?;
    Some(Profile {
        rate_bps: mbit * 1e6,
        counting: Counting::Ip,
        mix: *mix,
        flows: 10,
        duration_s: None,
        poisson: false,
        tcp_size: DEFAULT_SIZE,
        udp_size: DEFAULT_SIZE,
        destinations: [Vec::new(), Vec::new()],
    })
}

pub fn preset_names() -> Vec<&'static str> {
    PRESETS.iter().map(|(n, _, _)| *n).collect()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    rate: String,
    counting: Option<Counting>,
    mix: MixFile,
    flows: u32,
    duration: Option<f64>,
    pattern: Option<String>,
    tcp_size: Option<SizeFile>,
    udp_size: Option<SizeFile>,
    #[serde(default)]
    destinations: DestFile,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct MixFile {
    #[serde(default)]
    tcp_v4: f64,
    #[serde(default)]
    tcp_v6: f64,
    #[serde(default)]
    udp_v4: f64,
    #[serde(default)]
    udp_v6: f64,
}

/// `tcp_size` / `udp_size`: either family may be left out (`{ ipv6 = 1200 }`); it then
/// keeps its default, [`DEFAULT_SIZE`] (serde once refused it as "missing field `ipv4`").
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SizeFile {
    ipv4: Option<u64>,
    ipv6: Option<u64>,
}

/// S3's message payload per family (IPv4, IPv6): 1,460 / 1,440 bytes.
pub const DEFAULT_SIZE: [u64; 2] = [1460, 1440];

impl SizeFile {
    fn sizes(sizes: Option<SizeFile>) -> [u64; 2] {
        let s = sizes.unwrap_or(SizeFile {
            ipv4: None,
            ipv6: None,
        });
        [
            s.ipv4.unwrap_or(DEFAULT_SIZE[0]),
            s.ipv6.unwrap_or(DEFAULT_SIZE[1]),
        ]
    }
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct DestFile {
    #[serde(default)]
    ipv4: Vec<String>,
    #[serde(default)]
    ipv6: Vec<String>,
}

/// A profile's keys as [`unknown_key::Format`] tells them, for the one line an unknown key
/// gets: `p.toml:2: [mix]: unknown key `tcpv4` (did you mean `tcp_v4`?); [mix] takes …`.
fn format() -> unknown_key::Format {
    use unknown_key::{fields_of, Table};
    unknown_key::Format::new(
        "a profile",
        fields_of::<ProfileFile>(),
        vec![
            Table::inline("mix", fields_of::<MixFile>()),
            Table::inline("tcp_size", fields_of::<SizeFile>()),
            Table::inline("udp_size", fields_of::<SizeFile>()),
            Table::one("destinations", fields_of::<DestFile>()),
        ],
    )
}

/// Parse and check a TOML profile (`file` names it in errors).
pub fn parse_profile(text: &str, file: &str) -> Result<Profile> {
    let bad = |m: String| Failure::usage(format!("{file}: {m}"));
    // Not TOML at all first (`flows 10`, an unclosed bracket): toml's message alone said
    // "expected `.`, `=`" and nothing of what to write.
    if let Err(e) = toml::from_str::<toml::Table>(text) {
        return Err(Failure::usage(syntax_error(text, file, &e)));
    }
    let f: ProfileFile =
        unknown_key::deserialize(toml::Deserializer::new(text)).map_err(|failed| {
            let e = failed.error;
            if let Some(line) = missing_key_line(e.message()) {
                return Failure::usage(format!("{file}: {line}"));
            }
            let at = e.span().map_or(0, |s| s.start.min(text.len()));
            let line = text[..at].matches('\n').count() + 1;
            if let Some(why) = format().explain(e.message(), &failed.names, text, at) {
                return Failure::usage(format!("{file}:{line}: {why}"));
            }
            let why = crate::numbers::shorten_numbers(e.message());
            let why = match e
                .span()
                .and_then(|s| dualbench_common::toml_key::key_at(text, s.start))
            {
                Some(key) if why.starts_with("invalid type:") => wrong_type(&key, &why),
                _ => why,
            };
            Failure::usage(format!("{file}:{line}: {why}"))
        })?;
    let rate_bps = parse_bitrate(&f.rate).map_err(bad)?;
    let poisson = match f.pattern.as_deref().unwrap_or("periodic") {
        "periodic" => false,
        "poisson" => true,
        other => {
            return Err(bad(format!(
                "pattern '{other}' must be \"periodic\" or \"poisson\""
            )))
        }
    };
    let mut destinations = [Vec::new(), Vec::new()];
    for (family, list) in [
        (Family::V4, &f.destinations.ipv4),
        (Family::V6, &f.destinations.ipv6),
    ] {
        destinations[family.index()] = parse_destinations(list, family).map_err(bad)?;
    }
    let profile = Profile {
        rate_bps,
        counting: f.counting.unwrap_or_default(),
        mix: [f.mix.tcp_v4, f.mix.tcp_v6, f.mix.udp_v4, f.mix.udp_v6],
        flows: f.flows,
        duration_s: f.duration,
        poisson,
        tcp_size: SizeFile::sizes(f.tcp_size),
        udp_size: SizeFile::sizes(f.udp_size),
        destinations,
    };
    check(&profile).map_err(bad)?;
    Ok(profile)
}

/// Whether a text is a TOML table with a profile's `rate` and `mix` (a profile given under
/// a name without `.toml`, which is read as an MGEN script).
pub fn looks_like_profile(text: &str) -> bool {
    toml::from_str::<toml::Table>(text)
        .is_ok_and(|t| t.contains_key("rate") && t.contains_key("mix"))
}

/// Where the profile format is told, as errors point to it.
const FORMAT_DOC: &str = "docs/traffic.md, \"Profiles and presets\"";

/// One line for a profile that is not TOML: the file, the line (the last one with a setting
/// when toml's place is past it, as for a bracket left open at the end), that line's text,
/// toml's message, what to write and where the format is told: `p.toml:3: at 'flows 10':
/// not TOML (expected `.`, `=`): write each setting as key = value, like flows = 10 (the
/// profile format is in docs/traffic.md, "Profiles and presets")`.
fn syntax_error(text: &str, file: &str, e: &toml::de::Error) -> String {
    let at = e.span().map_or(0, |s| s.start.min(text.len()));
    let lines: Vec<&str> = text.lines().collect();
    let mut line = text.get(..at).unwrap_or(text).matches('\n').count();
    if lines.get(line).is_none_or(|l| l.trim().is_empty()) {
        let setting = |l: &&str| !l.trim().is_empty() && !l.trim_start().starts_with('#');
        line = lines[..line.min(lines.len())]
            .iter()
            .rposition(setting)
            .unwrap_or(line);
    }
    let setting = lines.get(line).map_or("", |l| l.trim());
    let shown = match setting.chars().count() {
        0 => String::new(),
        1..=60 => format!("at '{setting}': "),
        _ => format!("at '{}...': ", setting.chars().take(57).collect::<String>()),
    };
    let why = crate::numbers::shorten_numbers(&e.message().trim().replace('\n', ": "));
    format!(
        "{file}:{}: {shown}not TOML ({why}): {} (the profile format is in {FORMAT_DOC})",
        line + 1,
        syntax_hint(&why, setting)
    )
}

/// What to write instead, from toml's message `why` about the line `setting`.
fn syntax_hint(why: &str, setting: &str) -> &'static str {
    if why.contains("duplicate key") {
        "give each key once"
    } else if why.contains("table header") {
        "write a table's name alone on its line, like [destinations]"
    } else if why.contains("inline table") {
        "write an inline table on one line and close it, like mix = { tcp_v4 = 45, udp_v4 = 5 }"
    } else if why.contains("array") {
        "separate a list's items with commas and close it, like ipv4 = [\"198.18.1.2/5000\", \"198.18.1.3/5000\"]"
    } else if setting.ends_with('=') {
        "give the key its value, like duration = 60"
    } else if why.contains("expected `\"`") {
        "write text in quotes, like pattern = \"periodic\""
    } else if why.contains("string") {
        "close the quotes on the same line, like rate = \"75Mbit\""
    } else if why.contains("expected newline") {
        "give one value per line, text in quotes, like rate = \"75Mbit\""
    } else {
        "write each setting as key = value, like flows = 10"
    }
}

/// serde's "invalid type: string \"10s\", expected f64" for `key`, in the profile's words
/// and with how to write it.
fn wrong_type(key: &str, why: &str) -> String {
    let why = why
        .replace("expected f64", "expected a number")
        .replace("expected u64", "expected a whole number")
        .replace("expected u32", "expected a whole number");
    let leaf = key.rsplit('.').next().unwrap_or(key);
    let how = match key {
        "rate" => "write it in quotes with its unit, like rate = \"75Mbit\"".to_string(),
        "duration" => "write seconds as a number without quotes, like duration = 60".to_string(),
        "flows" => "write a whole number, like flows = 10".to_string(),
        "counting" => "write it in quotes, like counting = \"ip\"".to_string(),
        "pattern" => "write it in quotes, like pattern = \"periodic\"".to_string(),
        _ if key.starts_with("mix.") => format!("write a share as a number, like {leaf} = 45"),
        _ if key.ends_with("_size.ipv4") || key.ends_with("_size.ipv6") => {
            format!("write payload bytes as a whole number, like {leaf} = 1460")
        }
        "ipv4" => "write a list of addresses, like ipv4 = [\"198.18.1.2/5000\"]".to_string(),
        "ipv6" => "write a list of addresses, like ipv6 = [\"2001:2:0:1::2/5000\"]".to_string(),
        _ => return format!("key '{key}': {why}"),
    };
    format!("key '{key}': {why}: {how}")
}

/// A required key left out, in words with what to write (serde said "missing field `rate`"
/// at line 1, whatever the file's length).
fn missing_key_line(message: &str) -> Option<String> {
    let key = message.strip_prefix("missing field `")?.strip_suffix('`')?;
    let example = match key {
        "rate" => "rate = \"75Mbit\" (the total bit rate)",
        "mix" => "mix = { tcp_v4 = 45, tcp_v6 = 45, udp_v4 = 5, udp_v6 = 5 } (shares of the rate)",
        "flows" => "flows = 10 (split over the classes of the mix)",
        _ => return None,
    };
    Some(format!("the profile has no `{key}`: add e.g. {example}"))
}

/// Destinations as `addr/port` (or `addr:port`), all of one family.
pub fn parse_destinations(
    list: &[String],
    family: Family,
) -> std::result::Result<Vec<SocketAddr>, String> {
    list.iter()
        .map(|d| {
            let addr = parse_addr_port(d).map_err(|e| format!("destination '{d}': {e}"))?;
            if Family::of_addr(&addr) != family {
                return Err(format!(
                    "destination '{d}' is not an {} address",
                    family.label()
                ));
            }
            Ok(addr)
        })
        .collect()
}

fn check(p: &Profile) -> std::result::Result<(), String> {
    for ((proto, family), share) in CLASSES.iter().zip(&p.mix) {
        if *share < 0.0 || !share.is_finite() {
            return Err(format!(
                "mix: {} = {} must be a share of 0 or more",
                class_key(*proto, *family),
                crate::numbers::readable(*share)
            ));
        }
    }
    if p.mix.iter().sum::<f64>() <= 0.0 {
        return Err(
            "mix needs at least one positive share (tcp_v4, tcp_v6, udp_v4, udp_v6)".into(),
        );
    }
    let classes = p.mix.iter().filter(|s| **s > 0.0).count() as u32;
    if p.flows < classes || p.flows > 10_000 {
        return Err(format!(
            "flows = {} must be between {classes} (one per class in the mix) and 10000",
            p.flows
        ));
    }
    // Bounded as --duration is: 1e300 s made the OFF time saturate to "never", a flow
    // with no end.
    // And at least 1 ns, as --duration: 1e-12 rounded to 0 and made every flow "never on".
    if p.duration_s
        .is_some_and(|d| !((d * 1e9).round() >= 1.0 && d < MAX_DURATION_S))
    {
        return Err(
            "duration must be a number of seconds of at least 0.000000001 (1 ns) and below 10000000 (about 115 days)"
                .into(),
        );
    }
    // Bounded as a script's sizes are: a TCP message may be up to 16 MiB, as in a script
    // (profiles refused more than UDP's 65,487 bytes for TCP too).
    use crate::message::{MAX_SIZE, MAX_TCP_SIZE, MIN_SIZE};
    for (key, sizes, max) in [
        ("tcp_size", &p.tcp_size, MAX_TCP_SIZE),
        ("udp_size", &p.udp_size, MAX_SIZE),
    ] {
        for (family, size) in ["ipv4", "ipv6"].into_iter().zip(sizes) {
            if !(MIN_SIZE..=max).contains(size) {
                return Err(format!(
                    "{key}.{family} = {size} must be {MIN_SIZE}..={max} bytes (dualbench's header takes {MIN_SIZE})"
                ));
            }
        }
    }
    Ok(())
}

/// Longest profile duration, as `--duration` (seconds).
const MAX_DURATION_S: f64 = 1e7;

/// How many flows each class gets: proportional to its share (largest remainder), at
/// least one for every class with a share, none for the others.
pub fn allocate_flows(mix: &[f64; 4], flows: u32) -> [u32; 4] {
    let mut out = [0u32; 4];
    let active: Vec<usize> = (0..4).filter(|&i| mix[i] > 0.0).collect();
    for &i in &active {
        out[i] = 1;
    }
    let spare = flows.saturating_sub(active.len() as u32);
    let total: f64 = mix.iter().sum();
    // Ideal extra flows per class beyond the guaranteed one, then largest remainder.
    let ideal: Vec<f64> = (0..4)
        .map(|i| (mix[i] / total * flows as f64 - 1.0).max(0.0))
        .collect();
    let ideal_sum: f64 = ideal.iter().sum();
    let scaled: Vec<f64> = ideal
        .iter()
        .map(|x| {
            if ideal_sum > 0.0 {
                x / ideal_sum * spare as f64
            } else {
                0.0
            }
        })
        .collect();
    let mut given = 0;
    for &i in &active {
        out[i] += scaled[i].floor() as u32;
        given += scaled[i].floor() as u32;
    }
    let mut order = active.clone();
    order.sort_by(|&a, &b| {
        (scaled[b] - scaled[b].floor())
            .total_cmp(&(scaled[a] - scaled[a].floor()))
            .then(a.cmp(&b))
    });
    for &i in order.iter().cycle().take((spare - given) as usize) {
        out[i] += 1;
    }
    out
}

/// One flow of a profile, before it becomes a script event.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileFlow {
    pub proto: Proto,
    pub family: Family,
    pub size: u64,
    /// Messages per second.
    pub rate: f64,
    /// Bits per second of the profile's counting.
    pub bps: f64,
}

/// The flows of a profile in [`CLASSES`] order: each class's rate split evenly over its flows.
pub fn flows(p: &Profile) -> Vec<ProfileFlow> {
    let total: f64 = p.mix.iter().sum();
    let per_class = allocate_flows(&p.mix, p.flows);
    let mut out = Vec::new();
    for (i, (proto, family)) in CLASSES.iter().copied().enumerate() {
        if per_class[i] == 0 {
            continue;
        }
        let class_bps = p.rate_bps * p.mix[i] / total;
        let bps = class_bps / per_class[i] as f64;
        let size = match proto {
            Proto::Tcp => p.tcp_size[family.index()],
            Proto::Udp => p.udp_size[family.index()],
        };
        let bits_per_msg = 8.0 * message_bytes(proto, family, size).counted(p.counting) as f64;
        for _ in 0..per_class[i] {
            out.push(ProfileFlow {
                proto,
                family,
                size,
                rate: bps / bits_per_msg,
                bps,
            });
        }
    }
    out
}

/// The flows of a profile as [`crate::share`] deals them: numbered from 1 in [`flows`] order.
pub fn source_flows(p: &Profile) -> Vec<crate::share::SourceFlow> {
    flows(p)
        .iter()
        .enumerate()
        .map(|(k, f)| crate::share::SourceFlow {
            flow: k as u32 + 1,
            proto: f.proto,
            family: f.family,
        })
        .collect()
}

/// The script a profile stands for. `duration_s` overrides the profile's own.
pub fn to_script(p: &Profile, duration_s: Option<f64>) -> Result<Script> {
    to_script_of(p, duration_s, |_| true)
}

/// The script of the profile's flows that `keep` picks by number (see [`source_flows`]),
/// each at the rate it has in the whole profile and under its number there. Only the
/// families of the flows kept need destinations; a family's destinations are taken in
/// turn by its flows kept.
pub fn to_script_of(
    p: &Profile,
    duration_s: Option<f64>,
    keep: impl Fn(u32) -> bool,
) -> Result<Script> {
    let duration = duration_s.or(p.duration_s).ok_or_else(|| {
        Failure::usage("a profile needs a duration: set duration = S in it or pass --duration S")
    })?;
    let end_ns = (duration * 1e9).round() as u64;
    let mut events = Vec::new();
    let mut next_dst = [0usize; 2];
    for (k, f) in flows(p).into_iter().enumerate() {
        let flow = k as u32 + 1;
        if !keep(flow) {
            continue;
        }
        let dsts = &p.destinations[f.family.index()];
        if dsts.is_empty() {
            let flag = if f.family == Family::V4 {
                "--dst4"
            } else {
                "--dst6"
            };
            return Err(Failure::usage(format!(
                "the mix has {} flows but no {} destination: pass {flag} ADDR/PORT",
                class_key(f.proto, f.family),
                f.family.label()
            )));
        }
        // A script's PERIODIC/POISSON rate is bounded; a profile's must be too.
        if f.rate > crate::script::MAX_RATE {
            return Err(Failure::usage(format!(
                "each {} flow would send {} messages/s, more than the {:.0} a flow may: lower the rate, or give more flows or larger messages",
                class_key(f.proto, f.family),
                crate::numbers::readable(f.rate.round()),
                crate::script::MAX_RATE
            )));
        }
        // And the lowest, as a script's: "0.001bit" over ten flows of 1,460 B was taken, one
        // message per flow at the start and none after for four years.
        if f.rate < crate::script::MIN_RATE {
            return Err(Failure::usage(format!(
                "each {} flow would send one message every {} s, longer than the {:.0} s a flow may wait: raise the rate, or give fewer flows or smaller messages",
                class_key(f.proto, f.family),
                crate::numbers::readable((1.0 / f.rate).round()),
                1.0 / crate::script::MIN_RATE
            )));
        }
        let dst = dsts[next_dst[f.family.index()] % dsts.len()];
        next_dst[f.family.index()] += 1;
        let pattern = if p.poisson {
            Pattern::Poisson {
                rate: f.rate,
                size: f.size,
            }
        } else {
            Pattern::Periodic {
                rate: f.rate,
                size: f.size,
            }
        };
        let spec = FlowSpec {
            proto: f.proto,
            dst,
            pattern,
            src_port: None,
            count: None,
            tos: None,
            ttl: None,
            txbuffer: None,
        };
        events.push(Event {
            at_ns: 0,
            line: 0,
            flow,
            action: Action::On(spec),
        });
        events.push(Event {
            at_ns: end_ns,
            line: 0,
            flow,
            action: Action::Off,
        });
    }
    events.sort_by_key(|e| e.at_ns);
    Ok(Script {
        globals: Default::default(),
        events,
    })
}

#[cfg(test)]
#[path = "profile_tests.rs"]
mod tests;
