//! The topology as data: a TOML file read into a typed, checked [`Topology`] of nodes
//! (hosts, routers, switches) with their own sysctls, links with per-direction shaping,
//! and services. Nothing here
//! touches the system; every mistake is reported as `FILE:LINE:COL: key 'K': what is wrong`
//! before anything is created, and an unknown key as `FILE:LINE:COL: [[link]]: unknown key
//! `rat` (did you mean `rate`?); [[link]] takes …`, worded as plans and profiles word it
//! ([`dualbench_common::unknown_key`]).

use crate::units::{self, BurstLoss, Micros, Ppm, Queue, Rate};
use dualbench_common::unknown_key;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fmt;
use std::ops::Range;
use toml::Spanned;

/// Most nodes and links a topology may have (the address scheme's limits, see `addressing`).
pub const MAX_NODES: usize = 250;
pub const MAX_LINKS: usize = 511;
/// Longest node name (keeps namespace and host names short).
pub const MAX_NAME: usize = 16;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Topology {
    /// The `name` key, if the file gives one (the CLI's `--name` and the file stem are fallbacks).
    pub name: Option<String>,
    pub nodes: Vec<Node>,
    pub links: Vec<Link>,
    pub services: Vec<Service>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeKind {
    Host,
    Router,
    Switch,
}

/// A host, router or switch. `number` (1-based: hosts, then routers, then switches, each in
/// file order) is what addresses are derived from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Node {
    pub name: String,
    pub kind: NodeKind,
    pub number: u32,
    /// The node's own `sysctl` table, in file order: set right after the testbed's own.
    #[serde(default)]
    pub sysctls: Vec<Sysctl>,
}

/// One `net.*` sysctl of a node's network namespace, checked for syntax only: whether the
/// kernel has the key is known only inside the namespace, when `up` applies it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sysctl {
    pub key: String,
    pub value: String,
}

impl Sysctl {
    /// Where the key lives: `net.ipv4.tcp_sack` is `/proc/sys/net/ipv4/tcp_sack`.
    pub fn proc_path(&self) -> String {
        format!("/proc/sys/{}", self.key.replace('.', "/"))
    }
}

impl fmt::Display for Sysctl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.key, self.value)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Shaper {
    Htb,
    Tbf,
}

/// What one direction of a link does to packets; `None` means "not shaped".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shaping {
    pub rate: Option<Rate>,
    pub queue: Option<Queue>,
    pub delay: Option<Micros>,
    pub jitter: Option<Micros>,
    pub loss: Option<Ppm>,
    /// Gilbert–Elliott loss instead of `loss` (a direction has one loss model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_loss: Option<BurstLoss>,
    /// Jitter never reorders frames (the wire's `keep_order`); otherwise a frame may
    /// overtake one sent before it whenever their delays differ by more than their gap.
    #[serde(default)]
    pub keep_order: bool,
}

impl Shaping {
    /// Whether delay, jitter or loss are asked for (the parts tc alone cannot do).
    pub fn needs_emulation(&self) -> bool {
        self.delay.is_some_and(|d| d.0 > 0)
            || self.jitter.is_some_and(|j| j.0 > 0)
            || self.loss.is_some_and(|l| l.0 > 0)
            || self.burst_loss.is_some_and(|b| b.loses())
    }

    pub fn is_shaped(&self) -> bool {
        self.rate.is_some() || self.queue.is_some() || self.needs_emulation()
    }

    pub fn has_jitter(&self) -> bool {
        self.jitter.is_some_and(|j| j.0 > 0)
    }

    /// Whether this direction has jitter and keeps frames in order under it.
    pub fn keeps_order(&self) -> bool {
        self.keep_order && self.has_jitter()
    }
}

/// A link between nodes `a` and `b` (indexes into `Topology::nodes`), numbered from 1 in file order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Link {
    pub number: u32,
    pub a: usize,
    pub b: usize,
    pub shaper: Shaper,
    pub a_to_b: Shaping,
    pub b_to_a: Shaping,
}

impl Link {
    /// Whether some direction keeps jittered frames in order (which only the wire can do).
    pub fn keeps_order(&self) -> bool {
        self.a_to_b.keeps_order() || self.b_to_a.keeps_order()
    }

