//! The executor: applies a plan's operations in order, recording each namespace, `/etc/netns`
//! directory and process in the state file *before* making it. Long-running processes
//! (services, wire emulators) start in their namespace with `ip netns exec`, detached into
//! their own process group, output to a log under the state directory.

use crate::listening::ListenProbe;
use crate::model::Sysctl;
use crate::plan::{etc_netns_dir, Op, Plan};
use crate::procs;
use crate::state::{Object, StateFile};
use crate::system::{self, run};
use dualbench_common::{Failure, Result};
use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a started process must stay up for `up` to call it started.
const SETTLE: Duration = Duration::from_millis(300);
/// How long a service with a `ready` port gets to start listening.
const READY_LIMIT: Duration = Duration::from_secs(10);
/// How long interfaces get to come up with IPv6 ready (the link watch takes up to 1 s).
const LINKS_LIMIT: Duration = Duration::from_secs(5);

pub struct Options {
    /// The `dualbench` binary that plans call `dualbench` (wire emulators, services).
    pub exe: PathBuf,
    /// Testing aid: after this many steps, stop and wait (to be killed or interrupted).
    pub stop_after: Option<usize>,
    /// Set to the signal number by SIGINT/SIGTERM/SIGHUP handlers: stop before the next step.
    pub interrupted: Arc<AtomicUsize>,
}

type Started<'p> = Vec<(u32, &'p Op)>;

/// Apply every step of `plan`, then check that every process it started is still running.
pub fn apply(plan: &Plan, state: &mut StateFile, options: &Options) -> Result<()> {
    let mut started: Started = Vec::new();
    for (index, op) in plan.ops.iter().enumerate() {
        pause_if(options, index)?;
        if let Some(pid) = step(op, &started, state, options)? {
            started.push((pid, op));
        }
    }
    pause_if(options, plan.ops.len())?;
    settle(options)?;
    for (pid, op) in started {
        if !procs::is_running(pid) {
            return Err(exited_at_once(pid, op));
        }
    }
    check_interrupted(options)
}

/// Apply one operation; the pid of a process it started. A step that fails after a signal
/// asked us to stop fails because of the signal: Ctrl-C in a terminal reaches the `ip`,
/// `tc` and `ethtool` we run as well, and their deaths are not the cause to report.
fn step(
    op: &Op,
    started: &Started,
    state: &mut StateFile,
    options: &Options,
) -> Result<Option<u32>> {
    let done = match op {
        Op::AwaitListen {
            ns,
            node,
            name,
            port,
        } => await_listen(started, (ns, node, name), *port, options).map(|()| None),
        Op::AwaitLinks { ns, devices } => await_links(ns, devices, options).map(|()| None),
        _ => apply_one(op, state, options),
    };
    done.map_err(|e| check_interrupted(options).err().unwrap_or(e))
}

