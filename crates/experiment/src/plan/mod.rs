//! Experiment plans: a TOML file read into checked values. Unknown keys, wrong types and
//! values outside the known sets are errors naming the file, line and key. The cross
//! product of the axes into an ordered list of runs lives in [`expand`].

pub mod expand;
mod extra_args;
mod hosts;
mod keys;
mod spec;

pub use expand::{expand, points, round_order, varying_axes, Point, RunSpec};
pub use spec::{Handler, Placement, Selector, ServerKind};

use dualbench_common::{plural, Failure, Result};
use dualbench_load::config::{
    MAX_CONCURRENCY, MAX_TIMEOUT_S, MAX_TIME_LIMIT_S, MIN_TIMEOUT_S, MIN_TIME_LIMIT_S,
};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// A checked plan, ready to expand.
#[derive(Debug, Clone)]
pub struct Plan {
    pub name: String,
    pub title: String,
    pub description: String,
    pub warmup: u32,
    pub repeats: u32,
    pub load: Load,
    pub axes: Axes,
    pub testbed: Option<Testbed>,
    pub report: ReportSpec,
    /// The plan's text as read, stored with the experiment.
    pub text: String,
    /// Where the plan was read from (relative paths in it are relative to its folder).
    pub path: PathBuf,
}

/// Settings given to every `dualbench run` unless an axis varies them.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub struct Load {
    #[serde(default = "default_requests")]
    pub requests: u64,
    #[serde(default = "default_concurrency")]
    pub concurrency: u64,
    #[serde(default)]
    pub keepalive: bool,
    /// Socket timeout in seconds (`-s`).
    #[serde(default)]
    pub timeout_s: Option<f64>,
    /// Time limit per run in seconds (`-t`).
    #[serde(default)]
    pub time_limit_s: Option<f64>,
    /// Open loop: "constant" or "poisson" when a rate is given.
    #[serde(default)]
    pub arrival: Option<String>,
    /// Record the server's processes with `--monitor PID`.
    #[serde(default)]
    pub monitor: bool,
    /// Capture on this interface during each counted run, e.g. "lo": the client host's
    /// (`dualbench run --capture IFACE`) or the server host's (see `capture_host`).
    #[serde(default)]
    pub capture: Option<String>,
    /// Which host captures: the client, inside `dualbench run` (the default), or the
    /// testbed's server host, with a `dualbench capture` around each counted run.
    #[serde(default)]
    pub capture_host: CaptureHost,
    /// Further flags passed to `dualbench run` as they are.
    #[serde(default)]
    pub extra_args: Vec<String>,
}

impl Load {
    /// The flags of `dualbench run` that this load gives a run of `requests` at
    /// `concurrency` (and `rate`, open loop): `--format json -q -n -c`, then `-k`, `-s`,
    /// `-t`, `--rate`/`--arrival`, one `--monitor` per pid and `--capture` as the load
    /// asks. The runner's command line and the plan's check of `extra_args` both start here.
    pub fn run_flags(
        &self,
        requests: u64,
        concurrency: u64,
        rate: Option<f64>,
        monitor_pids: &[String],
    ) -> Vec<String> {
        let mut a: Vec<String> = vec!["--format".into(), "json".into(), "-q".into()];
        a.extend([
            "-n".into(),
            requests.to_string(),
            "-c".into(),
            concurrency.to_string(),
        ]);
        if self.keepalive {
            a.push("-k".into());
        }
        if let Some(s) = self.timeout_s {
            a.extend(["-s".into(), s.to_string()]);
        }
        if let Some(t) = self.time_limit_s {
            a.extend(["-t".into(), t.to_string()]);
        }
        if let Some(r) = rate {
            a.extend(["--rate".into(), r.to_string()]);
            if let Some(arrival) = &self.arrival {
                a.extend(["--arrival".into(), arrival.clone()]);
            }
        }
        if self.monitor {
            for pid in monitor_pids {
                a.extend(["--monitor".into(), pid.clone()]);
            }
        }
        if let (Some(iface), CaptureHost::Client) = (&self.capture, self.capture_host) {
            a.extend(["--capture".into(), iface.clone()]);
        }
        a
    }
}

