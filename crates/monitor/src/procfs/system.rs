//! Machine-wide files: `/proc/stat` (per-CPU time, context switches, interrupts,
//! softirqs), `/proc/vmstat` (paging), `/proc/meminfo` and `/proc/diskstats`.

use super::{number, Counters};
use std::collections::BTreeMap;

/// Time one CPU (or all of them, `"cpu"`) spent in each state, in clock ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTimes {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
}

impl CpuTimes {
    pub fn total(&self) -> u64 {
        self.user
            + self.nice
            + self.system
            + self.idle
            + self.iowait
            + self.irq
            + self.softirq
            + self.steal
    }
}

/// What `/proc/stat` says: CPUs keyed `"all"`, `"cpu0"`, ...; counters `ctxt`, `intr`,
/// `softirq`, `processes` (forks) and gauges `procs_running`, `procs_blocked`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stat {
    pub cpus: BTreeMap<String, CpuTimes>,
    pub counters: Counters,
}

/// Parse `/proc/stat`.
pub fn parse_stat(text: &str) -> Stat {
    let mut stat = Stat::default();
    for line in text.lines() {
        let mut fields = line.split_ascii_whitespace();
        let Some(key) = fields.next() else { continue };
        if let Some(cpu) = key.strip_prefix("cpu") {
            let v: Vec<u64> = fields.map(|f| f.parse().unwrap_or(0)).collect();
            let get = |i: usize| v.get(i).copied().unwrap_or(0);
            let times = CpuTimes {
                user: get(0),
                nice: get(1),
                system: get(2),
                idle: get(3),
                iowait: get(4),
                irq: get(5),
                softirq: get(6),
                steal: get(7),
            };
            let name = if cpu.is_empty() {
                "all".to_string()
            } else {
                key.to_string()
            };
            stat.cpus.insert(name, times);
        } else if matches!(
            key,
            "ctxt" | "intr" | "softirq" | "processes" | "procs_running" | "procs_blocked"
        ) {
            // `intr` and `softirq` are followed by per-source counts; the first is the total.
            stat.counters
                .insert(key.to_string(), fields.next().map(number).unwrap_or(0));
        }
    }
    stat
}

/// Parse `/proc/vmstat` (`name value` lines), keeping only the names in `keep`.
pub fn parse_vmstat(text: &str, keep: &[&str]) -> Counters {
    name_value_lines(text, keep, number)
}

/// Parse `/proc/meminfo` (`Name:   1234 kB` lines) into kB, keeping only the names in `keep`.
pub fn parse_meminfo(text: &str, keep: &[&str]) -> Counters {
    let mut out = Counters::new();
    for line in text.lines() {
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        if keep.contains(&name) {
            let value = rest
                .split_ascii_whitespace()
                .next()
                .map(number)
                .unwrap_or(0);
            out.insert(name.to_string(), value);
        }
    }
    out
}

fn name_value_lines(text: &str, keep: &[&str], value: impl Fn(&str) -> i64) -> Counters {
    let mut out = Counters::new();
    for line in text.lines() {
        let mut fields = line.split_ascii_whitespace();
        if let (Some(name), Some(v)) = (fields.next(), fields.next()) {
            if keep.is_empty() || keep.contains(&name) {
                out.insert(name.to_string(), value(v));
            }
        }
    }
    out
}

/// Parse `/proc/diskstats` into per-device counters: `reads`, `read_sectors`, `writes`,
/// `write_sectors`, `io_ms` (time the device was busy). Loop and RAM devices are skipped.
pub fn parse_diskstats(text: &str) -> BTreeMap<String, Counters> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split_ascii_whitespace().collect();
        if fields.len() < 14 || fields[2].starts_with("loop") || fields[2].starts_with("ram") {
            continue;
        }
        let names = [
            ("reads", 3),
            ("read_sectors", 5),
            ("writes", 7),
            ("write_sectors", 9),
            ("io_ms", 12),
        ];
        let counters = names
            .iter()
            .map(|&(n, i)| (n.to_string(), number(fields[i])))
            .collect();
        out.insert(fields[2].to_string(), counters);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  10 1 20 300 4 5 6 7 0 0\n\
cpu0 5 0 10 150 2 3 3 4 0 0\n\
cpu1 5 1 10 150 2 2 3 3 0 0\n\
intr 9000 12 0 3\n\
ctxt 123456\n\
btime 1700000000\n\
processes 777\n\
procs_running 3\n\
procs_blocked 1\n\
softirq 4242 0 1 2\n";

    #[test]
    fn stat_reads_cpus_and_totals() {
        let s = parse_stat(STAT);
        assert_eq!(s.cpus.len(), 3);
        let all = s.cpus["all"];
        assert_eq!(
            (all.user, all.system, all.idle, all.softirq, all.steal),
            (10, 20, 300, 6, 7)
        );
        assert_eq!(all.total(), 353);
        assert_eq!(s.cpus["cpu1"].nice, 1);
        assert_eq!(s.counters["intr"], 9000);
        assert_eq!(s.counters["softirq"], 4242);
        assert_eq!(s.counters["ctxt"], 123456);
        assert_eq!(s.counters["procs_running"], 3);
        assert!(!s.counters.contains_key("btime"));
    }

    #[test]
    fn vmstat_and_meminfo_keep_what_is_asked() {
        let v = parse_vmstat(
            "nr_free_pages 100\npgfault 5000\npgmajfault 7\n",
            &["pgfault", "pgmajfault"],
        );
        assert_eq!(v.len(), 2);
        assert_eq!(v["pgfault"], 5000);
        let m = parse_meminfo(
            "MemTotal:       24000000 kB\nMemFree:  1000 kB\nHugePages_Total: 0\n",
            &["MemTotal", "MemFree"],
        );
        assert_eq!(m["MemTotal"], 24_000_000);
        assert_eq!(m["MemFree"], 1000);
        assert_eq!(m.len(), 2);
    }

    #[test]
    fn diskstats_skip_loop_devices() {
        let text = "   7       0 loop0 1 0 2 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n \
 254       0 vda 100 5 800 40 50 6 400 30 0 70 90 0 0 0 0\n";
        let d = parse_diskstats(text);
        assert_eq!(d.len(), 1);
        let vda = &d["vda"];
        assert_eq!(
            (
                vda["reads"],
                vda["read_sectors"],
                vda["writes"],
                vda["write_sectors"],
                vda["io_ms"]
            ),
            (100, 800, 50, 400, 70)
        );
    }
}
