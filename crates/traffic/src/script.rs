//! The MGEN script subset `dualbench traffic send` reads, parsed without I/O into a list of
//! timed flow events. One event per logical line (a trailing `\` continues a line, `#`
//! starts a comment, keywords are case-insensitive):
//!
//! ```text
//! <time> ON  <flow> UDP|TCP DST <addr>/<port> <pattern> [SRC <port>] [COUNT <n>] [TOS <x>] [TTL <n>] [TXBUFFER <bytes>]
//! <time> MOD <flow> [<pattern>] [COUNT <n>] [TOS <x>] [TTL <n>]
//! <time> OFF <flow>
//! TOS <x> | TXBUFFER <bytes>            (global defaults, no time)
//! <pattern> = PERIODIC [<msgs/s> <size>] | POISSON [<msgs/s> <size>]
//!           | JITTER [<msgs/s> <size> <fraction>]
//!           | BURST [REGULAR|RANDOM <interval_s> PERIODIC|POISSON|JITTER [...] FIXED|EXP <duration_s>]
//!           | CLONE [tcpdump <file> [<repeatCount>]]
//! ```
//!
//! `<addr>` is an IPv4 or IPv6 literal (`::1/5000` and `[::1]/5000` both work). Numbers
//! that mean nothing are refused with what to give: a zero COUNT, SRC, TTL or TXBUFFER
//! (MGEN's "default" zeros are the option left out), a rate outside
//! [`MIN_RATE`]..=[`MAX_RATE`]. Errors name the line and the token;
//! [`ScriptError::into_failure`] adds the file name. A CLONE's capture is not read here:
//! [`crate::clone::load`] reads it into the parsed script, and [`check_txbuffers`] holds
//! the TXBUFFERs against what the kernel would grant, asked through the function it is
//! given (the asking is the sender's I/O).

pub use crate::message::MAX_TCP_SIZE;
use crate::message::{MAX_SIZE, MIN_SIZE};
use crate::rate::Proto;
use dualbench_common::Failure;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

/// A parsed script: global defaults and events sorted by time (stable for equal times).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Script {
    pub globals: Globals,
    pub events: Vec<Event>,
}

/// Defaults set by global command lines.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Globals {
    pub tos: Option<u8>,
    pub ttl: Option<u8>,
    pub txbuffer: Option<usize>,
    /// The line of the global TXBUFFER (0 without one), for [`check_txbuffers`]'s warnings.
    pub txbuffer_line: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub at_ns: u64,
    /// 1-based line of the script where the event starts.
    pub line: usize,
    pub flow: u32,
    pub action: Action,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    On(FlowSpec),
    Mod(Change),
    Off,
}

/// Everything an `ON` line says about a flow.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowSpec {
    pub proto: Proto,
    pub dst: SocketAddr,
    pub pattern: Pattern,
    pub src_port: Option<u16>,
    pub count: Option<u64>,
    pub tos: Option<u8>,
    pub ttl: Option<u8>,
    pub txbuffer: Option<usize>,
}

/// What a `MOD` line changes.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Change {
    pub pattern: Option<Pattern>,
    pub count: Option<u64>,
    pub tos: Option<u8>,
    pub ttl: Option<u8>,
}

/// When a flow's messages go out.
#[derive(Debug, Clone, PartialEq)]
pub enum Pattern {
    Periodic {
        rate: f64,
        size: u64,
    },
    Poisson {
        rate: f64,
        size: u64,
    },
    /// MGEN's JITTER: PERIODIC at `rate`, each interval varied uniformly by up to
    /// `fraction` (0 < fraction <= 0.5) of it either way: `JITTER [1 1024 0.5]` sends
    /// every 0.5 to 1.5 s.
    Jitter {
        rate: f64,
        size: u64,
        fraction: f64,
    },
    Burst(Burst),
    /// MGEN's CLONE: the times and sizes of a capture's packets.
    Clone(Replay),
}

/// `CLONE [tcpdump <file> [<repeatCount>]]`: the capture `file` played `repeat` more times
/// after the first (MGEN's repeat count: -1, the default, is for ever: `None`).
#[derive(Debug, Clone)]
pub struct Replay {
    /// The file as the script names it.
    pub file: String,
    pub repeat: Option<u64>,
    /// The line whose event names this CLONE: a later MOD naming it again starts the file
    /// over (as MGEN reads it anew), while a MOD that changes only COUNT, TOS or TTL keeps
    /// it playing.
    pub line: usize,
    /// The capture's messages, once [`crate::clone::load`] has read the file.
    pub trace: Option<Arc<crate::clone::Trace>>,
}

