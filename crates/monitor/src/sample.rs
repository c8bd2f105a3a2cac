//! One sample of the time series: the rates between two [`Snapshot`]s (deltas divided by
//! the interval) and the gauges of the later one. Pure: the clock readings, the clock-tick
//! rate and the page size come in as arguments.

use crate::diag::STATE_NAMES;
use crate::procfs::process::{ProcStat, Switches};
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

/// One watched process over the interval. `cpu_pct` is in percent of one core.
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
    pub threads: u64,
    pub fds: u64,
    /// Voluntary context switches per second (pidstat's `cswch/s`), of all its threads:
    /// see [`switches`].
    pub cswch_per_s: f64,
    /// Involuntary context switches per second (pidstat's `nvcswch/s`), of all its threads.
    pub nvcswch_per_s: f64,
}

/// Processes together: those of one name (every nginx worker, every apache2 child), or
/// of one tree (a server and all its children, whatever their names).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct GroupUse {
    pub processes: u64,
    pub cpu_pct: f64,
    pub rss_kb: u64,
    pub threads: u64,
    pub fds: u64,
    pub cswch_per_s: f64,
    pub nvcswch_per_s: f64,
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
        g.processes += 1;
        g.cpu_pct += p.cpu_pct;
        g.rss_kb += p.rss_kb;
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
    let switched = switches(prev, cur);
    ProcessUse {
        pid: cur.pid,
        name: cur.name.clone(),
        tree: cur.tree,
        // A zombie's `/proc` entry outlives it until its parent reaps it.
        alive: cur.stat.is_some_and(|s| !s.exited),
        cpu_pct: pct(now.utime + now.stime, before.utime + before.stime),
        user_pct: pct(now.utime, before.utime),
        system_pct: pct(now.stime, before.stime),
        rss_kb: now.rss_pages * units.page_size / 1024,
        threads: now.threads,
        fds: cur.fds.unwrap_or(0),
        cswch_per_s: switched.voluntary as f64 / dt,
        nvcswch_per_s: switched.involuntary as f64 / dt,
    }
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
mod tests {
    use super::*;
    use crate::procfs::{net, process::ProcStat, system};

    fn snapshot(t_s: u64, stat: &str, snmp: &str, utime: u64) -> Snapshot {
        Snapshot {
            monotonic_ns: t_s * 1_000_000_000,
            stat: system::parse_stat(stat),
            snmp: net::parse_snmp(snmp),
            sockstat: net::parse_sockstat("TCP: inuse 4 orphan 0 tw 2 alloc 5 mem 1\n"),
            processes: vec![ProcessSnapshot {
                pid: 9,
                name: "x".into(),
                tree: None,
                stat: Some(ProcStat {
                    utime,
                    stime: 10,
                    threads: 3,
                    rss_pages: 256,
                    exited: false,
                }),
                fds: Some(12),
                switches: BTreeMap::new(),
            }],
            ..Snapshot::default()
        }
    }

    #[test]
    fn rates_over_two_seconds() {
        let a = snapshot(
            10,
            "cpu 100 0 100 800 0 0 0 0\nctxt 1000\nprocs_running 1\n",
            "Tcp: ActiveOpens CurrEstab MaxConn\nTcp: 10 3 -1\n",
            100,
        );
        let b = snapshot(
            12,
            "cpu 150 0 150 900 0 0 0 0\nctxt 3000\nprocs_running 4\n",
            "Tcp: ActiveOpens CurrEstab MaxConn\nTcp: 30 5 -1\n",
            300,
        );
        let units = Units {
            ticks_per_s: 100,
            page_size: 4096,
        };
        let s = between(&a, &b, units);
        assert_eq!(s.interval_s, 2.0);
        assert_eq!(
            s.cpu["all"],
            CpuUse {
                user: 25.0,
                system: 25.0,
                idle: 50.0,
                ..CpuUse::default()
            }
        );
        assert_eq!(s.system["ctxt_per_s"], 1000.0);
        assert_eq!(s.system["procs_running"], 4.0);
        assert_eq!(s.tcp["both"]["ActiveOpens_per_s"], 10.0);
        assert_eq!(s.tcp["both"]["CurrEstab"], 5.0);
        assert_eq!(
            s.tcp["both"]["MaxConn"], -1.0,
            "a signed gauge keeps its sign"
        );
        assert_eq!(s.sockets["both"]["tcp_tw"], 2.0);
        let p = &s.processes[0];
        assert_eq!((p.cpu_pct, p.user_pct, p.system_pct), (100.0, 100.0, 0.0));
        assert_eq!((p.rss_kb, p.threads, p.fds, p.alive), (1024, 3, 12, true));
    }

