//! From `dualbench run`'s flags to a checked engine [`Plan`]: targets resolved and
//! weighted, request bytes built, limits and load model settled. Every mistake becomes a
//! usage error naming the flag and what to do.

use crate::cli::RunCli;
use crate::engine::Plan;
use crate::http::RequestSpec;
use crate::target::{self, Candidate, FamilyChoice, Target};
use dualbench_common::{Failure, Family, Result};
use dualbench_pace::{Arrival, Interleave, WeightsError};
use std::net::IpAddr;

/// The settings a report needs besides what was measured.
#[derive(Debug, Clone)]
pub struct Settings {
    pub host: String,
    pub port: u16,
    pub path: String,
    pub method: String,
    pub requests_limit: Option<u64>,
    pub time_limit_s: Option<f64>,
}

/// The machine a plan is made for.
#[derive(Debug, Clone, Copy)]
pub struct Machine {
    pub cores: usize,
    /// The open-file limit each descriptor table may use (already raised).
    pub fd_limit: u64,
}

/// The most connections (`-c`) one run may ask for: its workers reserve room for them up
/// front.
pub const MAX_CONCURRENCY: usize = 1_000_000;
/// The most requests in flight on one keep-alive connection (`--pipeline`).
pub const MAX_PIPELINE: u64 = 1_000;
/// Open-loop rates (`--rate`), requests per second: from one every 1,000 s to ten million
/// a second (past any one machine's generator; above it, counting the slots that could not
/// be sent would itself outlast `-t`).
pub const MIN_RATE: f64 = 0.001;
pub const MAX_RATE: f64 = 10_000_000.0;

/// `-s`, seconds: from a millisecond (the timer's useful precision; below it every request
/// would time out) to a day (far past any answer worth waiting for; nanosecond deadlines
/// stay far from overflowing).
pub const MIN_TIMEOUT_S: f64 = 0.001;
pub const MAX_TIMEOUT_S: f64 = 86_400.0;
/// `-t`, seconds: from a millisecond to a year.
pub const MIN_TIME_LIMIT_S: f64 = 0.001;
pub const MAX_TIME_LIMIT_S: f64 = 31_536_000.0;

/// Descriptors a worker keeps besides its connections (poll, timer, stdio, ...).
pub const FD_RESERVE: u64 = 64;
/// The most workers chosen on their own to fit connections under the open-file limit.
const MAX_AUTO_WORKERS: usize = 256;

/// Connections a plan holds open at once at most: `-c` (each worker at most its share,
/// over all its targets).
pub fn connections_needed(concurrency: usize) -> u64 {
    concurrency as u64
}

/// Connections one worker may hold at most under the open-file limit.
pub fn connections_per_worker(fd_limit: u64) -> u64 {
    fd_limit.saturating_sub(FD_RESERVE).max(1)
}

/// Descriptor tables (workers) that `needed` connections take under the open-file limit.
fn tables_needed(needed: u64, machine: Machine) -> u64 {
    needed.div_ceil(connections_per_worker(machine.fd_limit))
}

/// Workers when `--workers` is not given: one per core, or one per two cores when every
/// target is a loopback address (the server then runs on these cores too, and a generator
/// that takes them all competes with it: against nginx on loopback on 2 cores, one worker
/// did the same requests/s as two at 0.85x the CPU per request, see docs/engine.md); more
/// when the connections would not fit in that many descriptor tables (each worker has its
/// own; see [`dualbench_common::fds`]).
fn default_workers(machine: Machine, needed: u64, loopback: bool) -> usize {
    let for_cores = if loopback {
        (machine.cores / 2).max(1)
    } else {
        machine.cores
    };
    let for_fds = tables_needed(needed, machine) as usize;
    for_cores.max(for_fds.min(MAX_AUTO_WORKERS))
}

/// Most workers that `n` slots keep busy: slots go to workers `block` at a time (in closed
/// loop a whole interleaving cycle, so each keeps the ratio; in open loop one), and a worker
/// past the last block would get none while
/// its share of `-c` went unused (`-n 6 -c 6 --ratio 5:1 --workers 2` ran 3 at a time, and
/// an address list of 1,000 with `-n 1000` ran on one worker's share of `-c`). Never fewer
/// than the descriptor tables the connections need.
fn workers_with_slots(
    max_slots: Option<u64>,
    block: usize,
    needed: u64,
    machine: Machine,
) -> usize {
    let Some(n) = max_slots else {
        return usize::MAX;
    };
    let for_fds = tables_needed(needed, machine);
    n.div_ceil(block.max(1) as u64).max(for_fds).max(1) as usize
}