    /// Whether this link joins nodes `x` and `y` (either way round).
    pub fn joins(&self, x: usize, y: usize) -> bool {
        (self.a, self.b) == (x, y) || (self.a, self.b) == (y, x)
    }
}

/// How a service's command is given: an argv list, or one string for `/bin/sh -c`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Command {
    Argv(Vec<String>),
    Shell(String),
}

impl Command {
    pub fn argv(&self) -> Vec<String> {
        match self {
            Command::Argv(argv) => argv.clone(),
            Command::Shell(line) => vec!["/bin/sh".into(), "-c".into(), line.clone()],
        }
    }
}

/// A long-running process started in a node's namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Service {
    pub node: usize,
    pub name: String,
    pub command: Command,
    /// A TCP port the service listens on when ready; `up` waits for it.
    pub ready: Option<u16>,
}

// ---- the file as written -------------------------------------------------------------

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTopology {
    name: Option<Spanned<String>>,
    #[serde(default)]
    host: Vec<RawNode>,
    #[serde(default)]
    router: Vec<RawNode>,
    #[serde(default)]
    switch: Vec<RawNode>,
    #[serde(default)]
    link: Vec<RawLink>,
    #[serde(default)]
    service: Vec<RawService>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNode {
    name: Spanned<String>,
    #[serde(default)]
    sysctl: RawSysctls,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawQueue {
    Packets(i64),
    Text(String),
    /// Any other TOML value (`2.5`, `true`): refused in words, not serde's.
    Other(serde::de::IgnoredAny),
}

#[derive(Deserialize, Default)]
#[serde(
    deny_unknown_fields,
    expecting = "a table of shaping keys, like { rate = \"10Mbit\", delay = \"30ms\" }"
)]
struct RawShaping {
    rate: Option<Spanned<String>>,
    queue: Option<Spanned<RawQueue>>,
    delay: Option<Spanned<String>>,
    jitter: Option<Spanned<String>>,
    loss: Option<Spanned<String>>,
    burst_loss: Option<Spanned<String>>,
    keep_order: Option<Spanned<bool>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLink {
    a: Spanned<String>,
    b: Spanned<String>,
    shaper: Option<Spanned<String>>,
    rate: Option<Spanned<String>>,
    queue: Option<Spanned<RawQueue>>,
    delay: Option<Spanned<String>>,
    jitter: Option<Spanned<String>>,
    loss: Option<Spanned<String>>,
    burst_loss: Option<Spanned<String>>,
    keep_order: Option<Spanned<bool>>,
    a_to_b: Option<RawShaping>,
    b_to_a: Option<RawShaping>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawService {
    host: Spanned<String>,
    name: Spanned<String>,
    command: Spanned<RawCommand>,
    ready: Option<Spanned<RawReady>>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawReady {
    Port(i64),
    Text(String),
    /// Any other TOML value (`80.0`, `true`, `[80]`): refused in words, not serde's.
    Other(serde::de::IgnoredAny),
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawCommand {
    Given(Command),
    /// Any other TOML value (`42`, `[1, 2]`): refused in words, not serde's.
    Other(serde::de::IgnoredAny),
}

/// A mistake in a topology file: where it is, which key, what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileError {
    pub line: usize,
    pub column: usize,
    pub key: Option<String>,
    pub message: String,
}

impl FileError {
    /// `FILE:LINE:COL: key 'K': message`, the one line the user sees.
    pub fn render(&self, file: &str) -> String {
        match &self.key {
            Some(key) => format!(
                "{file}:{}:{}: key '{key}': {}",
                self.line, self.column, self.message
            ),
            None => format!("{file}:{}:{}: {}", self.line, self.column, self.message),
        }
    }
}

/// 1-based line and column of byte `offset` in `text`.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    (line, column)
}

/// Errors are collected against spans, then turned into lines and columns in one place.
struct Checker<'t> {
    text: &'t str,
}

impl Checker<'_> {
    fn at(&self, span: Range<usize>, key: &str, message: impl Into<String>) -> FileError {
        let (line, column) = line_col(self.text, span.start);
        FileError {
            line,
            column,
            key: Some(key.to_string()),
            message: message.into(),
        }
    }

