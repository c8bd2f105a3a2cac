//! One process's files: `/proc/<pid>/stat` (parsed by [`dualbench_common::procstat`], the
//! one parser of it, re-exported here), `status` (the thread group; a thread's context
//! switches) and `io` (its reads and writes).

pub use dualbench_common::procstat::{parse as parse_pid_stat, parse_head, ProcStat};

/// The storage I/O `/proc/<pid>/io` counts for a process since it started, every
/// thread's (those that ended included), in bytes: what `pidstat -d` shows. Not its
/// `rchar`/`wchar`, the bytes passed to `read`/`write` of any file, socket or pipe.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcIo {
    /// Bytes it caused to be read from storage (a read the page cache answered is not).
    pub read_bytes: u64,
    /// Bytes it caused to be written to storage, counted as the page cache takes them
    /// (when a page is first dirtied), or as a direct write is sent.
    pub write_bytes: u64,
    /// Bytes of `write_bytes` that never reached storage: dirty pages of a file truncated
    /// or deleted before they were written back.
    pub cancelled_write_bytes: u64,
}

/// Parse `/proc/<pid>/io` (`name: value` lines); `None` when a counter is missing.
pub fn parse_io(text: &str) -> Option<ProcIo> {
    let mut io = [None; 3];
    const NAMES: [&str; 3] = ["read_bytes", "write_bytes", "cancelled_write_bytes"];
    for line in text.lines() {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        if let Some(i) = NAMES.iter().position(|n| *n == name) {
            io[i] = value.trim().parse().ok();
        }
    }
    Some(ProcIo {
        read_bytes: io[0]?,
        write_bytes: io[1]?,
        cancelled_write_bytes: io[2]?,
    })
}

/// The thread group id (`Tgid:`) of `/proc/<id>/status`: the process an id belongs to.
/// `/proc/<tid>` of a thread that is not its process's first answers too (though `ls
/// /proc` does not list it), with the whole process's figures.
pub fn parse_tgid(status: &str) -> Option<u32> {
    status
        .lines()
        .find_map(|line| line.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
}

/// One thread's context switches since it started, from `/proc/<pid>/task/<tid>/status`
/// (`/proc/<pid>/status` has the first thread's alone, not the process's).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Switches {
    /// `voluntary_ctxt_switches`: the thread gave up the CPU, to wait (sleep, I/O, a lock).
    pub voluntary: u64,
    /// `nonvoluntary_ctxt_switches`: the scheduler took the CPU from it (its time slice
    /// ran out, or a more urgent task woke).
    pub involuntary: u64,
}

/// The context switches of a `status` file; `None` when it has neither line.
pub fn parse_switches(status: &str) -> Option<Switches> {
    let (mut voluntary, mut involuntary) = (None, None);
    for line in status.lines() {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let slot = match name {
            "voluntary_ctxt_switches" => &mut voluntary,
            "nonvoluntary_ctxt_switches" => &mut involuntary,
            _ => continue,
        };
        *slot = value.trim().parse().ok();
    }
    Some(Switches {
        voluntary: voluntary?,
        involuntary: involuntary?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `/proc/PID/io` of a `perl` that had written 10 MiB to a file, `fsync`ed it and
    /// deleted it, read by itself on the development machine (kernel 6.18; its modules
    /// read from storage, 128 KiB).
    #[test]
    fn io_of_a_captured_file() {
        let text = "rchar: 84342\nwchar: 10485760\nsyscr: 34\nsyscw: 10\nread_bytes: 131072\n\
write_bytes: 10485760\ncancelled_write_bytes: 0\n";
        assert_eq!(
            parse_io(text),
            Some(ProcIo {
                read_bytes: 131_072,
                write_bytes: 10_485_760,
                cancelled_write_bytes: 0,
            })
        );
        let cut = text.replace("cancelled_write_bytes: 0\n", "");
        assert_eq!(parse_io(&cut), None);
        assert_eq!(parse_io(""), None);
        assert_eq!(parse_io(&text.replace("131072", "x")), None);
    }

    #[test]
    fn thread_group_of_a_status_file() {
        let status = "Name:\tserve-1\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t25490\nNgid:\t0\nPid:\t25493\nPPid:\t25488\n";
        assert_eq!(parse_tgid(status), Some(25490));
        assert_eq!(parse_tgid("Name:\tx\nPid:\t7\n"), None);
        assert_eq!(parse_tgid(""), None);
    }

    #[test]
    fn context_switches_of_a_status_file() {
        let status = "Name:\tserve-1\nTgid:\t25490\nThreads:\t3\n\
voluntary_ctxt_switches:\t1523\nnonvoluntary_ctxt_switches:\t17\n";
        assert_eq!(
            parse_switches(status),
            Some(Switches {
                voluntary: 1523,
                involuntary: 17
            })
        );
        assert_eq!(
            parse_switches("Name:\tx\nvoluntary_ctxt_switches:\t3\n"),
            None
        );
        assert_eq!(parse_switches(""), None);
    }
}
