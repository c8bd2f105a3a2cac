//! Real servers provisioned per point: a document root and a generated configuration in the
//! run's directory, the server started as a child (own process group, so a Ctrl-C at the
//! terminal reaches dualbench first), ready when its addresses accept connections, and
//! stopped by its recorded pid.

pub mod config;
pub mod site;

use crate::plan::{Handler, ServerKind};
use config::ConfigInput;
use dualbench_common::{Failure, Result};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// What to start and where.
pub struct Setup<'a> {
    pub kind: ServerKind,
    pub dir: &'a Path,
    pub handlers: &'a [Handler],
    pub listen: Vec<SocketAddr>,
    /// Prefix for running inside a testbed host (`dualbench testbed exec HOST --`), or empty.
    pub wrap: Vec<String>,
    /// The dualbench binary (for `dualbench serve`).
    pub dualbench: &'a Path,
}

/// A started server; stopped (SIGTERM, then SIGKILL after 5 s) by `stop` or on drop.
pub struct Running {
    pub kind: ServerKind,
    pub pid: u32,
    pub listen: Vec<SocketAddr>,
    /// Whether Apache loaded mod_perl (only for the in-server handler, when installed).
    pub mod_perl: bool,
    pub dir: PathBuf,
    child: Option<Child>,
}

/// Two free ports? No: one port free on both 127.0.0.1 and ::1, for a loopback run.
pub fn free_loopback_port() -> Result<u16> {
    for _ in 0..50 {
        let v6 = TcpListener::bind((Ipv6Addr::LOCALHOST, 0)).map_err(|e| {
            Failure::runtime(format!(
                "cannot bind [::1]:0 ({e}); does this host have IPv6 loopback?"
            ))
        })?;
        let port = v6.local_addr()?.port();
        if TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok() {
            return Ok(port);
        }
    }
    Err(Failure::runtime(
        "no port is free on both 127.0.0.1 and ::1",
    ))
}

/// The loopback addresses of both families on `port`.
pub fn loopback(port: u16) -> Vec<SocketAddr> {
    vec![
        (Ipv4Addr::LOCALHOST, port).into(),
        (Ipv6Addr::LOCALHOST, port).into(),
    ]
}

/// The program a server kind runs (found on PATH, also inside testbed hosts, which share
/// this host's files) and the Debian package that has it; `None` for dualbench's own.
pub fn program(kind: ServerKind) -> Option<(&'static str, &'static str)> {
    match kind {
        ServerKind::Nginx => Some(("nginx", "nginx")),
        ServerKind::Lighttpd => Some(("lighttpd", "lighttpd")),
        ServerKind::Dualbench => None,
        _ => Some(("apache2", "apache2")),
    }
}

/// Something a plan's servers or handlers need on this machine.
#[derive(Debug, Clone, PartialEq)]
pub struct Requirement {
    /// The plan's axis the need comes from (`axes.server` or `axes.handler`) and its value.
    pub axis: &'static str,
    pub value: &'static str,
    /// What is needed: a program looked up on PATH, or a file by its absolute path.
    pub needs: String,
    /// What it is needed for, e.g. "to build the C CGI program".
    pub purpose: &'static str,
    /// The Debian package that has it.
    pub package: &'static str,
}

/// Everything `servers` and `handlers` need: each server's program (and Apache's MPM
/// module), gcc for the C CGI, the Perl interpreter the Perl CGI script names.
pub fn requirements(servers: &[ServerKind], handlers: &[Handler]) -> Vec<Requirement> {
    let mut out = Vec::new();
    for &kind in servers {
        if let Some((name, package)) = program(kind) {
            out.push(Requirement {
                axis: "axes.server",
                value: kind.key(),
                needs: name.into(),
                purpose: "to run the server",
                package,
            });
        }
        if let Some(mpm) = kind.mpm() {
            out.push(Requirement {
                axis: "axes.server",
                value: kind.key(),
                needs: format!("{}/mod_mpm_{mpm}.so", site::APACHE_MODULES),
                purpose: "to load its MPM",
                package: "apache2",
            });
        }
    }
    let cgi = |h: Handler| handlers.contains(&h) && servers.iter().any(|s| s.supports(h));
    if cgi(Handler::CCgi) {
        out.push(Requirement {
            axis: "axes.handler",
            value: Handler::CCgi.key(),
            needs: "gcc".into(),
            purpose: "to build the C CGI program",
            package: "gcc",
        });
    }
    if cgi(Handler::PerlCgi) {
        out.push(Requirement {
            axis: "axes.handler",
            value: Handler::PerlCgi.key(),
            needs: site::PERL.into(),
            purpose: "to run the Perl CGI script",
            package: "perl-base",
        });
    }
    out
}

/// Whether a requirement is met: a path names an existing file; a program name is an
/// executable file in a folder of `path` (the PATH the servers are started with).
pub fn is_met(r: &Requirement, path: Option<&std::ffi::OsStr>) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if r.needs.contains('/') {
        return Path::new(&r.needs).exists();
    }
    // Without PATH, exec looks in the C library's default path.
    let path = path.unwrap_or("/bin:/usr/bin".as_ref());
    std::env::split_paths(path).any(|dir| executable(&dir.join(&r.needs)))
}