/// Give the started processes [`SETTLE`] to fail at once, stopping early if a signal asks.
fn settle(options: &Options) -> Result<()> {
    let start = Instant::now();
    while start.elapsed() < SETTLE {
        check_interrupted(options)?;
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

/// Fail if a signal asked us to stop (SIGINT, SIGTERM or SIGHUP, by name).
fn check_interrupted(options: &Options) -> Result<()> {
    match options.interrupted.load(Ordering::SeqCst) as libc::c_int {
        0 => Ok(()),
        sig => Err(Failure::runtime(format!(
            "interrupted by {}",
            dualbench_common::signals::name(sig)
        ))),
    }
}

/// Before step `step`: stop if interrupted; with `--stop-after step`, wait here until killed
/// or interrupted.
fn pause_if(options: &Options, step: usize) -> Result<()> {
    loop {
        check_interrupted(options)?;
        if options.stop_after != Some(step) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Wait until the service named listens on `port` in its namespace: a sock_diag dump of
/// listening sockets every 20 ms, or where that cannot be opened the process's
/// `/proc/PID/net/tcp` every 200 ms (each read of which walks every connection).
fn await_listen(
    started: &Started,
    (ns, node, name): (&str, &str, &str),
    port: u16,
    options: &Options,
) -> Result<()> {
    let found = started.iter().find(
        |(_, op)| matches!(op, Op::StartService { node: n, name: s, .. } if n == node && s == name),
    );
    let Some(&(pid, op)) = found else {
        return Ok(());
    };
    let start = Instant::now();
    let probe = ListenProbe::open(ns).ok();
    let listens = || match &probe {
        Some(p) => p.listens(port).unwrap_or(false),
        None => procs::listens(pid, port),
    };
    let every = Duration::from_millis(if probe.is_some() { 20 } else { 200 });
    while !listens() {
        check_interrupted(options)?;
        if !procs::is_running(pid) {
            return Err(exited_at_once(pid, op));
        }
        if start.elapsed() > READY_LIMIT {
            let log = match op {
                Op::StartService { log, .. } => log.display().to_string(),
                _ => String::new(),
            };
            return Err(Failure::runtime(format!(
                "service '{name}' on {node} did not listen on tcp port {port} within {}s (log {log})",
                READY_LIMIT.as_secs()
            )));
        }
        std::thread::sleep(every);
    }
    Ok(())
}

/// Wait until every device of `ns` is up, IPv6 ready (see [`Op::AwaitLinks`]).
fn await_links(ns: &str, devices: &[String], options: &Options) -> Result<()> {
    let start = Instant::now();
    loop {
        let waiting = links_not_ready(ns, devices)?;
        if waiting.is_empty() {
            return Ok(());
        }
        check_interrupted(options)?;
        if start.elapsed() > LINKS_LIMIT {
            return Err(Failure::runtime(format!(
                "{} of {ns} not up with IPv6 ready within {}s",
                waiting.join(", "),
                LINKS_LIMIT.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The devices of `ns` that are not yet operationally up with an IPv6 link-local address
/// and no tentative address, from `ip -j addr show` (JSON, so nothing is scraped).
fn links_not_ready(ns: &str, devices: &[String]) -> Result<Vec<String>> {
    let argv = ["ip", "-n", ns, "-j", "addr", "show"];
    let out = Command::new("ip")
        .args(&argv[1..])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| system::spawn_error("ip", e))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let why = stderr
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("no error message");
        return Err(Failure::runtime(format!(
            "`{}` failed ({}): {}",
            argv.join(" "),
            out.status,
            why.trim()
        )));
    }
    let shown: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| Failure::runtime(format!("`{}` gave no JSON ({e})", argv.join(" "))))?;
    let ready = |dev: &str| {
        let Some(link) = shown
            .as_array()
            .and_then(|all| all.iter().find(|l| l["ifname"] == dev))
        else {
            return false;
        };
        let addrs = link["addr_info"]
            .as_array()
            .map_or(&[][..], |a| a.as_slice());
        link["operstate"] == "UP"
            && addrs
                .iter()
                .any(|a| a["family"] == "inet6" && a["scope"] == "link")
            && !addrs.iter().any(|a| a["tentative"] == true)
    };
    Ok(devices.iter().filter(|d| !ready(d)).cloned().collect())
}

fn apply_one(op: &Op, state: &mut StateFile, options: &Options) -> Result<Option<u32>> {
    match op {
        Op::AddNamespace { ns } => {
            state.record(Object::Namespace { name: ns.clone() })?;
            run(&op.argv())?;
        }
        Op::NodeSysctl {
            ns,
            node,
            key,
            value,
        } => {
            let own = Sysctl {
                key: key.clone(),
                value: value.clone(),
            };
            node_sysctl(ns, node, &own, &op.argv())?;
        }
        Op::WriteHosts { ns, content } => {
            let dir = etc_netns_dir(ns);
            state.record(Object::EtcNetns { dir: dir.clone() })?;
            write_hosts(&dir, content)?;
        }
        Op::StartWire {
            ns,
            link,
            argv,
            log,
        } => {
            let role = format!("wire emulator of link {link}");
            return start(state, &role, (ns, None), argv, log, &options.exe).map(Some);
        }
        Op::StartService {
            ns,
            node,
            name,
            argv,
            log,
        } => {
            let role = format!("service {name} on {node}");
            return start(state, &role, (ns, Some(node)), argv, log, &options.exe).map(Some);
        }
        _ => run(&op.argv())?,
    }
    Ok(None)
}

/// A node's own sysctl: first looked for in its namespace, so a key this kernel lacks (or
/// keeps for the whole machine only) is one line naming the node, the key and the path.
fn node_sysctl(ns: &str, node: &str, own: &Sysctl, argv: &[String]) -> Result<()> {
    let path = own.proc_path();
    let exists = system::sysctl_exists(ns, &path).map_err(|e| {
        Failure::runtime(format!(
            "node {node}: cannot look for sysctl {} in namespace {ns}: {e}",
            own.key
        ))
    })?;
    if !exists {
        return Err(Failure::runtime(format!(
            "node {node}: sysctl {}: {path} does not exist in the node's network namespace (this kernel has no such key, or keeps it for the whole machine only){}",
            own.key,
            not_yet_hint(&own.key)
        )));
    }
    run(argv).map_err(|e| Failure::runtime(format!("node {node}: sysctl {own}: {}", e.message)))
}

/// For `net.ipv4.conf.eth1.rp_filter` and the like: interfaces are made after sysctls.
fn not_yet_hint(key: &str) -> String {
    let device = ["net.ipv4.conf.", "net.ipv6.conf."]
        .iter()
        .find_map(|p| key.strip_prefix(p)?.split_once('.'));
    match device {
        Some((dev, rest)) if !["all", "default", "lo"].contains(&dev) => format!(
            "; a node's interfaces are made after its sysctls are set, so '{dev}' does not exist yet: conf.default.{rest} applies to every interface made after it"
        ),
        _ => String::new(),
    }
}

fn write_hosts(dir: &Path, content: &str) -> Result<()> {
    let write = || -> std::io::Result<()> {
        fs::create_dir_all(dir)?;
        fs::write(dir.join("hosts"), content)
    };
    write().map_err(|e| Failure::runtime(format!("cannot write {}/hosts: {e}", dir.display())))
}

/// `dualbench` at the start of a command means this very binary: the first word of an
/// argument list, or of a line for `/bin/sh -c` (whose shell would otherwise run whatever
/// `dualbench` is on `PATH`, or find none).
fn resolve(argv: &[String], exe: &Path) -> Vec<String> {
    let mut argv = argv.to_vec();
    let exe = exe.display().to_string();
    match argv.as_mut_slice() {
        [program, ..] if program == "dualbench" => *program = exe,
        [sh, c, line] if sh == "/bin/sh" && c == "-c" => {
            let rest = line.trim_start().strip_prefix("dualbench");
            if let Some(rest) = rest.filter(|r| r.is_empty() || r.starts_with(char::is_whitespace))
            {
                *line = format!("{}{rest}", dualbench_common::shell_word(&exe));
            }
        }
        _ => {}
    }
    argv
}

/// Start `argv` in namespace `ns`, recording it first and its pid and start time after. A
/// node's process gets the node's name as hostname (a UTS namespace of its own).
fn start(
    state: &mut StateFile,
    role: &str,
    (ns, node): (&str, Option<&str>),
    argv: &[String],
    log: &Path,
    exe: &Path,
) -> Result<u32> {
    let argv = resolve(argv, exe);
    let program = argv.first().cloned().unwrap_or_default();
    let object = |pid, start_time| Object::Process {
        role: role.into(),
        namespace: ns.into(),
        program: program.clone(),
        pid,
        start_time,
    };
    let index = state.record(object(None, None))?;
    let out = fs::File::create(log)
        .map_err(|e| Failure::runtime(format!("cannot create log {}: {e}", log.display())))?;
    let err = out.try_clone()?;
    let mut command = Command::new("ip");
    command
        .args(["netns", "exec", ns])
        .args(&argv)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0);
    if let Some(node) = node {
        let name = node.as_bytes().to_vec();
        // SAFETY: the closure makes only system calls (no allocation, no locks).
        unsafe { command.pre_exec(move || system::own_hostname(&name)) };
    }
    let child = command.spawn().map_err(|e| match node {
        // EPERM: unshare(CLONE_NEWUTS) without CAP_SYS_ADMIN (exec itself says EACCES).
        Some(node) if e.raw_os_error() == Some(libc::EPERM) => system::hostname_error(node, e),
        _ => system::spawn_error("ip", e),
    })?;
    let pid = child.id();
    state.replace(index, object(Some(pid), procs::start_time(pid)))?;
    Ok(pid)
}

/// A process that ended during the settle time: name it, say how it ended and quote its
/// log's last line.
fn exited_at_once(pid: u32, op: &Op) -> Failure {
    let (what, log) = match op {
        Op::StartWire { link, log, .. } => (format!("the wire emulator of link {link}"), log),
        Op::StartService {
            node, name, log, ..
        } => (format!("service '{name}' on {node}"), log),
        _ => return Failure::runtime("a process exited at once"),
    };
    let text = fs::read_to_string(log).unwrap_or_default();
    let last = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("(empty log)")
        .trim()
        .to_string();
    let how = procs::reap(pid).map_or(String::new(), |status| format!(" ({status})"));
    Failure::runtime(format!(
        "{what} exited at once{how}: {last} (log {})",
        log.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::State;

    /// A service given as one shell line used to run whatever `dualbench` was on `PATH`
    /// (an older build, or none), not the binary that ran `up`, as the docs promise.
    #[test]
    fn a_leading_dualbench_is_this_binary_in_an_argument_list_and_a_shell_line() {
        let exe = Path::new("/opt/db build/dualbench");
        let r =
            |argv: &[&str]| resolve(&argv.iter().map(|a| a.to_string()).collect::<Vec<_>>(), exe);
        assert_eq!(
            r(&["dualbench", "serve"]),
            ["/opt/db build/dualbench", "serve"]
        );
        let shell = |line: &str| r(&["/bin/sh", "-c", line])[2].clone();
        assert_eq!(
            shell("dualbench serve --listen 0.0.0.0:80"),
            "'/opt/db build/dualbench' serve --listen 0.0.0.0:80"
        );
        assert_eq!(shell("  dualbench"), "'/opt/db build/dualbench'");
        // Only the leading word, and only the whole word.
        assert_eq!(shell("dualbenchx serve"), "dualbenchx serve");
        assert_eq!(shell("echo dualbench"), "echo dualbench");
        assert_eq!(
            r(&["nginx", "-g", "daemon off;"]),
            ["nginx", "-g", "daemon off;"]
        );
    }

    /// A namespace no one has: `ip -n` fails on it without touching anything.
    fn nowhere() -> String {
        format!("dbtb-none-{}", std::process::id())
    }

    #[test]
    fn a_failing_ip_is_reported_with_its_own_error_not_as_missing_json() {
        let ns = nowhere();
        let e = links_not_ready(&ns, &["eth1".to_string()]).unwrap_err();
        let head = format!("`ip -n {ns} -j addr show` failed (exit status: ");
        assert!(e.message.starts_with(&head), "{}", e.message);
        assert!(
            e.message.contains("Cannot open network namespace"),
            "{}",
            e.message
        );
    }

    /// Ctrl-C in a terminal signals `up` and the `ip` it waits for at once; the step that
    /// fails because `ip` died is the signal's doing (it used to say "gave no JSON").
    #[test]
    fn a_step_that_fails_after_a_signal_reports_the_signal() {
        let dir = std::env::temp_dir().join(format!("dbtb-apply-{}", std::process::id()));
        let mut file = StateFile::create(&dir, State::empty_lab()).unwrap();
        let options = Options {
            exe: PathBuf::from("dualbench"),
            stop_after: None,
            interrupted: Arc::new(AtomicUsize::new(libc::SIGINT as usize)),
        };
        let op = Op::AwaitLinks {
            ns: nowhere(),
            devices: vec!["eth1".to_string()],
        };
        let e = step(&op, &Vec::new(), &mut file, &options).unwrap_err();
        assert_eq!(e.message, "interrupted by SIGINT");
        fs::remove_dir_all(&dir).unwrap();
    }
}
