//! File descriptors as a resource: the process's open-file limit (RLIMIT_NOFILE), raised as
//! far as this process may, and a private descriptor table per worker thread.
//!
//! RLIMIT_NOFILE caps the descriptor numbers of each descriptor *table*, not of the
//! process: a thread that unshares its table (`unshare(CLONE_FILES)`) gets a table of its
//! own under the same cap. A worker that owns all its sockets and shares none with other
//! threads loses nothing by it, and N workers can then hold about N × the limit
//! connections in one process, which is how one dualbench process holds 50,000
//! connections where the hard limit is 20,000 and cannot be raised.

use std::io;
use std::os::fd::RawFd;

/// The soft open-file limit (the highest descriptor number + 1 a table may hold).
pub fn nofile_limit() -> u64 {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) };
    r.rlim_cur
}

/// The hard open-file limit: what a process started now may raise its soft limit to, and
/// what it inherits as its own hard limit. Unlimited or unreadable counts as 1,048,576, the
/// kernel's default `fs.nr_open`.
pub fn nofile_hard_limit() -> u64 {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } == 0;
    if ok && r.rlim_max != libc::RLIM_INFINITY {
        r.rlim_max
    } else {
        1_048_576
    }
}

/// Raise the open-file limit as far as this process may: both limits to the kernel's
/// `fs.nr_open` when privileged (CAP_SYS_RESOURCE), else the soft limit to the hard one.
/// Returns the new soft limit.
pub fn raise_nofile_limit() -> u64 {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    let nr_open = std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or(0);
    // SAFETY: getrlimit/setrlimit read and write the struct we own.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut r);
        let raised = libc::rlimit {
            rlim_cur: nr_open.max(r.rlim_max),
            rlim_max: nr_open.max(r.rlim_max),
        };
        if r.rlim_cur < raised.rlim_cur && libc::setrlimit(libc::RLIMIT_NOFILE, &raised) != 0 {
            r.rlim_cur = r.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &r);
        }
    }
    nofile_limit()
}

/// Give the calling thread a descriptor table of its own: a copy of the process's table,
/// from then on private to this thread, in which every descriptor above standard error
/// but those in `keep` is closed at once. The thread then holds only what it needs: no
/// copy of another thread's file or pipe stays open because of it (a pipe another thread
/// made for a child would otherwise never see end-of-file). A descriptor kept here refers
/// to the same open file as in the process's table; a file registered with an epoll
/// instance stays watched as long as any table holds it.
pub fn private_table(keep: &[RawFd]) -> io::Result<()> {
    // SAFETY: unshare with CLONE_FILES only affects this thread's descriptor table.
    if unsafe { libc::unshare(libc::CLONE_FILES) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let mut keep: Vec<u32> = keep
        .iter()
        .filter(|&&fd| fd > 2)
        .map(|&fd| fd as u32)
        .collect();
    keep.sort_unstable();
    let mut from = 3u32;
    for k in keep {
        if k > from {
            close_range(from, k - 1)?;
        }
        from = from.max(k + 1);
    }
    close_range(from, u32::MAX)
}

fn close_range(first: u32, last: u32) -> io::Result<()> {
    // SAFETY: closes descriptors of the calling thread's own, just-copied table that it
    // was told it does not need.
    if unsafe { libc::syscall(libc::SYS_close_range, first, last, 0u32) } == 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    if err.raw_os_error() != Some(libc::ENOSYS) {
        return Err(err);
    }
    // Kernels before 5.9 have no close_range: close what the table lists, one by one.
    let open: Vec<u32> = std::fs::read_dir("/proc/thread-self/fd")?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|fd| (first..=last).contains(fd))
        .collect();
    for fd in open {
        // SAFETY: as above; a number that was the listing's own (now closed) descriptor
        // only fails with EBADF.
        unsafe { libc::close(fd as i32) };
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;
    use std::path::PathBuf;

    fn is_open(fd: i32) -> bool {
        // SAFETY: F_GETFD only reads the descriptor's flags.
        unsafe { libc::fcntl(fd, libc::F_GETFD) >= 0 }
    }

    fn target_of(fd: i32) -> Option<PathBuf> {
        std::fs::read_link(format!("/proc/thread-self/fd/{fd}")).ok()
    }

    /// A thread with a private table no longer holds what it inherited, and what it opens
    /// is not in the rest of the process's table.
    #[test]
    fn private_table_is_private() {
        let path = std::env::temp_dir().join(format!("dualbench-fds-{}", std::process::id()));
        std::fs::write(&path, b"x").unwrap();
        let inherited = std::fs::File::open("/proc/self/status").unwrap();
        let inherited_fd = inherited.as_raw_fd();
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let p = path.clone();
        let worker = std::thread::spawn(move || {
            private_table(&[]).unwrap();
            let saw_inherited = is_open(inherited_fd);
            let mine = std::fs::File::open(&p).unwrap();
            tx.send((mine.as_raw_fd(), saw_inherited, target_of(mine.as_raw_fd())))
                .unwrap();
            done_rx.recv().unwrap();
        });
        let (fd, saw_inherited, there) = rx.recv().unwrap();
        assert!(
            !saw_inherited,
            "inherited descriptors are closed in the copy"
        );
        assert_eq!(there.as_deref(), Some(path.as_path()));
        assert!(
            is_open(inherited_fd),
            "the process's own table is untouched"
        );
        assert_ne!(target_of(fd).as_deref(), Some(path.as_path()));
        done_tx.send(()).unwrap();
        worker.join().unwrap();
        std::fs::remove_file(&path).unwrap();
    }

    /// The descriptors asked for survive; the ones around them do not.
    #[test]
    fn private_table_keeps_what_it_is_told() {
        let files: Vec<std::fs::File> = (0..5)
            .map(|_| std::fs::File::open("/proc/self/status").unwrap())
            .collect();
        let fds: Vec<i32> = files.iter().map(|f| f.as_raw_fd()).collect();
        let keep = [fds[1], fds[3]];
        let open = std::thread::spawn(move || {
            private_table(&keep).unwrap();
            fds.iter().map(|&fd| is_open(fd)).collect::<Vec<bool>>()
        })
        .join()
        .unwrap();
        assert_eq!(open, [false, true, false, true, false]);
        drop(files);
    }

    #[test]
    fn raising_never_lowers() {
        let before = nofile_limit();
        assert!(raise_nofile_limit() >= before);
    }
}
