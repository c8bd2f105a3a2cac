//! A sender's share of a source's flows: `--family 4|6` keeps one family's flows, and
//! `--part K/N` deals those flows to N senders, so that several hosts together send one
//! preset, profile or script, each flow from exactly one of them at its full rate.
//!
//! Dealing: the (selected) TCP flows first, then the UDP flows, each in the source's flow
//! order (a profile's [`crate::profile::CLASSES`] order; a script's flow numbers), are
//! dealt in turn to parts 1, 2, … N, 1, 2, …, the turn going on from the last TCP flow
//! into the UDP ones. So every part gets as many TCP flows as another or one more, and as
//! many flows in all or one more; the UDP flows, few and slow in the presets, go first to
//! the parts the TCP flows left short. C1B `--family 4` (4 TCP, 1 UDP) in two parts is
//! TCP, TCP, UDP and TCP, TCP. Flows keep their numbers (a script's ids, a profile's
//! place in the whole profile), so logs of several senders name each flow as the whole
//! source does. Pure: no I/O.

use crate::rate::Proto;
use crate::script::{Action, Script};
use dualbench_common::{Failure, Family, Result};
use std::fmt;

/// `--part K/N`: part K of N, 1 ≤ K ≤ N.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Part {
    pub k: u32,
    pub n: u32,
}

/// Most senders one source may be dealt to.
pub const MAX_PARTS: u32 = 10_000;

impl Part {
    /// `"1/2"`; the reason in words otherwise, for clap to put after the value.
    pub fn parse(text: &str) -> std::result::Result<Part, String> {
        let how = "give K/N, this sender's part K of N senders (1 <= K <= N), e.g. 1/2";
        let (k, n) = text
            .split_once('/')
            .ok_or_else(|| format!("no '/' in it: {how}"))?;
        let number = |s: &str, what: &str| {
            s.trim()
                .parse::<u32>()
                .map_err(|_| format!("{what} '{s}' is not a whole number: {how}"))
        };
        let (k, n) = (number(k, "K")?, number(n, "N")?);
        if n == 0 || n > MAX_PARTS {
            return Err(format!("N = {n} senders: N must be 1..={MAX_PARTS}; {how}"));
        }
        if k == 0 || k > n {
            return Err(format!(
                "K = {k} is not one of the parts 1..={n} (they are numbered from 1): {how}"
            ));
        }
        Ok(Part { k, n })
    }
}

impl fmt::Display for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.k, self.n)
    }
}

/// `--family`: `4` or `6` (also `ipv4`, `ipv6`, any case).
pub fn parse_family(text: &str) -> std::result::Result<Family, String> {
    match text.to_ascii_lowercase().as_str() {
        "4" | "ipv4" | "v4" => Ok(Family::V4),
        "6" | "ipv6" | "v6" => Ok(Family::V6),
        _ => Err("give 4 (the IPv4 flows) or 6 (the IPv6 flows)".into()),
    }
}

/// What this sender sends of its source.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Share {
    pub family: Option<Family>,
    pub part: Option<Part>,
}

impl Share {
    pub fn is_whole(&self) -> bool {
        self.family.is_none() && self.part.is_none()
    }
}

/// One flow of a source, as dealing sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SourceFlow {
    pub flow: u32,
    pub proto: Proto,
    pub family: Family,
}

/// The flows a share picked.
#[derive(Debug, Clone, PartialEq)]
pub struct Dealt {
    /// Their numbers, in the source's order.
    pub flows: Vec<u32>,
    /// How many flows the family has (the whole source's without `--family`).
    pub selected: usize,
    /// How many flows the whole source has.
    pub total: usize,
}

impl Dealt {
    pub fn has(&self, flow: u32) -> bool {
        self.flows.contains(&flow)
    }
}

