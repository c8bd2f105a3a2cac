//! Tests of [`super`]: rates, groups and per-thread sums on fixed snapshots.

use super::*;
use crate::procfs::process::ProcIo;
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
                ..ProcStat::default()
            }),
            fds: Some(12),
            io: None,
            thread_io: BTreeMap::new(),
            io_unreadable: None,
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
            ..ProcStat::default()
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
        state: 'Z',
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

/// pidstat -r's and -d's figures: faults and kB of storage I/O per second over the
/// interval, VSZ and RSS in kB; a newcomer counts from zero; I/O that cannot be read is
/// `None` in the process and in its groups, and 0 once the process has gone.
#[test]
fn memory_and_storage_io_per_process() {
    let io = |read_bytes, write_bytes, cancelled_write_bytes| {
        Some(ProcIo {
            read_bytes,
            write_bytes,
            cancelled_write_bytes,
        })
    };
    let mut a = snapshot(1, "cpu 1 0 1 1 0 0 0 0\n", "", 5);
    let mut b = snapshot(3, "cpu 1 0 1 1 0 0 0 0\n", "", 5);
    let stat = |minflt, majflt, vsize| ProcStat {
        minflt,
        majflt,
        vsize,
        rss_pages: 16_384,
        threads: 1,
        ..ProcStat::default()
    };
    a.processes[0].stat = Some(stat(1_000, 3, 100 << 20));
    a.processes[0].io = io(4096, 1 << 20, 0);
    b.processes[0].stat = Some(stat(17_384, 5, 164 << 20));
    b.processes[0].io = io(4096 + 8192, (1 << 20) + (10 << 20), 4096);
    let units = Units {
        ticks_per_s: 100,
        page_size: 4096,
    };
    let s = between(&a, &b, units);
    let p = &s.processes[0];
    assert_eq!((p.minflt_per_s, p.majflt_per_s), (8_192.0, 1.0));
    assert_eq!((p.vsz_kb, p.rss_kb), (164 * 1024, 64 * 1024));
    // 8 kB read, 10 MiB written and 4 kB of it cancelled, over 2 s.
    assert_eq!(
        (p.kb_rd_per_s, p.kb_wr_per_s, p.kb_ccwr_per_s),
        (Some(4.0), Some(5_120.0), Some(2.0))
    );
    let g = &s.process_groups["x"];
    assert_eq!(
        (g.minflt_per_s, g.vsz_kb, g.kb_wr_per_s),
        (8_192.0, 164 * 1024, Some(5_120.0))
    );

    // A newcomer (pid 10) counts from zero; one whose io cannot be read (pid 11) has
    // none, nor then has its group.
    let mut newcomer = b.processes[0].clone();
    newcomer.pid = 10;
    let mut refused = b.processes[0].clone();
    (refused.pid, refused.io) = (11, None);
    refused.io_unreadable = Some("/proc/11/io: Permission denied (os error 13)".into());
    let mut c = b.clone();
    c.processes.extend([newcomer, refused]);
    let s = between(&a, &c, units);
    let p = &s.processes[1];
    assert_eq!(p.minflt_per_s, 17_384.0 / 2.0);
    assert_eq!(p.kb_wr_per_s, Some(11.0 * 1024.0 / 2.0));
    let p = &s.processes[2];
    assert_eq!(
        (p.kb_rd_per_s, p.kb_wr_per_s, p.kb_ccwr_per_s),
        (None, None, None)
    );
    assert_eq!(p.vsz_kb, 164 * 1024, "its stat is read all the same");
    let g = &s.process_groups["x"];
    assert_eq!((g.processes, g.kb_rd_per_s, g.kb_wr_per_s), (3, None, None));
    // 9's since the last sample; 10's and 11's from zero.
    assert_eq!(g.minflt_per_s, 8_192.0 + 17_384.0 / 2.0 * 2.0);

    // Readable now but not before: no count to start from.
    let mut d = b.clone();
    d.monotonic_ns += 1_000_000_000;
    let s = between(&c, &d, units);
    assert_eq!(s.processes[0].kb_wr_per_s, Some(0.0));
    let mut was_refused = a.clone();
    was_refused.processes[0].io = None;
    was_refused.processes[0].io_unreadable = Some("refused".into());
    assert_eq!(
        between(&was_refused, &b, units).processes[0].kb_wr_per_s,
        None
    );

    // Gone: no stat, no io, nothing refused.
    let mut gone = b.clone();
    (gone.processes[0].stat, gone.processes[0].io) = (None, None);
    let p = &between(&a, &gone, units).processes[0];
    assert_eq!(
        (p.minflt_per_s, p.vsz_kb, p.kb_wr_per_s, p.alive),
        (0.0, 0, Some(0.0), false)
    );
}

/// A process whose main thread has exited, read through its running threads'
/// `/proc/PID/task/TID/io`: each thread's bytes since the previous snapshot, a new
/// one's from zero, an ended one's gone with it (as context switches).
#[test]
fn storage_io_through_running_threads() {
    let io = |list: &[(u32, u64, u64)]| -> BTreeMap<u32, ProcIo> {
        list.iter()
            .map(|&(tid, read_bytes, write_bytes)| {
                let io = ProcIo {
                    read_bytes,
                    write_bytes,
                    cancelled_write_bytes: 0,
                };
                (tid, io)
            })
            .collect()
    };
    let mib = 1 << 20;
    let mut a = snapshot(1, "cpu 1 0 1 1 0 0 0 0\n", "", 5);
    let mut b = snapshot(3, "cpu 1 0 1 1 0 0 0 0\n", "", 5);
    // 12 runs on; 13 ends; 14 starts; 15 ended and a new thread took its id.
    a.processes[0].thread_io = io(&[(12, 0, mib), (13, 0, 5 * mib), (15, 0, 4 * mib)]);
    b.processes[0].thread_io = io(&[(12, 4096, 3 * mib), (14, 0, mib), (15, 0, mib)]);
    let units = Units {
        ticks_per_s: 100,
        page_size: 4096,
    };
    let p = &between(&a, &b, units).processes[0];
    // 4 kB read and 2 + 1 + 1 MiB written over 2 s.
    assert_eq!(
        (p.kb_rd_per_s, p.kb_wr_per_s, p.kb_ccwr_per_s),
        (Some(2.0), Some(2048.0), Some(0.0))
    );
    // Read whole before (`/proc/PID/io`), by threads now: nothing to start from.
    let mut whole = a.clone();
    whole.processes[0].thread_io.clear();
    whole.processes[0].io = Some(ProcIo::default());
    assert_eq!(between(&whole, &b, units).processes[0].kb_wr_per_s, None);
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