impl PartialEq for Replay {
    /// The same CLONE of the same event (a loaded trace is the same one).
    fn eq(&self, other: &Replay) -> bool {
        let same_trace = match (&self.trace, &other.trace) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        (&self.file, self.repeat, self.line) == (&other.file, other.repeat, other.line)
            && same_trace
    }
}

/// MGEN's BURST: on-periods of an inner PERIODIC, POISSON or JITTER pattern, started every
/// `interval_s` (REGULAR) or after exponential gaps of that mean (RANDOM), each lasting
/// `duration_s` (FIXED) or an exponential time of that mean (EXP).
#[derive(Debug, Clone, PartialEq)]
pub struct Burst {
    pub random_interval: bool,
    pub interval_s: f64,
    pub inner: Box<Pattern>,
    pub random_duration: bool,
    pub duration_s: f64,
}

impl Pattern {
    pub fn size(&self) -> u64 {
        match self {
            Pattern::Periodic { size, .. }
            | Pattern::Poisson { size, .. }
            | Pattern::Jitter { size, .. } => *size,
            Pattern::Burst(b) => b.inner.size(),
            // The largest message, once the capture is read.
            Pattern::Clone(r) => r.trace.as_ref().map_or(0, |t| t.largest.1),
        }
    }
}

/// A script error at a line, naming the token that caused it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptError {
    pub line: usize,
    pub token: String,
    pub message: String,
}

impl ScriptError {
    /// `"flows.mgn:3: at 'PERIODK': unknown pattern ..."`, a usage error.
    pub fn into_failure(self, file: &str) -> Failure {
        Failure::usage(format!(
            "{file}:{}: at '{}': {}",
            self.line, self.token, self.message
        ))
    }
}

/// Parse a whole script (a leading byte-order mark, as some editors save, is skipped).
pub fn parse(text: &str) -> Result<Script, ScriptError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut script = Script::default();
    for (line, tokens) in logical_lines(text) {
        if tokens.is_empty() {
            continue;
        }
        let mut cur = Cursor {
            toks: &tokens,
            i: 0,
            line,
        };
        match parse_time(&tokens[0]) {
            Some(at_ns) => {
                cur.i = 1;
                script.events.push(parse_event(&mut cur, at_ns)?);
            }
            // A number, but not a time a run can reach (1e300, -1, inf): say so, not
            // "expected an event time".
            None if tokens[0].parse::<f64>().is_ok() => {
                return Err(cur.err(
                    &tokens[0],
                    "an event time must be a number of seconds from 0 to below 1000000000",
                ))
            }
            None => parse_global(&mut cur, &mut script.globals)?,
        }
    }
    script.events.sort_by_key(|e| e.at_ns);
    check_flow_order(&script.events)?;
    Ok(script)
}

/// Join `\`-continued lines, strip comments and split into tokens, `[` and `]` apart.
fn logical_lines(text: &str) -> Vec<(usize, Vec<String>)> {
    let mut out = Vec::new();
    let mut pending: Option<(usize, String)> = None;
    for (i, raw) in text.lines().enumerate() {
        let body = raw.split('#').next().unwrap_or("").trim_end();
        let (body, continued) = match body.strip_suffix('\\') {
            Some(b) => (b, true),
            None => (body, false),
        };
        let (start, mut acc) = pending.take().unwrap_or((i + 1, String::new()));
        acc.push(' ');
        acc.push_str(body);
        if continued {
            pending = Some((start, acc));
        } else {
            out.push((start, tokenize(&acc)));
        }
    }
    if let Some((start, acc)) = pending {
        out.push((start, tokenize(&acc)));
    }
    out
}

fn tokenize(s: &str) -> Vec<String> {
    let spaced = s.replace('[', " [ ").replace(']', " ] ");
    // `[::1]/5000` is an address, not a bracket list: glue it back together.
    let mut toks: Vec<String> = Vec::new();
    let raw: Vec<&str> = spaced.split_whitespace().collect();
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == "[" && i + 2 < raw.len() && raw[i + 1].contains(':') && raw[i + 2] == "]" {
            let port = raw
                .get(i + 3)
                .filter(|p| p.starts_with('/') || p.starts_with(':'))
                .copied()
                .unwrap_or("");
            toks.push(format!("[{}]{}", raw[i + 1], port));
            i += if port.is_empty() { 3 } else { 4 };
            continue;
        }
        toks.push(raw[i].to_string());
        i += 1;
    }
    toks
}