    #[test]
    fn sockstat_figures_of_both_families_are_not_ipv4s() {
        // 45907 IPv4 and 49200 IPv6 sockets in TIME_WAIT (sock_diag's counts) read as
        // `tw 95107` on sockstat's TCP line: the kernel counts them together.
        let mut b = snapshot(2, "cpu 1 0 1 1 0 0 0 0\n", "", 5);
        b.sockstat = net::parse_sockstat(
            "sockets: used 24\nTCP: inuse 4 orphan 1 tw 95107 alloc 7 mem 3\n\
UDP: inuse 2 mem 125\nUDPLITE: inuse 0\nRAW: inuse 0\nFRAG: inuse 0 memory 0\n",
        );
        b.sockstat6 = net::parse_sockstat("TCP6: inuse 3\nUDP6: inuse 1\n");
        let units = Units {
            ticks_per_s: 100,
            page_size: 4096,
        };
        let s = between(&snapshot(1, "cpu 1 0 1 1 0 0 0 0\n", "", 5), &b, units);
        let names = |family: &str| -> Vec<(String, f64)> {
            s.sockets[family]
                .iter()
                .map(|(k, v)| (k.clone(), *v))
                .collect()
        };
        let pairs = |p: &[(&str, f64)]| -> Vec<(String, f64)> {
            p.iter().map(|(k, v)| (k.to_string(), *v)).collect()
        };
        assert_eq!(
            names("both"),
            pairs(&[
                ("sockets_used", 24.0),
                ("tcp_alloc", 7.0),
                ("tcp_mem", 3.0),
                ("tcp_orphan", 1.0),
                ("tcp_tw", 95107.0),
                ("udp_mem", 125.0),
            ])
        );
        assert_eq!(
            names("ipv4"),
            pairs(&[
                ("frag_inuse", 0.0),
                ("frag_memory", 0.0),
                ("raw_inuse", 0.0),
                ("tcp_inuse", 4.0),
                ("udp_inuse", 2.0),
                ("udplite_inuse", 0.0),
            ])
        );
        assert_eq!(
            names("ipv6"),
            pairs(&[("tcp_inuse", 3.0), ("udp_inuse", 1.0)])
        );
    }

    #[test]
    fn processes_sum_by_name_and_newcomers_count_from_zero() {
        let a = snapshot(1, "cpu 1 0 1 1 0 0 0 0\n", "", 50);
        let mut b = snapshot(2, "cpu 1 0 1 1 0 0 0 0\n", "", 70);
        let mut child = b.processes[0].clone();
        (child.pid, child.stat) = (
            10,
            Some(ProcStat {
                utime: 5,
                stime: 5,
                threads: 1,
                rss_pages: 256,
                exited: false,
            }),
        );
        b.processes.push(child);
        let s = between(
            &a,
            &b,
            Units {
                ticks_per_s: 100,
                page_size: 4096,
            },
        );
        assert_eq!(
            s.processes[1].cpu_pct, 10.0,
            "born during the interval: 10 ticks in 1 s"
        );
        let g = &s.process_groups["x"];
        assert_eq!(
            (g.processes, g.cpu_pct, g.rss_kb, g.threads, g.fds),
            (2, 30.0, 2048, 4, 24)
        );
    }