/// Build the plan for these flags and URLs (URLs already chosen: the user's or the
/// built-in server's).
pub fn plan(cli: &RunCli, urls: &[String], machine: Machine) -> Result<(Plan, Settings)> {
    let parsed: Vec<target::Url> = urls
        .iter()
        .map(|u| target::parse_url(u))
        .collect::<Result<_>>()?;
    let mut cands = Vec::new();
    // Each URL's addresses, to name in the report the first URL the run sent requests to.
    let mut url_addrs = Vec::with_capacity(parsed.len());
    for url in &parsed {
        let addrs = target::resolve(url)?;
        url_addrs.push(addrs.clone());
        for addr in addrs {
            cands.push(Candidate {
                addr,
                zone: url.zone.clone(),
                weight: 1,
                host: url.host_header(),
                path: url.path.clone(),
            });
        }
    }
    if let Some(file) = &cli.address_list {
        let text = std::fs::read_to_string(file).map_err(|e| {
            Failure::usage(format!(
                "--address-list {}: cannot read address list ({e}): give a readable file",
                file.display()
            ))
        })?;
        let (port, path) = parsed
            .first()
            .map_or((80, "/"), |u| (u.port, u.path.as_str()));
        cands.extend(target::parse_address_list(
            &text,
            &file.display().to_string(),
            port,
            path,
        )?);
    }
    if cands.is_empty() {
        return Err(Failure::usage(
            "no URL and no --address-list: nothing to benchmark",
        ));
    }
    let family = match cli.family.as_str() {
        "4" | "ipv4" => FamilyChoice::V4,
        "6" | "ipv6" => FamilyChoice::V6,
        "both" | "46" => FamilyChoice::Both,
        other => {
            return Err(Failure::usage(format!(
                "bad --family '{other}': use 4, 6 or both"
            )))
        }
    };
    let ratio = cli.ratio.as_deref().map(target::parse_ratio).transpose()?;
    let targets = target::weigh(cands, family, ratio)?;
    if targets.len() > u16::MAX as usize {
        return Err(Failure::usage(
            "more than 65,535 target addresses: shorten the address list",
        ));
    }
    for f in Family::ALL {
        if targets.iter().any(|t| t.family == f) && !family_available(f) {
            return Err(Failure::usage(format!(
                "this machine has no {f} (cannot open an {f} socket): use --family {}",
                if f == Family::V4 { 6 } else { 4 }
            )));
        }
    }
    // Families first, then the addresses of each: the family ratio holds after every cycle
    // of the families alone (5 slots for 4:1), whatever the address list's weights.
    let by_family: Vec<(usize, u64)> = targets
        .iter()
        .map(|t| (t.family.index(), t.weight))
        .collect();
    let interleave = Interleave::grouped(&by_family)
        .map_err(|e| match e {
            WeightsError::AllZero => Failure::usage("every target has weight 0"),
            WeightsError::TooLong(_) => Failure::usage(format!(
                "the targets' weights make too long a cycle: {e}; use smaller address-list weights or --ratio terms"
            )),
        })?;
    let body = request_body(cli)?;
    check_request_words(cli)?;
    check_body_framing(cli, body.as_ref().map(|(b, _)| b.len()))?;
    let credentials = crate::ab_flags::credential_lines(&cli.cookies, &cli.auth, &cli.proxy_auth)?;
    let method = method(cli)?;
    let requests = build_requests(&targets, cli, &method, body, &credentials);
    let (arrival, open) = arrival(cli)?;
    let time_limit_s = cli.timelimit;
    if let Some(t) = time_limit_s {
        if !(MIN_TIME_LIMIT_S..=MAX_TIME_LIMIT_S).contains(&t) {
            return Err(Failure::usage(format!(
                "-t needs {MIN_TIME_LIMIT_S} to {MAX_TIME_LIMIT_S} seconds (a year)"
            )));
        }
    }
    let max_slots = match (cli.requests, time_limit_s) {
        (Some(0), _) => {
            return Err(Failure::usage(
                "-n needs at least 1 request: give -n 1 or more, or leave -n out and give -t for a time limit",
            ))
        }
        (Some(n), _) => Some(n),
        (None, Some(_)) => None,
        (None, None) => Some(1),
    };
    let default_c = if open { 100 } else { 1 };
    let mut concurrency = cli.concurrency.unwrap_or(default_c) as usize;
    if concurrency == 0 {
        return Err(Failure::usage(
            "-c needs at least 1: give -c 1 or more (the requests in flight at once)",
        ));
    }
    if concurrency > MAX_CONCURRENCY {
        return Err(Failure::usage(format!(
            "-c {concurrency} is more than {MAX_CONCURRENCY}: one process holds at most that many connections (the open-file limit and the source ports give out well before)"
        )));
    }
    if !open {
        if let Some(n) = max_slots {
            concurrency = concurrency.min(n as usize);
        }
    }
    if cli.pipeline == 0 {
        return Err(Failure::usage(
            "--pipeline needs at least 1: give --pipeline 1 or more (1 sends one request at a time on each connection)",
        ));
    }
    if cli.pipeline > MAX_PIPELINE {
        return Err(Failure::usage(format!(
            "--pipeline {} is more than {MAX_PIPELINE} requests in flight on one connection",
            cli.pipeline
        )));
    }
    if cli.pipeline > 1 && cli.http10 {
        return Err(Failure::usage("--pipeline needs HTTP/1.1: drop --http10"));
    }
    if cli.pipeline > 1 && !cli.keepalive {
        return Err(Failure::usage("--pipeline needs keep-alive: add -k"));
    }
    if !(MIN_TIMEOUT_S..=MAX_TIMEOUT_S).contains(&cli.timeout) {
        return Err(Failure::usage(format!(
            "-s needs {MIN_TIMEOUT_S} to {MAX_TIMEOUT_S} seconds (a day)"
        )));
    }
    let needed = connections_needed(concurrency);
    let loopback = targets.iter().all(|t| t.addr.ip().is_loopback());
    if cli.workers == Some(0) {
        return Err(Failure::usage(
            "--workers needs at least 1: give --workers 1 or more, or leave it out for the default",
        ));
    }
    let workers = cli
        .workers
        .unwrap_or_else(|| default_workers(machine, needed, loopback))
        .clamp(1, concurrency)
        .min(workers_with_slots(
            max_slots,
            // Open loop hands slots to workers one at a time (closed loop, a cycle).
            if open { 1 } else { interleave.cycle().len() },
            needed,
            machine,
        ));
    let bind = match &cli.bind {
        Some(s) => target::parse_bind(s)?,
        None => [Vec::new(), Vec::new()],
    };
    check_local(&bind)?;
    let first = &targets[0];
    // ab's "Server Hostname" is the first URL's; with `--family` or `--ratio` leaving that
    // URL's addresses out, it is the first URL that has a target in the run.
    let shown = parsed
        .iter()
        .zip(&url_addrs)
        .find(|(_, addrs)| addrs.iter().any(|a| targets.iter().any(|t| t.addr == *a)))
        .map(|(u, _)| u);
    let settings = Settings {
        host: shown.map_or_else(
            // An address list alone: its first address, with the zone it was named with.
            || match &first.zone {
                Some(zone) => format!("{}%{zone}", first.addr.ip()),
                None => first.addr.ip().to_string(),
            },
            |u| u.written_host.clone(),
        ),
        port: shown.map_or(first.addr.port(), |u| u.port),
        path: first.path.clone(),
        method: method.clone(),
        requests_limit: max_slots,
        time_limit_s,
    };
    let plan = Plan {
        targets,
        interleave,
        requests,
        // Methods are case-sensitive (RFC 9110 9.1): `-m head` is another method, which
        // a server answers with a body (nginx: 400, the built-in server: its page).
        head: method == "HEAD",
        concurrency,
        pipeline: cli.pipeline as usize,
        keepalive: cli.keepalive,
        arrival,
        max_slots,
        max_ns: time_limit_s.map(|t| (t * 1e9) as u64),
        timeout_ns: (cli.timeout * 1e9) as u64,
        workers,
        bind,
        keep_records: cli.records.is_some(),
        record_batches: None,
        verbosity: cli.verbosity,
        variable_length: cli.variable_length,
        ab_samples: cli.csv.is_some() || cli.gnuplot.is_some(),
    };
    Ok((plan, settings))
}

