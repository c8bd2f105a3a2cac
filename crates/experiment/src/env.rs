//! The environment an experiment ran in: kernel, OS, CPU model and cores, memory, the
//! versions of dualbench and of each server in the plan (Apache's with its MPM), and
//! whether mod_perl is there.

use crate::plan::{Plan, ServerKind};
use crate::server;
use std::path::Path;

/// Facts as (key, value), read from /proc, /etc and the servers' own `-v`.
pub fn collect(plan: &Plan, dualbench: &Path) -> Vec<(String, String)> {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let mut facts = vec![
        (
            "kernel".to_string(),
            read("/proc/sys/kernel/osrelease").trim().to_string(),
        ),
        ("os".to_string(), os_name(&read("/etc/os-release"))),
        (
            "cpu_model".to_string(),
            field(&read("/proc/cpuinfo"), "model name").unwrap_or_default(),
        ),
        (
            "cores".to_string(),
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
                .to_string(),
        ),
        (
            "memory".to_string(),
            field(&read("/proc/meminfo"), "MemTotal").unwrap_or_default(),
        ),
        (
            "hostname".to_string(),
            dualbench_common::host::name().unwrap_or_default(),
        ),
        (
            "dualbench".to_string(),
            server::version(ServerKind::Dualbench, dualbench),
        ),
        (
            "mod_perl".to_string(),
            if server::site::have_mod_perl() {
                "installed"
            } else {
                "not installed"
            }
            .to_string(),
        ),
    ];
    for &kind in &plan.axes.server {
        facts.push((
            format!("server.{}", kind.key()),
            server_fact(kind, server::version(kind, dualbench)),
        ));
    }
    facts
}

/// A server's version as the environment records it: Apache's with the MPM the plan's
/// server runs, as its runs record it (`Apache/2.4.71 (MPM prefork)`: every stored run's
/// server was checked to load that MPM, `server::software`); a version that is not
/// Apache's (`apache2: not installed`) and other servers' as they are.
fn server_fact(kind: ServerKind, version: String) -> String {
    match kind.mpm() {
        Some(mpm) if version.starts_with("Apache/") => server::with_mpm(&version, mpm),
        _ => version,
    }
}

/// The value of the first `key : value` line of a /proc file.
fn field(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|l| {
        l.split_once(':')
            .filter(|(k, _)| k.trim() == key)
            .map(|(_, v)| v.trim().to_string())
    })
}

fn os_name(os_release: &str) -> String {
    os_release
        .lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|v| v.trim_matches('"').to_string())
        .unwrap_or_else(|| "unknown".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_proc_style_fields() {
        let cpu = "processor\t: 0\nmodel name\t: AMD EPYC 7B13\nflags\t: fpu\n";
        assert_eq!(field(cpu, "model name").as_deref(), Some("AMD EPYC 7B13"));
        assert_eq!(field(cpu, "nothing"), None);
        assert_eq!(
            os_name("ID=debian\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n"),
            "Debian GNU/Linux 12 (bookworm)"
        );
    }

    /// The Environment table showed `server.apache-prefork  Apache/2.4.71` where the
    /// runs' "Servers and handlers" had `Apache/2.4.71 (MPM prefork)`.
    #[test]
    fn apaches_version_names_the_plans_mpm() {
        let apache = || "Apache/2.4.71".to_string();
        assert_eq!(
            server_fact(ServerKind::ApachePrefork, apache()),
            "Apache/2.4.71 (MPM prefork)"
        );
        assert_eq!(
            server_fact(ServerKind::ApacheWorker, apache()),
            "Apache/2.4.71 (MPM worker)"
        );
        assert_eq!(
            server_fact(ServerKind::ApacheEvent, apache()),
            "Apache/2.4.71 (MPM event)"
        );
        assert_eq!(
            server_fact(ServerKind::ApacheEvent, "apache2: not installed".into()),
            "apache2: not installed"
        );
        assert_eq!(
            server_fact(ServerKind::Nginx, "nginx/1.22.1".into()),
            "nginx/1.22.1"
        );
    }
}
