//! Teardown: removes exactly what a state file lists. Processes first — each recorded pid
//! only if its start time still matches (never a reused pid), then any process still inside
//! one of our recorded namespaces (found by namespace identity, never by name) — then the
//! hosts files, then the namespaces by their exact recorded names (their veths, bridges and
//! qdiscs go with them). Whatever could not be removed stays in the state file. An `up`
//! still building the testbed is interrupted first, and rolls back itself.
//!
//! A state file that cannot be read lists nothing; [`down_unreadable`] then removes what
//! the naming scheme gives the testbed alone: namespaces `db-<testbed>-<node>` (a node name
//! has no `-`, so no other testbed's namespace matches), their processes and
//! `/etc/netns` entries, and the state directory if it holds only dualbench's files.

use crate::procs;
use crate::state::{self, Object, StateFile};
use crate::system::{self, run};
use dualbench_common::{Failure, Result};
use std::fs;
use std::path::Path;
use std::time::Duration;

/// How long services get between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_secs(3);

/// How long [`down_any`] waits for an `up` it interrupted to roll back (its services get
/// [`GRACE`] there).
const BUILDER_LIMIT: Duration = Duration::from_secs(15);

/// Tear down the testbed of `state`, also one whose `up` still runs: that `up` is
/// interrupted (SIGTERM, as Ctrl-C would) and rolls back what it made, then whatever is
/// left goes; its pid is returned. Removing the testbed under a running `up` left two
/// removers racing, and `up` blaming the services this stopped ("service 'web' on b
/// exited at once (signal: 15 (SIGTERM))") or its own cleanup ("cannot remove
/// .../state.json").
pub fn down_any(state: StateFile) -> Result<Option<u32>> {
    let Some(pid) = state.state.building() else {
        return down(state, false).map(|()| None);
    };
    let (name, dir) = (state.state.testbed.clone(), state.dir.clone());
    // SIGCONT too, in case it was suspended (Ctrl-Z): it could not roll back until resumed.
    procs::signal(pid, libc::SIGTERM);
    procs::signal(pid, libc::SIGCONT);
    if !procs::wait_gone(&[pid], BUILDER_LIMIT).is_empty() {
        return Err(Failure::runtime(format!(
            "testbed '{name}' is still being built by `up` (pid {pid}), which did not end within {}s of SIGTERM: end it (`kill -KILL {pid}`), then run `down` again",
            BUILDER_LIMIT.as_secs()
        )));
    }
    if StateFile::exists(&dir) {
        down(StateFile::load(&dir)?, false)?;
    } else if state::is_leftover(&dir) {
        state::remove_leftover(&dir)?;
    }
    Ok(Some(pid))
}

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

/// What [`down_unreadable`] found and removed, for the user.
#[derive(Debug, Default)]
pub struct Removed {
    pub processes: Vec<u32>,
    pub namespaces: Vec<String>,
}

/// Tear down testbed `testbed` whose state file in `dir` cannot be read: its namespaces by
/// the naming scheme (except those `foreign` says another testbed's state file lists),
/// every process inside them, their `/etc/netns` entries, then `dir`.
pub fn down_unreadable(
    testbed: &str,
    dir: &Path,
    foreign: impl Fn(&str) -> bool,
) -> Result<Removed> {
    let namespaces: Vec<String> = namespaces_named_for(testbed, &system::namespace_names())
        .into_iter()
        .filter(|ns| !foreign(ns))
        .collect();
    let mut pids: Vec<u32> = namespaces
        .iter()
        .flat_map(|ns| procs::pids_in(ns))
        .collect();
    pids.sort_unstable();
    pids.dedup();
    let mut problems: Vec<String> = procs::stop(&pids, GRACE)
        .iter()
        .map(|p| format!("process {p} would not stop"))
        .collect();
    // Hosts files too where the namespace itself is gone (`ip netns del` leaves them).
    let mut etc: Vec<String> = namespaces_named_for(testbed, &system::etc_netns_names());
    etc.retain(|ns| !foreign(ns));
    let objects = etc
        .iter()
        .map(|ns| Object::EtcNetns {
            dir: crate::plan::etc_netns_dir(ns),
        })
        .chain(
            namespaces
                .iter()
                .map(|ns| Object::Namespace { name: ns.clone() }),
        );
    for object in objects {
        if let Err(e) = remove(&object) {
            problems.push(e.message);
        }
    }
    if let Err(e) = state::remove_unreadable(dir) {
        problems.push(e.message);
    }
    if !problems.is_empty() {
        return Err(Failure::runtime(problems.join("; ")));
    }
    Ok(Removed {
        processes: pids,
        namespaces,
    })
}

/// The names among `all` that testbed `testbed`'s namespaces have: `db-<testbed>-<node>`
/// with a node name of lowercase letters and digits only.
pub fn namespaces_named_for(testbed: &str, all: &[String]) -> Vec<String> {
    let prefix = format!("db-{testbed}-");
    all.iter()
        .filter(|ns| {
            ns.strip_prefix(&prefix).is_some_and(|node| {
                !node.is_empty()
                    && node
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
            })
        })
        .cloned()
        .collect()
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

#[cfg(test)]
mod tests {
    use super::namespaces_named_for;

    #[test]
    fn only_the_testbeds_own_namespaces_match_its_name() {
        let all: Vec<String> = [
            "db-lab-client",
            "db-lab-wire2",
            "db-lab-x-y",   // testbed lab-x, node y
            "db-labx-a",    // testbed labx
            "db-lab-",      // no node
            "db-lab-Upper", // not a node name
            "lab-client",
            "other",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            namespaces_named_for("lab", &all),
            ["db-lab-client", "db-lab-wire2"]
        );
        assert_eq!(namespaces_named_for("lab-x", &all), ["db-lab-x-y"]);
    }
}