/// Write the site and configuration into `setup.dir` and start the server.
pub fn start(setup: &Setup) -> Result<Running> {
    std::fs::create_dir_all(setup.dir.join("tmp"))?;
    let site = site::build(setup.dir, setup.handlers)?;
    // mod_perl only where it answers: loaded into every Apache it would put Perl into each
    // child and lengthen every response's Server header (S1 measures Apache as shipped).
    let mod_perl = setup.kind.mpm().is_some()
        && setup.handlers.contains(&Handler::InServer)
        && site::have_mod_perl();
    let root_user = unsafe { libc::geteuid() } == 0;
    let input = ConfigInput {
        kind: setup.kind,
        dir: setup.dir,
        root: &site.root,
        listen: &setup.listen,
        mod_perl,
        user: root_user.then_some("www-data"),
        open_files: dualbench_common::fds::nofile_hard_limit(),
    };
    let argv = command(setup, &input)?;
    let log = std::fs::File::create(setup.dir.join("server.log"))?;
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .process_group(0);
    crate::lifetime::end_with_this_thread(&mut cmd);
    let child = cmd.spawn().map_err(|e| {
        Failure::runtime(format!(
            "cannot start {} ({e}); install its Debian package",
            argv[0]
        ))
    })?;
    std::fs::write(setup.dir.join("server.cmd"), argv.join(" ") + "\n")?;
    std::fs::write(setup.dir.join("server.pid"), format!("{}\n", child.id()))?;
    Ok(Running {
        kind: setup.kind,
        pid: child.id(),
        listen: setup.listen.clone(),
        mod_perl,
        dir: setup.dir.into(),
        child: Some(child),
    })
}

/// The server's command line, after writing its configuration file.
fn command(setup: &Setup, input: &ConfigInput) -> Result<Vec<String>> {
    let d = setup.dir.display().to_string();
    let mut argv = setup.wrap.clone();
    let conf = match config::render(input) {
        Some((name, text)) => {
            let path = setup.dir.join(name);
            std::fs::write(&path, text)?;
            path.display().to_string()
        }
        None => String::new(),
    };
    let name = program(setup.kind).map(|(name, _)| name.to_string());
    let own: Vec<String> = match setup.kind {
        ServerKind::Nginx => vec![
            name.unwrap_or_default(),
            "-p".into(),
            d.clone(),
            "-e".into(),
            format!("{d}/error.log"),
            "-c".into(),
            conf,
        ],
        ServerKind::Lighttpd => vec![name.unwrap_or_default(), "-D".into(), "-f".into(), conf],
        ServerKind::Dualbench => {
            let mut v = vec![setup.dualbench.display().to_string(), "serve".into()];
            for a in &setup.listen {
                v.extend(["--listen".into(), a.to_string()]);
            }
            v.extend(["--root".into(), input.root.display().to_string()]);
            v
        }
        _ => vec![
            name.unwrap_or_default(),
            "-f".into(),
            conf,
            "-DFOREGROUND".into(),
        ],
    };
    argv.extend(own);
    Ok(argv)
}