    fn value<T>(
        &self,
        raw: &Option<Spanned<String>>,
        key: &str,
        parse: impl Fn(&str) -> Result<T, String>,
    ) -> Result<Option<T>, FileError> {
        match raw {
            None => Ok(None),
            Some(s) => parse(s.get_ref())
                .map(Some)
                .map_err(|m| self.at(s.span(), key, m)),
        }
    }

    fn queue(
        &self,
        raw: &Option<Spanned<RawQueue>>,
        key: &str,
    ) -> Result<Option<Queue>, FileError> {
        let Some(s) = raw else { return Ok(None) };
        let parsed = match s.get_ref() {
            RawQueue::Packets(n) if *n < 0 => Err(format!(
                "queue of {n} packets is impossible: use 1 to 1000000 packets"
            )),
            RawQueue::Packets(n) => units::check_queue(Queue::Packets(*n as u64)),
            RawQueue::Text(t) => units::parse_queue_text(t),
            RawQueue::Other(_) => Err(
                "a queue is a whole number of packets (100) or a string of bytes (\"64kB\")".into(),
            ),
        };
        parsed.map(Some).map_err(|m| self.at(s.span(), key, m))
    }
}

/// Parse and check a topology file's text. `text` is only read; nothing is created.
pub fn parse(text: &str) -> Result<Topology, FileError> {
    let raw: RawTopology = unknown_key::deserialize(toml::Deserializer::new(text))
        .map_err(|failed| toml_error(text, &failed.error, &failed.names))?;
    let check = Checker { text };
    let name = match &raw.name {
        Some(n) => {
            Some(check_testbed_name(n.get_ref()).map_err(|m| check.at(n.span(), "name", m))?)
        }
        None => None,
    };
    let (nodes, index) = nodes(&check, &raw)?;
    let mut links = Vec::new();
    for (i, raw_link) in raw.link.iter().enumerate() {
        let l = link(&check, raw_link, i as u32 + 1, &nodes, &index)?;
        // A switch's links share one subnet, where a node's address comes from its number:
        // a second link between the same node and switch would put that address on two
        // interfaces of the node.
        let is_switch = |n: usize| nodes[n].kind == NodeKind::Switch;
        if let Some(twin) = links
            .iter()
            .find(|o: &&Link| (is_switch(l.a) || is_switch(l.b)) && o.joins(l.a, l.b))
        {
            return Err(check.at(
                raw_link.b.span(),
                "b",
                format!(
                    "link {} joins '{}' and '{}' again (link {} does): a node has one port on a switch: two would carry the same addresses",
                    l.number, nodes[l.a].name, nodes[l.b].name, twin.number
                ),
            ));
        }
        links.push(l);
    }
    if links.len() > MAX_LINKS {
        let span = raw.link[MAX_LINKS].a.span();
        return Err(check.at(span, "link", format!("too many links: at most {MAX_LINKS}")));
    }
    let services = services(&check, &raw.service, &nodes, &index)?;
    Ok(Topology {
        name,
        nodes,
        links,
        services,
    })
}

/// The topology's keys as [`unknown_key::Format`] tells them: `name`, the nodes, links and
/// services, each an array of tables, and a link's two directions.
fn format() -> unknown_key::Format {
    use unknown_key::{fields_of, Table};
    let shaping = fields_of::<RawShaping>();
    unknown_key::Format::new(
        "a topology",
        fields_of::<RawTopology>(),
        vec![
            Table::many("host", fields_of::<RawNode>()),
            Table::many("router", fields_of::<RawNode>()),
            Table::many("switch", fields_of::<RawNode>()),
            Table::many("link", fields_of::<RawLink>()),
            Table::inline("link.a_to_b", shaping),
            Table::inline("link.b_to_a", shaping),
            Table::many("service", fields_of::<RawService>()),
        ],
    )
}