/// Deal `flows` (in the source's order) for `share`; `source` names the source in the
/// refusals: a family with no flow, and a part that would get none (a sender meant to
/// send that sent nothing would leave its level short without a word; MGEN and dualbench
/// refuse a script with no flow the same way).
pub fn deal(flows: &[SourceFlow], share: &Share, source: &str) -> Result<Dealt> {
    let selected: Vec<&SourceFlow> = flows
        .iter()
        .filter(|f| share.family.is_none_or(|fam| f.family == fam))
        .collect();
    if let (Some(family), true) = (share.family, selected.is_empty()) {
        let other = match family {
            Family::V4 => "--family 6",
            Family::V6 => "--family 4",
        };
        return Err(Failure::usage(format!(
            "--family {}: {source} has no {} flow: leave --family out, or give {other}",
            family_digit(family),
            family.label()
        )));
    }
    let Some(part) = share.part else {
        return Ok(Dealt {
            flows: selected.iter().map(|f| f.flow).collect(),
            selected: selected.len(),
            total: flows.len(),
        });
    };
    let deck = selected
        .iter()
        .filter(|f| f.proto == Proto::Tcp)
        .chain(selected.iter().filter(|f| f.proto == Proto::Udp));
    let mine: Vec<u32> = deck
        .enumerate()
        .filter(|(i, _)| *i as u32 % part.n == part.k - 1)
        .map(|(_, f)| f.flow)
        .collect();
    if mine.is_empty() {
        let what = match share.family {
            Some(f) => format!("{} {} flows", selected.len(), f.label()),
            None => count_flows(selected.len()),
        };
        return Err(Failure::usage(format!(
            "--part {part}: {source} has {what}, so part {part} gets none: split them over at most {} senders (--part K/{})",
            selected.len(),
            selected.len()
        )));
    }
    Ok(Dealt {
        flows: selected
            .iter()
            .map(|f| f.flow)
            .filter(|f| mine.contains(f))
            .collect(),
        selected: selected.len(),
        total: flows.len(),
    })
}

fn count_flows(n: usize) -> String {
    match n {
        1 => "1 flow".into(),
        n => format!("{n} flows"),
    }
}

/// `4` or `6`, as `--family` takes it.
pub fn family_digit(family: Family) -> char {
    match family {
        Family::V4 => '4',
        Family::V6 => '6',
    }
}

/// A script's flows, by flow number: each with the protocol and family of its first `ON`.
pub fn script_flows(script: &Script) -> Vec<SourceFlow> {
    let mut out: Vec<SourceFlow> = Vec::new();
    for e in &script.events {
        if let Action::On(spec) = &e.action {
            if out.iter().all(|f| f.flow != e.flow) {
                out.push(SourceFlow {
                    flow: e.flow,
                    proto: spec.proto,
                    family: Family::of_addr(&spec.dst),
                });
            }
        }
    }
    out.sort_by_key(|f| f.flow);
    out
}

/// The script with only the events of the dealt flows (globals kept).
pub fn keep(mut script: Script, dealt: &Dealt) -> Script {
    script.events.retain(|e| dealt.has(e.flow));
    script
}

/// The `--dry-run` heading of a share, e.g. `# C1B --family 4 --part 1/2: flows 1 3 9, 3
/// of the 5 IPv4 flows (the whole has 10)`.
pub fn heading(share: &Share, dealt: &Dealt, source: &str) -> String {
    let mut flags = String::new();
    if let Some(f) = share.family {
        flags.push_str(&format!(" --family {}", family_digit(f)));
    }
    if let Some(p) = share.part {
        flags.push_str(&format!(" --part {p}"));
    }
    let ids: Vec<String> = dealt.flows.iter().map(u32::to_string).collect();
    let of = match share.family {
        Some(f) => format!("{} {} flows", dealt.selected, f.label()),
        None => count_flows(dealt.selected),
    };
    format!(
        "# {source}{flags}: flows {}, {} of the {of} (the whole has {})\n",
        ids.join(" "),
        dealt.flows.len(),
        dealt.total
    )
}

#[cfg(test)]
#[path = "share_tests.rs"]
mod tests;
