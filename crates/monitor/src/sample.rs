//! One sample of the time series: the rates between two [`Snapshot`]s (deltas divided by
//! the interval) and the gauges of the later one. Pure: the clock readings, the clock-tick
//! rate and the page size come in as arguments.

use crate::diag::STATE_NAMES;
use crate::procfs::process::{ProcIo, ProcStat, Switches};
use crate::procfs::{system::CpuTimes, Counters};
use crate::snapshot::{ProcessSnapshot, Snapshot};
use dualbench_common::Family;
use serde::Serialize;
use std::collections::BTreeMap;

/// Figures by name: counters become `<name>_per_s`, gauges keep their name.
pub type Figures = BTreeMap<String, f64>;

/// Where a sample's CPU time went, in percent of that CPU (`"all"`: of all CPUs together).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct CpuUse {
    pub user: f64,
    pub system: f64,
    pub irq: f64,
    pub softirq: f64,
    pub iowait: f64,
    pub steal: f64,
    pub idle: f64,
}

/// One watched process over the interval. `cpu_pct` is in percent of one core. The
/// faults, CPU and storage I/O are the whole process's (every thread's, those that ended
/// too: the kernel sums them); a process first seen during the interval counts them from
/// zero.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProcessUse {
    pub pid: u32,
    pub name: String,
    /// The root pid of the `--tree` this process was found in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tree: Option<u32>,
    pub alive: bool,
    pub cpu_pct: f64,
    pub user_pct: f64,
    pub system_pct: f64,
    pub rss_kb: u64,
    /// Virtual memory size (pidstat -r's `VSZ`), kB.
    pub vsz_kb: u64,
    /// Minor page faults per second (pidstat -r's `minflt/s`): pages mapped without a
    /// read from storage (first touch of new memory, a page already in the page cache).
    pub minflt_per_s: f64,
    /// Major page faults per second (pidstat -r's `majflt/s`): pages read from storage.
    pub majflt_per_s: f64,
    pub threads: u64,
    pub fds: u64,
    /// Voluntary context switches per second (pidstat's `cswch/s`), of all its threads:
    /// see [`switches`].
    pub cswch_per_s: f64,
    /// Involuntary context switches per second (pidstat's `nvcswch/s`), of all its threads.
    pub nvcswch_per_s: f64,
    /// kB per second it caused to be read from storage (pidstat -d's `kB_rd/s`); `None`
    /// (JSON `null`, an empty CSV cell) when `/proc/PID/io` could not be read.
    pub kb_rd_per_s: Option<f64>,
    /// kB per second it caused to be written to storage (pidstat -d's `kB_wr/s`), counted
    /// as the page cache takes them, not when they are written back; `None` likewise.
    pub kb_wr_per_s: Option<f64>,
    /// kB per second of those writes cancelled before they reached storage (a dirty file
    /// truncated or deleted first; pidstat -d's `kB_ccwr/s`); `None` likewise.
    pub kb_ccwr_per_s: Option<f64>,
}

/// Processes together: those of one name (every nginx worker, every apache2 child), or
/// of one tree (a server and all its children, whatever their names).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct GroupUse {
    pub processes: u64,
    pub cpu_pct: f64,
    pub rss_kb: u64,
    pub vsz_kb: u64,
    pub minflt_per_s: f64,
    pub majflt_per_s: f64,
    pub threads: u64,
    pub fds: u64,
    pub cswch_per_s: f64,
    pub nvcswch_per_s: f64,
    /// The storage I/O of its processes summed; `None` when one of them could not be read
    /// (a sum that leaves a member out is not the group's).
    pub kb_rd_per_s: Option<f64>,
    pub kb_wr_per_s: Option<f64>,
    pub kb_ccwr_per_s: Option<f64>,
}