/// A file toml or serde refused, `names` the tables and keys on the way to where (see
/// [`unknown_key::deserialize`]): an unknown key is one line with its table, a close key
/// and what the table takes (`[[link]]: unknown key `rat` (did you mean `rate`?); …`).
fn toml_error(text: &str, e: &toml::de::Error, names: &[String]) -> FileError {
    let (line, column) = e.span().map_or((1, 1), |s| line_col(text, s.start));
    let at = e.span().map_or(0, |s| s.start);
    if let Some(message) = format().explain(e.message(), names, text, at) {
        return FileError {
            line,
            column,
            key: None,
            message,
        };
    }
    let mut message = e.message().trim().replace('\n', " ");
    // `[host]` where `[[host]]` is meant: serde's words name no key and no way out.
    let line_text = e.span().and_then(|s| text.get(s.start..)?.lines().next());
    if let Some(table) = line_text.and_then(single_table) {
        if message.starts_with("invalid type: map, expected a sequence") {
            message = format!(
                "[{table}] is one table, but each {table} is an entry of a list: write [[{table}]]"
            );
        }
    }
    // A required key left out: say what it is and how to write it (serde said only
    // "missing field `command`").
    let entry = line_text.and_then(|l| {
        let l = l.trim();
        l.strip_prefix("[[")?.split("]]").next().map(str::trim)
    });
    if let Some(hint) = entry.and_then(|t| missing_key_hint(t, &message)) {
        message = format!("{message}: {hint}");
    }
    // A value of the wrong type: name its key, as every other error does, and say how a
    // value with a unit is written (`rate = 100` said only "expected a string").
    let key = e
        .span()
        .and_then(|s| dualbench_common::toml_key::key_at(text, s.start));
    if let Some(key) = &key {
        let leaf = key.rsplit('.').next().unwrap_or(key);
        let example = match leaf {
            "rate" => Some("\"100Mbit\""),
            "delay" | "jitter" => Some("\"20ms\""),
            "loss" => Some("\"0.1%\""),
            "burst_loss" => Some("\"1%,30%,0%,100%\""),
            _ => None,
        };
        if let (true, Some(example)) = (message.ends_with("expected a string"), example) {
            message =
                format!("{message}: write it in quotes with its unit, like {leaf} = {example}");
        }
    }
    FileError {
        line,
        column,
        key,
        message,
    }
}

/// What a required key of a `[[table]]` entry is, and how to write it, for serde's
/// "missing field `key`".
fn missing_key_hint(table: &str, message: &str) -> Option<String> {
    let key = message.strip_prefix("missing field `")?.strip_suffix('`')?;
    let what = match (table, key) {
        ("link", "a" | "b") => {
            "a [[link]] needs a and b, the names of the two nodes it joins, like a = \"client\" and b = \"r1\""
        }
        ("host" | "router" | "switch", "name") => "every node needs a name, like name = \"client\"",
        ("service", "host") => "the host or router it runs on, like host = \"server\"",
        ("service", "name") => "a name of its own, like name = \"web\"",
        ("service", "command") => {
            "the program and its arguments, like command = [\"dualbench\", \"serve\"]"
        }
        _ => return None,
    };
    Some(what.to_string())
}

/// `host` for a line `[host]` (a single table header), not for `[[host]]`.
fn single_table(line: &str) -> Option<&str> {
    let line = line.trim();
    let name = line.strip_prefix('[')?.split(']').next()?.trim();
    let plain = !name.is_empty() && !name.contains(['.', '"', '\'']);
    (!line.starts_with("[[") && plain).then_some(name)
}

/// A testbed or node name: lowercase letters, digits and '-', starting with a letter.
pub fn check_name(name: &str, what: &str, max: usize) -> Result<(), String> {
    let good_chars = name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    let good_start = name.starts_with(|c: char| c.is_ascii_lowercase());
    if name.is_empty() || name.len() > max || !good_chars || !good_start {
        return Err(format!(
            "{what} '{name}' must be 1 to {max} lowercase letters, digits or '-', starting with a letter"
        ));
    }
    Ok(())
}

/// A node name: as [`check_name`], but its words leave out '-', which node names may not
/// have (that is refused on its own, with the reason): "host 'A' must be ... or '-'" would
/// invite the next mistake.
fn check_node_name(name: &str, what: &str) -> Result<(), String> {
    check_name(name, what, MAX_NAME).map_err(|_| {
        format!("{what} '{name}' must be 1 to {MAX_NAME} lowercase letters or digits, starting with a letter")
    })
}

/// Testbed names become part of every namespace name, so they are kept to 12 characters.
pub fn check_testbed_name(name: &str) -> Result<String, String> {
    check_name(name, "testbed name", 12)?;
    Ok(name.to_string())
}

