//! `/proc/PID/stat` (and a thread's `/proc/PID/task/TID/stat`) parsed, with no I/O: the
//! one reader of that line, for the monitor (CPU, faults, memory, threads, parents) and for
//! [`crate::netns`] (whether a process has exited, and its parent).
//!
//! The command name (field 2) is in parentheses and is whatever the process called
//! itself (up to 15 bytes; a kernel workqueue thread shows more): it may hold spaces,
//! parentheses and even `) Z 1` — the kernel does not escape it — so the fields are
//! counted from the *last* `)` of the line.

/// The fields of `/proc/PID/stat` up to the parent (fields 1 to 4): all that a line cut
/// short after them still tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head<'a> {
    pub pid: u32,
    /// The command name (`comm`) as the kernel wrote it, without its parentheses.
    pub comm: &'a str,
    /// `R` running, `S` sleeping, `D` in uninterruptible wait, `Z` zombie, `X` dead, ...
    pub state: char,
    pub ppid: u32,
}

/// The counters of `/proc/PID/stat` the monitor samples. Read from `/proc/PID/stat` they
/// are the whole process's: the kernel sums the faults and CPU time over every thread,
/// those that have ended included.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcStat {
    pub pid: u32,
    /// Field 3 (`'\0'` in a default value).
    pub state: char,
    pub ppid: u32,
    /// Faults that needed no read from storage (field 10, `minflt`).
    pub minflt: u64,
    /// Faults that read a page from storage (field 12, `majflt`).
    pub majflt: u64,
    /// User and system CPU time, in clock ticks (fields 14 and 15).
    pub utime: u64,
    pub stime: u64,
    /// Field 20, `num_threads`.
    pub threads: u64,
    /// Virtual memory size in bytes (field 23, `vsize`): 0 for a task without memory of
    /// its own (a zombie, a kernel thread).
    pub vsize: u64,
    /// Resident set size, in pages (field 24, `rss`).
    pub rss_pages: u64,
}

impl ProcStat {
    /// The process has exited and waits for its parent to reap it (state `Z`, zombie, or
    /// `X`/`x`, dead): its `/proc` entry is still there, but it runs no more.
    pub fn exited(&self) -> bool {
        exited(self.state)
    }
}

/// Whether a state letter is one of a task that has exited (`Z`, `X`, `x`).
pub fn exited(state: char) -> bool {
    matches!(state, 'Z' | 'X' | 'x')
}

/// The pid, command name, state and parent of a `stat` line; `None` if it lacks one of
/// them.
pub fn parse_head(text: &str) -> Option<Head<'_>> {
    let (open, close) = (text.find('(')?, text.rfind(')')?);
    let comm = text.get(open + 1..close)?;
    let pid = text[..open].trim().parse().ok()?;
    let mut fields = text[close + 1..].split_ascii_whitespace();
    let mut letters = fields.next()?.chars();
    let state = letters.next().filter(|_| letters.next().is_none())?;
    let ppid = fields.next()?.parse().ok()?;
    Some(Head {
        pid,
        comm,
        state,
        ppid,
    })
}

