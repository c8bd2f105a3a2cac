//! The closed sets a plan's axes draw from (servers, handlers, placements, family selectors)
//! and the checks that tie axes together (a handler the server cannot run, a testbed axis
//! without a testbed, a table laid out on an axis the plan does not have).

use super::{Axes, Load, Locator, RawAxes, ReportSpec, Testbed};
use dualbench_common::{Family, Result};
use dualbench_load::config::{MAX_CONCURRENCY, MAX_RATE, MIN_RATE};
use toml::Spanned;

/// A web server dualbench can provision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ServerKind {
    Nginx,
    ApachePrefork,
    ApacheWorker,
    ApacheEvent,
    Lighttpd,
    Dualbench,
}

impl ServerKind {
    pub const ALL: [ServerKind; 6] = [
        ServerKind::Nginx,
        ServerKind::ApachePrefork,
        ServerKind::ApacheWorker,
        ServerKind::ApacheEvent,
        ServerKind::Lighttpd,
        ServerKind::Dualbench,
    ];

    pub fn key(self) -> &'static str {
        match self {
            ServerKind::Nginx => "nginx",
            ServerKind::ApachePrefork => "apache-prefork",
            ServerKind::ApacheWorker => "apache-worker",
            ServerKind::ApacheEvent => "apache-event",
            ServerKind::Lighttpd => "lighttpd",
            ServerKind::Dualbench => "dualbench",
        }
    }

    /// The name the server's processes run under (`comm`, as `ps -e` shows it).
    pub fn process_name(self) -> &'static str {
        match self {
            ServerKind::Nginx => "nginx",
            ServerKind::Lighttpd => "lighttpd",
            ServerKind::Dualbench => "dualbench",
            _ => "apache2",
        }
    }

    /// The Apache MPM module name, for the three Apache kinds.
    pub fn mpm(self) -> Option<&'static str> {
        match self {
            ServerKind::ApachePrefork => Some("prefork"),
            ServerKind::ApacheWorker => Some("worker"),
            ServerKind::ApacheEvent => Some("event"),
            _ => None,
        }
    }

    /// Whether this server can run `handler`.
    pub fn supports(self, handler: Handler) -> bool {
        match handler {
            Handler::CCgi | Handler::PerlCgi => {
                !matches!(self, ServerKind::Nginx | ServerKind::Dualbench)
            }
            Handler::InServer => self != ServerKind::Lighttpd,
            _ => true,
        }
    }
}

/// What a run requests: a static file of a given size, or a dynamic handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Handler {
    /// The 45-byte HTML page of S1 and S2.
    Static,
    /// The 4 KB file of S4.
    Static4k,
    /// The 320 KB file of S3.
    Static320k,
    /// A compiled C CGI program answering the 45-byte page.
    CCgi,
    /// A Perl CGI script answering the 45-byte page.
    PerlCgi,
    /// A handler inside the server process (mod_perl, or the closest the server has).
    InServer,
}

impl Handler {
    pub const ALL: [Handler; 6] = [
        Handler::Static,
        Handler::Static4k,
        Handler::Static320k,
        Handler::CCgi,
        Handler::PerlCgi,
        Handler::InServer,
    ];

    pub fn key(self) -> &'static str {
        match self {
            Handler::Static => "static",
            Handler::Static4k => "static-4k",
            Handler::Static320k => "static-320k",
            Handler::CCgi => "c-cgi",
            Handler::PerlCgi => "perl-cgi",
            Handler::InServer => "in-server",
        }
    }
}

/// Where server and client run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Placement {
    /// Both on this host, over 127.0.0.1 and ::1.
    Loopback,
    /// Server and client in the plan's testbed hosts.
    Testbed,
}

impl Placement {
    pub fn key(self) -> &'static str {
        match self {
            Placement::Loopback => "loopback",
            Placement::Testbed => "testbed",
        }
    }
}

/// Which families a run uses: one, both (1:1), or both at an exact v6:v4 ratio.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Selector {
    Family(Family),
    Ratio { v6: u32, v4: u32 },
}

impl Selector {
    /// "ipv4", "ipv6", or "V6:V4" such as "4:1".
    pub fn key(&self) -> String {
        match self {
            Selector::Family(f) => f.key().to_string(),
            Selector::Ratio { v6, v4 } => format!("{v6}:{v4}"),
        }
    }