fn parse_time(token: &str) -> Option<u64> {
    let t: f64 = token.parse().ok()?;
    (t >= 0.0 && t.is_finite() && t < 1e9).then(|| (t * 1e9).round() as u64)
}

struct Cursor<'a> {
    toks: &'a [String],
    i: usize,
    line: usize,
}

impl Cursor<'_> {
    fn err(&self, token: &str, message: impl Into<String>) -> ScriptError {
        ScriptError {
            line: self.line,
            token: token.to_string(),
            message: message.into(),
        }
    }

    fn next(&mut self, what: &str) -> Result<&str, ScriptError> {
        match self.toks.get(self.i) {
            Some(t) => {
                self.i += 1;
                Ok(t)
            }
            None => {
                let last = self.toks.last().map(String::as_str).unwrap_or("");
                Err(self.err(last, format!("line ends where {what} was expected")))
            }
        }
    }

    fn peek_upper(&self) -> Option<String> {
        self.toks.get(self.i).map(|t| t.to_ascii_uppercase())
    }

    fn expect(&mut self, want: &str) -> Result<(), ScriptError> {
        let t = self.next(&format!("'{want}'"))?.to_string();
        if t == want {
            Ok(())
        } else {
            Err(self.err(&t, format!("expected '{want}'")))
        }
    }

    /// A whole number of type `T`: digits too many for it are "too large" (they were "must
    /// be a number"), anything else "must be a whole number".
    fn number<T: std::str::FromStr>(&mut self, what: &str) -> Result<T, ScriptError> {
        let t = self.next(what)?.to_string();
        t.parse().map_err(|_| {
            let digits = !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
            let why = if digits {
                "is too large"
            } else {
                "must be a whole number"
            };
            self.err(&t, format!("{what} {why}"))
        })
    }

    /// The token just taken (for an error about a value already read).
    fn last(&self) -> String {
        self.toks[self.i - 1].clone()
    }

    fn positive(&mut self, what: &str, max: f64) -> Result<f64, ScriptError> {
        let t = self.next(what)?.to_string();
        match t.parse::<f64>() {
            Ok(v) if v > 0.0 && v <= max => Ok(v),
            _ => Err(self.err(
                &t,
                format!("{what} must be a number above 0 and at most {max}"),
            )),
        }
    }

    /// A number of seconds from [`MIN_BURST_S`] to `max`.
    fn burst_seconds(&mut self, what: &str, max: f64) -> Result<f64, ScriptError> {
        let t = self.next(what)?.to_string();
        match t.parse::<f64>() {
            Ok(v) if (MIN_BURST_S..=max).contains(&v) => Ok(v),
            _ => Err(self.err(
                &t,
                format!("{what} must be a number from {MIN_BURST_S:.6} to {max}"),
            )),
        }
    }

    fn done(&self) -> bool {
        self.i >= self.toks.len()
    }
}

fn parse_global(cur: &mut Cursor, globals: &mut Globals) -> Result<(), ScriptError> {
    let word = cur.next("a command")?.to_ascii_uppercase();
    match word.as_str() {
        "TOS" => globals.tos = Some(parse_tos(cur)?),
        "TTL" => globals.ttl = Some(parse_ttl(cur)?),
        "TXBUFFER" => {
            globals.txbuffer = Some(parse_txbuffer(cur)?);
            globals.txbuffer_line = cur.line;
        }
        _ => {
            let t = cur.toks[0].clone();
            let why = match unsupported_global(&word) {
                Some(what) => format!("MGEN's global {word} is not supported: {what}"),
                None => "expected an event time in seconds (or a global TOS, TTL or TXBUFFER)"
                    .to_string(),
            };
            return Err(cur.err(&t, why));
        }
    }
    match cur.toks.get(cur.i) {
        None => Ok(()),
        Some(extra) => Err(cur.err(extra, "unexpected token after the global command")),
    }
}

