//! Processes of a testbed, named exactly: by pid plus start time (so a reused pid is never
//! mistaken for ours) and by membership of a namespace we recorded (compared by the
//! namespace's inode, as `ip netns pids` does). Stopping is SIGTERM, a grace period, SIGKILL.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, Instant};

/// Field 22 of `/proc/PID/stat`: when the process started, in clock ticks since boot.
pub fn start_time(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(19)?.parse().ok()
}

/// How child `pid` of this process ended, if it has: it is reaped here (`exit status: 3`,
/// `signal: 9 (SIGKILL)`). `None` while it runs, or when it is not our child.
pub fn reap(pid: u32) -> Option<std::process::ExitStatus> {
    use std::os::unix::process::ExitStatusExt;
    let mut status = 0;
    // SAFETY: waitpid(2) with WNOHANG writes only `status`, and never blocks.
    let reaped = unsafe { libc::waitpid(pid as libc::pid_t, &mut status, libc::WNOHANG) };
    (reaped == pid as libc::pid_t).then(|| std::process::ExitStatus::from_raw(status))
}

/// Whether `pid` is running (not gone, not a zombie).
pub fn is_running(pid: u32) -> bool {
    let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat
        .rfind(')')
        .and_then(|i| stat[i + 1..].split_whitespace().next());
    !matches!(state, None | Some("Z") | Some("X"))
}

/// The identity (device, inode) of a network namespace file.
fn netns_id(path: &Path) -> Option<(u64, u64)> {
    let meta = fs::metadata(path).ok()?;
    Some((meta.dev(), meta.ino()))
}

/// The file of named namespace `ns`.
pub fn netns_path(ns: &str) -> std::path::PathBuf {
    Path::new("/run/netns").join(ns)
}

/// Whether `pid` lives in named namespace `ns`.
pub fn in_namespace(pid: u32, ns: &str) -> bool {
    let ours = netns_id(&netns_path(ns));
    ours.is_some() && ours == netns_id(Path::new(&format!("/proc/{pid}/ns/net")))
}

/// Every running process in named namespace `ns` (empty if the namespace is gone).
pub fn pids_in(ns: &str) -> Vec<u32> {
    let Some(ours) = netns_id(&netns_path(ns)) else {
        return Vec::new();
    };
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| netns_id(Path::new(&format!("/proc/{pid}/ns/net"))) == Some(ours))
        .filter(|&pid| is_running(pid))
        .collect()
}

/// Send `sig` to `pid` (one we identified by pid and start time).
pub fn signal(pid: u32, sig: libc::c_int) {
    // SAFETY: kill(2) with a pid we identified; failure (already gone) is harmless.
    unsafe { libc::kill(pid as libc::pid_t, sig) };
}

/// SIGTERM every pid, wait up to `grace` for them to end, then SIGKILL the rest.
/// Returns the pids still running after SIGKILL and another second.
pub fn stop(pids: &[u32], grace: Duration) -> Vec<u32> {
    for &pid in pids {
        signal(pid, libc::SIGTERM);
    }
    let left = wait_gone(pids, grace);
    for &pid in &left {
        signal(pid, libc::SIGKILL);
    }
    wait_gone(&left, Duration::from_secs(1))
}

/// Wait up to `limit` for every pid to end; the pids still running then.
pub fn wait_gone(pids: &[u32], limit: Duration) -> Vec<u32> {
    let start = Instant::now();
    loop {
        let left: Vec<u32> = pids.iter().copied().filter(|&p| is_running(p)).collect();
        if left.is_empty() || start.elapsed() >= limit {
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Local ports in LISTEN state in a `/proc/PID/net/tcp` or `tcp6` table (kernel ABI:
/// `local_address` is `HEXADDR:HEXPORT`, `st` 0A is LISTEN).
pub fn listening_ports(table: &str) -> Vec<u16> {
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let port = fields.get(1)?.rsplit(':').next()?;
            (fields.get(3) == Some(&"0A")).then(|| u16::from_str_radix(port, 16).ok())?
        })
        .collect()
}

/// Whether process `pid`'s network namespace has a TCP socket listening on `port`.
pub fn listens(pid: u32, port: u16) -> bool {
    ["tcp", "tcp6"].iter().any(|t| {
        let table = fs::read_to_string(format!("/proc/{pid}/net/{t}")).unwrap_or_default();
        listening_ports(&table).contains(&port)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A service that exited at once was reported without its status: reaping gives it.
    #[test]
    fn a_child_that_ended_is_reaped_with_its_status() {
        let child = std::process::Command::new("sh")
            .args(["-c", "exit 3"])
            .spawn()
            .unwrap();
        let pid = child.id();
        drop(child); // not waited for: a zombie until reaped
        let deadline = Instant::now() + Duration::from_secs(10);
        let status = loop {
            if let Some(status) = reap(pid) {
                break status;
            }
            assert!(Instant::now() < deadline, "sh -c 'exit 3' did not end");
            std::thread::sleep(Duration::from_millis(5));
        };
        assert_eq!(status.code(), Some(3));
        assert_eq!(status.to_string(), "exit status: 3");
        // Reaped once: nothing is left to reap, and a pid not our child gives nothing.
        assert_eq!(reap(pid), None);
        assert_eq!(reap(1), None);
    }

    #[test]
    fn listening_ports_come_from_the_kernel_table() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 00000000:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0\n\
   1: 0100007F:1F90 0100007F:D2A4 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0 20 4 30 10 -1\n";
        assert_eq!(listening_ports(table), [80]);
    }

    #[test]
    fn our_own_process_has_a_start_time_and_runs() {
        let me = std::process::id();
        assert!(start_time(me).is_some());
        assert!(is_running(me));
        assert!(!is_running(u32::MAX - 1));
    }
}