    /// The families this selector sends requests to.
    pub fn families(&self) -> Vec<Family> {
        match *self {
            Selector::Family(f) => vec![f],
            Selector::Ratio { v6, v4 } => {
                let mut out = Vec::new();
                if v4 > 0 {
                    out.push(Family::V4);
                }
                if v6 > 0 {
                    out.push(Family::V6);
                }
                out
            }
        }
    }
}

fn parse_family(s: &str) -> Option<Selector> {
    match s {
        "ipv4" | "4" => Some(Selector::Family(Family::V4)),
        "ipv6" | "6" => Some(Selector::Family(Family::V6)),
        "both" => Some(Selector::Ratio { v6: 1, v4: 1 }),
        _ => None,
    }
}

fn parse_ratio(s: &str) -> Option<Selector> {
    let (a, b) = s.split_once(':')?;
    let (v6, v4) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
    (v6 as u64 + v4 as u64 > 0).then_some(Selector::Ratio { v6, v4 })
}

/// The value of `all` whose key is `s`, or an error naming every allowed key.
fn one_of<T: Copy>(
    all: &[T],
    key: impl Fn(T) -> &'static str,
    what: &str,
    s: &str,
) -> Result<T, String> {
    all.iter().copied().find(|&v| key(v) == s).ok_or_else(|| {
        let names: Vec<&str> = all.iter().map(|&v| key(v)).collect();
        format!("unknown {what} {s:?} (one of {})", names.join(", "))
    })
}

/// Convert an axis of strings with `conv`, or take `default` when the axis is absent. Two
/// spellings of one value (`"4"` and `"ipv4"`, `"4:1"` and `"4: 1"`) are the same value:
/// they would make the same points, whose runs share their ids.
fn axis<T: PartialEq>(
    raw: Option<Spanned<Vec<String>>>,
    key: &str,
    default: Vec<T>,
    at: &Locator,
    conv: impl Fn(&str) -> std::result::Result<T, String>,
) -> Result<Vec<T>> {
    let Some(raw) = raw else { return Ok(default) };
    let offset = raw.span().start;
    let values = raw.into_inner();
    if values.is_empty() {
        return Err(at.error(offset, key, "an axis needs at least one value"));
    }
    let mut out: Vec<T> = Vec::with_capacity(values.len());
    for v in &values {
        let value = conv(v).map_err(|m| at.error(offset, key, &m))?;
        if let Some(i) = out.iter().position(|seen| *seen == value) {
            let message = if values[i] == *v {
                format!("{v:?} appears twice")
            } else {
                format!("{:?} and {v:?} are the same value", values[i])
            };
            return Err(at.error(offset, key, &message));
        }
        out.push(value);
    }
    Ok(out)
}

/// An axis of numbers above 0, each within `range`: what `dualbench run`'s `flag` takes.
fn numbers<T: Copy + PartialOrd + Default + std::fmt::Display>(
    raw: Option<Spanned<Vec<T>>>,
    key: &str,
    default: Vec<T>,
    at: &Locator,
    range: std::ops::RangeInclusive<T>,
    flag: &str,
) -> Result<Vec<T>> {
    let Some(raw) = raw else { return Ok(default) };
    let offset = raw.span().start;
    let values = raw.into_inner();
    if values.is_empty() {
        return Err(at.error(offset, key, "an axis needs at least one value"));
    }
    if values.iter().any(|v| *v <= T::default()) {
        return Err(at.error(offset, key, "values must be greater than 0"));
    }
    if let Some(v) = values.iter().find(|v| !range.contains(v)) {
        let message = format!(
            "{} is outside {} to {}, what `dualbench run {flag}` takes",
            super::shown(v),
            range.start(),
            range.end()
        );
        return Err(at.error(offset, key, &message));
    }
    // The same value twice makes the same points twice, whose runs share their ids.
    if let Some(v) = values
        .iter()
        .enumerate()
        .find_map(|(i, v)| values[..i].contains(v).then_some(v))
    {
        return Err(at.error(offset, key, &format!("{v} appears twice")));
    }
    Ok(values)
}