/// What to do instead of an MGEN global command this subset does not take (it used to be
/// refused as "expected an event time", as if it were a typo).
fn unsupported_global(word: &str) -> Option<&'static str> {
    Some(match word {
        "TXLOG" => "the send log is `traffic send --mgen-log FILE`: remove the line and pass that",
        "SEED" => "pass `traffic send --seed N` instead",
        "LOCALTIME" => "log times are UTC: remove the line",
        "START" | "OFFSET" => "event times count from the run's start: shift them instead",
        "INPUT" | "OUTPUT" | "LOG" | "SAVE" => "give one script and log with --mgen-log FILE",
        "DF" | "INTERFACE" | "BROADCAST" | "MULTICAST" | "LABEL" | "QUEUE" | "CHECKSUM"
        | "TXCHECKSUM" | "RXCHECKSUM" | "RXBUFFER" | "DATA" | "BINARY" | "FLUSH" | "LOOPBACK"
        | "REUSE" | "HOSTID" => "remove the line (TOS, TTL and TXBUFFER are the globals taken)",
        _ => return None,
    })
}

/// `TTL <n>`: 1 to 255.
fn parse_ttl(cur: &mut Cursor) -> Result<u8, ScriptError> {
    let ttl = cur.number::<u8>("TTL (1-255)")?;
    if ttl == 0 {
        // The kernel refuses a hop limit of 0 (EINVAL): the flow would go out with the
        // default TTL while the script said otherwise.
        return Err(cur.err(&cur.last(), "TTL must be 1-255 (the kernel refuses 0)"));
    }
    Ok(ttl)
}

/// `SRC <port>`: 1 to 65535. MGEN reads `SRC 0` as "any port", which is SRC left out;
/// taken as a port, two TCP flows from "SRC 0" to one DST were refused as one connection.
fn parse_src(cur: &mut Cursor) -> Result<u16, ScriptError> {
    let port = cur.number::<u16>("SRC port (1-65535)")?;
    if port == 0 {
        return Err(cur.err(
            &cur.last(),
            "SRC 0 is no port: give 1-65535, or leave SRC out for a port the kernel picks (what MGEN's SRC 0 means)",
        ));
    }
    Ok(port)
}

/// Largest TXBUFFER, bytes: Linux caps a socket's send buffer at INT_MAX / 2 whatever its
/// limits, and the value goes to setsockopt as an int (a larger one wrapped around).
pub const MAX_TXBUFFER: u64 = (i32::MAX / 2) as u64;

/// `TXBUFFER <bytes>`: the socket's send buffer (SO_SNDBUF), 1 to [`MAX_TXBUFFER`]; what
/// this host grants is [`check_txbuffers`]'s to say. 0 was taken and the kernel gave its
/// smallest buffer (MGEN reads 0 as "leave the default", which is TXBUFFER left out).
fn parse_txbuffer(cur: &mut Cursor) -> Result<usize, ScriptError> {
    let t = cur.next("TXBUFFER bytes")?.to_string();
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(cur.err(&t, "TXBUFFER bytes must be a whole number"));
    }
    match t.parse::<u64>() {
        Ok(0) => Err(cur.err(
            &t,
            "TXBUFFER 0 is no send buffer: give its size in bytes (e.g. TXBUFFER 65536), or leave TXBUFFER out for the kernel's default",
        )),
        Ok(n) if n <= MAX_TXBUFFER => Ok(n as usize),
        _ => Err(cur.err(
            &t,
            format!("TXBUFFER must be at most {MAX_TXBUFFER} bytes (Linux caps a socket's send buffer there): give a smaller size"),
        )),
    }
}