/// One line of the monitor's output.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sample {
    /// `CLOCK_MONOTONIC` at the end of the interval (the clock `run` stamps its records with).
    pub monotonic_ns: u64,
    pub unix_ns: u64,
    pub interval_s: f64,
    pub cpu: BTreeMap<String, CpuUse>,
    /// `ctxt_per_s`, `intr_per_s`, `softirq_per_s`, `processes_per_s`, `procs_running`, `procs_blocked`.
    pub system: Figures,
    /// meminfo in kB and vmstat paging rates: `pgpgin`/`pgpgout` in kB/s (the kernel counts
    /// them in kB, as sar's `pgpgin/s`), the swap and fault counts in pages or faults per s.
    pub memory: Figures,
    pub disks: BTreeMap<String, Figures>,
    pub interfaces: BTreeMap<String, Figures>,
    /// `ipv4` from snmp `Ip:`, `ipv6` from snmp6 `Ip6`.
    pub ip: BTreeMap<String, Figures>,
    /// `ipv4` from snmp `Icmp:`, `ipv6` from snmp6 `Icmp6` (without the per-type
    /// `InTypeN`/`OutTypeN` counts, which the kernel lists only once they are above 0).
    pub icmp: BTreeMap<String, Figures>,
    /// `both` from snmp `Tcp:` (the kernel adds IPv4 and IPv6 there); `ipv4` and `ipv6`:
    /// socket counts by state from sock_diag.
    pub tcp: BTreeMap<String, Figures>,
    /// `ipv4` from snmp `Udp:`, `ipv6` from snmp6 `Udp6`.
    pub udp: BTreeMap<String, Figures>,
    /// sockstat's IPv4 figures (`ipv4`), sockstat6 (`ipv6`), and sockstat's figures that
    /// the kernel keeps for both families together (`both`: see [`SOCKSTAT_BOTH`]).
    pub sockets: BTreeMap<String, Figures>,
    pub processes: Vec<ProcessUse>,
    /// The live processes above, summed by name.
    pub process_groups: BTreeMap<String, GroupUse>,
    /// The live processes of each `--tree`, summed, keyed by the root's pid.
    pub process_trees: BTreeMap<String, GroupUse>,
}

/// Gauges among the snmp counters: reported as they are, not as rates.
const GAUGES: [&str; 7] = [
    "CurrEstab",
    "RtoAlgorithm",
    "RtoMin",
    "RtoMax",
    "MaxConn",
    "Forwarding",
    "DefaultTTL",
];

/// The figures of `net/sockstat` that are not IPv4's alone: `sockets: used` counts every
/// socket of the namespace, of any kind, and the kernel shares TCP's orphans, TIME_WAIT
/// sockets, allocated sockets and memory, and UDP's memory, between IPv4 and IPv6 (their
/// `TCP6:` and `UDP6:` lines in `sockstat6` have `inuse` only).
pub const SOCKSTAT_BOTH: [&str; 6] = [
    "sockets_used",
    "tcp_orphan",
    "tcp_tw",
    "tcp_alloc",
    "tcp_mem",
    "udp_mem",
];

/// The kernel's clock-tick rate and page size, needed to turn ticks and pages into units.
#[derive(Debug, Clone, Copy)]
pub struct Units {
    pub ticks_per_s: u64,
    pub page_size: u64,
}