fn request_body(cli: &RunCli) -> Result<Option<(Vec<u8>, String)>> {
    let file = match (&cli.post_file, &cli.put_file) {
        (Some(_), Some(_)) => {
            return Err(Failure::usage(
                "-p and -u cannot be used together: give one (-p sends POST, -u PUT)",
            ))
        }
        // ab refuses it too: a HEAD request carries no body.
        (Some(_), None) | (None, Some(_)) if cli.head => {
            return Err(Failure::usage(
                "-i (HEAD) sends no body: drop -p/-u, or drop -i to send it",
            ))
        }
        (Some(f), None) | (None, Some(f)) => f,
        (None, None) => return Ok(None),
    };
    let flag = if cli.post_file.is_some() { "-p" } else { "-u" };
    let body = read_body(file, flag)?;
    Ok(Some((body, cli.content_type.clone())))
}

/// The request method: `-m`, else HEAD with `-i`, POST with `-p`, PUT with `-u`, else GET.
/// `-i` with `-m` of another method asks for two methods at once (ab refuses it too:
/// "Cannot mix HEAD with other methods"); `-i -m POST` sent POST without a word.
fn method(cli: &RunCli) -> Result<String> {
    match (&cli.method, cli.head) {
        (Some(m), true) if m != "HEAD" => Err(Failure::usage(format!(
            "-i (HEAD) and -m {} ask for two methods: drop one",
            m.escape_default()
        ))),
        (Some(m), _) => Ok(m.clone()),
        (None, true) => Ok("HEAD".into()),
        (None, false) if cli.post_file.is_some() => Ok("POST".into()),
        (None, false) if cli.put_file.is_some() => Ok("PUT".into()),
        (None, false) => Ok("GET".into()),
    }
}