/// Every TXBUFFER of the script, the global one and each ON's, against the send buffer the
/// kernel would grant: `granted(bytes)` is what a socket asking for `bytes` gets, in the
/// same unit (half of what SO_SNDBUF reads back: Linux doubles the request for its
/// bookkeeping), or None if that cannot be told. Linux caps a request at
/// net.core.wmem_max and raises one below its smallest buffer, both without an error, so
/// the flow would run with another buffer than the script says: one warning for each such
/// TXBUFFER, naming its line. Not refused: a script written for another host (MGEN's own
/// examples ask for more than a default Debian allows) still runs, as under MGEN.
pub fn check_txbuffers(
    script: &Script,
    mut granted: impl FnMut(usize) -> Option<usize>,
) -> Vec<ScriptError> {
    let global = script
        .globals
        .txbuffer
        .map(|b| (script.globals.txbuffer_line, None, b));
    let ons = script.events.iter().filter_map(|e| match &e.action {
        Action::On(spec) => spec.txbuffer.map(|b| (e.line, Some(e.flow), b)),
        _ => None,
    });
    let mut asked: HashMap<usize, Option<usize>> = HashMap::new();
    let mut warnings = Vec::new();
    for (line, flow, bytes) in global.into_iter().chain(ons) {
        let Some(got) = *asked.entry(bytes).or_insert_with(|| granted(bytes)) else {
            continue;
        };
        let whose = match flow {
            Some(f) => format!("flow {f}'s TXBUFFER {bytes}"),
            None => format!("the global TXBUFFER {bytes}"),
        };
        let why = if got < bytes {
            format!("{whose} is above this host's limit, net.core.wmem_max = {got}: the kernel caps it there; to send with the buffer asked for, raise the limit first (sysctl -w net.core.wmem_max={bytes})")
        } else if got > bytes {
            format!(
                "{whose} is below the kernel's smallest send buffer: it uses {got} bytes instead"
            )
        } else {
            continue;
        };
        warnings.push(ScriptError {
            line,
            token: bytes.to_string(),
            message: why,
        });
    }
    warnings
}

fn parse_event(cur: &mut Cursor, at_ns: u64) -> Result<Event, ScriptError> {
    let word = cur.next("ON, MOD or OFF")?.to_string();
    let upper = word.to_ascii_uppercase();
    let action_word = match upper.as_str() {
        "ON" | "MOD" | "OFF" => upper,
        "LISTEN" | "JOIN" | "LEAVE" | "IGNORE" => return Err(cur.err(
            &word,
            "reception events are not scripted: run `dualbench traffic sink --listen ADDR:PORT`",
        )),
        _ => return Err(cur.err(&word, "expected ON, MOD or OFF")),
    };
    let flow_tok = cur.next("a flow id")?.to_string();
    let flow: u32 = flow_tok.parse().map_err(|_| {
        cur.err(
            &flow_tok,
            "flow id must be a whole number from 0 to 4294967295",
        )
    })?;
    let action = match action_word.as_str() {
        "ON" => Action::On(parse_on(cur)?),
        "MOD" => Action::Mod(parse_mod(cur)?),
        _ => match cur.toks.get(cur.i) {
            None => Action::Off,
            Some(extra) => return Err(cur.err(extra, "OFF takes only a flow id")),
        },
    };
    Ok(Event {
        at_ns,
        line: cur.line,
        flow,
        action,
    })
}

fn parse_on(cur: &mut Cursor) -> Result<FlowSpec, ScriptError> {
    let proto_tok = cur.next("UDP or TCP")?.to_string();
    let proto = match proto_tok.to_ascii_uppercase().as_str() {
        "UDP" => Proto::Udp,
        "TCP" => Proto::Tcp,
        _ => return Err(cur.err(&proto_tok, "protocol must be UDP or TCP")),
    };
    let (mut dst, mut pattern) = (None, None);
    let mut spec_opts = Change::default();
    let (mut src_port, mut txbuffer) = (None, None);
    while !cur.done() {
        let tok = cur.next("an option")?.to_string();
        match tok.to_ascii_uppercase().as_str() {
            "DST" => dst = Some(parse_dst(cur)?),
            "SRC" => src_port = Some(parse_src(cur)?),
            "TXBUFFER" => txbuffer = Some(parse_txbuffer(cur)?),
            _ => {
                cur.i -= 1;
                parse_common_option(cur, &mut spec_opts, &mut pattern, ON_OPTIONS)?;
            }
        }
    }
    let last = cur.toks.last().cloned().unwrap_or_default();
    let dst = dst.ok_or_else(|| cur.err(&last, "ON needs DST <addr>/<port>"))?;
    let pattern = pattern.ok_or_else(|| {
        cur.err(
            &last,
            "ON needs a pattern: PERIODIC, POISSON, JITTER, BURST or CLONE",
        )
    })?;
    check_size(cur, proto, &pattern)?;
    Ok(FlowSpec {
        proto,
        dst,
        pattern,
        src_port,
        count: spec_opts.count,
        tos: spec_opts.tos,
        ttl: spec_opts.ttl,
        txbuffer,
    })
}

