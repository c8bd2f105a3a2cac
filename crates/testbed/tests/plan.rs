//! Golden plans: `--dry-run` output of bundled topologies, byte for byte; and where the plan puts
//! a node's own sysctls. After a deliberate change to the planner, regenerate with
//! `DUALBENCH_BLESS=1 cargo test -p dualbench-testbed`.

use dualbench_testbed::dry_run_text;
use dualbench_testbed::model::parse;
use dualbench_testbed::plan::{plan, Op, Settings};
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

/// A link's `burst_loss` reaches the wire as given (h and k: delivery probabilities, which
/// the wire's own parser reads back exactly) and netem as `loss gemodel p r 1-h 1-k`.
#[test]
fn burst_loss_reaches_the_wire_as_given_and_netem_as_loss_probabilities() {
    use dualbench_wire::spec::{GilbertElliott, Loss};
    let dir = std::env::temp_dir().join(format!("dualbench-plan-burst-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("burst.toml");
    std::fs::write(
        &file,
        "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n\
         [[link]]\na = \"a\"\nb = \"b\"\nrate = \"10Mbit\"\nburst_loss = \"1%,30%,10%,99.5%\"\n\
         b_to_a = { loss = \"0.1%\" }\n",
    )
    .unwrap();
    let wire = dry_run_text(&file, None, Path::new("/tmp/x"), Emulator::Wire).unwrap();
    let netem = dry_run_text(&file, None, Path::new("/tmp/x"), Emulator::Netem).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let line = wire
        .lines()
        .find(|l| l.contains(" dualbench wire "))
        .unwrap();
    let words: Vec<&str> = line.split_whitespace().collect();
    let spec = |flag: &str| {
        let at = words.iter().position(|w| *w == flag).unwrap();
        dualbench_wire::parse_link_spec(words[at + 1]).unwrap()
    };
    assert_eq!(
        spec("--a-to-b").loss,
        Loss::Burst(GilbertElliott {
            p: 0.01,
            r: 0.3,
            h: 0.1,
            k: 0.995
        })
    );
    assert_eq!(spec("--b-to-a").loss, Loss::Random(0.001));
    let gemodel: Vec<&str> = netem.lines().filter(|l| l.contains(" netem ")).collect();
    assert_eq!(
        gemodel,
        [
            "tc -n db-burst-a qdisc add dev eth1 parent 1:1 handle 10: netem loss gemodel 1% 30% 90% 0.5%",
            "tc -n db-burst-b qdisc add dev eth1 parent 1:1 handle 10: netem loss 0.1%",
        ],
        "{netem}"
    );
}

#[test]
fn a_link_that_keeps_order_gets_the_wire_even_where_netem_does_the_rest() {
    let dir = std::env::temp_dir().join(format!("dualbench-plan-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("order.toml");
    std::fs::write(
        &file,
        "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[host]]\nname = \"c\"\n[[host]]\nname = \"d\"\n\
         [[link]]\na = \"a\"\nb = \"b\"\ndelay = \"10ms\"\njitter = \"2ms\"\nkeep_order = true\n\
         b_to_a = { keep_order = false }\n\
         [[link]]\na = \"c\"\nb = \"d\"\ndelay = \"10ms\"\njitter = \"2ms\"\n",
    )
    .unwrap();
    let text = dry_run_text(&file, None, Path::new("/tmp/x"), Emulator::Netem).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let wires: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(" dualbench wire "))
        .collect();
    assert_eq!(wires.len(), 1, "{text}");
    assert!(
        wires[0].starts_with("ip netns exec db-order-wire1 "),
        "{text}"
    );
    let words: Vec<&str> = wires[0].split_whitespace().collect();
    let spec = |flag: &str| {
        let at = words.iter().position(|w| *w == flag).unwrap();
        dualbench_wire::parse_link_spec(words[at + 1]).unwrap()
    };
    let (ab, ba) = (spec("--a-to-b"), spec("--b-to-a"));
    assert!(ab.keep_order, "{}", wires[0]);
    assert!(!ba.keep_order, "{}", wires[0]);
    assert_eq!((ab.delay_ns, ab.jitter_ns), (10_000_000, 2_000_000));
    // Link 2 has no keep_order: netem does it, on each sender's eth2.
    assert_eq!(text.matches("netem delay 10ms 2ms").count(), 2, "{text}");
    assert!(!text.contains("dev eth1 root handle 1: netem"), "{text}");
}

/// Every device a plan sets up in a namespace was made there first (by the plan, or `lo`
/// by the kernel). A switch with no links got `ip -n db-lab-s link set br0 up` but no
/// bridge (that comes with its first link), so `up` failed with `Cannot find device
/// "br0"` and rolled back; a host with no links was fine.
#[test]
fn a_switch_or_host_with_no_links_plans_only_devices_it_has() {
    let topology = parse(
        "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[host]]\nname = \"lonely\"\n\
         [[switch]]\nname = \"s\"\n[[switch]]\nname = \"t\"\n\
         [[link]]\na = \"a\"\nb = \"t\"\n[[link]]\na = \"t\"\nb = \"b\"\n",
    )
    .unwrap();
    let p = plan(
        &topology,
        &Settings {
            testbed: "lab",
            state_dir: Path::new("/tmp/x"),
            emulator: Emulator::Wire,
        },
    );
    let lines: Vec<String> = p.ops.iter().map(|op| op.to_string()).collect();
    let of = |ns: &str| -> Vec<&str> {
        lines
            .iter()
            .map(String::as_str)
            .filter(|l| l.split_whitespace().any(|w| w == ns) && !l.contains(" sysctl "))
            .collect()
    };
    assert_eq!(of("db-lab-s"), ["ip netns add db-lab-s"]);
    assert_eq!(
        of("db-lab-lonely"),
        [
            "ip netns add db-lab-lonely",
            "ip -n db-lab-lonely link set lo up"
        ]
    );
    let t = of("db-lab-t");
    let made = t
        .iter()
        .position(|l| l.contains("add br0 type bridge"))
        .unwrap();
    let up = t
        .iter()
        .position(|l| l.ends_with("link set br0 up"))
        .unwrap();
    assert!(made < up, "{t:?}");
}

/// The sysctl lines of a plan for namespace `ns`, in order.
fn sysctl_lines(ops: &[Op], ns: &str) -> Vec<String> {
    ops.iter()
        .map(|op| op.to_string())
        .filter(|l| l.starts_with(&format!("ip netns exec {ns} sysctl ")))
        .collect()
}

#[test]
fn a_nodes_own_sysctls_follow_the_testbeds_in_its_namespace() {
    let topology = parse(
        "[[host]]\nname = \"a\"\nsysctl = { \"net.ipv4.tcp_no_metrics_save\" = \"1\", \"net.ipv4.tcp_sack\" = 0 }\n\
         [[host]]\nname = \"b\"\n[[router]]\nname = \"r\"\nsysctl = { \"net.ipv4.conf.all.rp_filter\" = 2 }\n\
         [[switch]]\nname = \"sw\"\nsysctl = { \"net.core.somaxconn\" = 1024 }\n\
         [[link]]\na = \"a\"\nb = \"r\"\n[[link]]\na = \"r\"\nb = \"sw\"\n[[link]]\na = \"sw\"\nb = \"b\"\n",
    )
    .unwrap();
    let p = plan(
        &topology,
        &Settings {
            testbed: "lab",
            state_dir: Path::new("/tmp/x"),
            emulator: Emulator::Wire,
        },
    );
    let lines = |ns| sysctl_lines(&p.ops, ns);
    assert_eq!(
        lines("db-lab-a"),
        [
            "ip netns exec db-lab-a sysctl -qw net.ipv6.conf.all.accept_dad=0",
            "ip netns exec db-lab-a sysctl -qw net.ipv6.conf.default.accept_dad=0",
            "ip netns exec db-lab-a sysctl -qw net.ipv6.conf.default.addr_gen_mode=1",
            "ip netns exec db-lab-a sysctl -qw net.ipv6.conf.default.router_solicitations=0",
            "ip netns exec db-lab-a sysctl -qw net.ipv6.conf.default.accept_ra=0",
            "ip netns exec db-lab-a sysctl -qw net.ipv6.conf.default.mldv2_unsolicited_report_interval=1",
            "ip netns exec db-lab-a sysctl -qw net.ipv4.tcp_no_metrics_save=1",
            "ip netns exec db-lab-a sysctl -qw net.ipv4.tcp_sack=0",
        ]
    );
    assert_eq!(lines("db-lab-b").len(), 6);
    assert_eq!(
        lines("db-lab-r")[6..],
        [
            "ip netns exec db-lab-r sysctl -qw net.ipv4.ip_forward=1",
            "ip netns exec db-lab-r sysctl -qw net.ipv6.conf.all.forwarding=1",
            "ip netns exec db-lab-r sysctl -qw net.ipv4.conf.all.rp_filter=2",
        ]
    );
    assert_eq!(
        lines("db-lab-sw"),
        [
            "ip netns exec db-lab-sw sysctl -qw net.ipv6.conf.all.disable_ipv6=1",
            "ip netns exec db-lab-sw sysctl -qw net.ipv6.conf.default.disable_ipv6=1",
            "ip netns exec db-lab-sw sysctl -qw net.core.somaxconn=1024",
        ]
    );
    // The node's own are NodeSysctl ops (looked for in the namespace at `up`), named by node.
    let own: Vec<(&str, &str, &str)> = p
        .ops
        .iter()
        .filter_map(|op| match op {
            Op::NodeSysctl {
                node, key, value, ..
            } => Some((node.as_str(), key.as_str(), value.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(
        own,
        [
            ("a", "net.ipv4.tcp_no_metrics_save", "1"),
            ("a", "net.ipv4.tcp_sack", "0"),
            ("r", "net.ipv4.conf.all.rp_filter", "2"),
            ("sw", "net.core.somaxconn", "1024"),
        ]
    );
    // All sysctls come before the first cable, as before.
    let last_sysctl = p
        .ops
        .iter()
        .rposition(|op| matches!(op, Op::NodeSysctl { .. } | Op::Sysctl { .. }));
    let first_veth = p.ops.iter().position(|op| matches!(op, Op::AddVeth { .. }));
    assert!(last_sysctl < first_veth);
    // The layout keeps them for `status`.
    assert_eq!(p.layout.nodes[0].sysctls.len(), 2);
}

#[test]
fn congestion_saves_no_tcp_metrics_on_the_client_and_the_server() {
    let text = dry_run_text(
        &repo("testbeds/congestion.toml"),
        None,
        Path::new("/tmp/x"),
        Emulator::Wire,
    )
    .unwrap();
    let saving: Vec<&str> = text
        .lines()
        .filter(|l| l.ends_with(" sysctl -qw net.ipv4.tcp_no_metrics_save=1"))
        .collect();
    assert_eq!(
        saving,
        [
            "ip netns exec db-congestion-client sysctl -qw net.ipv4.tcp_no_metrics_save=1",
            "ip netns exec db-congestion-server sysctl -qw net.ipv4.tcp_no_metrics_save=1",
        ]
    );
}

/// docs/testbed.md said the plan made "bridges; veth pairs; bridge ports; offloads", each
/// kind for all links at once; a plan goes link by link: the link's veth pair, for a switch
/// its bridge (with the switch's first link) and the port, then the link's offloads.
#[test]
fn cables_are_made_link_by_link() {
    let topology = parse(
        "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[switch]]\nname = \"s\"\n\
         [[link]]\na = \"a\"\nb = \"s\"\nrate = \"1Gbit\"\n[[link]]\na = \"s\"\nb = \"b\"\nrate = \"1Gbit\"\n",
    )
    .unwrap();
    let p = plan(
        &topology,
        &Settings {
            testbed: "lab",
            state_dir: Path::new("/tmp/x"),
            emulator: Emulator::Wire,
        },
    );
    let cables: Vec<String> = p
        .ops
        .iter()
        .map(|op| op.to_string())
        .filter(|l| {
            l.contains(" type veth ")
                || l.contains(" type bridge")
                || l.contains(" master ")
                || l.contains("ethtool -K")
        })
        .collect();
    assert_eq!(
        cables,
        [
            "ip -n db-lab-a link add eth1 type veth peer name eth1 netns db-lab-s",
            "ip -n db-lab-s link add br0 type bridge mcast_snooping 0",
            "ip -n db-lab-s link set eth1 master br0",
            "ip netns exec db-lab-a ethtool -K eth1 gro off gso off tso off",
            "ip netns exec db-lab-s ethtool -K eth1 gro off gso off tso off",
            "ip -n db-lab-s link add eth2 type veth peer name eth2 netns db-lab-b",
            "ip -n db-lab-s link set eth2 master br0",
            "ip netns exec db-lab-s ethtool -K eth2 gro off gso off tso off",
            "ip netns exec db-lab-b ethtool -K eth2 gro off gso off tso off",
        ]
    );
}
