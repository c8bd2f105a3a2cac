//! Network namespaces a test creates (named uniquely) and removes when dropped, `ip`
//! commands that must succeed, and commands run inside a namespace.

use super::{bin_path, unique};
use std::process::Command;

/// Run `ip args`: it must succeed (its stderr says why not).
#[track_caller]
pub fn ip(args: &[&str]) {
    let out = Command::new("ip")
        .args(args)
        .output()
        .expect("running ip (install iproute2)");
    assert!(
        out.status.success(),
        "ip {}: {} (needs root and iproute2)",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A network namespace this test created; deleted by its name when dropped.
pub struct Netns(pub String);

impl Netns {
    /// A new namespace named `prefix` and a suffix unique to this process and call; it
    /// must be created.
    #[track_caller]
    pub fn new(prefix: &str) -> Netns {
        let name = unique(prefix);
        ip(&["netns", "add", &name]);
        Netns(name)
    }

    /// As [`Netns::new`], or `None` when it cannot be created (not root, no iproute2).
    pub fn try_new(prefix: &str) -> Option<Netns> {
        let name = unique(prefix);
        let ok = Command::new("ip")
            .args(["netns", "add", &name])
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(Netns(name))
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.0
    }

    /// Run `ip -n NAME args` (an `ip` command inside it): it must succeed.
    #[track_caller]
    pub fn ip(&self, args: &[&str]) {
        ip(&[&["-n", &self.0], args].concat());
    }

    /// `ip netns exec NAME program`: a command run inside it.
    pub fn exec(&self, program: &str) -> Command {
        let mut command = Command::new("ip");
        command.args(["netns", "exec", &self.0, program]);
        command
    }

    /// `ip netns exec NAME dualbench`.
    pub fn dualbench(&self) -> Command {
        self.exec(bin_path())
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}