/// The largest `-p`/`-u` body: every target's request is built once with it, in memory.
const MAX_BODY: u64 = 256 << 20;

/// Read a request body of at most [`MAX_BODY`] bytes: `-p /dev/zero` (or a huge file)
/// grew the process by gigabytes without a word before the run began.
fn read_body(file: &std::path::Path, flag: &str) -> Result<Vec<u8>> {
    use std::io::Read;
    let cannot = |e: std::io::Error| {
        Failure::usage(format!(
            "{flag} {}: cannot read request body ({e}): give a readable file",
            file.display()
        ))
    };
    let mut body = Vec::new();
    std::fs::File::open(file)
        .map_err(cannot)?
        .take(MAX_BODY + 1)
        .read_to_end(&mut body)
        .map_err(cannot)?;
    if body.len() as u64 > MAX_BODY {
        return Err(Failure::usage(format!(
            "{flag} {}: the body is larger than {} MiB, the most dualbench sends (every request carries it, built once in memory)",
            file.display(),
            MAX_BODY >> 20
        )));
    }
    Ok(body)
}

/// `-H` lines are `Name: value` with a token for a name, `-m` is a token, and none of
/// them nor `-T` carries a line break: otherwise every request would be one the server must refuse
/// (400), and the run would measure that.
fn check_request_words(cli: &RunCli) -> Result<()> {
    // RFC 9110's tchar.
    let token = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
    };
    if let Some(m) = &cli.method {
        if !token(m) {
            return Err(Failure::usage(format!(
                "bad -m '{}': a method is one word, such as GET, POST or PURGE",
                m.escape_default()
            )));
        }
    }
    if cli
        .content_type
        .bytes()
        .any(|b| matches!(b, b'\r' | b'\n' | 0))
    {
        return Err(Failure::usage(format!(
            "bad -T '{}': a content type is one line, such as application/json",
            cli.content_type.escape_default()
        )));
    }
    for h in &cli.headers {
        let well_formed = h.split_once(':').is_some_and(|(name, value)| {
            token(name) && !value.bytes().any(|b| matches!(b, b'\r' | b'\n' | 0))
        });
        if !well_formed {
            return Err(Failure::usage(format!(
                "bad -H '{}': a header is one line 'Name: value' (one -H per header)",
                h.escape_default()
            )));
        }
    }
    Ok(())
}

/// With a `-p`/`-u` body dualbench frames it itself (`Content-Length`): a `-H` with a
/// framing header of its own would send two lengths, or a length and a chunked coding the
/// body does not have, which a server must refuse (400) for every request. Without a body,
/// such a header (but `Content-Length: 0`) announces one that is never sent.
fn check_body_framing(cli: &RunCli, body_len: Option<usize>) -> Result<()> {
    let framing = |h: &&String| {
        h.split_once(':').is_some_and(|(name, value)| {
            name.eq_ignore_ascii_case("transfer-encoding")
                || (name.eq_ignore_ascii_case("content-length")
                    // Without a body, `Content-Length: 0` says just that.
                    && (body_len.is_some() || value.trim().parse::<u64>() != Ok(0)))
        })
    };
    match (cli.headers.iter().find(framing), body_len) {
        (Some(h), Some(len)) => {
            let flag = if cli.post_file.is_some() { "-p" } else { "-u" };
            Err(Failure::usage(format!(
                "-H '{h}' cannot go with {flag}: dualbench sends the body's own length \
                 (Content-Length: {len}); drop this -H"
            )))
        }
        // The server waits for a body that never comes: every request was a TIMEOUT
        // after -s (30 s by default), and the run measured nothing else.
        (Some(h), None) => Err(Failure::usage(format!(
            "-H '{h}' announces a request body, but there is none: give it with -p or -u \
             (dualbench then frames it), or drop this -H"
        ))),
        (None, _) => Ok(()),
    }
}

