//! The testbed hosts a plan names — `client`, `server`, and the HOST of every
//! `dualbench testbed exec … HOST --` in `setup`, `services` and `background` — and the
//! interface `load.capture` names on the capture host, checked against the plan's topology
//! when the plan is loaded, so a misspelt host or interface is refused before any run (not
//! found when its first testbed point starts).

use super::{CaptureHost, Locator, Testbed};
use dualbench_common::Result;
use dualbench_testbed::addressing;
use dualbench_testbed::model::{self, NodeKind, Topology};
use serde::Deserialize;
use toml::Spanned;

/// The command lists of `[testbed]` with where each command starts in the plan's text.
#[derive(Debug, Default, Deserialize)]
struct CommandSpans {
    #[serde(default)]
    setup: Vec<Spanned<Vec<String>>>,
    #[serde(default)]
    services: Vec<Spanned<Vec<String>>>,
    #[serde(default)]
    background: Vec<Spanned<Vec<String>>>,
}

#[derive(Debug, Default, Deserialize)]
struct PlanSpans {
    #[serde(default)]
    testbed: Option<CommandSpans>,
}

/// Parse the topology (`file` names it in errors) and check every host the plan names,
/// and `capture`'s interface (`load.capture`, on the host `load.capture_host` names).
/// `must` says whether the plan brings this topology up: then a topology that does not
/// parse is refused too; otherwise it is left to whoever brings it up.
pub(super) fn check(
    t: &Testbed,
    topology_text: &str,
    file: &str,
    at: &Locator,
    must: bool,
    capture: Option<&(String, CaptureHost)>,
) -> Result<()> {
    let topology = match model::parse(topology_text) {
        Ok(topology) => topology,
        Err(e) if must => {
            let message = format!("{}; fix the topology file", e.render(file));
            return Err(at.error_at("testbed.topology", &message));
        }
        Err(_) => return Ok(()),
    };
    let unknown = |host: &str| !nodes(&topology).contains(&host);
    for (key, host) in [("testbed.client", &t.client), ("testbed.server", &t.server)] {
        if unknown(host) {
            return Err(at.error_at(key, &missing(host, file, &topology)));
        }
    }
    let spans: PlanSpans = toml::from_str(at.text).unwrap_or_default();
    let lists = spans.testbed.unwrap_or_default();
    let name = t.testbed_name();
    for (key, commands) in [
        ("testbed.setup", &lists.setup),
        ("testbed.services", &lists.services),
        ("testbed.background", &lists.background),
    ] {
        for command in commands {
            let Some((testbed, host)) = exec_host(command.get_ref()) else {
                continue;
            };
            // A command for another testbed is checked against that one when it runs.
            if testbed.is_some_and(|n| n != name) || !unknown(host) {
                continue;
            }
            let message = format!(
                "`dualbench testbed exec … {host} --`: {}",
                missing(host, file, &topology)
            );
            return Err(at.error(command.span().start, key, &message));
        }
    }
    match capture {
        Some((iface, on)) => check_capture(&topology, t, iface, *on, at),
        None => Ok(()),
    }
}

/// `load.capture` must be an interface of the capture host: its `lo`, or `ethL` of each
/// of its links L. Another name failed the first counted run, after the testbed was up and
/// the warm-ups ran (`no interface named 'eth1'`).
fn check_capture(
    topology: &Topology,
    t: &Testbed,
    iface: &str,
    on: CaptureHost,
    at: &Locator,
) -> Result<()> {
    let (host, which) = match on {
        CaptureHost::Client => (&t.client, "client"),
        CaptureHost::Server => (&t.server, "server"),
    };
    let Some(index) = topology.nodes.iter().position(|n| &n.name == host) else {
        return Ok(());
    };
    let mut devices = vec!["lo".to_string()];
    devices.extend(
        addressing::interfaces(topology)[index]
            .iter()
            .map(|i| i.device.clone()),
    );
    if devices.iter().any(|d| d == iface) {
        return Ok(());
    }
    let message = format!(
        "the {which} host {host:?} (load.capture_host) has no interface {iface:?} (its interfaces: {}); name one of them",
        devices.join(", ")
    );
    Err(at.error_at("load.capture", &message))
}

/// The nodes a command can run in: hosts and routers (a switch has no namespace).
fn nodes(topology: &Topology) -> Vec<&str> {
    topology
        .nodes
        .iter()
        .filter(|n| n.kind != NodeKind::Switch)
        .map(|n| n.name.as_str())
        .collect()
}

fn missing(host: &str, file: &str, topology: &Topology) -> String {
    let of = |kind: NodeKind| -> String {
        let names: Vec<&str> = topology
            .nodes
            .iter()
            .filter(|n| n.kind == kind)
            .map(|n| n.name.as_str())
            .collect();
        if names.is_empty() {
            "none".into()
        } else {
            names.join(", ")
        }
    };
    format!(
        "{file} has no host {host:?} (its hosts: {}; routers: {}); name one of them",
        of(NodeKind::Host),
        of(NodeKind::Router)
    )
}

/// For `dualbench testbed exec [--name N] [--state-dir D] HOST -- …`: the testbed name
/// (if given) and HOST; `None` for any other command.
fn exec_host(argv: &[String]) -> Option<(Option<&str>, &str)> {
    let program = argv.first()?;
    let is_dualbench = program == "dualbench" || program.ends_with("/dualbench");
    if !is_dualbench || argv.get(1)? != "testbed" || argv.get(2)? != "exec" {
        return None;
    }
    let mut name = None;
    let mut words = argv[3..].iter();
    while let Some(word) = words.next() {
        match word.as_str() {
            "--" => return None,
            "--name" => name = Some(words.next()?.as_str()),
            "--state-dir" => {
                words.next()?;
            }
            w if w.starts_with("--name=") => name = Some(&w["--name=".len()..]),
            w if w.starts_with("--state-dir=") => {}
            host => return Some((name, host)),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn finds_the_host_of_an_exec_command() {
        let argv = words("dualbench testbed exec --name s3cong send4a -- dualbench traffic sink");
        assert_eq!(exec_host(&argv), Some((Some("s3cong"), "send4a")));
        let argv = words("/usr/bin/dualbench testbed exec --state-dir /x r1 -- tc qdisc");
        assert_eq!(exec_host(&argv), Some((None, "r1")));
        let argv = words("dualbench testbed exec --name=t client -- true");
        assert_eq!(exec_host(&argv), Some((Some("t"), "client")));
        assert_eq!(exec_host(&words("dualbench wire --delay 10ms")), None);
        assert_eq!(exec_host(&words("dualbench testbed exec -- true")), None);
        assert_eq!(exec_host(&words("tc qdisc show")), None);
    }
}
