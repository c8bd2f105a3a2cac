//! Children that must not outlive the experiment: the server, the `dualbench run` in
//! flight, background traffic and testbed services. The kernel sends each SIGTERM when the
//! thread that started it ends (`PR_SET_PDEATHSIG`), so even a SIGKILLed experiment, which
//! can clean nothing up, leaves no server listening and no run sending. The runner starts
//! them all on the main thread, which lives as long as the experiment does.

use std::os::unix::process::CommandExt;
use std::process::Command;

/// Have `cmd`'s process receive SIGTERM when the calling thread ends. The signal survives
/// `exec` (also through `dualbench testbed exec` and `ip netns exec`, which exec in turn)
/// but not a fork: it reaches the process started, not the ones it starts, so servers are
/// run in the foreground, where their master stops its workers on SIGTERM.
pub fn end_with_this_thread(cmd: &mut Command) -> &mut Command {
    // SAFETY: getpid before the fork; in the child only prctl and getppid, both
    // async-signal-safe, and no allocation.
    let parent = unsafe { libc::getpid() };
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died between fork and prctl: then no signal would come.
            if libc::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        })
    }
}