/// A warning for `--bind` addresses of a family the run has no target in: they go unused,
/// which a run meant to spread its connections over them would not notice otherwise.
pub fn unused_bind(plan: &Plan) -> Option<String> {
    let unused: Vec<String> = Family::ALL
        .into_iter()
        .filter(|f| !plan.targets.iter().any(|t| t.family == *f))
        .flat_map(|f| plan.bind[f.index()].iter().map(|ip| ip.to_string()))
        .collect();
    (!unused.is_empty()).then(|| {
        format!(
            "warning: --bind {}: no target of this run is of that family, so these source addresses go unused",
            unused.join(",")
        )
    })
}

/// A warning when the targets ask for different paths (URLs, or address-list lines, of
/// other paths): the reports name the first's alone (ab's Document Path, `target.path`),
/// and a body of another length than the first response's is a Length failure (ab takes
/// one URL; `dualbench merge` refuses runs of different paths as different benchmarks).
pub fn mixed_paths(plan: &Plan) -> Option<String> {
    let mut paths: Vec<&str> = Vec::new();
    for t in &plan.targets {
        if !paths.contains(&t.path.as_str()) {
            paths.push(&t.path);
        }
    }
    (paths.len() > 1).then(|| {
        format!(
            "warning: the targets ask for {} different paths ({}): the report's Document Path is {}, and a body of another length than the first response's is a Length failure (-l accepts them); benchmark one path per run to compare them",
            paths.len(),
            paths.join(", "),
            paths[0]
        )
    })
}

/// A warning for keep-alive when a worker's slots go to more targets than it has
/// connections: they cannot stay open to each, so connections are closed and opened
/// between targets (a worker holds at most its share of `-c`), which a keep-alive run
/// would not expect.
pub fn few_connections(plan: &Plan) -> Option<String> {
    let w = plan.workers;
    let cycle = plan.interleave.cycle();
    // A worker's slots: whole cycles in closed loop, every w-th slot in open loop, which
    // are the cycle's positions p with p = index (mod gcd(cycle, w)).
    let stride = if plan.arrival == Arrival::Closed {
        1
    } else {
        gcd(cycle.len(), w)
    };
    let short = (0..w).find_map(|index| {
        let share = plan.concurrency / w + usize::from(index < plan.concurrency % w);
        let mut seen = vec![false; plan.targets.len()];
        for &t in cycle.iter().skip(index % stride).step_by(stride) {
            seen[t] = true;
        }
        let targets = seen.iter().filter(|&&s| s).count();
        (share < targets).then_some((share, targets))
    });
    let (share, targets) = short.filter(|_| plan.keepalive)?;
    let workers = match w {
        1 => String::new(),
        w => format!(" in a worker of {w}"),
    };
    Some(format!(
        "warning: -k over {targets} targets with {share} connection{}{workers}: they cannot \
         stay open to every target, so some requests open a new one; give -c {} or more to \
         keep one open to each",
        if share == 1 { "" } else { "s" },
        targets * w
    ))
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Every `--bind` source address must be one of this host's: the kernel refuses the
/// others (EADDRNOTAVAIL), which mid-run would read like a shortage of ports. Checked the
/// way the workers bind them. A link-local IPv6 source needs its destination's zone, so it
/// is left to the run.
fn check_local(bind: &[Vec<IpAddr>; 2]) -> Result<()> {
    let link_local = |ip: &IpAddr| matches!(ip, IpAddr::V6(v6) if v6.is_unicast_link_local());
    for &ip in bind.iter().flatten().filter(|ip| !link_local(ip)) {
        match crate::engine::bound_source(ip, 0) {
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::EADDRNOTAVAIL) => {
                return Err(Failure::usage(format!(
                    "--bind {ip} is not an address of this host: give addresses from 'ip address', or add it there first"
                )))
            }
            Err(e) => return Err(Failure::usage(format!("--bind {ip}: cannot bind to it: {e}"))),
        }
    }
    Ok(())
}

fn build_requests(
    targets: &[Target],
    cli: &RunCli,
    method: &str,
    body: Option<(Vec<u8>, String)>,
    credentials: &[String],
) -> Vec<Vec<u8>> {
    targets
        .iter()
        .map(|t| {
            RequestSpec {
                method: method.to_string(),
                path: t.path.clone(),
                host: t.host.clone(),
                keepalive: cli.keepalive,
                http10: cli.http10,
                headers: cli.headers.clone(),
                credentials: credentials.to_vec(),
                body: body.clone(),
            }
            .to_bytes()
        })
        .collect()
}

