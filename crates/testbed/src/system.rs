//! The testbed's few contacts with the system outside the executor: running one command and
//! turning its failure into one line, checking for CAP_NET_ADMIN, probing whether the
//! kernel has netem (in a throwaway anonymous namespace, so nothing is left behind), and
//! giving a node's commands the node's name as hostname.

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

/// Whether this process may create namespaces and interfaces (CAP_NET_ADMIN, bit 12 of CapEff).
pub fn has_net_admin() -> bool {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return false;
    };
    let caps = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .map(str::trim);
    caps.and_then(|hex| u64::from_str_radix(hex, 16).ok())
        .is_some_and(|bits| bits & (1 << 12) != 0)
}

/// One clear line when the testbed cannot work for lack of privilege.
pub fn require_net_admin() -> Result<()> {
    if has_net_admin() {
        return Ok(());
    }
    Err(Failure::usage(
        "testbed needs root (CAP_NET_ADMIN) to create network namespaces: run it with sudo, or use --dry-run to see the plan",
    ))
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