fn parse_mod(cur: &mut Cursor) -> Result<Change, ScriptError> {
    let mut change = Change::default();
    let mut pattern = None;
    while !cur.done() {
        if let Some(what) = cur
            .peek_upper()
            .filter(|w| ["DST", "SRC", "TXBUFFER"].contains(&w.as_str()))
        {
            let t = cur.toks[cur.i].clone();
            return Err(cur.err(
                &t,
                format!("MOD cannot change {what} (a flow keeps its socket): OFF this flow and ON a new one"),
            ));
        }
        parse_common_option(cur, &mut change, &mut pattern, MOD_OPTIONS)?;
    }
    change.pattern = pattern;
    Ok(change)
}

/// The options of an ON line and of a MOD line, as an unknown option's error lists them.
const ON_OPTIONS: &str =
    "DST, SRC, COUNT, TOS, TTL, TXBUFFER, PERIODIC, POISSON, JITTER, BURST, CLONE";
const MOD_OPTIONS: &str = "COUNT, TOS, TTL, PERIODIC, POISSON, JITTER, BURST, CLONE";

/// Options ON and MOD share: a pattern, COUNT, TOS, TTL (`supported` lists the line's).
fn parse_common_option(
    cur: &mut Cursor,
    change: &mut Change,
    pattern: &mut Option<Pattern>,
    supported: &str,
) -> Result<(), ScriptError> {
    let tok = cur.next("an option")?.to_string();
    match tok.to_ascii_uppercase().as_str() {
        "PERIODIC" | "POISSON" | "BURST" | "JITTER" | "CLONE" => {
            cur.i -= 1;
            *pattern = Some(parse_pattern(cur)?);
        }
        "COUNT" => change.count = Some(parse_count(cur)?),
        "TOS" => change.tos = Some(parse_tos(cur)?),
        "TTL" => change.ttl = Some(parse_ttl(cur)?),
        _ => return Err(cur.err(&tok, format!("unknown option (supported: {supported})"))),
    }
    Ok(())
}

/// `COUNT <n>`: 1 or more messages. MGEN's `COUNT -1` (no limit) is an ON without COUNT;
/// 0 was "COUNT must be at least 1" and -1 "must be a whole number", neither saying how
/// to ask for no limit.
fn parse_count(cur: &mut Cursor) -> Result<u64, ScriptError> {
    const AT_LEAST_ONE: &str = "COUNT must be 1 or more messages (for no limit, MGEN's COUNT -1, leave COUNT out of the ON)";
    let t = cur.next("COUNT")?.to_string();
    let whole = |d: &str| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit());
    let why = match t.parse::<u64>() {
        Ok(n) if n > 0 => return Ok(n),
        Ok(_) => AT_LEAST_ONE,
        Err(_) if t.strip_prefix('-').is_some_and(whole) => AT_LEAST_ONE,
        Err(_) if whole(&t) => "COUNT is too large",
        Err(_) => "COUNT must be a whole number",
    };
    Err(cur.err(&t, why))
}

fn parse_tos(cur: &mut Cursor) -> Result<u8, ScriptError> {
    let t = cur.next("a TOS value")?.to_string();
    let value = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u8::from_str_radix(hex, 16).ok(),
        None => t.parse::<u8>().ok(),
    };
    value.ok_or_else(|| cur.err(&t, "TOS must be 0-255 (decimal or 0x hex)"))
}

fn parse_dst(cur: &mut Cursor) -> Result<SocketAddr, ScriptError> {
    let t = cur.next("<addr>/<port>")?.to_string();
    parse_addr_port(&t).map_err(|m| cur.err(&t, m))
}

/// A destination in any form [`crate::addr`] reads (zones too; no link-local without one).
pub fn parse_addr_port(t: &str) -> Result<SocketAddr, String> {
    crate::addr::parse_destination(t)
}

fn parse_pattern(cur: &mut Cursor) -> Result<Pattern, ScriptError> {
    let tok = cur.next("a pattern")?.to_string();
    match tok.to_ascii_uppercase().as_str() {
        "PERIODIC" => {
            let (rate, size) = parse_rate_size(cur)?;
            Ok(Pattern::Periodic { rate, size })
        }
        "POISSON" => {
            let (rate, size) = parse_rate_size(cur)?;
            Ok(Pattern::Poisson { rate, size })
        }
        "JITTER" => parse_jitter(cur),
        "BURST" => parse_burst(cur),
        "CLONE" => parse_clone(cur),
        _ => Err(cur.err(
            &tok,
            "unknown pattern: use PERIODIC, POISSON, JITTER, BURST or CLONE",
        )),
    }
}

