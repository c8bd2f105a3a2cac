//! Reading every counter once: one [`Snapshot`] of the machine, one namespace's network
//! files and the watched processes, stamped on the shared monotonic clock. The only I/O
//! of the monitor; turning two snapshots into rates is [`crate::sample`].

use crate::diag::{self, TcpStates};
use crate::procfs::process::{ProcIo, ProcStat, Switches};
use crate::procfs::{self, net, system::Stat, Counters};
use dualbench_common::clock;
use std::collections::BTreeMap;
use std::path::Path;

pub(crate) const VMSTAT_KEYS: [&str; 6] = [
    "pgpgin",
    "pgpgout",
    "pswpin",
    "pswpout",
    "pgfault",
    "pgmajfault",
];
pub(crate) const MEMINFO_KEYS: [&str; 8] = [
    "MemTotal",
    "MemFree",
    "MemAvailable",
    "Buffers",
    "Cached",
    "Dirty",
    "SwapTotal",
    "SwapFree",
];

/// A process to watch: its pid, the name it was asked by (or its `comm`), and the root
/// of the tree (`--tree`) it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Watched {
    pub pid: u32,
    pub name: String,
    pub tree: Option<u32>,
}

/// Raw counters of one process; `None` once it has exited.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessSnapshot {
    pub pid: u32,
    pub name: String,
    pub tree: Option<u32>,
    pub stat: Option<ProcStat>,
    pub fds: Option<u64>,
    /// Its storage I/O, from `/proc/PID/io`; `None` once it has exited, or when that file
    /// could not be read (then [`ProcessSnapshot::thread_io`] or
    /// [`ProcessSnapshot::io_unreadable`]).
    pub io: Option<ProcIo>,
    /// The storage I/O of each of its running threads (`/proc/PID/task/TID/io`), read
    /// when its main thread has exited and `/proc/PID/io` may not be read: a task without
    /// memory of its own (that zombie thread) has its files owned by root, so a monitor
    /// run as the process's own user is refused the whole process's count, and reads its
    /// running threads' instead. Empty otherwise.
    pub thread_io: BTreeMap<u32, ProcIo>,
    /// Why `/proc/PID/io` of a process that is still there could not be read: it takes
    /// ptrace access to the process (`Permission denied` for another user's process, or
    /// for one holding a capability the monitor lacks), and a kernel built without I/O
    /// accounting has no such file.
    pub io_unreadable: Option<String>,
    /// Context switches of each of its threads (by thread id) then alive: the kernel
    /// keeps them per thread, and a thread's go with it when it ends.
    pub switches: BTreeMap<u32, Switches>,
}

/// Every counter at one instant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub monotonic_ns: u64,
    pub unix_ns: u64,
    pub stat: Stat,
    pub vmstat: Counters,
    pub meminfo: Counters,
    pub disks: BTreeMap<String, Counters>,
    pub interfaces: BTreeMap<String, Counters>,
    pub snmp: BTreeMap<String, Counters>,
    pub snmp6: BTreeMap<String, Counters>,
    pub sockstat: Counters,
    pub sockstat6: Counters,
    pub tcp_states: Option<TcpStates>,
    pub processes: Vec<ProcessSnapshot>,
}

/// Read everything; the calling thread must already be in the namespace to observe (see
/// [`dualbench_common::Netns::enter`]). Its network files are read through
/// `/proc/thread-self/net`, the thread's own namespace, not `/proc/PID/net` of the process
/// whose namespace it entered: those vanish when that process exits, and every network
/// figure with them, while the namespace is still there to read.
pub fn take(watched: &[Watched]) -> Snapshot {
    let net_dir = Path::new("/proc/thread-self/net");
    let net_file = |name: &str| read(&net_dir.join(name));
    Snapshot {
        monotonic_ns: clock::monotonic_ns(),
        unix_ns: clock::unix_ns(),
        stat: procfs::system::parse_stat(&read(Path::new("/proc/stat"))),
        vmstat: procfs::system::parse_vmstat(&read(Path::new("/proc/vmstat")), &VMSTAT_KEYS),
        meminfo: procfs::system::parse_meminfo(&read(Path::new("/proc/meminfo")), &MEMINFO_KEYS),
        disks: procfs::system::parse_diskstats(&read(Path::new("/proc/diskstats"))),
        interfaces: net::parse_net_dev(&net_file("dev")),
        snmp: net::parse_snmp(&net_file("snmp")),
        snmp6: net::parse_snmp6(&net_file("snmp6")),
        sockstat: net::parse_sockstat(&net_file("sockstat")),
        sockstat6: net::parse_sockstat(&net_file("sockstat6")),
        tcp_states: diag::tcp_states().ok(),
        processes: watched.iter().map(process).collect(),
    }
}

