//! This host's name, as `uname -n` gives it: the one of the UTS namespace the process runs
//! in (a testbed node's own name inside `testbed exec`).

/// The host name, or `None` when the kernel gives none.
pub fn name() -> Option<String> {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
    let name = name.trim();
    (!name.is_empty()).then(|| name.to_string())
}