/// `CLONE [tcpdump <file> [<repeatCount>]]`: the file type is MGEN's only one (`tcpdump`:
/// a pcap or pcapng file); the repeat count is -1 (for ever, the default), 0 (once) or the
/// number of repeats after the first pass.
fn parse_clone(cur: &mut Cursor) -> Result<Pattern, ScriptError> {
    cur.expect("[")?;
    let kind = cur.next("a CLONE file type")?.to_string();
    if !kind.eq_ignore_ascii_case("tcpdump") {
        return Err(cur.err(
            &kind,
            "CLONE's file type must be tcpdump (a pcap or pcapng file, as tcpdump -w writes)",
        ));
    }
    let file = cur.next("a CLONE file name")?.to_string();
    if file == "]" || file == "[" {
        return Err(cur.err(&file, "CLONE needs a file name after tcpdump"));
    }
    let mut repeat = None;
    if cur.peek_upper().as_deref() == Some("[") {
        cur.i += 1;
        let t = cur.next("a CLONE repeat count")?.to_string();
        repeat = match t.parse::<i64>() {
            Ok(-1) => None,
            Ok(n) if n >= 0 => Some(n as u64),
            _ => {
                return Err(cur.err(
                    &t,
                    "CLONE's repeat count must be -1 (for ever), 0 (once) or the number of repeats after the first pass",
                ))
            }
        };
        cur.expect("]")?;
    }
    cur.expect("]")?;
    Ok(Pattern::Clone(Replay {
        file,
        repeat,
        line: cur.line,
        trace: None,
    }))
}

/// Highest message rate a pattern may ask for, per flow.
pub const MAX_RATE: f64 = 1e7;
/// Lowest message rate, per flow: one message per 1,000,000 s, the longest BURST interval.
/// A rate of 1e-300 was taken and sent one message at the ON and none after.
pub const MIN_RATE: f64 = 1e-6;
/// Shortest BURST interval and on-period, in seconds (1 µs). Each on-period starts with a
/// message, so bursts every 1 ns asked for 10^9 messages/s, and ones that round to 0 ns
/// kept the sender busy for a minute without sending (or noticing a stop).
pub const MIN_BURST_S: f64 = 1e-6;

/// A pattern's messages per second, [`MIN_RATE`] to [`MAX_RATE`].
fn parse_rate(cur: &mut Cursor) -> Result<f64, ScriptError> {
    let t = cur.next("rate (messages per second)")?.to_string();
    match t.parse::<f64>() {
        Ok(v) if (MIN_RATE..=MAX_RATE).contains(&v) => Ok(v),
        _ => Err(cur.err(
            &t,
            format!("rate (messages per second) must be a number from {MIN_RATE:.6} (one message per 1000000 s) to {MAX_RATE}"),
        )),
    }
}

fn parse_rate_size(cur: &mut Cursor) -> Result<(f64, u64), ScriptError> {
    cur.expect("[")?;
    let rate = parse_rate(cur)?;
    let size: u64 = cur.number("size (bytes)")?;
    cur.expect("]")?;
    Ok((rate, size))
}

/// `JITTER [<rate> <size> <fraction>]`: the fraction is above 0 and at most 0.5, as MGEN's
/// (its own example, `JITTER [1 1024 .5]`, takes 0.5).
fn parse_jitter(cur: &mut Cursor) -> Result<Pattern, ScriptError> {
    cur.expect("[")?;
    let rate = parse_rate(cur)?;
    let size: u64 = cur.number("size (bytes)")?;
    let fraction = cur.positive("JITTER fraction (of the interval)", 0.5)?;
    cur.expect("]")?;
    Ok(Pattern::Jitter {
        rate,
        size,
        fraction,
    })
}