/// The host whose interface `load.capture` names and whose traffic is captured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CaptureHost {
    /// The host that runs `dualbench run` (`--capture IFACE`).
    #[default]
    Client,
    /// The testbed's server host (`dualbench capture` there, S3's vantage point).
    Server,
}

fn default_requests() -> u64 {
    1000
}
fn default_concurrency() -> u64 {
    1
}

/// The values each axis takes (an axis left out takes one default value).
#[derive(Debug, Clone)]
pub struct Axes {
    pub server: Vec<ServerKind>,
    pub handler: Vec<Handler>,
    pub placement: Vec<Placement>,
    pub selector: Vec<Selector>,
    pub concurrency: Vec<u64>,
    pub requests: Vec<u64>,
    pub rate: Vec<Option<f64>>,
    pub congestion: Vec<String>,
    pub link: Vec<String>,
}

/// Where the testbed comes from and how a point's congestion and link settings are made.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub struct Testbed {
    /// Topology file, relative to the plan's folder.
    pub topology: PathBuf,
    /// Testbed name (`--name` of `dualbench testbed`); default: the topology file's stem.
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default = "default_client")]
    pub client: String,
    #[serde(default = "default_server")]
    pub server: String,
    /// The server host's addresses as clients reach them.
    pub server_ipv4: String,
    pub server_ipv6: String,
    /// Bring the testbed up before the first testbed run and down after the last.
    #[serde(default = "yes")]
    pub manage: bool,
    /// Commands run (to completion) before each point; `{link}` and `{congestion}` are replaced.
    #[serde(default)]
    pub setup: Vec<Vec<String>>,
    /// Commands started when the testbed is up and stopped (SIGTERM by pid) before it goes
    /// down, e.g. traffic sinks.
    #[serde(default)]
    pub services: Vec<Vec<String>>,
    /// Commands started before each point whose congestion is not "none" and stopped
    /// (SIGTERM by pid) after it, e.g. traffic senders; `{congestion}` and `{link}` replaced.
    #[serde(default)]
    pub background: Vec<Vec<String>>,
    /// Seconds to let background traffic reach its rate before the point's first run.
    #[serde(default)]
    pub settle_s: f64,
    /// The topology file's text as read when the plan was loaded (it shapes every testbed
    /// run, so it is part of their ids); `None` when it could not be read.
    #[serde(skip)]
    pub topology_text: Option<String>,
}

impl Testbed {
    /// The name the testbed is brought up, used and taken down under.
    pub fn testbed_name(&self) -> String {
        self.name.clone().unwrap_or_else(|| {
            self.topology
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "testbed".into())
        })
    }
}

fn default_client() -> String {
    "client".into()
}
fn default_server() -> String {
    "server".into()
}
fn yes() -> bool {
    true
}

/// How the report lays out the study's table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub struct ReportSpec {
    /// Axes whose values make the table's rows.
    #[serde(default)]
    pub rows: Vec<String>,
    /// The axis whose values make the table's columns.
    #[serde(default)]
    pub columns: Option<String>,
    /// Figures shown, one table each: see [`crate::report::metrics`].
    #[serde(default = "default_metrics")]
    pub metrics: Vec<String>,
    /// Latency phase for the percentile plots and CDFs.
    #[serde(default = "default_phase")]
    pub phase: String,
    /// Free text printed under the title (what the study reported, what to compare).
    #[serde(default)]
    pub notes: String,
}

fn default_metrics() -> Vec<String> {
    vec!["rps".into(), "total_ms".into()]
}
fn default_phase() -> String {
    "total".into()
}