type NameIndex = HashMap<String, usize>;

fn nodes(check: &Checker, raw: &RawTopology) -> Result<(Vec<Node>, NameIndex), FileError> {
    let kinds = [
        (&raw.host, NodeKind::Host, "host"),
        (&raw.router, NodeKind::Router, "router"),
        (&raw.switch, NodeKind::Switch, "switch"),
    ];
    let mut nodes = Vec::new();
    let mut index = NameIndex::new();
    for (list, kind, key) in kinds {
        for raw_node in list {
            let name = raw_node.name.get_ref();
            let span = raw_node.name.span();
            check_node_name(name, key).map_err(|m| check.at(span.clone(), "name", m))?;
            if name.contains('-') {
                return Err(check.at(span, "name", format!("{key} '{name}' has a '-': node names may not (namespace db-<testbed>-<node> must say where the testbed's name ends, and <node>-v4/-v6 are host names), so write e.g. '{}'", name.replace('-', ""))));
            }
            if is_reserved(name) {
                return Err(check.at(span, "name", format!("'{name}' is reserved for the wire namespaces of links: choose another name")));
            }
            if name == "localhost" {
                return Err(check.at(span, "name", "'localhost' is the loopback's name in every node's hosts file (127.0.0.1 and ::1): as a node's name too it would also resolve to that node's addresses, in every node; choose another name".to_string()));
            }
            if index.insert(name.clone(), nodes.len()).is_some() {
                return Err(check.at(
                    span,
                    "name",
                    format!("duplicate name '{name}': every host, router and switch needs its own"),
                ));
            }
            if nodes.len() == MAX_NODES {
                return Err(check.at(span, "name", format!("too many nodes: at most {MAX_NODES}")));
            }
            nodes.push(Node {
                name: name.clone(),
                kind,
                number: nodes.len() as u32 + 1,
                sysctls: sysctl::sysctls(check, &raw_node.sysctl, name, kind)?,
            });
        }
    }
    if !nodes.iter().any(|n| n.kind == NodeKind::Host) {
        return Err(FileError {
            line: 1,
            column: 1,
            key: None,
            message: "no [[host]] in the file: a testbed needs at least one to run benchmarks and services on (routers and switches only forward)".into(),
        });
    }
    Ok((nodes, index))
}

/// `wire<N>` names the namespace in the middle of link N, so no node may take it.
fn is_reserved(name: &str) -> bool {
    name.strip_prefix("wire")
        .is_some_and(|rest| !rest.is_empty() && rest.chars().all(|c| c.is_ascii_digit()))
}

fn endpoint(
    check: &Checker,
    raw: &Spanned<String>,
    key: &str,
    index: &NameIndex,
) -> Result<usize, FileError> {
    index.get(raw.get_ref()).copied().ok_or_else(|| {
        let mut names: Vec<&str> = index.keys().map(String::as_str).collect();
        names.sort();
        let message = format!(
            "no host, router or switch named '{}' (there are: {})",
            raw.get_ref(),
            names.join(", ")
        );
        check.at(raw.span(), key, message)
    })
}