fn parse_burst(cur: &mut Cursor) -> Result<Pattern, ScriptError> {
    cur.expect("[")?;
    let kind = cur.next("REGULAR or RANDOM")?.to_string();
    let random_interval = match kind.to_ascii_uppercase().as_str() {
        "REGULAR" => false,
        "RANDOM" => true,
        _ => return Err(cur.err(&kind, "BURST interval must be REGULAR or RANDOM")),
    };
    let interval_s = cur.burst_seconds("burst interval (s)", 1e6)?;
    let at = cur.toks.get(cur.i).cloned().unwrap_or_default();
    let inner = parse_pattern(cur)?;
    match inner {
        Pattern::Burst(_) => return Err(cur.err("BURST", "a BURST cannot contain another BURST")),
        Pattern::Clone(_) => {
            return Err(cur.err(
                &at,
                "a BURST cannot contain CLONE: a capture has its own times (give CLONE as the flow's pattern)",
            ))
        }
        _ => {}
    }
    let dur = cur.next("FIXED or EXP")?.to_string();
    let random_duration = match dur.to_ascii_uppercase().as_str() {
        "FIXED" => false,
        "EXP" | "EXPONENTIAL" => true,
        _ => return Err(cur.err(&dur, "BURST duration must be FIXED or EXP")),
    };
    let duration_s = cur.burst_seconds("burst duration (s)", 1e6)?;
    cur.expect("]")?;
    Ok(Pattern::Burst(Burst {
        random_interval,
        interval_s,
        inner: Box::new(inner),
        random_duration,
        duration_s,
    }))
}

fn check_size(cur: &Cursor, proto: Proto, pattern: &Pattern) -> Result<(), ScriptError> {
    if let Pattern::Clone(_) = pattern {
        // Its sizes are the capture's, checked when it is read.
        return Ok(());
    }
    let size = pattern.size();
    let max = if proto == Proto::Tcp {
        MAX_TCP_SIZE
    } else {
        MAX_SIZE
    };
    if size < MIN_SIZE || size > max {
        let msg = format!("{proto} message size must be {MIN_SIZE}..={max} bytes (dualbench's header takes {MIN_SIZE})");
        return Err(cur.err(&size.to_string(), msg));
    }
    Ok(())
}

/// Every MOD/OFF follows its flow's ON, a flow is ON once, and MOD keeps sizes in range.
fn check_flow_order(events: &[Event]) -> Result<(), ScriptError> {
    #[derive(PartialEq)]
    enum State {
        On(Proto),
        Off,
    }
    let mut state: HashMap<u32, State> = HashMap::new();
    for e in events {
        let at = |msg: String| ScriptError {
            line: e.line,
            token: e.flow.to_string(),
            message: msg,
        };
        match (&e.action, state.get(&e.flow)) {
            (Action::On(spec), None) => {
                state.insert(e.flow, State::On(spec.proto));
            }
            (Action::On(_), Some(_)) => {
                return Err(at(format!(
                    "flow {} is already used; give a new flow id",
                    e.flow
                )))
            }
            (Action::Mod(change), Some(State::On(proto))) => {
                if let Some(p) = &change.pattern {
                    let cur = Cursor {
                        toks: &[],
                        i: 0,
                        line: e.line,
                    };
                    check_size(&cur, *proto, p)?;
                }
            }
            (Action::Off, Some(State::On(_))) => {
                state.insert(e.flow, State::Off);
            }
            (_, Some(State::Off)) => {
                return Err(at(format!("flow {} is already OFF at this time", e.flow)))
            }
            (_, None) => return Err(at(not_on_yet(events, e))),
        }
    }
    Ok(())
}

/// Why a MOD or OFF finds its flow not on: no ON at all, or one that comes later in time
/// (events run in time order, whatever their order in the file) or, at the same time,
/// later in the file.
fn not_on_yet(events: &[Event], e: &Event) -> String {
    let later_on = events
        .iter()
        .find(|o| o.flow == e.flow && matches!(o.action, Action::On(_)));
    let secs = |ns: u64| ns as f64 / 1e9;
    match later_on {
        None => format!("flow {} has no earlier ON event", e.flow),
        Some(on) if on.at_ns == e.at_ns => format!(
            "flow {} is not on yet: its ON (line {}) is at the same time, {} s, but later in the script: put the ON first",
            e.flow,
            on.line,
            secs(on.at_ns)
        ),
        Some(on) => format!(
            "flow {} is not on yet: its ON (line {}) comes at {} s, after this event at {} s; a flow's MOD and OFF come at or after its ON",
            e.flow,
            on.line,
            secs(on.at_ns),
            secs(e.at_ns)
        ),
    }
}

#[cfg(test)]
#[path = "script_tests.rs"]
mod tests;