/// The sample covering `prev` → `cur`.
pub fn between(prev: &Snapshot, cur: &Snapshot, units: Units) -> Sample {
    let dt = (cur.monotonic_ns.saturating_sub(prev.monotonic_ns) as f64 / 1e9).max(1e-9);
    let key = |f: Family| f.key().to_string();
    let section = |m: &BTreeMap<String, Counters>, p: &BTreeMap<String, Counters>, name: &str| {
        rates(p.get(name), m.get(name), dt, &GAUGES)
    };
    let mut memory = rates(Some(&prev.vmstat), Some(&cur.vmstat), dt, &[]);
    memory.extend(
        cur.meminfo
            .iter()
            .map(|(k, v)| (format!("{k}_kb"), *v as f64)),
    );
    let gauges = ["procs_running", "procs_blocked"];
    let processes: Vec<ProcessUse> = cur
        .processes
        .iter()
        .map(|p| process(prev.processes.iter().find(|q| q.pid == p.pid), p, dt, units))
        .collect();
    Sample {
        monotonic_ns: cur.monotonic_ns,
        unix_ns: cur.unix_ns,
        interval_s: dt,
        cpu: cur
            .stat
            .cpus
            .iter()
            .map(|(name, c)| (name.clone(), cpu_use(prev.stat.cpus.get(name), c)))
            .collect(),
        system: rates(
            Some(&prev.stat.counters),
            Some(&cur.stat.counters),
            dt,
            &gauges,
        ),
        memory,
        disks: cur
            .disks
            .iter()
            .map(|(n, c)| (n.clone(), disk(prev.disks.get(n), c, dt)))
            .collect(),
        interfaces: cur
            .interfaces
            .iter()
            .map(|(n, c)| (n.clone(), rates(prev.interfaces.get(n), Some(c), dt, &[])))
            .collect(),
        ip: [
            (key(Family::V4), section(&cur.snmp, &prev.snmp, "Ip")),
            (key(Family::V6), section(&cur.snmp6, &prev.snmp6, "Ip6")),
        ]
        .into(),
        icmp: [
            (key(Family::V4), section(&cur.snmp, &prev.snmp, "Icmp")),
            (key(Family::V6), icmp6(prev, cur, dt)),
        ]
        .into(),
        tcp: tcp(prev, cur, dt),
        udp: [
            (key(Family::V4), section(&cur.snmp, &prev.snmp, "Udp")),
            (key(Family::V6), section(&cur.snmp6, &prev.snmp6, "Udp6")),
        ]
        .into(),
        sockets: sockets(&cur.sockstat, &cur.sockstat6),
        process_groups: groups(&processes, |p| Some(p.name.clone())),
        process_trees: groups(&processes, |p| p.tree.map(|t| t.to_string())),
        processes,
    }
}

/// The live processes summed by the key `group_of` gives them (none: in no group).
fn groups(
    processes: &[ProcessUse],
    group_of: impl Fn(&ProcessUse) -> Option<String>,
) -> BTreeMap<String, GroupUse> {
    let mut out: BTreeMap<String, GroupUse> = BTreeMap::new();
    for p in processes.iter().filter(|p| p.alive) {
        let Some(key) = group_of(p) else { continue };
        let g = out.entry(key).or_default();
        let first = g.processes == 0;
        let add = |sum: Option<f64>, v: Option<f64>| if first { v } else { Some(sum? + v?) };
        g.kb_rd_per_s = add(g.kb_rd_per_s, p.kb_rd_per_s);
        g.kb_wr_per_s = add(g.kb_wr_per_s, p.kb_wr_per_s);
        g.kb_ccwr_per_s = add(g.kb_ccwr_per_s, p.kb_ccwr_per_s);
        g.processes += 1;
        g.cpu_pct += p.cpu_pct;
        g.rss_kb += p.rss_kb;
        g.vsz_kb += p.vsz_kb;
        g.minflt_per_s += p.minflt_per_s;
        g.majflt_per_s += p.majflt_per_s;
        g.threads += p.threads;
        g.fds += p.fds;
        g.cswch_per_s += p.cswch_per_s;
        g.nvcswch_per_s += p.nvcswch_per_s;
    }
    out
}

/// Counters as `<name>_per_s` (0 when there is no earlier value), gauges as they are.
fn rates(prev: Option<&Counters>, cur: Option<&Counters>, dt: f64, gauges: &[&str]) -> Figures {
    let Some(cur) = cur else {
        return Figures::new();
    };
    cur.iter()
        .map(|(name, &v)| {
            if gauges.contains(&name.as_str()) {
                (name.clone(), v as f64)
            } else {
                let before = prev.and_then(|p| p.get(name)).copied().unwrap_or(v);
                // Wrapping: a counter past 2^63 reads negative; one that went back was reset.
                let delta = v.wrapping_sub(before).max(0);
                (format!("{name}_per_s"), delta as f64 / dt)
            }
        })
        .collect()
}

/// snmp6's `Icmp6` counters as rates, but for the per-type counts (`InType1`,
/// `OutType135`): the kernel writes one only once it is above 0, so they come and go.
fn icmp6(prev: &Snapshot, cur: &Snapshot, dt: f64) -> Figures {
    let named = |s: &Snapshot| -> Option<Counters> {
        let per_type = |name: &str| {
            let number = name
                .strip_prefix("InType")
                .or_else(|| name.strip_prefix("OutType"));
            number.is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        };
        let icmp6 = s.snmp6.get("Icmp6")?;
        Some(
            icmp6
                .iter()
                .filter(|(name, _)| !per_type(name))
                .map(|(name, v)| (name.clone(), *v))
                .collect(),
        )
    };
    rates(named(prev).as_ref(), named(cur).as_ref(), dt, &[])
}