fn link(
    check: &Checker,
    raw: &RawLink,
    number: u32,
    nodes: &[Node],
    index: &NameIndex,
) -> Result<Link, FileError> {
    let a = endpoint(check, &raw.a, "a", index)?;
    let b = endpoint(check, &raw.b, "b", index)?;
    if a == b {
        return Err(check.at(
            raw.b.span(),
            "b",
            format!(
                "link {number} joins '{}' to itself: give b another node's name",
                nodes[a].name
            ),
        ));
    }
    if nodes[a].kind == NodeKind::Switch && nodes[b].kind == NodeKind::Switch {
        return Err(check.at(
            raw.b.span(),
            "b",
            format!("link {number} joins two switches: put a router between them"),
        ));
    }
    let shaper = match &raw.shaper {
        None => Shaper::Htb,
        Some(s) => match s.get_ref().as_str() {
            "htb" => Shaper::Htb,
            "tbf" => Shaper::Tbf,
            other => {
                return Err(check.at(
                    s.span(),
                    "shaper",
                    format!("unknown shaper '{other}': use \"htb\" or \"tbf\""),
                ))
            }
        },
    };
    let both = RawShaping {
        rate: raw.rate.clone(),
        queue: None,
        delay: raw.delay.clone(),
        jitter: raw.jitter.clone(),
        loss: raw.loss.clone(),
        burst_loss: raw.burst_loss.clone(),
        keep_order: raw.keep_order.clone(),
    };
    let base = shaping(check, &both, &raw.queue, "")?;
    let a_to_b = over(check, base, raw.a_to_b.as_ref(), "a_to_b.")?;
    let b_to_a = over(check, base, raw.b_to_a.as_ref(), "b_to_a.")?;
    if let Some(k) = raw.keep_order.as_ref().filter(|k| *k.get_ref()) {
        if !(a_to_b.has_jitter() || b_to_a.has_jitter()) {
            return Err(order_without_jitter(check, k.span(), "keep_order"));
        }
    }
    if let Some(s) = raw.shaper.as_ref() {
        // A shaper chooses how a rate is enforced; with no rate it would do nothing, which
        // is refused as a likely slip, like keep_order without jitter.
        if a_to_b.rate.is_none() && b_to_a.rate.is_none() {
            return Err(check.at(
                s.span(),
                "shaper",
                format!(
                    "shaper '{}' enforces a rate, but link {number} has none in either direction: add rate (like rate = \"100Mbit\") or remove shaper",
                    s.get_ref()
                ),
            ));
        }
    }
    Ok(Link {
        number,
        a,
        b,
        shaper,
        a_to_b,
        b_to_a,
    })
}

/// A direction's shaping: the link's own keys, overridden by `a_to_b` / `b_to_a` keys.
fn over(
    check: &Checker,
    base: Shaping,
    raw: Option<&RawShaping>,
    prefix: &str,
) -> Result<Shaping, FileError> {
    let Some(raw) = raw else { return Ok(base) };
    let own = shaping(check, raw, &raw.queue, prefix)?;
    let merged = Shaping {
        rate: own.rate.or(base.rate),
        queue: own.queue.or(base.queue),
        delay: own.delay.or(base.delay),
        jitter: own.jitter.or(base.jitter),
        // `loss` and `burst_loss` are one setting, the loss model: a direction that names
        // either replaces the link's, whichever it was.
        loss: if own.loss.is_some() || own.burst_loss.is_some() {
            own.loss
        } else {
            base.loss
        },
        burst_loss: if own.loss.is_some() || own.burst_loss.is_some() {
            own.burst_loss
        } else {
            base.burst_loss
        },
        keep_order: raw
            .keep_order
            .as_ref()
            .map_or(base.keep_order, |k| *k.get_ref()),
    };
    if jitter_without_delay(&merged) {
        // Own jitter: point at it. Inherited jitter: at the delay that took its base away.
        let (span, key, message) = match (&raw.jitter, &raw.delay) {
            (Some(j), _) => (j.span(), "jitter", "jitter needs a delay to vary around: add delay"),
            (None, Some(d)) => (d.span(), "delay", "this direction inherits the link's jitter, which needs a delay to vary around: add jitter = \"0ms\" here too"),
            (None, None) => (0..0, "jitter", "jitter needs a delay to vary around: add delay"),
        };
        return Err(check.at(span, &format!("{prefix}{key}"), message));
    }
    if let Some(k) = raw.keep_order.as_ref().filter(|k| *k.get_ref()) {
        if !merged.keeps_order() {
            return Err(order_without_jitter(
                check,
                k.span(),
                &format!("{prefix}keep_order"),
            ));
        }
    }
    Ok(merged)
}

/// `keep_order = true` where no jitter could reorder anything: refused, as a likely slip.
fn order_without_jitter(check: &Checker, span: Range<usize>, key: &str) -> FileError {
    check.at(
        span,
        key,
        "keep_order keeps jittered frames in order, but there is no jitter here: add jitter or remove keep_order",
    )
}

