//! A server-side capture (`load.capture_host = "server"`): `dualbench capture` in the
//! testbed's server host, started before a counted run and stopped after it, writing the
//! run folder's `capture.pcap`, which is then analysed like a client-side one. Started
//! once it says it captures (the first line of its stderr, `capturing on …`), stopped by
//! SIGTERM to its pid (SIGKILL after 5 s, said), also when the experiment is interrupted
//! (on drop) or killed (`PR_SET_PDEATHSIG`, see [`crate::lifetime`]).

use super::testbed;
use crate::plan::Testbed;
use dualbench_common::stdio::note;
use dualbench_common::{Failure, Result};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long a capture may take to open its socket and say so.
const READY_WITHIN: Duration = Duration::from_secs(10);
/// How long a capture has, after SIGTERM, to write its file and end.
const STOP_WITHIN: Duration = Duration::from_secs(5);
/// Kept capturing after the run ends, so the client's last segments (its final ACK and
/// FIN, which S3's delay ends at) reach the server's interface across the testbed's links
/// and queues before the capture stops.
pub const LINGER: Duration = Duration::from_millis(500);
/// The capture's stderr in the run's folder.
const STDERR: &str = "capture.stderr";

/// `dualbench testbed exec --name NAME SERVER -- dualbench capture --iface IFACE --port
/// PORT -w PCAP`.
pub fn argv(dualbench: &Path, t: &Testbed, iface: &str, port: u16, pcap: &str) -> Vec<String> {
    let mut argv = testbed::exec_prefix(dualbench, t, &t.server);
    argv.extend([
        dualbench.display().to_string(),
        "capture".into(),
        "--iface".into(),
        iface.into(),
        "--port".into(),
        port.to_string(),
        "-w".into(),
        pcap.into(),
    ]);
    argv
}

/// A running server-side capture; stopped on drop when [`ServerCapture::stop`] was not
/// called. Once its child has been waited for, `Child` keeps the exit status, so stopping
/// it again (on drop, after [`ServerCapture::stop`]) finds it ended and does nothing.
pub struct ServerCapture {
    child: Child,
    dir: std::path::PathBuf,
}

impl ServerCapture {
    /// Start `argv` with its stderr in `dir/capture.stderr` and wait until it captures;
    /// `None` when the experiment was interrupted meanwhile (the capture is stopped).
    pub fn start(argv: &[String], dir: &Path, stop: &AtomicBool) -> Result<Option<ServerCapture>> {
        let stderr = std::fs::File::create(dir.join(STDERR))?;
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .process_group(0);
        let child = crate::lifetime::end_with_this_thread(&mut cmd)
            .spawn()
            .map_err(|e| Failure::runtime(format!("cannot start {} ({e})", argv[0])))?;
        let mut capture = ServerCapture {
            child,
            dir: dir.to_path_buf(),
        };
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            if stop.load(Ordering::SeqCst) {
                return Ok(None);
            }
            match capture.first_line().as_deref() {
                Some(l) if l.starts_with("capturing on") => return Ok(Some(capture)),
                Some(l) => return Err(capture.failure(&format!("did not start: {l}"))),
                None => {}
            }
            if let Some(status) = capture.child.try_wait()? {
                return Err(capture.failure(&format!("ended before capturing ({status})")));
            }
            if Instant::now() >= deadline {
                return Err(capture.failure("did not say it was capturing within 10 s"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// After the run: keep capturing for [`LINGER`], then SIGTERM and wait; an error when
    /// the capture ended during the run or failed, so the run is not stored with a
    /// capture that missed part of it.
    pub fn stop(mut self) -> Result<()> {
        if let Some(status) = self.child.try_wait()? {
            return Err(self.failure(&format!("ended during the run ({status})")));
        }
        std::thread::sleep(LINGER);
        let status = terminate(&mut self.child, &self.dir)?;
        match status {
            Some(s) if !s.success() => {
                let last = self.last_line();
                Err(Failure::runtime(format!(
                    "the server-side capture failed ({s}): {last} (see {})",
                    self.dir.join(STDERR).display()
                )))
            }
            _ => Ok(()),
        }
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.join(STDERR)).unwrap_or_default()
    }

    /// The first line of the capture's stderr once it is whole.
    fn first_line(&self) -> Option<String> {
        let text = self.stderr();
        text.split_once('\n').map(|(l, _)| l.to_string())
    }

    fn last_line(&self) -> String {
        let text = self.stderr();
        let last = text.lines().rev().find(|l| !l.trim().is_empty());
        last.unwrap_or("no message").to_string()
    }

    fn failure(&self, what: &str) -> Failure {
        let stderr = self.dir.join(STDERR);
        Failure::runtime(format!(
            "the server-side capture {what}; its last words: {} (see {})",
            self.last_line(),
            stderr.display()
        ))
    }
}

impl Drop for ServerCapture {
    fn drop(&mut self) {
        let _ = terminate(&mut self.child, &self.dir);
    }
}

/// SIGTERM to `child` by its pid and wait for it; SIGKILL, said, if it has not ended
/// within [`STOP_WITHIN`] (its status is then not the capture's own: `None`).
fn terminate(child: &mut Child, dir: &Path) -> Result<Option<std::process::ExitStatus>> {
    if let Some(status) = child.try_wait()? {
        return Ok(Some(status));
    }
    // SAFETY: kill(2) on our own, not yet reaped, child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let deadline = Instant::now() + STOP_WITHIN;
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    note(&format!(
        "dualbench: the server-side capture (pid {}) did not end within 5 s of SIGTERM; killed it (SIGKILL): {} may be cut short",
        child.id(),
        dir.join(super::exec::CAPTURE_PCAP).display()
    ));
    child.kill()?;
    child.wait()?;
    Ok(None)
}
