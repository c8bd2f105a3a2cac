//! Which network namespace's counters to read, and entering it from a thread: `ip netns`
//! names live under `/run/netns/`, a process's namespace is `/proc/<pid>/ns/net`.
//! `setns` changes only the calling thread, so the monitor and the capture each enter the
//! namespace on a thread of their own and the rest of the process stays where it was.

use crate::{Failure, Result};
use std::os::unix::fs::MetadataExt;
use std::os::unix::io::AsRawFd;
use std::path::PathBuf;

/// A network namespace to observe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Netns {
    /// The namespace the process already runs in.
    Current,
    /// A namespace made by `ip netns add NAME`.
    Named(String),
    /// The namespace a process runs in.
    OfProcess(u32),
}

impl Netns {
    fn path(&self) -> Option<PathBuf> {
        match self {
            Netns::Current => None,
            Netns::Named(name) => Some(PathBuf::from("/run/netns").join(name)),
            Netns::OfProcess(pid) => Some(PathBuf::from(format!("/proc/{pid}/ns/net"))),
        }
    }

    /// Check the namespace exists (a usage error names it and what to do).
    pub fn check(&self) -> Result<()> {
        match (self, self.path()) {
            (Netns::Named(name), _) if name.is_empty() => Err(Failure::usage(
                "an empty network namespace name: give one of 'ip netns list'",
            )),
            (Netns::Named(name), Some(p)) if !p.exists() || name.contains('/') => {
                Err(Failure::usage(format!(
                    "network namespace '{name}' not found (see 'ip netns list')"
                )))
            }
            (Netns::OfProcess(pid), Some(p)) if !p.exists() => Err(Failure::usage(format!(
                "process {pid} not found (see 'ps -e')"
            ))),
            _ => Ok(()),
        }
    }

    /// Move the calling thread into this namespace (nothing to do if it is already there).
    pub fn enter(&self) -> Result<()> {
        let Some(path) = self.path() else {
            return Ok(());
        };
        self.check()?;
        let target = std::fs::File::open(&path)
            .map_err(|e| Failure::runtime(format!("opening {}: {e}", path.display())))?;
        let here = std::fs::metadata("/proc/thread-self/ns/net")?;
        let there = target.metadata()?;
        if (here.dev(), here.ino()) == (there.dev(), there.ino()) {
            return Ok(());
        }
        // SAFETY: setns on a namespace fd we hold open; affects only this thread.
        if unsafe { libc::setns(target.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            return Err(enter_failed(&path, &std::io::Error::last_os_error()));
        }
        Ok(())
    }
}

/// Why setns into `path` failed, and what to do: only a refusal (EPERM) wants root; EINVAL
/// is a file that is no network namespace (a stale `/run/netns` entry, say), for which
/// "run as root" sent a root user looking in the wrong place.
fn enter_failed(path: &std::path::Path, e: &std::io::Error) -> Failure {
    let hint = match e.raw_os_error() {
        Some(libc::EPERM) => " (run as root)",
        Some(libc::EINVAL) => {
            " (not a network namespace: a stale entry? see 'ip netns list', and 'ip netns \
             delete' it)"
        }
        _ => "",
    };
    Failure::runtime(format!(
        "entering network namespace {}: {e}{hint}",
        path.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--netns ''` reached setns on `/run/netns/` itself and said "run as root".
    #[test]
    fn names_that_are_no_namespace_are_usage_errors() {
        let e = Netns::Named(String::new()).check().unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert_eq!(
            e.message,
            "an empty network namespace name: give one of 'ip netns list'"
        );
        for name in ["no-such-ns-dualbench", "../../proc/1/ns/net"] {
            let e = Netns::Named(name.into()).enter().unwrap_err();
            assert_eq!(e.exit_code(), 2);
            assert_eq!(
                e.message,
                format!("network namespace '{name}' not found (see 'ip netns list')")
            );
        }
        assert_eq!(Netns::Current.check(), Ok(()));
    }

    /// A stale `/run/netns` entry (a plain file) made setns fail with EINVAL, and the
    /// message told a root user to run as root.
    #[test]
    fn only_a_refusal_says_run_as_root() {
        let path = std::path::Path::new("/run/netns/x");
        let said = |errno| enter_failed(path, &std::io::Error::from_raw_os_error(errno)).message;
        assert_eq!(
            said(libc::EPERM),
            "entering network namespace /run/netns/x: Operation not permitted (os error 1) (run as root)"
        );
        assert_eq!(
            said(libc::EINVAL),
            "entering network namespace /run/netns/x: Invalid argument (os error 22) (not a network namespace: a stale entry? see 'ip netns list', and 'ip netns delete' it)"
        );
        assert_eq!(
            said(libc::ENOMEM),
            "entering network namespace /run/netns/x: Cannot allocate memory (os error 12)"
        );
    }
}
