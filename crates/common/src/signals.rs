//! The signals that ask a command to stop, and their names for its report: SIGINT (Ctrl-C),
//! SIGTERM (`kill`) and SIGHUP (its terminal was closed) all take the same clean way out,
//! so what was measured is still saved. A command started with SIGHUP ignored (`nohup`)
//! keeps ignoring it: it was asked to outlive its terminal.

/// The signals a command should catch to stop cleanly; SIGHUP only if it is not ignored.
/// Call before installing handlers (afterwards SIGHUP is no longer ignored).
pub fn stop_signals() -> Vec<i32> {
    let mut signals = vec![libc::SIGINT, libc::SIGTERM];
    if !ignored(libc::SIGHUP) {
        signals.push(libc::SIGHUP);
    }
    signals
}

/// Whether `signal` is ignored by this process (`nohup` ignores SIGHUP).
pub fn ignored(signal: i32) -> bool {
    // SAFETY: sigaction is plain data; with a null new action the call only reads the
    // current one into `old`.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal, std::ptr::null(), &mut old) == 0
            && old.sa_sigaction == libc::SIG_IGN
    }
}

/// The name of a stop signal, as reports give it (`SIGTERM`); "a signal" for another.
pub fn name(signal: i32) -> &'static str {
    match signal {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_the_usual_set() {
        assert_eq!(
            [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGUSR1].map(name),
            ["SIGINT", "SIGTERM", "SIGHUP", "a signal"]
        );
        let signals = stop_signals();
        assert_eq!(&signals[..2], [libc::SIGINT, libc::SIGTERM]);
        assert_eq!(signals.contains(&libc::SIGHUP), !ignored(libc::SIGHUP));
        assert!(!ignored(libc::SIGTERM));
    }
}
