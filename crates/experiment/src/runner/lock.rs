//! One `dualbench experiment` at a time per experiment: an exclusive `flock` on
//! `experiment.lock` in the experiment's folder, held until the process ends (the kernel
//! drops it on any exit, SIGKILL included). Two `--resume`s of one experiment would run
//! the same runs into the same folders, each reading the other's half-written files.

use dualbench_common::{Failure, Result};
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::path::Path;

/// The lock file's name in the experiment's folder; it holds the holder's pid.
pub const LOCK_FILE: &str = "experiment.lock";

/// The experiment's lock, held while this lives.
pub struct Lock {
    _file: File,
}

/// Take the lock of the experiment whose folder is `dir` (made if missing); `what` names
/// the experiment in the error when another process holds it.
pub fn acquire(dir: &Path, what: &str) -> Result<Lock> {
    let io = |e: std::io::Error| Failure::runtime(format!("{}: {e}", dir.display()));
    std::fs::create_dir_all(dir).map_err(io)?;
    let path = dir.join(LOCK_FILE);
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| Failure::runtime(format!("{}: {e}", path.display())))?;
    // SAFETY: flock on a descriptor that `file` owns and keeps open.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EWOULDBLOCK) {
            return Err(Failure::runtime(format!("{}: {e}", path.display())));
        }
        let mut pid = String::new();
        let _ = file.read_to_string(&mut pid);
        return Err(Failure::runtime(format!(
            "{what} is being run by another `dualbench experiment` (pid {}, {}); wait for it to end, or stop it and run --resume again",
            pid.trim(),
            path.display()
        )));
    }
    file.set_len(0)
        .and_then(|()| writeln!(file, "{}", std::process::id()))
        .map_err(|e| Failure::runtime(format!("{}: {e}", path.display())))?;
    Ok(Lock { _file: file })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_until_the_first_lets_go() {
        let dir = std::env::temp_dir().join(format!("dualbench-lock-{}", std::process::id()));
        let first = acquire(&dir, "experiment x (id 1)").unwrap();
        // flock locks belong to the open file: a second open in this process conflicts too.
        let e = acquire(&dir, "experiment x (id 1)").err().unwrap();
        let pid = std::process::id();
        assert_eq!(
            e.message,
            format!(
                "experiment x (id 1) is being run by another `dualbench experiment` (pid {pid}, {}); wait for it to end, or stop it and run --resume again",
                dir.join(LOCK_FILE).display()
            )
        );
        drop(first);
        let again = acquire(&dir, "experiment x (id 1)").unwrap();
        drop(again);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