fn shaping(
    check: &Checker,
    raw: &RawShaping,
    queue: &Option<Spanned<RawQueue>>,
    prefix: &str,
) -> Result<Shaping, FileError> {
    let key = |k: &str| format!("{prefix}{k}");
    let shaping = Shaping {
        rate: check.value(&raw.rate, &key("rate"), units::parse_rate)?,
        queue: check.queue(queue, &key("queue"))?,
        delay: check.value(&raw.delay, &key("delay"), units::parse_duration)?,
        jitter: check.value(&raw.jitter, &key("jitter"), units::parse_duration)?,
        loss: check.value(&raw.loss, &key("loss"), units::parse_loss)?,
        burst_loss: check.value(&raw.burst_loss, &key("burst_loss"), units::parse_burst_loss)?,
        keep_order: raw.keep_order.as_ref().is_some_and(|k| *k.get_ref()),
    };
    if let (Some(_), Some(b)) = (&raw.loss, &raw.burst_loss) {
        return Err(check.at(
            b.span(),
            &key("burst_loss"),
            "loss and burst_loss are two loss models and a link direction has one: give either loss (independent) or burst_loss (Gilbert-Elliott)",
        ));
    }
    if let (Some(j), true) = (
        &raw.jitter,
        prefix.is_empty() && jitter_without_delay(&shaping),
    ) {
        return Err(check.at(
            j.span(),
            &key("jitter"),
            "jitter needs a delay to vary around: add delay",
        ));
    }
    Ok(shaping)
}

/// Jitter with no delay (or a zero one) to vary around: refused, as by the wire and netem.
fn jitter_without_delay(s: &Shaping) -> bool {
    s.has_jitter() && s.delay.is_none_or(|d| d.0 == 0)
}

fn services(
    check: &Checker,
    raw: &[RawService],
    nodes: &[Node],
    index: &NameIndex,
) -> Result<Vec<Service>, FileError> {
    let mut services: Vec<Service> = Vec::new();
    for s in raw {
        let node = endpoint(check, &s.host, "host", index)?;
        if nodes[node].kind == NodeKind::Switch {
            return Err(check.at(
                s.host.span(),
                "host",
                format!(
                    "'{}' is a switch: services run in hosts and routers",
                    nodes[node].name
                ),
            ));
        }
        let name = s.name.get_ref();
        check_name(name, "service name", 32).map_err(|m| check.at(s.name.span(), "name", m))?;
        if services.iter().any(|o| o.node == node && &o.name == name) {
            return Err(check.at(
                s.name.span(),
                "name",
                format!(
                    "duplicate service '{name}' on '{}': give each service of a node its own name",
                    nodes[node].name
                ),
            ));
        }
        let command = match s.command.get_ref() {
            RawCommand::Given(command) => command.clone(),
            RawCommand::Other(_) => {
                return Err(check.at(
                    s.command.span(),
                    "command",
                    "a command is a list of strings ([\"nginx\", \"-g\", \"daemon off;\"]) or one string run by /bin/sh -c",
                ))
            }
        };
        let empty = match &command {
            Command::Argv(argv) => argv.is_empty() || argv[0].is_empty(),
            Command::Shell(line) => line.trim().is_empty(),
        };
        if empty {
            return Err(check.at(
                s.command.span(),
                "command",
                "empty command: give a program and its arguments",
            ));
        }
        let ready = match &s.ready {
            None => None,
            Some(port) => {
                Some(ready_port(port.get_ref()).map_err(|m| check.at(port.span(), "ready", m))?)
            }
        };
        services.push(Service {
            node,
            name: name.clone(),
            command,
            ready,
        });
    }
    Ok(services)
}

/// A service's `ready` port: a whole number 1..=65535, written without quotes. A wrong type
/// used to be serde's `invalid type: string "80", expected i64`, which said not what to write.
fn ready_port(raw: &RawReady) -> Result<u16, String> {
    let how = "write the port as a number without quotes, like ready = 80";
    match raw {
        RawReady::Port(n) => match u16::try_from(*n) {
            Ok(p) if p > 0 => Ok(p),
            _ => Err(format!("{n} is not a TCP port: use 1 to 65535")),
        },
        RawReady::Text(t) => Err(format!("\"{t}\" is a string: {how}")),
        RawReady::Other(_) => Err(format!(
            "a ready port is a whole number from 1 to 65535: {how}"
        )),
    }
}

mod sysctl;
use sysctl::RawSysctls;

#[cfg(test)]
mod tests;
