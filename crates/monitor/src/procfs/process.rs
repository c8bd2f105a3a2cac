//! One process's files: `/proc/<pid>/stat` (state, CPU ticks, threads, RSS, parent),
//! `status` (the thread group; a thread's context switches) and `comm`.

/// What `/proc/<pid>/stat` says about a process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcStat {
    /// User and system CPU time, in clock ticks.
    pub utime: u64,
    pub stime: u64,
    pub threads: u64,
    /// Resident set size, in pages.
    pub rss_pages: u64,
    /// The process has exited and waits for its parent to reap it (state `Z`, zombie, or
    /// `X`, dead): its `/proc` entry is still there, but it runs no more.
    pub exited: bool,
}

/// Parse `/proc/<pid>/stat`. The command name (field 2) is in parentheses and may hold
/// spaces or parentheses itself, so fields are counted from the last `)`.
pub fn parse_pid_stat(text: &str) -> Option<ProcStat> {
    let rest = &text[text.rfind(')')? + 1..];
    // After ')': state(3) ppid(4) ... utime(14) stime(15) ... num_threads(20) ... rss(24).
    let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
    let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<u64>().ok());
    Some(ProcStat {
        utime: field(14)?,
        stime: field(15)?,
        threads: field(20)?,
        rss_pages: field(24)?,
        exited: matches!(fields.first(), Some(&("Z" | "X" | "x"))),
    })
}

/// The command name (field 2) and parent pid (field 4) of `/proc/<pid>/stat`.
pub fn parse_parent(text: &str) -> Option<(&str, u32)> {
    let (open, close) = (text.find('(')?, text.rfind(')')?);
    let comm = text.get(open + 1..close)?;
    let ppid = text[close + 1..]
        .split_ascii_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some((comm, ppid))
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

    #[test]
    fn stat_with_odd_command_name() {
        let text = "4242 (my (odd) proc) S 1 4242 4242 0 -1 4194560 500 0 0 0 120 35 0 0 20 0 7 0 111703 3133440 414 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n";
        let s = parse_pid_stat(text).unwrap();
        assert_eq!(
            s,
            ProcStat {
                utime: 120,
                stime: 35,
                threads: 7,
                rss_pages: 414,
                exited: false,
            }
        );
    }

    #[test]
    fn zombie_has_exited() {
        // A child that exited and was not reaped yet: state Z, no memory, its CPU kept.
        let text = "4243 (sleep) Z 4242 4242 4242 0 -1 4227084 95 0 0 0 3 1 0 0 20 0 1 0 111800 0 0 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
        let s = parse_pid_stat(text).unwrap();
        assert!(s.exited);
        assert_eq!((s.utime, s.stime, s.rss_pages), (3, 1, 0));
        let running = text.replacen(") Z ", ") R ", 1);
        assert!(!parse_pid_stat(&running).unwrap().exited);
    }

    #[test]
    fn truncated_stat_is_none() {
        assert_eq!(parse_pid_stat("4242 (x) S 1 2"), None);
        assert_eq!(parse_pid_stat("garbage"), None);
        assert_eq!(parse_parent("4242 (x) S"), None);
        assert_eq!(parse_parent("garbage"), None);
    }

    #[test]
    fn parent_and_name() {
        let text = "4242 (my (odd) proc) S 17 4242 4242 0 -1 4194560 500 0\n";
        assert_eq!(parse_parent(text), Some(("my (odd) proc", 17)));
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