fn arrival(cli: &RunCli) -> Result<(Arrival, bool)> {
    let Some(rate) = cli.rate else {
        if cli.arrival.is_some() {
            return Err(Failure::usage("--arrival needs --rate"));
        }
        if cli.seed.is_some() {
            return Err(Failure::usage(
                "--seed needs --rate and --arrival poisson (nothing else is random)",
            ));
        }
        return Ok((Arrival::Closed, false));
    };
    if !(MIN_RATE..=MAX_RATE).contains(&rate) {
        return Err(Failure::usage(format!(
            "--rate needs {MIN_RATE} to {MAX_RATE} requests per second"
        )));
    }
    match cli.arrival.as_deref().unwrap_or("constant") {
        "constant" if cli.seed.is_some() => Err(Failure::usage(
            "--seed needs --arrival poisson: constant arrivals are evenly spaced",
        )),
        "constant" => Ok((Arrival::Constant { rate }, true)),
        "poisson" => Ok((
            Arrival::Poisson {
                rate,
                seed: cli.seed.unwrap_or(1),
            },
            true,
        )),
        other => Err(Failure::usage(format!(
            "bad --arrival '{other}': use constant or poisson"
        ))),
    }
}

/// Whether this machine can open sockets of family `f` at all.
pub fn family_available(f: Family) -> bool {
    let domain = match f {
        Family::V4 => socket2::Domain::IPV4,
        Family::V6 => socket2::Domain::IPV6,
    };
    socket2::Socket::new(domain, socket2::Type::DGRAM, None).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine(cores: usize, fd_limit: u64) -> Machine {
        Machine { cores, fd_limit }
    }

    #[test]
    fn workers_leave_half_the_cores_to_a_server_on_loopback() {
        assert_eq!(default_workers(machine(8, 20_000), 100, false), 8);
        assert_eq!(default_workers(machine(8, 20_000), 100, true), 4);
        assert_eq!(default_workers(machine(2, 20_000), 50, true), 1);
        assert_eq!(default_workers(machine(1, 20_000), 50, true), 1);
    }

    #[test]
    fn bind_addresses_of_a_family_without_targets_are_named() {
        let run = |args: &[&str]| {
            let cli = RunCli::try_parse_args(["run"].iter().chain(args).copied()).unwrap();
            plan(&cli, &cli.urls, machine(2, 20_000)).unwrap().0
        };
        let p = run(&["--bind", "127.0.0.1,::1", "http://[::1]:1/"]);
        assert_eq!(
            unused_bind(&p).as_deref(),
            Some("warning: --bind 127.0.0.1: no target of this run is of that family, so these source addresses go unused")
        );
        let p = run(&[
            "--bind",
            "127.0.0.1,::1",
            "http://[::1]:1/",
            "http://127.0.0.1:1/",
        ]);
        assert_eq!(unused_bind(&p), None);
    }

    #[test]
    fn keep_alive_over_more_targets_than_connections_is_warned_of() {
        // -n: ab's default of one request would take -c down to 1.
        let run = |args: &str| {
            let args: Vec<&str> = args.split(' ').collect();
            let cli =
                RunCli::try_parse_args(["run", "-n", "100"].iter().chain(&args).copied()).unwrap();
            plan(&cli, &cli.urls, machine(2, 20_000)).unwrap().0
        };
        let (v4, v6) = ("http://127.0.0.1:1/", "http://[::1]:1/");
        let p = run(&format!("-k -c 1 {v4} {v6}"));
        assert_eq!(
            few_connections(&p).as_deref(),
            Some("warning: -k over 2 targets with 1 connection: they cannot stay open to every target, so some requests open a new one; give -c 2 or more to keep one open to each")
        );
        let p = run(&format!("-k -c 3 --workers 2 {v4} {v6}"));
        assert_eq!(
            few_connections(&p).as_deref(),
            Some("warning: -k over 2 targets with 1 connection in a worker of 2: they cannot stay open to every target, so some requests open a new one; give -c 4 or more to keep one open to each")
        );
        for fine in [
            format!("-k -c 2 --workers 1 {v4} {v6}"),
            format!("-k -c 1 {v4}"),
            format!("-c 1 {v4} {v6}"),
            // Open loop hands worker 0 every IPv4 slot and worker 1 every IPv6 one.
            format!("-k -c 2 --workers 2 --rate 10 {v4} {v6}"),
        ] {
            assert_eq!(few_connections(&run(&fine)), None, "{fine}");
        }
    }

    /// `--family 6` over an IPv4 URL and an IPv6 one sent nothing to the first, yet the
    /// report's "Server Hostname" (and the JSON's `target.host`) named it.
    #[test]
    fn the_report_names_the_first_url_the_run_sends_to() {
        let settings_of = |args: &[&str]| {
            let cli = RunCli::try_parse_args(["run"].iter().chain(args).copied()).unwrap();
            plan(&cli, &cli.urls, machine(2, 20_000)).unwrap().1
        };
        let (v4, v6) = ("http://127.0.0.1:1/a", "http://[::1]:2/b");
        let s = settings_of(&["--family", "6", v4, v6]);
        assert_eq!((s.host.as_str(), s.port, s.path.as_str()), ("::1", 2, "/b"));
        let s = settings_of(&["--ratio", "0:1", v6, v4]);
        assert_eq!(
            (s.host.as_str(), s.port, s.path.as_str()),
            ("127.0.0.1", 1, "/a")
        );
        let s = settings_of(&[v4, v6]);
        assert_eq!(
            (s.host.as_str(), s.port, s.path.as_str()),
            ("127.0.0.1", 1, "/a")
        );
        // An address list alone names its first address, zone and all (it lost the zone).
        let dir = std::env::temp_dir().join(format!("dualbench-shown-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let list = dir.join("list.txt");
        std::fs::write(&list, "[fe80::1%lo]:8080\n127.0.0.1:1\n").unwrap();
        let s = settings_of(&["--address-list", list.to_str().unwrap()]);
        assert_eq!((s.host.as_str(), s.port), ("fe80::1%lo", 8080));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `-p /dev/zero` read until memory ran out; a body is at most 256 MiB.
    #[test]
    fn a_body_past_the_limit_is_refused_without_reading_it_all() {
        let e = read_body(std::path::Path::new("/dev/zero"), "-p").unwrap_err();
        assert_eq!(e.kind, dualbench_common::FailureKind::Usage);
        assert_eq!(
            e.message,
            "-p /dev/zero: the body is larger than 256 MiB, the most dualbench sends (every request carries it, built once in memory)"
        );
        assert_eq!(
            read_body(std::path::Path::new("/dev/null"), "-u").unwrap(),
            Vec::<u8>::new()
        );
    }

    /// `-m head` is not HEAD: its answers have bodies. Taken for HEAD, a body went
    /// uncounted and, on a kept-alive connection, was read as the next response.
    #[test]
    fn only_head_in_capitals_is_head() {
        let head_of = |args: &[&str]| {
            let cli = RunCli::try_parse_args(["run"].iter().chain(args).copied()).unwrap();
            plan(&cli, &cli.urls, machine(2, 20_000)).unwrap().0.head
        };
        let url = "http://127.0.0.1:1/";
        assert!(head_of(&["-i", url]));
        assert!(head_of(&["-m", "HEAD", url]));
        assert!(!head_of(&["-m", "head", url]));
        assert!(!head_of(&["-m", "Head", url]));
        assert!(!head_of(&[url]));
    }

    /// `-i -m POST` dropped `-i` without a word and sent POST; ab refuses the mix.
    #[test]
    fn head_with_another_method_is_a_usage_error() {
        let url = "http://127.0.0.1:1/";
        for args in [["-i", "-m", "POST", url], ["-m", "POST", "-i", url]] {
            let cli = RunCli::try_parse_args(["run"].iter().chain(&args).copied()).unwrap();
            let e = plan(&cli, &cli.urls, machine(2, 20_000)).unwrap_err();
            assert_eq!(e.kind, dualbench_common::FailureKind::Usage);
            assert_eq!(
                e.message,
                "-i (HEAD) and -m POST ask for two methods: drop one"
            );
        }
        let cli = RunCli::try_parse_args(["run", "-i", "-m", "HEAD", url]).unwrap();
        assert!(plan(&cli, &cli.urls, machine(2, 20_000)).unwrap().0.head);
    }

    /// `-p` with `-H 'Content-Length: 3'` sent both lengths, and the server answered 400 to
    /// every request; with `-H 'Transfer-Encoding: chunked'` a body that is not chunked.
    #[test]
    fn a_framing_header_with_a_body_is_a_usage_error() {
        let dir = std::env::temp_dir().join(format!("dualbench-framing-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let body = dir.join("body.txt");
        std::fs::write(&body, "hello=world&x=1").unwrap();
        let body = body.to_str().unwrap();
        let plan_of = |args: &[&str]| {
            let cli = RunCli::try_parse_args(["run"].iter().chain(args).copied()).unwrap();
            plan(&cli, &cli.urls, machine(2, 20_000)).map(|(p, _)| p)
        };
        let url = "http://127.0.0.1:1/";
        let e = plan_of(&["-p", body, "-H", "content-length: 3", url]).unwrap_err();
        assert_eq!(
            e.message,
            "-H 'content-length: 3' cannot go with -p: dualbench sends the body's own length (Content-Length: 15); drop this -H"
        );
        assert_eq!(e.kind, dualbench_common::FailureKind::Usage);
        let e = plan_of(&["-u", body, "-H", "Transfer-Encoding: chunked", url]).unwrap_err();
        assert_eq!(
            e.message,
            "-H 'Transfer-Encoding: chunked' cannot go with -u: dualbench sends the body's own length (Content-Length: 15); drop this -H"
        );
        // Without a body the header is the user's to send (a POST of nothing that a
        // server wants framed: `-m POST -H 'Content-Length: 0'`).
        let p = plan_of(&["-m", "POST", "-H", "Content-Length: 0", url]).unwrap();
        let request = String::from_utf8(p.requests[0].clone()).unwrap();
        assert_eq!(request.matches("Content-Length").count(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `-H 'Content-Length: 5'` without `-p`/`-u` announced a body never sent: the server
    /// waited for it, and every request ended a TIMEOUT after `-s` (30 s each).
    #[test]
    fn a_framing_header_without_a_body_is_a_usage_error() {
        let plan_of = |args: &[&str]| {
            let cli = RunCli::try_parse_args(["run"].iter().chain(args).copied()).unwrap();
            plan(&cli, &cli.urls, machine(2, 20_000)).map(|(p, _)| p)
        };
        let url = "http://127.0.0.1:1/";
        for h in ["Content-Length: 5", "transfer-encoding: chunked"] {
            let e = plan_of(&["-H", h, url]).unwrap_err();
            assert_eq!(e.kind, dualbench_common::FailureKind::Usage);
            assert_eq!(
                e.message,
                format!("-H '{h}' announces a request body, but there is none: give it with -p or -u (dualbench then frames it), or drop this -H")
            );
        }
        assert!(plan_of(&["-H", "Content-Length:  0 ", url]).is_ok());
        assert!(plan_of(&["-H", "Content-Length: 00", url]).is_ok());
    }

    #[test]
    fn workers_are_no_more_than_the_cycles_of_a_counted_run() {
        let m = machine(8, 20_000);
        // 5:1 is a cycle of 6 slots: -n 6 is one cycle, for one worker.
        assert_eq!(workers_with_slots(Some(6), 6, 6, m), 1);
        assert_eq!(workers_with_slots(Some(7), 6, 7, m), 2);
        assert_eq!(workers_with_slots(Some(1_000), 1_000, 1_000, m), 1);
        assert_eq!(workers_with_slots(None, 6, 100, m), usize::MAX);
        // The connections still need their descriptor tables.
        assert_eq!(workers_with_slots(Some(50_000), 50_000, 50_000, m), 3);
    }

    /// `--ratio 4:1` over an address list whose addresses have uneven weights: the families
    /// split exactly 4:1 at every multiple of 5 slots (the flat round-robin over the
    /// addresses' weights gave `-n 1000` 799:201).
    #[test]
    fn a_ratio_over_an_address_list_is_exact_per_family() {
        let dir = std::env::temp_dir().join(format!("dualbench-ratio-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let list = dir.join("list.txt");
        std::fs::write(
            &list,
            "127.0.0.1 6\n127.0.0.2 6\n127.0.0.3 2\n[::1]:80 5\n[::1]:81 8\n",
        )
        .unwrap();
        let args = ["run", "-n", "1000", "--ratio", "4:1", "--address-list"];
        let cli =
            RunCli::try_parse_args(args.iter().copied().chain([list.to_str().unwrap()])).unwrap();
        let (plan, _) = plan(&cli, &cli.urls, machine(2, 20_000)).unwrap();
        std::fs::remove_dir_all(&dir).ok();
        let v6 = |n: u64| -> u64 {
            (0..plan.targets.len())
                .filter(|&i| plan.targets[i].family == Family::V6)
                .map(|i| plan.interleave.count(i, n))
                .sum()
        };
        assert_eq!(v6(1000), 800);
        let cycle = plan.interleave.cycle().len() as u64;
        for c in 1..=cycle / 5 {
            assert_eq!(v6(5 * c), 4 * c, "after {} slots", 5 * c);
        }
        // Within IPv4, the addresses still share 6:6:2.
        let per_target: Vec<u64> = (0..3).map(|i| plan.interleave.count(i, cycle)).collect();
        assert_eq!(per_target[0], per_target[1]);
        assert_eq!(per_target[0], 3 * per_target[2]);
    }

    #[test]
    fn workers_grow_to_fit_connections_under_the_open_file_limit() {
        // 50,000 connections under a limit of 20,000 per table: 3 tables.
        assert_eq!(default_workers(machine(2, 20_000), 50_000, true), 3);
        assert_eq!(default_workers(machine(2, 20_000), 50_000, false), 3);
        assert_eq!(default_workers(machine(4, 20_000), 50_000, false), 4);
        // Never more than the cap, however low the limit.
        assert_eq!(
            default_workers(machine(2, 100), 1_000_000, false),
            MAX_AUTO_WORKERS
        );
    }
}
