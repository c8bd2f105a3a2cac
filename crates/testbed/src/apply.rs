//! The executor: applies a plan's operations in order, recording each namespace, `/etc/netns`
//! directory and process in the state file *before* making it. Long-running processes
//! (services, wire emulators) start in their namespace with `ip netns exec`, detached into
//! their own process group, output to a log under the state directory.

use crate::plan::{etc_netns_dir, Op, Plan};
use crate::procs;
use crate::state::{Object, StateFile};
use crate::system::{self, run};
use dualbench_common::{Failure, Result};
use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// How long a started process must stay up for `up` to call it started.
const SETTLE: Duration = Duration::from_millis(300);

pub struct Options {
    /// The `dualbench` binary that plans call `dualbench` (wire emulators, services).
    pub exe: PathBuf,
    /// Testing aid: after this many steps, stop and wait forever (to be killed).
    pub stop_after: Option<usize>,
}

/// Apply every step of `plan`, then check that every process it started is still running.
pub fn apply(plan: &Plan, state: &mut StateFile, options: &Options) -> Result<()> {
    let mut started = Vec::new();
    for (step, op) in plan.ops.iter().enumerate() {
        pause_if(options.stop_after == Some(step));
        if let Some(pid) = apply_one(op, state, options)? {
            started.push((pid, op));
        }
    }
    pause_if(options.stop_after == Some(plan.ops.len()));
    std::thread::sleep(SETTLE);
    for (pid, op) in started {
        if !procs::is_running(pid) {
            return Err(exited_at_once(op));
        }
    }
    Ok(())
}

/// The `--stop-after` testing aid: wait here until killed.
fn pause_if(stop: bool) {
    if stop {
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
}

fn apply_one(op: &Op, state: &mut StateFile, options: &Options) -> Result<Option<u32>> {
    match op {
        Op::AddNamespace { ns } => {
            state.record(Object::Namespace { name: ns.clone() })?;
            run(&op.argv())?;
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
            return start(state, &role, ns, argv, log, &options.exe).map(Some);
        }
        Op::StartService {
            ns,
            node,
            name,
            argv,
            log,
        } => {
            let role = format!("service {name} on {node}");
            return start(state, &role, ns, argv, log, &options.exe).map(Some);
        }
        _ => run(&op.argv())?,
    }
    Ok(None)
}

fn write_hosts(dir: &Path, content: &str) -> Result<()> {
    let write = || -> std::io::Result<()> {
        fs::create_dir_all(dir)?;
        fs::write(dir.join("hosts"), content)
    };
    write().map_err(|e| Failure::runtime(format!("cannot write {}/hosts: {e}", dir.display())))
}

/// `dualbench` at the start of a command means this very binary.
fn resolve(argv: &[String], exe: &Path) -> Vec<String> {
    let mut argv = argv.to_vec();
    if argv.first().is_some_and(|p| p == "dualbench") {
        argv[0] = exe.display().to_string();
    }
    argv
}

/// Start `argv` in namespace `ns`, recording it first and its pid and start time after.
fn start(
    state: &mut StateFile,
    role: &str,
    ns: &str,
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
    let child = Command::new("ip")
        .args(["netns", "exec", ns])
        .args(&argv)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0)
        .spawn()
        .map_err(|e| system::spawn_error("ip", e))?;
    let pid = child.id();
    state.replace(index, object(Some(pid), procs::start_time(pid)))?;
    Ok(pid)
}

/// A process that ended during the settle time: name it and quote its log's last line.
fn exited_at_once(op: &Op) -> Failure {
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
    Failure::runtime(format!(
        "{what} exited at once: {last} (log {})",
        log.display()
    ))
}