fn gauges_of(c: &Counters) -> Figures {
    c.iter().map(|(k, v)| (k.clone(), *v as f64)).collect()
}

/// sockstat's figures split into IPv4's own and those of both families
/// ([`SOCKSTAT_BOTH`]), and sockstat6's.
fn sockets(sockstat: &Counters, sockstat6: &Counters) -> BTreeMap<String, Figures> {
    let (both, ipv4): (Figures, Figures) = gauges_of(sockstat)
        .into_iter()
        .partition(|(name, _)| SOCKSTAT_BOTH.contains(&name.as_str()));
    [
        (Family::V4.key().to_string(), ipv4),
        (Family::V6.key().to_string(), gauges_of(sockstat6)),
        ("both".to_string(), both),
    ]
    .into()
}

fn cpu_use(prev: Option<&CpuTimes>, cur: &CpuTimes) -> CpuUse {
    let p = prev.copied().unwrap_or_default();
    let total = cur.total().saturating_sub(p.total());
    if total == 0 {
        return CpuUse::default();
    }
    let pct = |a: u64, b: u64| a.saturating_sub(b) as f64 * 100.0 / total as f64;
    CpuUse {
        user: pct(cur.user + cur.nice, p.user + p.nice),
        system: pct(cur.system, p.system),
        irq: pct(cur.irq, p.irq),
        softirq: pct(cur.softirq, p.softirq),
        iowait: pct(cur.iowait, p.iowait),
        steal: pct(cur.steal, p.steal),
        idle: pct(cur.idle, p.idle),
    }
}