fn process(w: &Watched) -> ProcessSnapshot {
    let text = read(Path::new(&format!("/proc/{}/stat", w.pid)));
    let mut stat = procfs::process::parse_pid_stat(&text);
    // The name it has now: a process may exec another program (`sh -c '...; exec server'`).
    let name = procfs::process::parse_head(&text).map(|head| head.comm.to_string());
    // A main thread that exited while others run (`pthread_exit` in `main`) is a zombie
    // with no memory and no descriptors of its own: the process runs on, and its memory
    // and descriptors are read through a running thread. (Its CPU and faults, in the main
    // thread's `stat`, are already the whole process's; so is its `io`, which only root
    // may read then: see `ProcessSnapshot::thread_io`.)
    let running = stat
        .filter(|s| s.exited())
        .and_then(|_| running_thread(w.pid));
    if let (Some(s), Some((_, thread))) = (stat.as_mut(), running) {
        s.state = thread.state;
        s.rss_pages = thread.rss_pages;
        s.vsize = thread.vsize;
    }
    let fds = open_files(w.pid, running.map_or(w.pid, |(tid, _)| tid));
    let (io, thread_io, io_unreadable) = match storage_io(w.pid) {
        Ok(io) => (io, BTreeMap::new(), None),
        Err(why) => match running.and_then(|_| threads_io(w.pid)) {
            Some(threads) => (None, threads, None),
            None => (None, BTreeMap::new(), Some(why)),
        },
    };
    ProcessSnapshot {
        pid: w.pid,
        name: name.unwrap_or_else(|| w.name.clone()),
        tree: w.tree,
        stat,
        fds,
        io,
        thread_io,
        io_unreadable,
        switches: thread_switches(w.pid),
    }
}

/// `/proc/PID/io`: `Ok(None)` once the process is gone; why it cannot be read (the file,
/// the error and what to do) when the process is there.
fn storage_io(pid: u32) -> Result<Option<ProcIo>, String> {
    let path = format!("/proc/{pid}/io");
    match std::fs::read_to_string(&path) {
        Ok(text) => match procfs::process::parse_io(&text) {
            Some(io) => Ok(Some(io)),
            None => Err(format!(
                "cannot read {path}: it has no read_bytes, write_bytes or cancelled_write_bytes"
            )),
        },
        Err(_) if !Path::new(&format!("/proc/{pid}")).exists() => Ok(None),
        Err(e) => Err(format!("cannot read {path} ({e}){}", io_hint(e.kind()))),
    }
}

/// What to do about a `/proc/PID/io` that cannot be read, after its error.
fn io_hint(error: std::io::ErrorKind) -> &'static str {
    match error {
        std::io::ErrorKind::PermissionDenied => {
            ": it takes ptrace access to the process (run the monitor as its user, or as \
             root holding every capability it holds)"
        }
        std::io::ErrorKind::NotFound => {
            ": this kernel keeps no I/O counts per process (CONFIG_TASK_IO_ACCOUNTING)"
        }
        _ => "",
    }
}

/// The storage I/O of every thread of `pid` but its main one (which has exited, and
/// whose file, owned by root, is the one refused); `None` if one may not be read either.
fn threads_io(pid: u32) -> Option<BTreeMap<u32, ProcIo>> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut out = BTreeMap::new();
    for tid in tasks.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok()) {
        if tid == pid {
            continue;
        }
        match std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/io")) {
            Ok(text) => out.insert(tid, procfs::process::parse_io(&text)?),
            // Ended since the directory was listed.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(_) => return None,
        };
    }
    Some(out)
}

/// A thread of `pid` that has not exited, and its `/proc/PID/task/TID/stat` (its memory
/// is the process's; its CPU, its own).
fn running_thread(pid: u32) -> Option<(u32, ProcStat)> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    tasks
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|tid| {
            let text = read(Path::new(&format!("/proc/{pid}/task/{tid}/stat")));
            Some((tid, procfs::process::parse_pid_stat(&text)?))
        })
        .find(|(_, stat)| !stat.exited())
}

/// The context switches of every thread of `pid`, from `/proc/PID/task/TID/status`
/// (`/proc/PID/status` counts the first thread's alone); empty once it has exited.
fn thread_switches(pid: u32) -> BTreeMap<u32, Switches> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return BTreeMap::new();
    };
    tasks
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|tid| {
            let status = read(Path::new(&format!("/proc/{pid}/task/{tid}/status")));
            Some((tid, procfs::process::parse_switches(&status)?))
        })
        .collect()
}

