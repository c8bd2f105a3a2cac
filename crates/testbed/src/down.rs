//! Teardown: removes exactly what a state file lists. Processes first — each recorded pid
//! only if its start time still matches (never a reused pid), then any process still inside
//! one of our recorded namespaces (found by namespace identity, never by name) — then the
//! hosts files, then the namespaces by their exact recorded names (their veths, bridges and
//! qdiscs go with them). Whatever could not be removed stays in the state file.

use crate::procs;
use crate::state::{Object, StateFile};
use crate::system::{self, run};
use dualbench_common::{Failure, Result};
use std::fs;
use std::time::Duration;

/// How long services get between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_secs(3);

/// Tear down the testbed of `state`. On success the state directory is gone too, or, with
/// `keep_logs` (a failed `up` rolling back), everything but its logs.
pub fn down(mut state: StateFile, keep_logs: bool) -> Result<()> {
    let namespaces: Vec<String> = state
        .state
        .objects
        .iter()
        .filter_map(|o| match o {
            Object::Namespace { name } => Some(name.clone()),
            _ => None,
        })
        .collect();
    let mut pids = recorded_pids(&state.state.objects, &namespaces);
    for ns in &namespaces {
        pids.extend(procs::pids_in(ns));
    }
    pids.sort_unstable();
    pids.dedup();
    let stubborn = procs::stop(&pids, GRACE);
    let mut problems: Vec<String> = stubborn
        .iter()
        .map(|p| format!("process {p} would not stop"))
        .collect();
    let mut left = Vec::new();
    for object in std::mem::take(&mut state.state.objects).into_iter().rev() {
        if let Err(e) = remove(&object) {
            problems.push(e.message);
            left.insert(0, object);
        }
    }
    if problems.is_empty() {
        return state.remove(keep_logs);
    }
    state.state.objects = left;
    state.save()?;
    Err(Failure::runtime(format!(
        "{}; the rest is removed, run `down` again after fixing that",
        problems.join("; ")
    )))
}

/// Recorded pids that are still the processes we started: same start time, and inside the
/// recorded namespace when that namespace still exists.
fn recorded_pids(objects: &[Object], namespaces: &[String]) -> Vec<u32> {
    objects
        .iter()
        .filter_map(|o| match o {
            Object::Process {
                namespace,
                pid: Some(pid),
                start_time: Some(t),
                ..
            } => Some((namespace, *pid, *t)),
            _ => None,
        })
        .filter(|(_, pid, t)| procs::is_running(*pid) && procs::start_time(*pid) == Some(*t))
        .filter(|(ns, pid, _)| {
            !namespaces.contains(ns)
                || !system::namespace_exists(ns)
                || procs::in_namespace(*pid, ns)
        })
        .map(|(_, pid, _)| pid)
        .collect()
}

/// Remove one object if it is still there.
fn remove(object: &Object) -> Result<()> {
    match object {
        Object::Namespace { name } => {
            if system::namespace_exists(name) {
                run(&["ip".into(), "netns".into(), "del".into(), name.clone()])?;
            }
        }
        Object::EtcNetns { dir } => {
            let hosts = dir.join("hosts");
            if hosts.exists() {
                fs::remove_file(&hosts).map_err(|e| {
                    Failure::runtime(format!("cannot remove {}: {e}", hosts.display()))
                })?;
            }
            if dir.exists() {
                fs::remove_dir(dir).map_err(|e| {
                    Failure::runtime(format!(
                        "cannot remove {} (holds files we did not write?): {e}",
                        dir.display()
                    ))
                })?;
            }
        }
        Object::Process { .. } => {} // stopped above, before the namespaces went
    }
    Ok(())
}
