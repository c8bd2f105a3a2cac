//! Golden plans: `--dry-run` output of bundled topologies, byte for byte. After a deliberate
//! change to the planner, regenerate with `DUALBENCH_BLESS=1 cargo test -p dualbench-testbed`.

use dualbench_testbed::dry_run_text;
use dualbench_testbed::shaping::Emulator;
use std::path::{Path, PathBuf};

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
}

fn check(topology: &str, emulator: Emulator, golden: &str) {
    let got = dry_run_text(
        &repo(topology),
        None,
        Path::new("/run/dualbench/testbeds"),
        emulator,
    )
    .unwrap();
    let golden_path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(golden);
    if std::env::var_os("DUALBENCH_BLESS").is_some() {
        std::fs::write(&golden_path, &got).unwrap();
    }
    let want = std::fs::read_to_string(&golden_path).unwrap();
    assert_eq!(
        got,
        want,
        "plan of {topology} differs from {}",
        golden_path.display()
    );
}

#[test]
fn routed_plan_matches_golden() {
    check("testbeds/routed.toml", Emulator::Wire, "routed.plan");
}

#[test]
fn wan_plan_with_the_wire_emulator_matches_golden() {
    check("testbeds/wan.toml", Emulator::Wire, "wan-wire.plan");
}

#[test]
fn wan_plan_with_netem_matches_golden() {
    check("testbeds/wan.toml", Emulator::Netem, "wan-netem.plan");
}

#[test]
fn every_bundled_topology_plans() {
    for name in ["lan", "routed", "wan", "congestion"] {
        let text = dry_run_text(
            &repo(&format!("testbeds/{name}.toml")),
            None,
            Path::new("/tmp/x"),
            Emulator::Wire,
        )
        .unwrap();
        assert!(
            text.contains(&format!("ip netns add db-{name}-server\n")),
            "{name}"
        );
    }
}

#[test]
fn congestion_has_five_subnets_and_one_bottleneck() {
    let text = dry_run_text(
        &repo("testbeds/congestion.toml"),
        None,
        Path::new("/tmp/x"),
        Emulator::Wire,
    )
    .unwrap();
    let mut subnets: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(" route add 198.18."))
        .filter_map(|l| l.split_whitespace().nth(5))
        .collect();
    subnets.sort();
    subnets.dedup();
    assert_eq!(
        subnets,
        [
            "198.18.1.0/24",
            "198.18.2.0/24",
            "198.18.7.0/24",
            "198.18.8.0/24",
            "198.18.9.0/24"
        ]
    );
    assert_eq!(text.matches("htb rate 100mbit").count(), 2);
    assert_eq!(text.matches("htb rate 1gbit").count(), 2 * 12);
}

#[test]
fn wire_specs_in_plans_parse_with_the_wire_emulators_own_parser() {
    use dualbench_wire::spec::Loss;
    let text = dry_run_text(
        &repo("testbeds/wan.toml"),
        None,
        Path::new("/tmp/x"),
        Emulator::Wire,
    )
    .unwrap();
    let line = text
        .lines()
        .find(|l| l.contains(" dualbench wire "))
        .unwrap();
    let words: Vec<&str> = line.split_whitespace().collect();
    let mut specs = 0;
    for flag in ["--a-to-b", "--b-to-a"] {
        let at = words.iter().position(|w| *w == flag).unwrap();
        let spec = dualbench_wire::parse_link_spec(words[at + 1]).unwrap();
        assert_eq!(spec.delay_ns, 40_000_000);
        assert_eq!(spec.loss, Loss::Random(0.001));
        assert_eq!(spec.rate_bps, None, "rate stays with tc");
        specs += 1;
    }
    assert_eq!(specs, 2);
}