/// The counters of a `stat` line; `None` if it is cut short before field 24 (`rss`) or
/// one of them is no number.
pub fn parse(text: &str) -> Option<ProcStat> {
    let head = parse_head(text)?;
    let close = text.rfind(')')?;
    let fields: Vec<&str> = text[close + 1..].split_ascii_whitespace().collect();
    // fields[0] is field 3 (the state).
    let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<u64>().ok());
    Some(ProcStat {
        pid: head.pid,
        state: head.state,
        ppid: head.ppid,
        minflt: field(10)?,
        majflt: field(12)?,
        utime: field(14)?,
        stime: field(15)?,
        threads: field(20)?,
        vsize: field(23)?,
        rss_pages: field(24)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `/proc/PID/stat` of a `perl` that had just built a 64 MiB string (two copies of it,
    /// as it happens: 133 MB resident), read by itself on the development machine (kernel
    /// 6.18): `perl -e 'my $m = "x" x (64 << 20); open(my $f, "<", "/proc/self/stat");
    /// print <$f>'`.
    const PERL: &str = "13996 (perl) R 13993 13993 7047 0 -1 4194304 33015 0 2 0 0 6 0 0 20 0 1 0 131882 142303232 34027 18446744073709551615 94741624741888 94741626397221 140726070334736 0 0 0 0 128 0 0 0 0 17 1 0 0 0 0 0 94741628182312 94741628253044 94742401724416 140726070340177 140726070340307 140726070340307 140726070341610 0\n";

    #[test]
    fn every_counter_of_a_captured_line() {
        assert_eq!(
            parse(PERL),
            Some(ProcStat {
                pid: 13_996,
                state: 'R',
                ppid: 13_993,
                minflt: 33_015,
                majflt: 2,
                utime: 0,
                stime: 6,
                threads: 1,
                vsize: 142_303_232,
                rss_pages: 34_027,
            })
        );
        assert_eq!(
            parse_head(PERL),
            Some(Head {
                pid: 13_996,
                comm: "perl",
                state: 'R',
                ppid: 13_993,
            })
        );
    }

    /// Names a process may give itself (`prctl(PR_SET_NAME)`, or the file it runs): the
    /// fields are counted from the last `)`, whatever the name holds before it.
    #[test]
    fn tricky_names() {
        let line = |comm: &str| PERL.replacen("(perl)", &format!("({comm})"), 1);
        for comm in [
            "my (odd) proc",
            "a) Z 1 2 3 (b",
            ")",
            "((",
            "",
            "x y",
            "tab\there",
            "S 17 (",
            "kworker/R-a)b",
        ] {
            let text = line(comm);
            let head = parse_head(&text).unwrap_or_else(|| panic!("{text}"));
            assert_eq!((head.comm, head.state, head.ppid), (comm, 'R', 13_993));
            let stat = parse(&text).unwrap();
            assert_eq!(
                (stat.minflt, stat.stime, stat.vsize, stat.rss_pages),
                (33_015, 6, 142_303_232, 34_027),
                "{comm:?}"
            );
            assert!(!stat.exited());
        }
        // A name ending in what looks like a zombie's state: the process is running.
        let text = "4243 (a) Z b) S 4242 4243 4242 0 -1 4227084 95 0 0 0 3 1 0 0\n";
        assert_eq!(
            parse_head(text).map(|h| (h.state, h.ppid)),
            Some(('S', 4242))
        );
    }

    /// A zombie keeps its counters (CPU, faults) but has no memory.
    #[test]
    fn a_zombie_has_exited() {
        let text = "4243 (sleep) Z 4242 4242 4242 0 -1 4227084 95 0 0 0 3 1 0 0 20 0 1 0 111800 0 0 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
        let s = parse(text).unwrap();
        assert!(s.exited());
        assert_eq!(
            (s.minflt, s.utime, s.stime, s.vsize, s.rss_pages),
            (95, 3, 1, 0, 0)
        );
        for (state, gone) in [('X', true), ('x', true), ('R', false), ('D', false)] {
            let text = text.replacen(") Z ", &format!(") {state} "), 1);
            assert_eq!(parse(&text).unwrap().exited(), gone, "{state}");
        }
        assert!(!ProcStat::default().exited());
    }

    /// Lines cut short: the head needs the pid, a name, the state and the parent; the
    /// counters, every field up to `rss` (24).
    #[test]
    fn lines_cut_short() {
        assert_eq!(
            parse_head("4243 (x) X 17 1\n").map(|h| (h.state, h.ppid)),
            Some(('X', 17))
        );
        assert_eq!(parse("4243 (x) X 17 1\n"), None);
        let cut = PERL.split(' ').take(23).collect::<Vec<_>>().join(" ");
        assert_eq!(parse(&cut), None, "{cut}");
        let whole = PERL.split(' ').take(24).collect::<Vec<_>>().join(" ");
        assert_eq!(parse(&whole).map(|s| s.rss_pages), Some(34_027));
        for text in [
            "4243 (x) Z",
            "4242 (x) S",
            "4243 (x) Z x",
            "(x) S 1",
            "garbage",
            "",
        ] {
            assert_eq!(parse_head(text), None, "{text:?}");
            assert_eq!(parse(text), None, "{text:?}");
        }
        // A state is one letter.
        assert_eq!(parse_head("4243 (x) ZZ 17\n"), None);
    }
}
