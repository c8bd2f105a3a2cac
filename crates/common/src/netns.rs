//! Which network namespace's counters to read, and entering it from a thread: `ip netns`
//! names live under `/run/netns/`, a process's namespace is `/proc/<pid>/ns/net` (or a
//! running thread's `/proc/<pid>/task/<tid>/ns/net` once its main thread has exited).
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
    /// The file to enter, checked (a usage error names it and what to do); `None` for
    /// the current namespace.
    fn path(&self) -> Result<Option<PathBuf>> {
        match self {
            Netns::Current => Ok(None),
            Netns::Named(name) if name.is_empty() => Err(Failure::usage(
                "an empty network namespace name: give one of 'ip netns list'",
            )),
            Netns::Named(name) => {
                let p = PathBuf::from("/run/netns").join(name);
                if !p.exists() || name.contains('/') {
                    return Err(Failure::usage(format!(
                        "network namespace '{name}' not found (see 'ip netns list')"
                    )));
                }
                Ok(Some(p))
            }
            Netns::OfProcess(pid) => process_link(*pid).map(Some),
        }
    }

    /// Check the namespace exists (a usage error names it and what to do).
    pub fn check(&self) -> Result<()> {
        self.path().map(|_| ())
    }

    /// Move the calling thread into this namespace (nothing to do if it is already there).
    pub fn enter(&self) -> Result<()> {
        let Some(path) = self.path()? else {
            return Ok(());
        };
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

/// The namespace link of process `pid`: `/proc/PID/ns/net`, the main thread's. A main
/// thread that has exited (`pthread_exit` in `main`) while others run is a zombie whose
/// links are gone, so then a running thread's `/proc/PID/task/TID/ns/net` (until
/// 2026-11-24 such a process was "not found"). A process with no running thread has
/// exited, and is only waiting for its parent to reap it.
fn process_link(pid: u32) -> Result<PathBuf> {
    let main = PathBuf::from(format!("/proc/{pid}/ns/net"));
    if main.exists() {
        return Ok(main);
    }
    let threads = std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten();
    let running = threads
        .filter_map(|e| Some(e.ok()?.path().join("ns/net")))
        .find(|link| link.exists());
    if let Some(link) = running {
        return Ok(link);
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    Err(Failure::usage(match exited_parent(&stat) {
        Some(ppid) => format!(
            "process {pid} has exited and is not yet reaped by its parent (process {ppid}): \
             nothing left to watch"
        ),
        None => format!("process {pid} not found (see 'ps -e')"),
    }))
}

/// The parent of the process whose `/proc/<pid>/stat` this is, if it has exited (state
/// `Z`, zombie, or `X`, dead); the command name in parentheses may hold either itself.
fn exited_parent(stat: &str) -> Option<u32> {
    let head = crate::procstat::parse_head(stat)?;
    crate::procstat::exited(head.state).then_some(head.ppid)
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

    /// Only an exited process's stat names its parent; a command name may look like a
    /// state.
    #[test]
    fn the_parent_of_an_exited_process() {
        let zombie = "4243 (a) Z b) S 4242 4243 4242 0 -1 4227084 95 0 0 0 3 1 0 0\n";
        assert_eq!(exited_parent(zombie), None);
        let zombie = "4243 (a) S b) Z 4242 4243 4242 0 -1 4227084 95 0 0 0 3 1 0 0\n";
        assert_eq!(exited_parent(zombie), Some(4242));
        assert_eq!(exited_parent("4243 (x) X 17 1\n"), Some(17));
        assert_eq!(exited_parent("4243 (x) R 17 1\n"), None);
        assert_eq!(exited_parent("4243 (x) Z"), None);
        assert_eq!(exited_parent(""), None);
    }

    /// A process that is gone, and this one (its main thread's link is there).
    #[test]
    fn the_link_of_a_process() {
        let me = std::process::id();
        assert_eq!(
            process_link(me),
            Ok(PathBuf::from(format!("/proc/{me}/ns/net")))
        );
        let e = Netns::OfProcess(999_999_999).check().unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert_eq!(e.message, "process 999999999 not found (see 'ps -e')");
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