/// The descriptors `pid` holds open, in every descriptor table its threads use. Threads
/// that unshared theirs (`unshare(CLONE_FILES)`, as `dualbench serve`'s and `run`'s workers
/// do to lift the open-file limit) hold sockets that `/proc/PID/fd`, the main thread's
/// table, does not list: 200 connections to `dualbench serve` showed as 9 descriptors.
/// Threads are told apart by `kcmp(KCMP_FILES)`; where it is refused, the main table alone.
/// The main table is `first`'s: the main thread's (`pid`), or a running thread's once the
/// main thread has exited (its own table went with it).
fn open_files(pid: u32, first: u32) -> Option<u64> {
    let count = |path: String| std::fs::read_dir(path).ok().map(|d| d.count() as u64);
    let main = if first == pid {
        count(format!("/proc/{pid}/fd"))?
    } else {
        count(format!("/proc/{pid}/task/{first}/fd"))?
    };
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Some(main);
    };
    // One thread of each table counted so far (the main table's first).
    let mut tables = vec![first];
    let mut total = main;
    for tid in tasks.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok()) {
        let shares = |of: &u32| same_files(*of, tid).unwrap_or(true);
        if tid != first && !tables.iter().any(shares) {
            if let Some(n) = count(format!("/proc/{pid}/task/{tid}/fd")) {
                total += n;
                tables.push(tid);
            }
        }
    }
    Some(total)
}

/// Whether two threads share one descriptor table (`kcmp`), `None` when the kernel
/// cannot say (no kcmp, or not allowed).
fn same_files(a: u32, b: u32) -> Option<bool> {
    const KCMP_FILES: libc::c_long = 2;
    // SAFETY: kcmp takes plain integers and touches no memory of ours.
    let r = unsafe {
        libc::syscall(
            libc::SYS_kcmp,
            a as libc::c_long,
            b as libc::c_long,
            KCMP_FILES,
            0 as libc::c_long,
            0 as libc::c_long,
        )
    };
    (r >= 0).then_some(r == 0)
}

/// A file's text, or empty when it cannot be read (a counter file absent on this kernel,
/// such as `snmp6` with IPv6 disabled, yields no figures rather than an error).
fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Find processes by `comm` name (what `ps -e` shows), lowest pid first.
pub fn find_by_name(name: &str) -> Vec<Watched> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found: Vec<Watched> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| read(Path::new(&format!("/proc/{pid}/comm"))).trim_end() == name)
        .map(|pid| Watched {
            pid,
            name: name.to_string(),
            tree: None,
        })
        .collect();
    found.sort_by_key(|w| w.pid);
    found
}

/// `root` and every process descended from it, by the parent pids in `/proc/PID/stat`,
/// root first, each named by its `comm`. The root is listed even once it has exited (not
/// alive then); a process whose parent exits is adopted elsewhere and leaves the tree.
pub fn find_tree(root: &Watched) -> Vec<Watched> {
    let mut children: BTreeMap<u32, Vec<(u32, String)>> = BTreeMap::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for pid in dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok()) {
            let stat = read(Path::new(&format!("/proc/{pid}/stat")));
            if let Some(head) = procfs::process::parse_head(&stat) {
                children
                    .entry(head.ppid)
                    .or_default()
                    .push((pid, head.comm.to_string()));
            }
        }
    }
    let mut tree = vec![Watched {
        tree: Some(root.pid),
        ..root.clone()
    }];
    let mut at = 0;
    while let Some(parent) = tree.get(at).map(|w| w.pid) {
        for (pid, name) in children.remove(&parent).unwrap_or_default() {
            tree.push(Watched {
                pid,
                name,
                tree: Some(root.pid),
            });
        }
        at += 1;
    }
    tree
}

/// The `comm` name of a process, or `None` if there is no such process.
pub fn comm_of(pid: u32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .ok()
        .map(|s| s.trim_end().to_string())
}

/// The process (thread group) that `id` belongs to: `id` itself for a process, another
/// pid for a thread; `None` if there is no such id.
pub fn process_of(id: u32) -> Option<u32> {
    procfs::process::parse_tgid(&read(Path::new(&format!("/proc/{id}/status"))))
}

#[cfg(test)]
mod tests {
    use super::open_files;
    use std::sync::mpsc;

    /// A thread with a descriptor table of its own (as `dualbench serve`'s workers have):
    /// its files count, though `/proc/PID/fd` (the main thread's table) does not list them.
    #[test]
    fn descriptors_in_a_threads_own_table_count() {
        let pid = std::process::id();
        let before = open_files(pid, pid).unwrap();
        let (opened, done) = (mpsc::channel(), mpsc::channel::<()>());
        let (tx_opened, rx_done) = (opened.0, done.1);
        let thread = std::thread::spawn(move || {
            // SAFETY: unshare changes only this thread's descriptor table.
            assert_eq!(unsafe { libc::unshare(libc::CLONE_FILES) }, 0);
            let files: Vec<_> = (0..40)
                .map(|_| std::fs::File::open("/dev/null").unwrap())
                .collect();
            tx_opened.send(()).unwrap();
            let _ = rx_done.recv();
            drop(files);
        });
        opened.1.recv().unwrap();
        let during = open_files(pid, pid).unwrap();
        done.0.send(()).unwrap();
        thread.join().unwrap();
        // The thread's table: a copy of the main one, and its 40 files.
        assert!(during >= before + 40, "{before} then {during}");
        let main = std::fs::read_dir(format!("/proc/{pid}/fd"))
            .unwrap()
            .count() as u64;
        assert!(main < before + 40, "the main table alone has {main}");
    }
}