fn disk(prev: Option<&Counters>, cur: &Counters, dt: f64) -> Figures {
    let delta = |k: &str| {
        let now = cur.get(k).copied().unwrap_or(0);
        let before = prev.and_then(|p| p.get(k)).copied().unwrap_or(now);
        now.wrapping_sub(before).max(0) as f64
    };
    [
        ("reads_per_s", delta("reads") / dt),
        ("writes_per_s", delta("writes") / dt),
        ("read_bytes_per_s", delta("read_sectors") * 512.0 / dt),
        ("write_bytes_per_s", delta("write_sectors") * 512.0 / dt),
        (
            "util_pct",
            (delta("io_ms") / (dt * 1000.0) * 100.0).min(100.0),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

fn tcp(prev: &Snapshot, cur: &Snapshot, dt: f64) -> BTreeMap<String, Figures> {
    let mut out = BTreeMap::new();
    out.insert(
        "both".to_string(),
        rates(prev.snmp.get("Tcp"), cur.snmp.get("Tcp"), dt, &GAUGES),
    );
    if let Some(states) = &cur.tcp_states {
        for family in Family::ALL {
            let counts = &states.counts[family.index()];
            let figures = STATE_NAMES
                .iter()
                .zip(counts)
                .skip(1)
                .map(|(n, c)| (n.to_string(), *c as f64))
                .collect();
            out.insert(family.key().to_string(), figures);
        }
    }
    out
}

fn process(
    prev: Option<&ProcessSnapshot>,
    cur: &ProcessSnapshot,
    dt: f64,
    units: Units,
) -> ProcessUse {
    let now = cur.stat.unwrap_or_default();
    // A process absent from the previous snapshot started during the interval.
    let before = match prev {
        Some(p) => p.stat.unwrap_or(now),
        None => ProcStat::default(),
    };
    let pct = |a: u64, b: u64| a.saturating_sub(b) as f64 / units.ticks_per_s as f64 / dt * 100.0;
    let per_s = |a: u64, b: u64| a.saturating_sub(b) as f64 / dt;
    let switched = switches(prev, cur);
    let io = storage_io(prev, cur, dt);
    ProcessUse {
        pid: cur.pid,
        name: cur.name.clone(),
        tree: cur.tree,
        // A zombie's `/proc` entry outlives it until its parent reaps it.
        alive: cur.stat.is_some_and(|s| !s.exited()),
        cpu_pct: pct(now.utime + now.stime, before.utime + before.stime),
        user_pct: pct(now.utime, before.utime),
        system_pct: pct(now.stime, before.stime),
        rss_kb: now.rss_pages * units.page_size / 1024,
        vsz_kb: now.vsize / 1024,
        minflt_per_s: per_s(now.minflt, before.minflt),
        majflt_per_s: per_s(now.majflt, before.majflt),
        threads: now.threads,
        fds: cur.fds.unwrap_or(0),
        cswch_per_s: switched.voluntary as f64 / dt,
        nvcswch_per_s: switched.involuntary as f64 / dt,
        kb_rd_per_s: io.map(|io| io[0]),
        kb_wr_per_s: io.map(|io| io[1]),
        kb_ccwr_per_s: io.map(|io| io[2]),
    }
}

/// kB read, written and cancelled per second over the interval, from `/proc/PID/io`:
/// since the previous snapshot, or from zero for a process first seen in this one (as its
/// CPU); all 0 once it has exited. `None` when it could not be read now, or could not be
/// then (no count to start from). A process read through its running threads (its main
/// thread has exited) counts as [`switches`] does: each thread from the previous
/// snapshot, a new one from zero.
fn storage_io(prev: Option<&ProcessSnapshot>, cur: &ProcessSnapshot, dt: f64) -> Option<[f64; 3]> {
    let kb = |since: [u64; 3]| Some(since.map(|bytes| bytes as f64 / 1024.0 / dt));
    if let Some(now) = cur.io {
        let before = match prev {
            Some(p) => p.io?,
            None => ProcIo::default(),
        };
        return kb(io_since(&now, &before));
    }
    if cur.thread_io.is_empty() {
        return cur.io_unreadable.is_none().then_some([0.0; 3]);
    }
    // Threads' counts do not add up to the whole process's (/proc/PID/io) of the previous
    // snapshot: start again from this one.
    if prev.is_some_and(|p| p.thread_io.is_empty()) {
        return None;
    }
    let mut sum = [0; 3];
    for (tid, now) in &cur.thread_io {
        // A thread id whose counts went back is a new thread that took an ended one's id.
        let since = match prev.and_then(|p| p.thread_io.get(tid)) {
            Some(b) if io_since(b, now) == [0; 3] => io_since(now, b),
            _ => io_since(now, &ProcIo::default()),
        };
        (0..3).for_each(|i| sum[i] += since[i]);
    }
    kb(sum)
}

/// Bytes read, written and cancelled between two counts (0 for any that went back).
fn io_since(now: &ProcIo, before: &ProcIo) -> [u64; 3] {
    [
        now.read_bytes.saturating_sub(before.read_bytes),
        now.write_bytes.saturating_sub(before.write_bytes),
        now.cancelled_write_bytes
            .saturating_sub(before.cancelled_write_bytes),
    ]
}

/// The context switches of a process's threads over the interval, summed. The kernel
/// counts them per thread, and those of a thread that ends go with it, so each thread
/// alive at the end counts its own: from the previous snapshot, or from zero when it is
/// new (started during the interval, or its process was not watched before). A thread
/// that ended takes its switches since the previous snapshot with it (they are not seen;
/// what it had is not taken away from the others); a thread id that went back is a new
/// thread that took an ended one's id, counted from zero.
pub fn switches(prev: Option<&ProcessSnapshot>, cur: &ProcessSnapshot) -> Switches {
    let mut sum = Switches::default();
    for (tid, now) in &cur.switches {
        let before = prev.and_then(|p| p.switches.get(tid));
        let since = match before {
            Some(b) if now.voluntary >= b.voluntary && now.involuntary >= b.involuntary => {
                Switches {
                    voluntary: now.voluntary - b.voluntary,
                    involuntary: now.involuntary - b.involuntary,
                }
            }
            _ => *now,
        };
        sum.voluntary += since.voluntary;
        sum.involuntary += since.involuntary;
    }
    sum
}

#[cfg(test)]
#[path = "sample_tests.rs"]
mod tests;
