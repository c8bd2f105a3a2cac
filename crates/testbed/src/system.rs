//! The testbed's few contacts with the system outside the executor: running one command and
//! turning its failure into one line, checking each command's privilege, probing whether the
//! kernel has netem (in a throwaway anonymous namespace, so nothing is left behind),
//! looking at a namespace from inside (a short-lived thread that enters it), and giving a
//! node's commands the node's name as hostname.

use dualbench_common::{Failure, Result};
use std::process::{Command, Stdio};

/// The Debian package that provides a program we run, for "install it" messages.
fn package_of(program: &str) -> &'static str {
    match program {
        "ip" | "tc" => "iproute2",
        "ethtool" => "ethtool",
        "sysctl" => "procps",
        "unshare" => "util-linux",
        _ => "the package that provides it",
    }
}

/// Run `argv` to completion; a non-zero exit becomes one line with the command and its error.
pub fn run(argv: &[String]) -> Result<()> {
    let Some((program, args)) = argv.split_first() else {
        return Ok(());
    };
    let output = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| spawn_error(program, e))?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let why = stderr
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("no error message")
        .trim()
        .to_string();
    Err(Failure::runtime(format!(
        "`{}` failed ({}): {why}",
        argv.join(" "),
        output.status
    )))
}

pub fn spawn_error(program: &str, e: std::io::Error) -> Failure {
    if e.kind() == std::io::ErrorKind::NotFound {
        return Failure::runtime(format!(
            "`{program}` not found: install {}",
            package_of(program)
        ));
    }
    Failure::runtime(format!("cannot run `{program}`: {e}"))
}

/// Capability numbers (linux/capability.h) the testbed asks for.
const CAP_NET_ADMIN: u32 = 12;
const CAP_SYS_ADMIN: u32 = 21;

/// Whether this process has capability `cap` in effect (its bit of CapEff).
fn has_capability(cap: u32) -> bool {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return false;
    };
    let caps = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .map(str::trim);
    caps.and_then(|hex| u64::from_str_radix(hex, 16).ok())
        .is_some_and(|bits| bits & (1 << cap) != 0)
}

/// Which command asks for privilege: each needs it for something else, and says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    Up,
    Down,
    Exec,
}

impl Needs {
    /// The capability the command cannot work without, and its one-line refusal.
    pub fn requirement(self) -> (u32, &'static str) {
        match self {
            Needs::Up => (
                CAP_NET_ADMIN,
                "testbed up needs root (CAP_NET_ADMIN) to create network namespaces: run it with sudo, or use --dry-run to see the plan",
            ),
            Needs::Down => (
                CAP_NET_ADMIN,
                "testbed down needs root (CAP_NET_ADMIN) to stop a testbed's processes and remove its network namespaces: run it with sudo",
            ),
            Needs::Exec => (
                CAP_SYS_ADMIN,
                "testbed exec needs root (CAP_SYS_ADMIN) to enter a node's network namespace: run it with sudo",
            ),
        }
    }
}

/// One clear line, worded for the command, when it cannot work for lack of privilege.
pub fn require(needs: Needs) -> Result<()> {
    let (cap, refusal) = needs.requirement();
    if has_capability(cap) {
        return Ok(());
    }
    Err(Failure::usage(refusal))
}

/// Whether the kernel can add a netem qdisc: try it on `lo` of a fresh anonymous namespace
/// (`unshare -n`), which disappears with the probe process.
pub fn netem_available() -> bool {
    let argv = [
        "-n", "tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms",
    ];
    Command::new("unshare")
        .args(argv)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The names of every named network namespace (`/run/netns`, as `ip netns list` shows).
pub fn namespace_names() -> Vec<String> {
    names_in("/run/netns")
}

/// The names of the namespaces with files for `ip netns exec` in `/etc/netns`.
pub fn etc_netns_names() -> Vec<String> {
    names_in("/etc/netns")
}

fn names_in(dir: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    names.sort();
    names
}

/// Run `f` on a short-lived thread that has entered the network namespace `ip netns` calls
/// `ns` (only that thread moves; sockets it makes stay in the namespace).
pub fn in_namespace<T: Send>(
    ns: &str,
    f: impl FnOnce() -> std::io::Result<T> + Send,
) -> std::io::Result<T> {
    use std::os::fd::AsRawFd;
    let path = crate::procs::netns_path(ns);
    std::thread::scope(|s| {
        s.spawn(|| {
            let target = std::fs::File::open(&path)?;
            // SAFETY: setns on a namespace fd we hold; it moves only this thread.
            if unsafe { libc::setns(target.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
            f()
        })
        .join()
        .unwrap_or_else(|_| Err(std::io::Error::other("the namespace thread failed")))
    })
}

/// Whether `path` under `/proc/sys` exists as seen from namespace `ns`: `/proc/sys/net`
/// shows the keys of the looking thread's network namespace, which in a fresh namespace
/// are fewer than the machine's (`net.core.netdev_max_backlog` is the machine's only).
pub fn sysctl_exists(ns: &str, path: &str) -> std::io::Result<bool> {
    in_namespace(ns, || Ok(std::path::Path::new(path).exists()))
}

/// Whether named namespace `ns` exists.
pub fn namespace_exists(ns: &str) -> bool {
    crate::procs::netns_path(ns).exists()
}

/// Move the calling process into a new UTS namespace whose hostname is `name`, so it and
/// whatever it execs (`ip netns exec` keeps the UTS namespace it is given) see the node's
/// name; the machine's hostname is untouched. Only system calls: safe between fork and exec.
pub fn own_hostname(name: &[u8]) -> std::io::Result<()> {
    // SAFETY: unshare(2) and sethostname(2) take no pointers but `name`, valid for its length.
    unsafe {
        if libc::unshare(libc::CLONE_NEWUTS) != 0
            || libc::sethostname(name.as_ptr().cast(), name.len()) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// `own_hostname` as a failure of the command it was for.
pub fn hostname_error(node: &str, e: std::io::Error) -> Failure {
    Failure::runtime(format!(
        "cannot give the command on {node} its own hostname (a UTS namespace named '{node}'): {e}"
    ))
}