pub(super) fn axes(raw: RawAxes, load: &Load, at: &Locator) -> Result<Axes> {
    let server = axis(
        raw.server,
        "axes.server",
        vec![ServerKind::Dualbench],
        at,
        |s| one_of(&ServerKind::ALL, ServerKind::key, "server", s),
    )?;
    let handler = axis(
        raw.handler,
        "axes.handler",
        vec![Handler::Static],
        at,
        |s| one_of(&Handler::ALL, Handler::key, "handler", s),
    )?;
    let placement = axis(
        raw.placement,
        "axes.placement",
        vec![Placement::Loopback],
        at,
        |s| match s {
            "loopback" => Ok(Placement::Loopback),
            "testbed" => Ok(Placement::Testbed),
            _ => Err(format!("unknown placement {s:?} (loopback or testbed)")),
        },
    )?;
    let selector = selectors(raw.family, raw.ratio, at)?;
    let concurrency = numbers(
        raw.concurrency,
        "axes.concurrency",
        vec![load.concurrency],
        at,
        1..=MAX_CONCURRENCY as u64,
        "-c",
    )?;
    let requests = numbers(
        raw.requests,
        "axes.requests",
        vec![load.requests],
        at,
        1..=u64::MAX,
        "-n",
    )?;
    let rate = numbers(
        raw.rate,
        "axes.rate",
        vec![],
        at,
        MIN_RATE..=MAX_RATE,
        "--rate",
    )?
    .into_iter()
    .map(Some)
    .collect::<Vec<_>>();
    let rate = if rate.is_empty() { vec![None] } else { rate };
    let congestion = axis(
        raw.congestion,
        "axes.congestion",
        vec!["none".into()],
        at,
        label,
    )?;
    let link = axis(raw.link, "axes.link", vec!["none".into()], at, label)?;
    Ok(Axes {
        server,
        handler,
        placement,
        selector,
        concurrency,
        requests,
        rate,
        congestion,
        link,
    })
}

fn label(s: &str) -> std::result::Result<String, String> {
    if s.is_empty() || s.contains(['\n', '{', '}']) {
        Err(format!("{s:?} is not a usable value"))
    } else {
        Ok(s.to_string())
    }
}

fn selectors(
    family: Option<Spanned<Vec<String>>>,
    ratio: Option<Spanned<Vec<String>>>,
    at: &Locator,
) -> Result<Vec<Selector>> {
    if let (Some(_), Some(r)) = (&family, &ratio) {
        return Err(at.error(
            r.span().start,
            "axes.ratio",
            "give either axes.family or axes.ratio, not both",
        ));
    }
    if ratio.is_some() {
        return axis(ratio, "axes.ratio", vec![], at, |s| {
            parse_ratio(s).ok_or_else(|| format!("{s:?} is not a ratio V6:V4 such as \"4:1\""))
        });
    }
    let default = vec![Selector::Family(Family::V4), Selector::Family(Family::V6)];
    axis(family, "axes.family", default, at, |s| {
        parse_family(s).ok_or_else(|| format!("unknown family {s:?} (ipv4, ipv6 or both)"))
    })
}

/// The axes a table can be laid out on.
/// `family` is the family of a summary (IPv4 or IPv6 within a run); `ratio` is the run's
/// family selector ("ipv4", "ipv6", "4:1"...).
pub const AXIS_NAMES: [&str; 10] = [
    "server",
    "handler",
    "placement",
    "ratio",
    "family",
    "concurrency",
    "requests",
    "rate",
    "congestion",
    "link",
];

/// The latency phases a run writes histograms for (docs/json-schema.md, "Phases").
pub const PHASES: [&str; 7] = [
    "connect",
    "ttfb",
    "processing",
    "total",
    "service",
    "transfer",
    "lifetime",
];