impl Default for ReportSpec {
    fn default() -> Self {
        ReportSpec {
            rows: Vec::new(),
            columns: None,
            metrics: default_metrics(),
            phase: default_phase(),
            notes: String::new(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
struct RawPlan {
    experiment: RawExperiment,
    #[serde(default)]
    load: Option<Load>,
    #[serde(default)]
    axes: RawAxes,
    #[serde(default)]
    testbed: Option<Testbed>,
    #[serde(default)]
    report: Option<ReportSpec>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
struct RawExperiment {
    name: Spanned<String>,
    #[serde(default)]
    title: String,
    #[serde(default)]
    description: String,
    #[serde(default = "zero")]
    warmup: Spanned<u32>,
    #[serde(default = "one")]
    repeats: Spanned<u32>,
}

fn one() -> Spanned<u32> {
    Spanned::new(0..0, 1)
}

fn zero() -> Spanned<u32> {
    Spanned::new(0..0, 0)
}

type Axis<T> = Option<Spanned<Vec<T>>>;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
struct RawAxes {
    server: Axis<String>,
    handler: Axis<String>,
    placement: Axis<String>,
    family: Axis<String>,
    ratio: Axis<String>,
    concurrency: Axis<u64>,
    requests: Axis<u64>,
    rate: Axis<f64>,
    congestion: Axis<String>,
    link: Axis<String>,
}

/// Read and check a plan file, and read the testbed topology it names (relative to the
/// plan's folder): a testbed the plan brings up must be readable and valid before anything
/// runs, and every host the plan names must be one of its hosts or routers.
pub fn load(path: &Path) -> Result<Plan> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::usage(format!("cannot read plan {}: {e}", path.display())))?;
    let mut plan = parse(&text, path)?;
    let at = Locator::new(&text, path);
    check_name_is_no_id(&plan.name, &at)?;
    extra_args::check_runs(&plan.load, &plan.axes, &at)?;
    let uses_testbed = plan.axes.placement.contains(&Placement::Testbed);
    check_for_running(&plan, uses_testbed, &at)?;
    let capture = plan
        .load
        .capture
        .clone()
        .map(|iface| (iface, plan.load.capture_host));
    if let Some(t) = plan.testbed.as_mut() {
        let file = path.parent().unwrap_or(Path::new(".")).join(&t.topology);
        match std::fs::read_to_string(&file) {
            Ok(topology) => {
                if uses_testbed {
                    let must = t.manage;
                    let file = file.display().to_string();
                    hosts::check(t, &topology, &file, &at, must, capture.as_ref())?;
                }
                t.topology_text = Some(topology);
            }
            Err(e) if t.manage && uses_testbed => {
                let message = if t.topology.as_os_str().is_empty() {
                    "empty: give the topology file's path relative to the plan's folder".to_string()
                } else {
                    format!(
                        "cannot read {} ({e}); give the topology's path relative to the plan's folder",
                        file.display()
                    )
                };
                return Err(at.error_at("testbed.topology", &message));
            }
            Err(_) => {}
        }
    }
    Ok(plan)
}

/// What only fails once the plan runs, refused as it is loaded to run (not when a stored
/// plan is read again for its report): a testbed name `dualbench testbed up` refuses (the
/// topology file's stem when `[testbed] name` is left out), a capture interface no
/// interface can be named, a NUL in a command (no program argument can hold one) and a
/// control character in a congestion or link label (which commands and reports show).
fn check_for_running(plan: &Plan, uses_testbed: bool, at: &Locator) -> Result<()> {
    if let Some(iface) = &plan.load.capture {
        if !is_interface_name(iface) {
            let message = format!(
                "{iface:?} cannot name an interface (1 to 15 characters, none of them '/', ':' or a space, not \".\" or \"..\"); give one such as \"lo\" or \"eth1\""
            );
            return Err(at.error_at("load.capture", &message));
        }
    }
    for (key, labels) in [
        ("axes.congestion", &plan.axes.congestion),
        ("axes.link", &plan.axes.link),
    ] {
        if let Some(l) = labels.iter().find(|l| l.chars().any(char::is_control)) {
            let message = format!(
                "{l:?} holds a control character; a label is put into commands and reports: use letters, digits and punctuation"
            );
            return Err(at.error_at(key, &message));
        }
    }
    let Some(t) = plan.testbed.as_ref().filter(|_| uses_testbed) else {
        return Ok(());
    };
    for (key, commands) in [
        ("testbed.setup", &t.setup),
        ("testbed.services", &t.services),
        ("testbed.background", &t.background),
    ] {
        if commands.iter().flatten().any(|a| a.contains('\0')) {
            let message = "a command holds a NUL character, which no program's argument can";
            return Err(at.error_at(key, message));
        }
    }
    if let Err(why) = dualbench_testbed::model::check_testbed_name(&t.testbed_name()) {
        return Err(match t.name {
            Some(_) => at.error_at("testbed.name", &why),
            None => at.error_at(
                "testbed.topology",
                &format!("{why}: the testbed is named after the topology file unless [testbed] name names it"),
            ),
        });
    }
    Ok(())
}

/// Whether `name` can name a network interface, as Linux checks it (`dev_valid_name`).
fn is_interface_name(name: &str) -> bool {
    (1..16).contains(&name.len())
        && name != "."
        && name != ".."
        && !name
            .chars()
            .any(|c| c == '/' || c == ':' || c.is_whitespace() || c.is_control())
}

/// Check a plan's text; `path` names it in errors and anchors its relative paths.
pub fn parse(text: &str, path: &Path) -> Result<Plan> {
    let at = Locator::new(text, path);
    let raw = read_raw(text, &at)?;
    let exp = raw.experiment;
    check_name(&exp.name, &at)?;
    if *exp.repeats.get_ref() == 0 {
        return Err(at.error(
            exp.repeats.span().start,
            "experiment.repeats",
            "must be at least 1",
        ));
    }
    let load = raw.load.unwrap_or_else(default_load);
    let axes = spec::axes(raw.axes, &load, &at)?;
    check_load(&load, &axes, &at)?;
    let report = raw.report.unwrap_or_default();
    spec::check_report(&report, &axes, &at)?;
    spec::check_combinations(&axes, raw.testbed.as_ref(), &at)?;
    check_size(&axes, &exp.repeats, &exp.warmup, &at)?;
    Ok(Plan {
        name: exp.name.into_inner(),
        title: exp.title,
        description: exp.description,
        warmup: exp.warmup.into_inner(),
        repeats: exp.repeats.into_inner(),
        load,
        axes,
        testbed: raw.testbed,
        report,
        text: text.to_string(),
        path: path.to_path_buf(),
    })
}

/// The plan's tables as toml reads them. toml's errors carry where (a span) but not which
/// key, so the reader is wrapped to keep the path to the value that failed: a wrong type
/// reads `p.toml:4: load.requests: invalid type: string "ten", expected u64`. An unknown
/// key names its table and the keys that table takes (see [`keys`]); a table written as
/// an array of tables (`[[load]]`) says so.
fn read_raw(text: &str, at: &Locator) -> Result<RawPlan> {
    serde_path_to_error::deserialize(toml::Deserializer::new(text)).map_err(|e| {
        let names = segment_names(e.path());
        let key = key_path(e.path());
        let e = e.into_inner();
        let start = e.span().map(|s| s.start);
        let line = start.map(|s| at.line(s)).unwrap_or(1);
        let file = at.path.display();
        if e.message().starts_with("unknown field") {
            if let Some((unknown, table)) = names.split_last() {
                let before = &text[..start.unwrap_or(0).min(text.len())];
                let written = keys::Written::from_prefix(before.rsplit('\n').next().unwrap_or(""));
                let message = keys::unknown(&table.join("."), unknown, written);
                return Failure::usage(format!("{file}:{line}: {message}"));
            }
        }
        if let Some(table) = array_of_tables(&key) {
            return Failure::usage(format!(
                "{file}:{line}: [[{table}]] is an array of tables; a plan takes one [{table}] table: write [{table}]"
            ));
        }
        let key = if key.is_empty() {
            at.key_on_line(line).unwrap_or_default()
        } else {
            key
        };
        // serde's words for TOML's kinds: a list is an array in TOML.
        let message = e
            .message()
            .trim()
            .replace("expected a sequence", "expected an array");
        if key.is_empty() {
            Failure::usage(format!("{file}:{line}: {message}"))
        } else {
            Failure::usage(format!("{file}:{line}: {key}: {message}"))
        }
    })
}

/// The plan's table `load` when `key` is a value in `[[load]]` (`load[0]…`): serde reads a
/// struct from an array too, field by field, and would say `load[0]: invalid type: map,
/// expected u64`.
fn array_of_tables(key: &str) -> Option<&'static str> {
    keys::TABLES.into_iter().find(|t| {
        key.strip_prefix(t)
            .is_some_and(|rest| rest.starts_with('['))
    })
}

/// The names of the tables and keys on a deserializer's path, each as written (a quoted
/// key with a dot in it stays one name).
fn segment_names(path: &serde_path_to_error::Path) -> Vec<String> {
    use serde_path_to_error::Segment;
    path.iter()
        .filter_map(|segment| match segment {
            Segment::Map { key } if !key.starts_with("$__serde_spanned_private") => {
                Some(key.clone())
            }
            _ => None,
        })
        .collect()
}

/// `axes.concurrency[1]` from a deserializer's path, leaving out the fields toml's
/// `Spanned` reads its value through.
fn key_path(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut key = String::new();
    for segment in path.iter() {
        match segment {
            Segment::Map { key: k } if k.starts_with("$__serde_spanned_private") => {}
            Segment::Map { key: k } | Segment::Enum { variant: k } => {
                if !key.is_empty() {
                    key.push('.');
                }
                key.push_str(k);
            }
            Segment::Seq { index } => key.push_str(&format!("[{index}]")),
            Segment::Unknown => {}
        }
    }
    key
}

fn default_load() -> Load {
    toml::from_str("").expect("every load key has a default")
}

/// The most counted runs a plan may have. Its runs are listed in memory before the first
/// one starts (about 400 bytes each); a million take more than a day at 10 runs a second.
pub const MAX_RUNS: u128 = 1_000_000;

/// The most warm-up rounds a plan may have. A warm-up round runs every point of its group
/// once and is thrown away; `warmup` counts rounds, not seconds, and a value meant as
/// seconds (`warmup = 3000`) would run for hours before the first counted run.
pub const MAX_WARMUP: u32 = 100;

/// A plan whose points × repeats exceed [`MAX_RUNS`] refused, before its runs are listed
/// (4,000,000,000 repeats of 20 points asked for 11.5 TB and aborted); so is one with more
/// than [`MAX_WARMUP`] warm-up rounds, or whose warm-up and counted runs together exceed
/// [`MAX_RUNS`] (`warmup = 4000000000` was taken, and would never have reached a counted run).
fn check_size(
    axes: &Axes,
    repeats: &Spanned<u32>,
    warmup: &Spanned<u32>,
    at: &Locator,
) -> Result<()> {
    let lengths = [
        axes.placement.len(),
        axes.link.len(),
        axes.congestion.len(),
        axes.server.len(),
        axes.handler.len(),
        axes.concurrency.len(),
        axes.requests.len(),
        axes.rate.len(),
        axes.selector.len(),
    ];
    let points = lengths
        .iter()
        .try_fold(1u128, |n, &len| n.checked_mul(len as u128));
    let runs = points.and_then(|p| p.checked_mul(*repeats.get_ref() as u128));
    let count =
        |n: Option<u128>, noun: &str| n.map_or(format!("too many {noun}s"), |n| plural(n, noun));
    match (points, runs) {
        (Some(_), Some(runs)) if runs <= MAX_RUNS => {}
        (points, runs) => {
            let message = format!(
                "{} × {} make {}; a plan may have at most {MAX_RUNS}: split it into several plans",
                count(points, "point"),
                plural(*repeats.get_ref(), "repeat"),
                count(runs, "run"),
            );
            return Err(at.error(repeats.span().start, "experiment.repeats", &message));
        }
    }
    let w = *warmup.get_ref();
    if w > MAX_WARMUP {
        let message = format!(
            "{w} is more than {MAX_WARMUP}, the most warm-up rounds a plan may have (a round runs every point once and is not stored; warmup counts rounds, not seconds)"
        );
        return Err(at.error(warmup.span().start, "experiment.warmup", &message));
    }
    let all = points.and_then(|p| p.checked_mul(w as u128 + *repeats.get_ref() as u128));
    match all {
        Some(all) if all <= MAX_RUNS => Ok(()),
        all => {
            let message = format!(
                "{} × ({w} warm-up + {}) make {}; a plan may run at most {MAX_RUNS}: split it into several plans",
                count(points, "point"),
                plural(*repeats.get_ref(), "repeat"),
                count(all, "run"),
            );
            Err(at.error(warmup.span().start, "experiment.warmup", &message))
        }
    }
}

/// The load settings `dualbench run` would refuse, refused here, before anything runs.
fn check_load(load: &Load, axes: &Axes, at: &Locator) -> Result<()> {
    if load.requests == 0 {
        let message = "must be at least 1 (requests per run, `-n`)";
        return Err(at.error_at("load.requests", message));
    }
    if load.concurrency == 0 {
        let message = "must be at least 1 (requests at a time, `-c`)";
        return Err(at.error_at("load.concurrency", message));
    }
    if load.concurrency > MAX_CONCURRENCY as u64 {
        let message = format!(
            "{} is more than {MAX_CONCURRENCY}, the most `dualbench run -c` takes",
            load.concurrency
        );
        return Err(at.error_at("load.concurrency", &message));
    }
    for (key, value, flag, range) in [
        (
            "load.timeout_s",
            load.timeout_s,
            "-s",
            MIN_TIMEOUT_S..=MAX_TIMEOUT_S,
        ),
        (
            "load.time_limit_s",
            load.time_limit_s,
            "-t",
            MIN_TIME_LIMIT_S..=MAX_TIME_LIMIT_S,
        ),
    ] {
        if value.is_some_and(|s| !(s > 0.0 && s.is_finite())) {
            return Err(at.error_at(key, "give a number of seconds above 0"));
        }
        if let Some(s) = value.filter(|s| !range.contains(s)) {
            let message = format!(
                "{} is outside {} to {} seconds, what `dualbench run {flag}` takes",
                shown(s),
                range.start(),
                range.end()
            );
            return Err(at.error_at(key, &message));
        }
    }
    check_capture_host(load, axes, at)?;
    if let Some(a) = load.arrival.as_deref() {
        if !matches!(a, "constant" | "poisson") {
            let message = format!("{a:?}: use \"constant\" or \"poisson\"");
            return Err(at.error_at("load.arrival", &message));
        }
        if axes.rate.iter().all(Option::is_none) {
            let message = format!(
                "{a:?} is an open-loop arrival and needs a rate: add axes.rate (requests/s), or drop load.arrival"
            );
            return Err(at.error_at("load.arrival", &message));
        }
    }
    extra_args::check(load, axes, at)
}

/// A server-side capture needs an interface to capture on and a server host apart from the
/// client: at a loopback point both are this host, so "server" is refused there.
fn check_capture_host(load: &Load, axes: &Axes, at: &Locator) -> Result<()> {
    if load.capture_host != CaptureHost::Server {
        return Ok(());
    }
    if load.capture.is_none() {
        let message = "\"server\" needs load.capture, the server host's interface to capture on (e.g. \"eth8\")";
        return Err(at.error_at("load.capture_host", message));
    }
    if axes.placement.contains(&Placement::Loopback) {
        let message = "\"server\" captures in the testbed's server host, and a loopback point has none (client and server are this host): use capture_host = \"client\" with capture = \"lo\", or drop loopback from axes.placement";
        return Err(at.error_at("load.capture_host", message));
    }
    Ok(())
}

/// The longest experiment name: it names the runs' folder (`NAME-ID`) and the report files,
/// of which `compare-A-ID-vs-B-ID.html` holds two names and must fit in the 255 bytes a file
/// name may have.
const MAX_NAME: usize = 100;

fn check_name(name: &Spanned<String>, at: &Locator) -> Result<()> {
    if name.get_ref().len() > MAX_NAME {
        let message = format!(
            "{} characters; at most {MAX_NAME}: the name names the runs' folder and the report's files",
            name.get_ref().len()
        );
        return Err(at.error(name.span().start, "experiment.name", &message));
    }
    let ok = !name.get_ref().is_empty()
        && name
            .get_ref()
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    if ok {
        Ok(())
    } else {
        Err(at.error(
            name.span().start,
            "experiment.name",
            "use letters, digits, '-', '_' or '.'",
        ))
    }
}

/// A value as an error shows it: as written when short (`0.0002`, `2000000`), in exponent
/// form when its decimals would run to hundreds of digits (`1e300`, `1e-300`, which `{}`
/// writes out in full).
pub(crate) fn shown(value: impl std::fmt::Display) -> String {
    let text = value.to_string();
    match text.parse::<f64>() {
        Ok(f) if text.len() > 24 => format!("{f:e}"),
        _ => text,
    }
}

/// A name of digits alone (`name = "7"`) is refused when a plan is loaded to run: every
/// command that takes an experiment reads digits as its id first, so `results show 7` or
/// `report 7` would name experiment id 7, not this one. Stored plans (an older dualbench
/// took such names) are not checked again, so their reports keep their layout.
fn check_name_is_no_id(name: &str, at: &Locator) -> Result<()> {
    if !name.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(());
    }
    let message = format!(
        "{name:?} is digits alone, which `dualbench results` and `report` read as an experiment id (`report {name}` would report experiment id {name}, not this one); give a name with a letter, e.g. \"s{name}\""
    );
    Err(at.error_at("experiment.name", &message))
}

/// Turns byte offsets in the plan into "file:line: key: message" errors, and finds where a
/// key's value is by toml's own spans (not by searching the text, where the same word can
/// appear in a title or a comment first).
pub(crate) struct Locator<'a> {
    text: &'a str,
    path: &'a Path,
    /// "table.key" → byte offset of its value; "table" → offset of its first value.
    keys: BTreeMap<String, usize>,
}