    #[test]
    fn a_zombie_is_not_alive_and_leaves_its_group() {
        let a = snapshot(1, "cpu 1 0 1 1 0 0 0 0\n", "", 50);
        let mut b = snapshot(2, "cpu 1 0 1 1 0 0 0 0\n", "", 70);
        // Exited during the interval, not reaped yet: its last CPU still shows.
        b.processes[0].stat = Some(ProcStat {
            rss_pages: 0,
            exited: true,
            ..b.processes[0].stat.unwrap()
        });
        b.processes[0].fds = Some(0);
        let units = Units {
            ticks_per_s: 100,
            page_size: 4096,
        };
        let s = between(&a, &b, units);
        let p = &s.processes[0];
        assert_eq!((p.alive, p.cpu_pct, p.rss_kb), (false, 20.0, 0));
        assert!(s.process_groups.is_empty(), "{:?}", s.process_groups);
    }

    #[test]
    fn a_tree_sums_its_members_whatever_their_names() {
        let a = snapshot(1, "cpu 1 0 1 1 0 0 0 0\n", "", 50);
        let mut b = snapshot(2, "cpu 1 0 1 1 0 0 0 0\n", "", 70);
        b.processes[0].tree = Some(9);
        let mut child = b.processes[0].clone();
        (child.pid, child.name) = (10, "worker".into());
        let mut stranger = child.clone();
        (stranger.pid, stranger.tree) = (11, None);
        b.processes.extend([child, stranger]);
        let units = Units {
            ticks_per_s: 100,
            page_size: 4096,
        };
        let s = between(&a, &b, units);
        let tree = &s.process_trees["9"];
        assert_eq!(s.process_trees.len(), 1);
        // The root's 20 ticks, and the newcomer's 80 counted from zero, over 1 s.
        assert_eq!((tree.processes, tree.cpu_pct, tree.fds), (2, 100.0, 24));
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["processes"][1]["tree"], 9);
        assert!(
            json["processes"][2].get("tree").is_none(),
            "no tree, no key"
        );
    }

    fn threads(list: &[(u32, u64, u64)]) -> BTreeMap<u32, Switches> {
        list.iter()
            .map(|&(tid, voluntary, involuntary)| {
                let s = Switches {
                    voluntary,
                    involuntary,
                };
                (tid, s)
            })
            .collect()
    }

    /// Threads that come and go: each live one counts its own switches since the last
    /// snapshot (a new one from zero), and one that ended takes nothing away. The sums of
    /// every thread's counters (or `/proc/PID/status`, the first thread's alone) went
    /// back by 60 here, when thread 11 ended.
    #[test]
    fn context_switches_per_thread_without_going_back() {
        let mut a = snapshot(1, "cpu 1 0 1 1 0 0 0 0\n", "", 5);
        let mut b = snapshot(3, "cpu 1 0 1 1 0 0 0 0\n", "", 5);
        // 9 is the first thread; 11 ends; 12 starts; 13 ended and a new thread took its id.
        a.processes[0].switches = threads(&[(9, 100, 7), (11, 50, 10), (13, 40, 4)]);
        b.processes[0].switches = threads(&[(9, 130, 8), (12, 6, 1), (13, 3, 0)]);
        let units = Units {
            ticks_per_s: 100,
            page_size: 4096,
        };
        let s = between(&a, &b, units);
        let p = &s.processes[0];
        // (30 + 6 + 3) / 2 s and (1 + 1 + 0) / 2 s.
        assert_eq!((p.cswch_per_s, p.nvcswch_per_s), (19.5, 1.0));
        let g = &s.process_groups["x"];
        assert_eq!((g.cswch_per_s, g.nvcswch_per_s), (19.5, 1.0));
        // A process first seen in this interval: all of its threads' switches.
        let mut first = b.clone();
        first.processes[0].pid = 10;
        let s = between(&a, &first, units);
        assert_eq!(
            (s.processes[0].cswch_per_s, s.processes[0].nvcswch_per_s),
            (69.5, 4.5)
        );
        // An exited process: no threads, no switches.
        b.processes[0].switches.clear();
        b.processes[0].stat = None;
        let s = between(&a, &b, units);
        assert_eq!(
            (s.processes[0].cswch_per_s, s.processes[0].nvcswch_per_s),
            (0.0, 0.0)
        );
    }

    /// ICMP per family: snmp's `Icmp:` line and snmp6's `Icmp6` counters, per second,
    /// without the per-type counts (snmp's `IcmpMsg:` line, snmp6's `Icmp6InType1`),
    /// which the kernel lists only once they are above 0.
    #[test]
    fn icmp_per_family() {
        let snmp = |n: u64| {
            format!(
                "Icmp: InMsgs InErrors InDestUnreachs OutMsgs OutDestUnreachs\n\
Icmp: {} 0 {} {} {}\nIcmpMsg: InType3 OutType3\nIcmpMsg: {n} {n}\n",
                10 + n,
                n,
                10 + n,
                n
            )
        };
        let mut a = snapshot(1, "cpu 1 0 1 1 0 0 0 0\n", &snmp(2), 5);
        let mut b = snapshot(3, "cpu 1 0 1 1 0 0 0 0\n", &snmp(8), 5);
        a.snmp6 = net::parse_snmp6(
            "Icmp6InMsgs 4\nIcmp6InErrors 0\nIcmp6InDestUnreachs 4\nIcmp6InPktTooBigs 0\n\
Icmp6OutDestUnreachs 4\nIcmp6InType1 4\nIcmp6OutType1 4\nUdp6NoPorts 4\n",
        );
        b.snmp6 = net::parse_snmp6(
            "Icmp6InMsgs 10\nIcmp6InErrors 0\nIcmp6InDestUnreachs 8\nIcmp6InPktTooBigs 2\n\
Icmp6OutDestUnreachs 8\nIcmp6InType1 8\nIcmp6OutType1 8\nIcmp6InType2 2\nUdp6NoPorts 8\n",
        );
        let units = Units {
            ticks_per_s: 100,
            page_size: 4096,
        };
        let s = between(&a, &b, units);
        let pairs =
            |p: &[(&str, f64)]| -> Figures { p.iter().map(|(k, v)| (k.to_string(), *v)).collect() };
        assert_eq!(
            s.icmp["ipv4"],
            pairs(&[
                ("InDestUnreachs_per_s", 3.0),
                ("InErrors_per_s", 0.0),
                ("InMsgs_per_s", 3.0),
                ("OutDestUnreachs_per_s", 3.0),
                ("OutMsgs_per_s", 3.0),
            ])
        );
        assert_eq!(
            s.icmp["ipv6"],
            pairs(&[
                ("InDestUnreachs_per_s", 2.0),
                ("InErrors_per_s", 0.0),
                ("InMsgs_per_s", 3.0),
                ("InPktTooBigs_per_s", 1.0),
                ("OutDestUnreachs_per_s", 2.0),
            ])
        );
        assert_eq!(s.udp["ipv6"]["NoPorts_per_s"], 2.0);
    }

    #[test]
    fn an_exited_process_is_marked() {
        let a = snapshot(1, "cpu 1 0 1 1 0 0 0 0\n", "", 5);
        let mut b = snapshot(2, "cpu 1 0 1 1 0 0 0 0\n", "", 5);
        b.processes[0].stat = None;
        let s = between(
            &a,
            &b,
            Units {
                ticks_per_s: 100,
                page_size: 4096,
            },
        );
        assert!(!s.processes[0].alive);
        assert_eq!(s.cpu["all"], CpuUse::default());
    }
}