impl Running {
    /// Wait until every listen address accepts a connection (local placement only).
    pub fn wait_ready(&mut self, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        for addr in self.listen.clone() {
            loop {
                self.check_alive()?;
                if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                    break;
                }
                if Instant::now() >= deadline {
                    return Err(self.failure(&format!(
                        "did not accept connections on {addr} within {timeout:?}"
                    )));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Ok(())
    }

    /// An error if the server process has exited; what it left of its process group (the
    /// workers of a master that crashed or was killed, which would keep its port and serve
    /// on) is killed first.
    pub fn check_alive(&mut self) -> Result<()> {
        let Some(child) = self.child.as_mut() else {
            return Err(self.failure("was stopped"));
        };
        if ended_unreaped(self.pid) == Some(true) {
            kill_group(self.pid);
        }
        match child.try_wait()? {
            None => Ok(()),
            Some(status) => Err(self.failure(&format!("exited ({status})"))),
        }
    }

    fn failure(&self, what: &str) -> Failure {
        let log = ["error.log", "server.log"]
            .iter()
            .filter_map(|f| std::fs::read_to_string(self.dir.join(f)).ok())
            .flat_map(|t| {
                t.lines()
                    .rev()
                    .take(1)
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .find(|l| !l.trim().is_empty())
            .unwrap_or_default();
        let hint = if log.is_empty() {
            String::new()
        } else {
            format!(": {log}")
        };
        Failure::runtime(format!(
            "{} (pid {}) {what}; see {}{hint}",
            self.kind.key(),
            self.pid,
            self.dir.display()
        ))
    }

    /// Stop the server: SIGTERM to its pid, SIGKILL if it is still there after 5 s.
    pub fn stop(mut self) -> Result<()> {
        self.stop_child()
    }

    /// SIGTERM to the first process (a master stops its workers), SIGKILL after 5 s; then,
    /// before it is reaped, SIGKILL to whatever is left of its process group: the workers
    /// of a master that died or had to be killed, which nothing else would stop.
    fn stop_child(&mut self) -> Result<()> {
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        let pid = self.pid;
        // Ended (zombie, or reaped already by `check_alive`, which took its group along).
        let ended = |child: &mut Child| -> Result<bool> {
            Ok(match ended_unreaped(pid) {
                Some(ended) => ended,
                None => child.try_wait()?.is_some(),
            })
        };
        if !ended(&mut child)? {
            signal(pid, libc::SIGTERM);
            let deadline = Instant::now() + Duration::from_secs(5);
            while !ended(&mut child)? && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            if !ended(&mut child)? {
                signal(pid, libc::SIGKILL);
            }
        }
        if ended_unreaped(pid).is_some() {
            kill_group(pid);
        }
        child.wait()?;
        Ok(())
    }
}

/// Whether our child `pid` has ended, without reaping it: `None` when it is no longer a
/// child of ours to wait for (reaped). Until it is reaped its pid, which is also its
/// process group's id (it was started with `process_group(0)`), names no other process.
fn ended_unreaped(pid: u32) -> Option<bool> {
    // SAFETY: waitid(2) with WNOWAIT only reads our child's state into `info`, a plain C
    // struct for which all zeroes is a valid value.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
    let r = unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags) };
    if r != 0 {
        return None;
    }
    // SAFETY: waitid filled `info` (si_pid is 0 when the child has not changed state).
    Some(unsafe { info.si_pid() } != 0)
}

/// SIGKILL to every process left in the server's process group; call it only while its
/// first process is an unreaped child, so the group id cannot name another group.
fn kill_group(pid: u32) {
    // SAFETY: kill(2) on the process group our unreaped child leads.
    unsafe { libc::kill(-(pid as libc::pid_t), libc::SIGKILL) };
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.stop_child();
    }
}

fn signal(pid: u32, sig: i32) {
    // SAFETY: kill(2) on the pid of a child we spawned and have not yet reaped.
    unsafe { libc::kill(pid as libc::pid_t, sig) };
}

/// The server's version as its binary reports it, e.g. "nginx/1.22.1".
pub fn version(kind: ServerKind, dualbench: &Path) -> String {
    let (prog, arg) = match kind {
        ServerKind::Nginx => ("nginx", "-v"),
        ServerKind::Lighttpd => ("lighttpd", "-v"),
        ServerKind::Dualbench => return format!("dualbench/{}", tool_version(dualbench)),
        _ => ("apache2", "-v"),
    };
    let Ok(out) = Command::new(prog).arg(arg).output() else {
        return format!("{prog}: not installed");
    };
    let text =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    text.split_whitespace()
        .find(|w| w.contains('/') && w.chars().any(|c| c.is_ascii_digit()))
        .unwrap_or("unknown")
        .to_string()
}

/// What a group's server is, as its runs record it: its version (`version`) and, for
/// Apache, the MPM its generated configuration (`dir/apache2.conf`) loads, read back with
/// `apache2 -f CONF -V` and checked against the plan's server: `Apache/2.4.71 (MPM
/// prefork)`. A configuration that loads another MPM is an error rather than runs stored
/// under the wrong name. (`apache2ctl -V` would read Debian's `/etc/apache2` instead.)
pub fn software(kind: ServerKind, dir: &Path, dualbench: &Path) -> Result<String> {
    let version = version(kind, dualbench);
    let Some(want) = kind.mpm() else {
        return Ok(version);
    };
    let conf = dir.join("apache2.conf");
    let asked = format!("`apache2 -f {} -V`", conf.display());
    let out = Command::new("apache2")
        .arg("-f")
        .arg(&conf)
        .arg("-V")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Failure::runtime(format!("{}: {asked} failed: {e}", kind.key())))?;
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    match loaded_mpm(&text) {
        Some(mpm) if mpm == want => Ok(with_mpm(&version, mpm)),
        Some(mpm) => Err(Failure::runtime(format!(
            "{}: {asked} says the server runs the {mpm} MPM, not {want}; see {}",
            kind.key(),
            dir.display()
        ))),
        None => Err(Failure::runtime(format!(
            "{}: {asked} names no MPM ({}): {}",
            kind.key(),
            out.status,
            text.lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("no output")
        ))),
    }
}

/// Apache's version with its MPM, as runs and the environment record it:
/// `Apache/2.4.71 (MPM prefork)`.
pub fn with_mpm(version: &str, mpm: &str) -> String {
    format!("{version} (MPM {mpm})")
}

/// The MPM `apache2 -V` names on its `Server MPM:` line.
fn loaded_mpm(v: &str) -> Option<&str> {
    v.lines()
        .find_map(|l| l.trim().strip_prefix("Server MPM:"))
        .map(str::trim)
        .filter(|m| !m.is_empty())
}

fn tool_version(dualbench: &Path) -> String {
    Command::new(dualbench)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.split_whitespace().nth(1).map(str::to_string))
        .unwrap_or_else(|| env!("CARGO_PKG_VERSION").to_string())
}

#[cfg(test)]
mod tests;