/// The plan as tables of spanned values, for [`Locator`]; empty when the text does not
/// parse (toml's own error then says where).
type SpannedTables = BTreeMap<String, BTreeMap<String, Spanned<toml::Value>>>;

impl<'a> Locator<'a> {
    pub(crate) fn new(text: &'a str, path: &'a Path) -> Locator<'a> {
        let tables: SpannedTables = toml::from_str(text).unwrap_or_default();
        let mut keys = BTreeMap::new();
        for (table, values) in tables {
            for (key, value) in values {
                let start = value.span().start;
                let first = keys.entry(table.clone()).or_insert(start);
                *first = (*first).min(start);
                keys.insert(format!("{table}.{key}"), start);
            }
        }
        Locator { text, path, keys }
    }

    fn line(&self, offset: usize) -> usize {
        let end = offset.min(self.text.len());
        self.text[..end].bytes().filter(|&b| b == b'\n').count() + 1
    }

    pub(crate) fn error(&self, offset: usize, key: &str, message: &str) -> Failure {
        Failure::usage(format!(
            "{}:{}: {key}: {message}",
            self.path.display(),
            self.line(offset)
        ))
    }

    /// An error at the value of `key` ("table.key"), or at its table when the key is not
    /// in the text (a default), or at line 1.
    pub(crate) fn error_at(&self, key: &str, message: &str) -> Failure {
        self.error(self.offset(key), key, message)
    }

    /// The key line `line` (1-based) of the plan sets, with its table (`requests = …`
    /// under `[load]`: `load.requests`), for toml's errors that carry a place but no key:
    /// a number too large for TOML's 64-bit integers fails as the text is read, before
    /// any key is. None for a line that sets no plain key.
    fn key_on_line(&self, line: usize) -> Option<String> {
        let lines: Vec<&str> = self.text.lines().collect();
        let (key, _) = lines.get(line.checked_sub(1)?)?.split_once('=')?;
        let key = key.trim();
        let plain = |k: &str| {
            !k.is_empty()
                && k.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        };
        if !plain(key) {
            return None;
        }
        let table = lines[..line - 1].iter().rev().find_map(|l| {
            let l = l.split('#').next().unwrap_or("").trim();
            l.strip_prefix('[')?.strip_suffix(']').map(str::trim)
        });
        Some(match table {
            Some(t) if plain(t) => format!("{t}.{key}"),
            _ => key.to_string(),
        })
    }

    /// Where the value of `key` ("table.key") starts, else its table, else 0.
    pub(crate) fn offset(&self, key: &str) -> usize {
        let table = key.split('.').next().unwrap_or(key);
        self.keys
            .get(key)
            .or_else(|| self.keys.get(table))
            .copied()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests;