pub(super) fn check_report(report: &ReportSpec, _axes: &Axes, at: &Locator) -> Result<()> {
    let named = report
        .rows
        .iter()
        .map(|r| ("report.rows", r))
        .chain(report.columns.iter().map(|c| ("report.columns", c)));
    for (key, name) in named {
        if !AXIS_NAMES.contains(&name.as_str()) {
            let message = format!("unknown axis {name:?} (one of {})", AXIS_NAMES.join(", "));
            return Err(at.error_at(key, &message));
        }
    }
    // An axis named twice would give the table its column twice (`server | server`).
    if let Some(r) = first_repeated(&report.rows) {
        return Err(at.error_at("report.rows", &format!("{r:?} appears twice")));
    }
    if let Some(c) = report.columns.as_ref().filter(|c| report.rows.contains(c)) {
        let message =
            format!("{c:?} is also in report.rows; an axis makes rows or columns, not both");
        return Err(at.error_at("report.columns", &message));
    }
    // No metric, no table: the report's Results would be a heading over nothing.
    if report.metrics.is_empty() {
        let message = format!(
            "no metric: name at least one (one of {}), or leave the key out for requests/s and mean total time",
            crate::report::metrics::names()
        );
        return Err(at.error_at("report.metrics", &message));
    }
    if let Some(m) = first_repeated(&report.metrics) {
        return Err(at.error_at("report.metrics", &format!("{m:?} appears twice")));
    }
    for m in &report.metrics {
        if crate::report::metrics::find(m).is_none() {
            let message = format!(
                "unknown metric {m:?} (one of {})",
                crate::report::metrics::names()
            );
            return Err(at.error_at("report.metrics", &message));
        }
    }
    if !PHASES.contains(&report.phase.as_str()) {
        let message = format!(
            "unknown latency phase {:?} (one of {})",
            report.phase,
            PHASES.join(", ")
        );
        return Err(at.error_at("report.phase", &message));
    }
    Ok(())
}

/// The first value that an earlier one repeats.
fn first_repeated(values: &[String]) -> Option<&String> {
    values
        .iter()
        .enumerate()
        .find_map(|(i, v)| values[..i].contains(v).then_some(v))
}

pub(super) fn check_combinations(
    axes: &Axes,
    testbed: Option<&Testbed>,
    at: &Locator,
) -> Result<()> {
    for &s in &axes.server {
        for &h in &axes.handler {
            if !s.supports(h) {
                let message = format!(
                    "server {} cannot run handler {}; drop one of them",
                    s.key(),
                    h.key()
                );
                return Err(at.error_at("axes.handler", &message));
            }
        }
    }
    let needs_testbed = if axes.placement.contains(&Placement::Testbed) {
        Some("axes.placement")
    } else if axes.congestion.iter().any(|v| v != "none") {
        Some("axes.congestion")
    } else if axes.link.iter().any(|v| v != "none") {
        Some("axes.link")
    } else {
        None
    };
    if let (Some(key), None) = (needs_testbed, testbed) {
        let message = "testbed placement, congestion or link settings need a [testbed] section";
        return Err(at.error_at(key, message));
    }
    if let Some(t) = testbed {
        let lists = [
            ("testbed.setup", &t.setup),
            ("testbed.background", &t.background),
            ("testbed.services", &t.services),
        ];
        for (key, commands) in lists {
            if commands.iter().any(|c| c.is_empty()) {
                let message = "a command is empty: give the program and its arguments";
                return Err(at.error_at(key, message));
            }
        }
        check_server_addresses(t, at)?;
        if !(t.settle_s >= 0.0 && t.settle_s <= 3600.0) {
            let message = "give settle_s in seconds, from 0 to 3600";
            return Err(at.error_at("testbed.settle_s", message));
        }
    }
    Ok(())
}

/// `server_ipv4` and `server_ipv6` are addresses of their family (the runs' URLs and the
/// server's listen addresses are made from them).
fn check_server_addresses(t: &Testbed, at: &Locator) -> Result<()> {
    let keys = [
        (
            "testbed.server_ipv4",
            &t.server_ipv4,
            Family::V4,
            "198.18.2.2",
        ),
        (
            "testbed.server_ipv6",
            &t.server_ipv6,
            Family::V6,
            "2001:2:0:2::2",
        ),
    ];
    for (key, value, family, example) in keys {
        let wanted = family.label();
        let message = match value.parse::<std::net::IpAddr>() {
            // An IPv4-mapped IPv6 address is IPv4 traffic: not the server's IPv6 address.
            Ok(ip) if ip.is_ipv4() == (family == Family::V4) && Family::of(&ip) == family => {
                continue
            }
            Ok(_) => format!("{value:?} is not an {wanted} address; give the server host's {wanted} address, e.g. \"{example}\""),
            Err(_) => format!("{value:?} is not an IP address; give the server host's {wanted} address, e.g. \"{example}\""),
        };
        return Err(at.error_at(key, &message));
    }
    Ok(())
}
