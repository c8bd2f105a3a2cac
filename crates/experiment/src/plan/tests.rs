//! Plan parsing and expansion against fixed texts.

use super::*;

fn plan(text: &str) -> Result<Plan> {
    parse(text, Path::new("p.toml"))
}

const S1: &str = r#"
[experiment]
name = "s1-mpm"
repeats = 3
warmup = 1

[load]
requests = 1000
concurrency = 5

[axes]
server = ["apache-prefork", "apache-worker", "apache-event"]
family = ["ipv4", "ipv6"]

[report]
rows = ["server"]
columns = "family"
metrics = ["rps"]
"#;

#[test]
fn expands_in_order_with_stable_ids() {
    let p = plan(S1).unwrap();
    let runs = expand(&p);
    assert_eq!(runs.len(), 3 * 2 * 3);
    // Server by server; within a server repeat by repeat, both families in each repeat,
    // the family that goes first taking turns.
    let order: Vec<String> = runs[..6]
        .iter()
        .map(|r| format!("{}{}", r.point.selector.key(), r.repeat))
        .collect();
    assert_eq!(
        order,
        ["ipv41", "ipv61", "ipv62", "ipv42", "ipv43", "ipv63"]
    );
    assert!(runs[..6]
        .iter()
        .all(|r| r.point.server == ServerKind::ApachePrefork && r.point.group == 0));
    assert_eq!((runs[0].point.index, runs[1].point.index), (0, 1));
    assert_eq!(
        (runs[6].point.server, runs[6].point.group),
        (ServerKind::ApacheWorker, 1)
    );
    assert_eq!(runs[17].point.server, ServerKind::ApacheEvent);
    let again = expand(&plan(S1).unwrap());
    assert_eq!(runs, again);
    let mut ids: Vec<_> = runs.iter().map(|r| r.id.clone()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 18, "ids are unique");
    let changed = expand(&plan(&S1.replace("requests = 1000", "requests = 2000")).unwrap());
    assert_ne!(
        changed[0].id, runs[0].id,
        "a changed parameter changes the id"
    );
    assert_eq!(runs[0].point.label(&p), "server=apache-prefork family=ipv4");
}

#[test]
fn each_round_rotates_which_point_of_a_group_goes_first() {
    let ratios = ["1:1", "4:1", "1:4"];
    let round = |r| round_order(&ratios, r).copied().collect::<Vec<_>>();
    assert_eq!(round(1), ["1:1", "4:1", "1:4"]);
    assert_eq!(round(2), ["4:1", "1:4", "1:1"]);
    assert_eq!(round(3), ["1:4", "1:1", "4:1"]);
    assert_eq!(round(4), round(1));
    assert_eq!(round_order(&[7], 2).collect::<Vec<_>>(), [&7]);
    let p = plan("[experiment]\nname = \"r\"\nrepeats = 2\n[axes]\nserver = [\"nginx\", \"dualbench\"]\nratio = [\"1:1\", \"4:1\", \"1:4\"]\n").unwrap();
    let groups: Vec<usize> = points(&p).iter().map(|pt| pt.group).collect();
    assert_eq!(groups, [0, 0, 0, 1, 1, 1]);
    let runs = expand(&p);
    let keys: Vec<String> = runs[..6].iter().map(|r| r.point.selector.key()).collect();
    assert_eq!(keys, ["1:1", "4:1", "1:4", "4:1", "1:4", "1:1"]);
}

#[test]
fn ratios_and_defaults() {
    let p =
        plan("[experiment]\nname = \"r\"\n[axes]\nratio = [\"1:1\", \"4:1\", \"0:1\"]\n").unwrap();
    assert_eq!(p.axes.server, vec![ServerKind::Dualbench]);
    assert_eq!(p.axes.selector[1], Selector::Ratio { v6: 4, v4: 1 });
    assert_eq!(
        p.axes.selector[2].families(),
        vec![dualbench_common::Family::V4]
    );
    assert_eq!((p.repeats, p.load.requests), (1, 1000));
}

fn error(text: &str) -> String {
    plan(text).unwrap_err().message
}

#[test]
fn errors_name_file_line_and_key() {
    let e = error("[experiment]\nname = \"x\"\nrepeat = 3\n");
    assert_eq!(
        e,
        "p.toml:3: [experiment]: unknown key `repeat` (did you mean `repeats`?); [experiment] takes name, title, description, warmup, repeats"
    );
    let e = error("[experiment]\nname = \"x\"\n[axes]\nserver = [\"ngnix\"]\n");
    assert!(
        e.starts_with("p.toml:4: axes.server: unknown server \"ngnix\""),
        "{e}"
    );
    let e =
        error("[experiment]\nname = \"x\"\n[axes]\nserver = [\"nginx\"]\nhandler = [\"c-cgi\"]\n");
    assert!(e.contains("nginx cannot run handler c-cgi"), "{e}");
    let e = error("[experiment]\nname = \"x\"\n[axes]\nfamily = [\"ipv4\"]\nratio = [\"1:1\"]\n");
    assert!(e.starts_with("p.toml:5: axes.ratio: give either"), "{e}");
    let e = error("[experiment]\nname = \"x\"\n[axes]\nratio = [\"4\"]\n");
    assert!(e.contains("not a ratio"), "{e}");
    let e = error("[experiment]\nname = \"x\"\n[axes]\ncongestion = [\"C1B\"]\n");
    assert!(e.contains("need a [testbed] section"), "{e}");
    let e = error("[experiment]\nname = \"x y\"\n");
    assert!(e.starts_with("p.toml:2: experiment.name"), "{e}");
    let e = error("[experiment]\nname = \"x\"\nrepeats = 0\n");
    assert!(e.starts_with("p.toml:3: experiment.repeats"), "{e}");
    let e = error("[experiment]\nname = \"x\"\n[report]\nmetrics = [\"speed\"]\n");
    assert!(e.contains("unknown metric \"speed\""), "{e}");
    let e = error(
        "[experiment]\nname = \"x\"\n[axes]\nplacement = [\"testbed\"]\n[testbed]\ntopology = \"t\"\n\
         server_ipv4 = \"198.18.1.2\"\nserver_ipv6 = \"2001:2::2\"\nbackground = [[]]\n",
    );
    assert!(
        e.starts_with("p.toml:9: testbed.background: a command is empty"),
        "{e}"
    );
    let e = error("[experiment]\nname = \"x\"\n[load]\narrival = \"bursty\"\n");
    assert!(e.starts_with("p.toml:4: load.arrival: \"bursty\""), "{e}");
    let e = error("[experiment]\nname = \"x\"\n[axes]\nconcurrency = [0]\n");
    assert!(
        e.contains("axes.concurrency: values must be greater than 0"),
        "{e}"
    );
}

/// Two spellings of one value, or a number given twice, would make the same points twice:
/// their runs share an id, and the second one's storing fails after it ran.
#[test]
fn the_same_axis_value_twice_is_refused_whatever_its_spelling() {
    for (axis, values, wanted) in [
        (
            "family",
            "[\"ipv4\", \"4\"]",
            "\"ipv4\" and \"4\" are the same value",
        ),
        (
            "ratio",
            "[\"4:1\", \"4: 1\"]",
            "\"4:1\" and \"4: 1\" are the same value",
        ),
        (
            "server",
            "[\"nginx\", \"nginx\"]",
            "\"nginx\" appears twice",
        ),
        ("concurrency", "[5, 5]", "5 appears twice"),
        ("requests", "[10, 20, 10]", "10 appears twice"),
        ("rate", "[100.0, 100]", "100 appears twice"),
    ] {
        let text = format!("[experiment]\nname = \"d\"\n[axes]\n{axis} = {values}\n");
        let e = error(&text);
        assert!(
            e.starts_with(&format!("p.toml:4: axes.{axis}: {wanted}")),
            "{axis}: {e}"
        );
    }
    // Different values still make different points, with ids of their own.
    let p = plan("[experiment]\nname = \"d\"\n[axes]\nratio = [\"4:1\", \"8:2\"]\n").unwrap();
    let runs = expand(&p);
    assert_ne!(runs[0].id, runs[1].id);
}

#[test]
fn type_errors_name_the_key() {
    let e = error("[experiment]\nname = \"v\"\n[load]\nrequests = \"ten\"\n");
    assert_eq!(
        e,
        "p.toml:4: load.requests: invalid type: string \"ten\", expected u64"
    );
    let e = error("[experiment]\nname = \"v\"\nrepeats = \"x\"\n");
    assert_eq!(
        e,
        "p.toml:3: experiment.repeats: invalid type: string \"x\", expected u32"
    );
    let e = error("[experiment]\nname = \"v\"\n[axes]\nconcurrency = [1, \"x\"]\n");
    assert_eq!(
        e,
        "p.toml:4: axes.concurrency[1]: invalid type: string \"x\", expected u64"
    );
    let e = error("[experiment]\ntitle = \"v\"\n");
    assert_eq!(e, "p.toml:1: experiment: missing field `name`");
}

/// An unknown key is one usage error (exit 2) naming the line, its table, the key, a close
/// key and what the table takes; an unknown table lists the plan's tables.
#[test]
fn unknown_keys_name_their_table_and_what_it_takes() {
    let head = "[experiment]\nname = \"x\"\n";
    let cases = [
        (
            format!("{head}[load]\nrequests = 5\nconcurency = 2\n"),
            "p.toml:5: [load]: unknown key `concurency` (did you mean `concurrency`?); [load] takes requests, concurrency, keepalive, timeout_s, time_limit_s, arrival, monitor, capture, capture_host, extra_args",
        ),
        (
            format!("{head}[server]\nprocs = 2\n"),
            "p.toml:3: unknown table [server]; a plan has the tables [experiment], [load], [axes], [testbed], [report]",
        ),
        (
            format!("{head}[axes]\nserver = [\"nginx\"]\n\n# the handlers\nhandlers = [\"static\"]\n"),
            "p.toml:7: [axes]: unknown key `handlers` (did you mean `handler`?); [axes] takes server, handler, placement, family, ratio, concurrency, requests, rate, congestion, link",
        ),
        (
            format!("{head}[report]\nrows = [\"server\"]\nrepeats = 3\n"),
            "p.toml:5: [report]: unknown key `repeats` (a key of [experiment]); [report] takes rows, columns, metrics, phase, notes",
        ),
        (
            format!("{head}[testbed]\ntopology = \"t.toml\"\nserver_ipv4 = \"198.18.2.2\"\nserver_ipv6 = \"2001:2:0:2::2\"\nSettle_S = 3\n"),
            "p.toml:7: [testbed]: unknown key `Settle_S` (did you mean `settle_s`?); [testbed] takes topology, name, client, server, server_ipv4, server_ipv6, manage, setup, services, background, settle_s",
        ),
        (
            format!("{head}load = {{ requests = 5, keep_alive = true }}\n"),
            "p.toml:3: [experiment]: unknown key `load`; [experiment] takes name, title, description, warmup, repeats",
        ),
        (
            format!("repeats = 2\n{head}"),
            "p.toml:1: unknown key `repeats` outside any table (it goes under [experiment]); a plan has the tables [experiment], [load], [axes], [testbed], [report]",
        ),
        (
            format!("{head}[[axis]]\nserver = [\"nginx\"]\n"),
            "p.toml:3: unknown table [[axis]] (did you mean [axes]?); a plan has the tables [experiment], [load], [axes], [testbed], [report]",
        ),
        (
            format!("{head}[[load]]\nrequests = 5\n"),
            "p.toml:3: [[load]] is an array of tables; a plan takes one [load] table: write [load]",
        ),
    ];
    for (text, wanted) in cases {
        let e = plan(&text).unwrap_err();
        assert_eq!(e.message, wanted, "{text}");
        assert_eq!(e.exit_code(), 2, "{text}");
    }
    // A table under a table is a key of the outer one.
    let e = error(&format!(
        "{head}[load]\nrequests = 5\n[axes]\nrate = [1.0]\n[load.x]\n"
    ));
    assert!(
        e.starts_with("p.toml:7: [load]: unknown key `x`; [load] takes requests, "),
        "{e}"
    );
}

#[test]
fn a_whole_table_of_the_wrong_type_says_a_table_is_expected() {
    assert_eq!(
        error("experiment = 5\n"),
        "p.toml:1: experiment: invalid type: integer `5`, expected a table"
    );
    for table in ["load", "axes", "testbed", "report"] {
        assert_eq!(
            error(&format!("{table} = \"x\"\n[experiment]\nname = \"v\"\n")),
            format!("p.toml:1: {table}: invalid type: string \"x\", expected a table")
        );
    }
    assert_eq!(
        error("[experiment]\nname = \"v\"\n[axes]\nserver = \"nginx\"\n"),
        "p.toml:4: axes.server: invalid type: string \"nginx\", expected an array"
    );
}

#[test]
fn errors_point_at_the_key_not_at_the_first_mention_of_its_name() {
    let text = "[experiment]\nname = \"p5\"\ntitle = \"Which handler is fastest\"\n\
                # the handler axis below\n[load]\nrequests = 10\n\n[axes]\n\
                server = [\"lighttpd\"]\nhandler = [\"static\", \"in-server\"]\n";
    let e = error(text);
    assert!(
        e.starts_with("p.toml:10: axes.handler: server lighttpd cannot run handler in-server"),
        "{e}"
    );
    let e = error("[experiment]\nname = \"x\"\ntitle = \"settle_s and metrics\"\n[report]\nrows = [\"server\"]\nmetrics = [\"speed\"]\n");
    assert!(
        e.starts_with("p.toml:6: report.metrics: unknown metric"),
        "{e}"
    );
    let e =
        error("[experiment]\nname = \"x\"\n[report]\nrows = [\"server\"]\ncolumns = \"colour\"\n");
    assert!(
        e.starts_with("p.toml:5: report.columns: unknown axis \"colour\""),
        "{e}"
    );
    let e = error("[experiment]\nname = \"x\"\ndescription = \"link\"\n[axes]\nserver = [\"nginx\"]\nlink = [\"delay=10ms\"]\n");
    assert!(
        e.starts_with("p.toml:6: axes.link: testbed placement"),
        "{e}"
    );
}

#[test]
fn values_run_would_refuse_are_refused_before_anything_runs() {
    let e = error("[experiment]\nname = \"x\"\n[report]\nphase = \"bogus\"\n");
    assert!(
        e.starts_with(
            "p.toml:4: report.phase: unknown latency phase \"bogus\" (one of connect, ttfb,"
        ),
        "{e}"
    );
    assert!(plan("[experiment]\nname = \"x\"\n[report]\nphase = \"lifetime\"\n").is_ok());
    let e = error("[experiment]\nname = \"x\"\n\n[load]\nrequests = 0\n");
    assert!(
        e.starts_with("p.toml:5: load.requests: must be at least 1"),
        "{e}"
    );
    let e = error("[experiment]\nname = \"x\"\n[load]\nconcurrency = 0\n");
    assert!(
        e.starts_with("p.toml:4: load.concurrency: must be at least 1"),
        "{e}"
    );
    let e = error("[experiment]\nname = \"x\"\n[load]\ntimeout_s = 0\n");
    assert!(
        e.starts_with("p.toml:4: load.timeout_s: give a number of seconds above 0"),
        "{e}"
    );
    let e = error("[experiment]\nname = \"x\"\n[load]\nkeepalive = true\narrival = \"poisson\"\n");
    assert!(
        e.starts_with("p.toml:5: load.arrival: \"poisson\" is an open-loop arrival and needs a rate: add axes.rate"),
        "{e}"
    );
    assert!(plan(
        "[experiment]\nname = \"x\"\n[load]\narrival = \"poisson\"\n[axes]\nrate = [100.0]\n"
    )
    .is_ok());
}

const TESTBED: &str = r#"
[experiment]
name = "tb"
[load]
requests = 10
[axes]
placement = ["loopback", "testbed"]
family = ["ipv6"]
link = ["delay=10ms"]
[testbed]
topology = "t.toml"
server_ipv4 = "198.18.2.2"
server_ipv6 = "2001:2:0:2::2"
setup = [["dualbench", "wire", "{link}"]]
"#;

#[test]
fn a_run_id_covers_everything_that_shapes_the_run() {
    let ids = |text: &str| -> Vec<String> {
        expand(&plan(text).unwrap())
            .into_iter()
            .map(|r| r.id)
            .collect()
    };
    // The ids of a plan without monitor, capture or testbed are those of earlier versions.
    assert_eq!(ids(S1)[0], "03cf6d48c98f159c");
    let base = ids(TESTBED);
    let (loopback, testbed) = (&base[0], &base[1]);
    let setup = ids(&TESTBED.replace("\"{link}\"]", "\"{link}\", \"--loss\", \"1%\"]"));
    assert_eq!(
        &setup[0], loopback,
        "a loopback run does not use the testbed"
    );
    assert_ne!(&setup[1], testbed, "a setup command shapes a testbed run");
    let background = ids(&TESTBED.replace("setup =", "background = [[\"x\"]]\nsetup ="));
    assert_ne!(&background[1], testbed);
    let address = ids(&TESTBED.replace("198.18.2.2", "198.18.3.2"));
    assert_ne!(&address[1], testbed);
    let mut p = plan(TESTBED).unwrap();
    p.testbed.as_mut().unwrap().topology_text = Some("[link.a]\ndelay = \"10ms\"\n".into());
    let topology = expand(&p);
    assert_eq!(&topology[0].id, loopback);
    assert_ne!(
        &topology[1].id, testbed,
        "the topology's text shapes a testbed run"
    );
    for (key, value) in [("capture", "\"lo\""), ("monitor", "true")] {
        let changed =
            ids(&TESTBED.replace("requests = 10", &format!("requests = 10\n{key} = {value}")));
        assert!(changed.iter().zip(&base).all(|(a, b)| a != b), "{key}");
    }
}

#[test]
fn load_reads_the_topology_a_testbed_plan_brings_up() {
    let dir = std::env::temp_dir().join(format!("dualbench-plan-topo-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("tb.toml");
    std::fs::write(&path, TESTBED).unwrap();
    let e = load(&path).unwrap_err();
    assert!(
        e.message.starts_with(&format!(
            "{}:11: testbed.topology: cannot read {}",
            path.display(),
            dir.join("t.toml").display()
        )),
        "{}",
        e.message
    );
    std::fs::write(dir.join("t.toml"), TOPOLOGY).unwrap();
    let p = load(&path).unwrap();
    assert_eq!(p.testbed.unwrap().topology_text.as_deref(), Some(TOPOLOGY));
    std::fs::write(
        dir.join("t.toml"),
        "[[host]]\nname = \"client\"\ncolour = 1\n",
    )
    .unwrap();
    let e = load(&path).unwrap_err();
    assert!(
        e.message.starts_with(&format!(
            "{}:11: testbed.topology: {}:3:1: [[host]]: unknown key `colour`; [[host]] takes name, sysctl; fix the topology file",
            path.display(),
            dir.join("t.toml").display()
        )),
        "a topology the plan brings up must parse: {}",
        e.message
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// client — r1 — server, as testbeds/routed.toml.
const TOPOLOGY: &str = "[[host]]\nname = \"client\"\n[[host]]\nname = \"server\"\n\
                        [[router]]\nname = \"r1\"\n[[link]]\na = \"client\"\nb = \"r1\"\n\
                        [[link]]\na = \"r1\"\nb = \"server\"\n";

/// `load` of `text` saved beside a topology file `t.toml` holding [`TOPOLOGY`].
fn load_beside_topology(tag: &str, text: &str) -> Result<Plan> {
    let dir = std::env::temp_dir().join(format!("dualbench-plan-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("t.toml"), TOPOLOGY).unwrap();
    let path = dir.join("p.toml");
    std::fs::write(&path, text).unwrap();
    let result = load(&path);
    std::fs::remove_dir_all(&dir).unwrap();
    result.map_err(|e| Failure::usage(e.message.replace(&format!("{}/", dir.display()), "")))
}

/// `capture = "eth1"` with `capture_host = "server"` in testbeds/routed.toml, whose server
/// has eth2 only, was found when the first counted run's capture failed to start, after
/// the testbed came up and the warm-ups ran (exit 1, the experiment stored as failed).
#[test]
fn the_capture_interface_is_checked_against_the_capture_host() {
    let with = |iface: &str, host: &str| {
        TESTBED
            .replace(
                "placement = [\"loopback\", \"testbed\"]",
                "placement = [\"testbed\"]",
            )
            .replace(
                "requests = 10\n",
                &format!("requests = 10\ncapture = \"{iface}\"\ncapture_host = \"{host}\"\n"),
            )
    };
    let e = load_beside_topology("cap1", &with("eth1", "server")).unwrap_err();
    assert_eq!(
        (e.message.as_str(), e.exit_code()),
        (
            "p.toml:6: load.capture: the server host \"server\" (load.capture_host) has no interface \"eth1\" (its interfaces: lo, eth2); name one of them",
            2
        )
    );
    let e = load_beside_topology("cap2", &with("eth2", "client")).unwrap_err();
    assert_eq!(
        e.message,
        "p.toml:6: load.capture: the client host \"client\" (load.capture_host) has no interface \"eth2\" (its interfaces: lo, eth1); name one of them"
    );
    for (tag, iface, host) in [
        ("cap3", "eth2", "server"),
        ("cap4", "eth1", "client"),
        ("cap5", "lo", "server"),
    ] {
        assert!(
            load_beside_topology(tag, &with(iface, host)).is_ok(),
            "{iface} on {host}"
        );
    }
}

#[test]
fn hosts_the_plan_names_are_checked_against_the_topology() {
    let e = load_beside_topology(
        "client",
        &TESTBED.replace("[testbed]\n", "[testbed]\nclient = \"nosuchhost\"\n"),
    )
    .unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert_eq!(
        e.message,
        "p.toml:11: testbed.client: t.toml has no host \"nosuchhost\" (its hosts: client, server; routers: r1); name one of them"
    );
    let e = load_beside_topology(
        "server",
        &TESTBED.replace("[testbed]\n", "[testbed]\nserver = \"srv\"\n"),
    )
    .unwrap_err();
    assert!(
        e.message
            .starts_with("p.toml:11: testbed.server: t.toml has no host \"srv\""),
        "{}",
        e.message
    );
    let background = "background = [\n  [\"dualbench\", \"testbed\", \"exec\", \"--name\", \"t\", \"r1\", \"--\", \"true\"],\n  \
                      [\"dualbench\", \"testbed\", \"exec\", \"--name\", \"t\", \"recv4a\", \"--\", \"true\"],\n]\nsetup =";
    let e =
        load_beside_topology("background", &TESTBED.replace("setup =", background)).unwrap_err();
    assert!(
        e.message.starts_with("p.toml:16: testbed.background: `dualbench testbed exec … recv4a --`: t.toml has no host \"recv4a\""),
        "the line of the command itself: {}",
        e.message
    );
    let other = TESTBED.replace(
        "setup =",
        &background.replace(
            "\"--name\", \"t\", \"recv4a\"",
            "\"--name\", \"other\", \"recv4a\"",
        ),
    );
    assert!(
        load_beside_topology("other", &other).is_ok(),
        "a command for another testbed is not checked against this topology"
    );
    let loopback = TESTBED
        .replace(
            "placement = [\"loopback\", \"testbed\"]",
            "placement = [\"loopback\"]",
        )
        .replace("link = [\"delay=10ms\"]\n", "")
        .replace("[testbed]\n", "[testbed]\nclient = \"nosuchhost\"\n");
    assert!(
        load_beside_topology("loopback", &loopback).is_ok(),
        "a plan that never brings its testbed up"
    );
}

#[test]
fn server_addresses_are_addresses_of_their_family() {
    let e = error(&TESTBED.replace("\"198.18.2.2\"", "\"not-an-ip\""));
    assert_eq!(
        e,
        "p.toml:12: testbed.server_ipv4: \"not-an-ip\" is not an IP address; give the server host's IPv4 address, e.g. \"198.18.2.2\""
    );
    let e = error(&TESTBED.replace("\"2001:2:0:2::2\"", "\"198.18.2.2\""));
    assert!(
        e.starts_with("p.toml:13: testbed.server_ipv6: \"198.18.2.2\" is not an IPv6 address"),
        "{e}"
    );
    let e = error(&TESTBED.replace("\"198.18.2.2\"", "\"::ffff:198.18.2.2\""));
    assert!(e.starts_with("p.toml:12: testbed.server_ipv4:"), "{e}");
}

#[test]
fn capture_host_is_read_checked_and_part_of_the_run_id() {
    let testbed_only = TESTBED.replace("[\"loopback\", \"testbed\"]", "[\"testbed\"]");
    assert_eq!(
        plan(&testbed_only).unwrap().load.capture_host,
        CaptureHost::Client
    );
    let with = |host: &str| {
        testbed_only.replace(
            "requests = 10",
            &format!("requests = 10\ncapture = \"eth1\"\ncapture_host = \"{host}\""),
        )
    };
    let server = plan(&with("server")).unwrap();
    assert_eq!(server.load.capture_host, CaptureHost::Server);
    let client = plan(&with("client")).unwrap();
    let (server_ids, client_ids) = (expand(&server), expand(&client));
    assert!(server_ids
        .iter()
        .zip(&client_ids)
        .all(|(s, c)| s.id != c.id));
    // "client" is the default: naming it keeps the ids of plans that do not.
    let unnamed = testbed_only.replace("requests = 10", "requests = 10\ncapture = \"eth1\"");
    assert_eq!(expand(&plan(&unnamed).unwrap())[0].id, client_ids[0].id);

    let e = error(&TESTBED.replace(
        "requests = 10",
        "requests = 10\ncapture = \"eth1\"\ncapture_host = \"server\"",
    ));
    assert!(e.starts_with("p.toml:"), "{e}");
    assert!(e.contains("load.capture_host: \"server\" captures in the testbed's server host, and a loopback point has none"), "{e}");
    let e =
        error(&testbed_only.replace("requests = 10", "requests = 10\ncapture_host = \"server\""));
    assert!(
        e.contains("load.capture_host: \"server\" needs load.capture"),
        "{e}"
    );
    let e = error(&with("router"));
    assert!(
        e.contains("load.capture_host: unknown variant `router`"),
        "{e}"
    );
}

/// Values above 0 that `dualbench run` still refuses (`-s 0.0002`: "-s needs 0.001 to 86400
/// seconds") are refused with the plan, before an experiment is stored and a server started.
#[test]
fn load_values_outside_what_run_takes_are_refused_before_anything_runs() {
    let head = "[experiment]\nname = \"x\"\n";
    for (body, wanted) in [
        (
            "[load]\ntimeout_s = 0.0002\n",
            "p.toml:4: load.timeout_s: 0.0002 is outside 0.001 to 86400 seconds, what `dualbench run -s` takes",
        ),
        (
            "[load]\ntimeout_s = 100000\n",
            "p.toml:4: load.timeout_s: 100000 is outside 0.001 to 86400 seconds, what `dualbench run -s` takes",
        ),
        (
            "[load]\ntime_limit_s = 0.0001\n",
            "p.toml:4: load.time_limit_s: 0.0001 is outside 0.001 to 31536000 seconds, what `dualbench run -t` takes",
        ),
        (
            "[load]\nconcurrency = 2000000\n",
            "p.toml:4: load.concurrency: 2000000 is more than 1000000, the most `dualbench run -c` takes",
        ),
        (
            "[axes]\nconcurrency = [5, 2000000]\n",
            "p.toml:4: axes.concurrency: 2000000 is outside 1 to 1000000, what `dualbench run -c` takes",
        ),
        (
            "[axes]\nrate = [0.0001]\n",
            "p.toml:4: axes.rate: 0.0001 is outside 0.001 to 10000000, what `dualbench run --rate` takes",
        ),
        (
            "[axes]\nrate = [20000000.0]\n",
            "p.toml:4: axes.rate: 20000000 is outside 0.001 to 10000000, what `dualbench run --rate` takes",
        ),
        // These were written out in full: 301 and 302 digits on the line.
        (
            "[axes]\nrate = [1e300]\n",
            "p.toml:4: axes.rate: 1e300 is outside 0.001 to 10000000, what `dualbench run --rate` takes",
        ),
        (
            "[axes]\nrate = [1e-300]\n",
            "p.toml:4: axes.rate: 1e-300 is outside 0.001 to 10000000, what `dualbench run --rate` takes",
        ),
        (
            "[load]\ntimeout_s = 1e300\n",
            "p.toml:4: load.timeout_s: 1e300 is outside 0.001 to 86400 seconds, what `dualbench run -s` takes",
        ),
    ] {
        assert_eq!(error(&format!("{head}{body}")), wanted);
    }
    for body in [
        "[load]\ntimeout_s = 0.001\ntime_limit_s = 31536000\nconcurrency = 1000000\n",
        "[axes]\nrate = [0.001, 10000000.0]\n",
    ] {
        assert!(plan(&format!("{head}{body}")).is_ok(), "{body}");
    }
}

/// A number too large for TOML's integers failed before serde read any key, and the
/// error named the line alone: `p.toml:5: number too large to fit in target type`.
#[test]
fn a_number_too_large_for_toml_names_its_key() {
    let head = "[experiment]\nname = \"x\"\n";
    for (body, wanted) in [
        (
            "[load]  # every run\nrequests = 18446744073709551615\n",
            "p.toml:4: load.requests: number too large to fit in target type",
        ),
        (
            "[axes]\nconcurrency = [1, 99999999999999999999]\n",
            "p.toml:4: axes.concurrency: number too large to fit in target type",
        ),
    ] {
        assert_eq!(error(&format!("{head}{body}")), wanted);
    }
    // A line that sets no key keeps toml's words alone.
    assert_eq!(error("not toml [[[\n"), "p.toml:1: expected `.`, `=`");
}

/// An axis named twice in the table made its column twice (`| server | server | ipv4 |`,
/// points `server=nginx server=nginx`), and a metric twice its table twice.
#[test]
fn a_report_axis_or_metric_named_twice_is_refused() {
    let head = "[experiment]\nname = \"x\"\n[report]\n";
    for (body, wanted) in [
        (
            "rows = [\"server\", \"server\"]\n",
            "p.toml:4: report.rows: \"server\" appears twice",
        ),
        (
            "rows = [\"server\"]\ncolumns = \"server\"\n",
            "p.toml:5: report.columns: \"server\" is also in report.rows; an axis makes rows or columns, not both",
        ),
        (
            "metrics = [\"rps\", \"total_ms\", \"rps\"]\n",
            "p.toml:4: report.metrics: \"rps\" appears twice",
        ),

    ] {
        assert_eq!(error(&format!("{head}{body}")), wanted);
    }
    // metrics = [] gave a Results section without a table.
    assert_eq!(
        error(&format!("{head}metrics = []\n")),
        format!(
            "p.toml:4: report.metrics: no metric: name at least one (one of {}), or leave the key out for requests/s and mean total time",
            crate::report::metrics::names()
        )
    );
    assert!(plan(&format!(
        "{head}rows = [\"server\", \"handler\"]\ncolumns = \"family\"\n"
    ))
    .is_ok());
}

/// `load.extra_args` that `dualbench run` refuses once failed the first run, after the
/// experiment was stored and its server started; a URL among them would have been
/// benchmarked besides the server.
#[test]
fn extra_args_run_would_refuse_are_refused_with_the_plan() {
    let plan_with = |args: &str| {
        format!("[experiment]\nname = \"x\"\n[load]\nkeepalive = true\nextra_args = {args}\n")
    };
    for (args, wanted) in [
        (
            r#"["--bogus"]"#,
            "p.toml:5: load.extra_args: `dualbench run` refuses them: unexpected argument '--bogus' found",
        ),
        (
            r#"["-k"]"#,
            "p.toml:5: load.extra_args: `dualbench run` refuses them: the argument '--keepalive' cannot be used multiple times",
        ),
        (
            r#"["-H"]"#,
            "p.toml:5: load.extra_args: \"-H\" needs a value; as the last word it would take the run's URL",
        ),
        (
            r#"["http://192.0.2.1/"]"#,
            "p.toml:5: load.extra_args: \"http://192.0.2.1/\": give no URL here; each run benchmarks the experiment's server at its own URL",
        ),
    ] {
        assert_eq!(error(&plan_with(args)), wanted);
    }
    let e = error(&plan_with(r#"["-w"]"#));
    assert!(
        e.starts_with(
            "p.toml:5: load.extra_args: `dualbench run` refuses them: -w is not supported"
        ),
        "{e}"
    );
    assert!(plan(&plan_with(
        r#"["-H", "Accept: text/html", "--http10", "-l"]"#
    ))
    .is_ok());
}

/// A 300-character name passed the plan, and the experiment then failed making its folder
/// (`File name too long (os error 36)`), left in the database as `running`.
#[test]
fn a_name_too_long_for_the_runs_folder_is_refused() {
    let named = |n: usize| format!("[experiment]\nname = \"{}\"\n", "a".repeat(n));
    let e = plan(&named(101)).unwrap_err();
    assert_eq!(
        (e.message.as_str(), e.exit_code()),
        (
            "p.toml:2: experiment.name: 101 characters; at most 100: the name names the runs' folder and the report's files",
            2
        )
    );
    assert_eq!(plan(&named(100)).unwrap().name.len(), 100);
}

#[test]
fn a_plan_of_more_runs_than_memory_holds_is_refused_before_they_are_listed() {
    // 20 points × 4,000,000,000 repeats: listing the runs asked for 11.5 TB and aborted.
    let big =
        "[experiment]\nname = \"x\"\nrepeats = 4000000000\n[axes]\nfamily = [\"ipv4\", \"ipv6\"]\n\
               concurrency = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n";
    assert_eq!(
        error(big),
        "p.toml:3: experiment.repeats: 20 points × 4000000000 repeats make 80000000000 runs; \
         a plan may have at most 1000000: split it into several plans"
    );
    let at_limit = big.replace("4000000000", "50000");
    assert_eq!(plan(&at_limit).unwrap().repeats, 50_000);
    let over = error(&big.replace("4000000000", "50001"));
    assert!(
        over.contains("20 points × 50001 repeats make 1000020 runs"),
        "{over}"
    );
}

/// `name = "7"` was taken, and every command that takes an experiment read `7` as an id
/// first: `results show 7` and `report 7` showed experiment id 7 (another experiment), and
/// this one could be named only by `report` with no argument while it was the newest.
/// Refused when a plan is loaded to run, naming why; a stored plan (an older dualbench's)
/// still parses, so its report keeps its layout.
#[test]
fn a_name_of_digits_alone_is_refused_when_a_plan_is_loaded() {
    for name in ["7", "007"] {
        let text = format!("[experiment]\nname = \"{name}\"\n[axes]\nfamily = [\"ipv4\"]\n");
        let e = load_beside_topology("digits", &text).unwrap_err();
        assert_eq!(
            (e.message.as_str(), e.exit_code()),
            (
                format!(
                    "p.toml:2: experiment.name: \"{name}\" is digits alone, which `dualbench results` and `report` read as an experiment id (`report {name}` would report experiment id {name}, not this one); give a name with a letter, e.g. \"s{name}\""
                )
                .as_str(),
                2
            )
        );
        assert_eq!(plan(&text).unwrap().name, name);
    }
    for name in ["s7", "7a", "1.0", "-7"] {
        let text = format!("[experiment]\nname = \"{name}\"\n[axes]\nfamily = [\"ipv4\"]\n");
        assert_eq!(load_beside_topology("named", &text).unwrap().name, name);
    }
}

/// `warmup = 3000` (meant as seconds) or `4000000000` was taken: 3,000 warm-up rounds of
/// every group before the first counted run, or, for the second, one that never came.
/// At most MAX_WARMUP rounds, and warm-up and counted runs together at most MAX_RUNS.
#[test]
fn warm_up_rounds_are_bounded() {
    let with = |warmup: &str, repeats: u32| {
        format!(
            "[experiment]\nname = \"x\"\nrepeats = {repeats}\nwarmup = {warmup}\n[axes]\nfamily = [\"ipv4\", \"ipv6\"]\n"
        )
    };
    for w in ["3000", "4000000000", "101"] {
        let e = plan(&with(w, 1)).unwrap_err();
        assert_eq!(
            (e.message.clone(), e.exit_code()),
            (
                format!(
                    "p.toml:4: experiment.warmup: {w} is more than 100, the most warm-up rounds a plan may have (a round runs every point once and is not stored; warmup counts rounds, not seconds)"
                ),
                2
            )
        );
    }
    assert_eq!(plan(&with("100", 3)).unwrap().warmup, 100);
    // 2 points × (100 + 499,950) = 1,000,100 runs to run, with 999,900 counted.
    assert_eq!(
        error(&with("100", 499_950)),
        "p.toml:4: experiment.warmup: 2 points × (100 warm-up + 499950 repeats) make 1000100 runs; a plan may run at most 1000000: split it into several plans"
    );
    assert_eq!(plan(&with("50", 499_950)).unwrap().warmup, 50);
    assert_eq!(
        error(&with("-1", 1)),
        "p.toml:4: experiment.warmup: invalid value: integer `-1`, expected u32"
    );
}

/// The bundled plan of one study, as `dualbench experiment experiments/NAME.toml` loads it.
fn bundled(name: &str) -> Plan {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../experiments/{name}.toml"));
    load(&path).unwrap_or_else(|e| panic!("{name}: {}", e.message))
}

/// S1 published ab's "Total transferred" and "HTML transferred" (288,000 and 45,000 bytes);
/// its plan's report showed neither, only a note quoting the published ones. It reports
/// ours now, and naming the report's figures changes no run's id: a stored S1 experiment
/// resumes with every run kept.
#[test]
fn the_s1_plan_reports_abs_total_and_html_transferred() {
    let s1 = bundled("s1-mpm");
    assert_eq!(
        s1.report.metrics,
        [
            "rps",
            "total_ms",
            "connect_ms",
            "ttfb_ms",
            "failed",
            "total_bytes",
            "html_bytes"
        ]
    );
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/s1-mpm.toml"),
    )
    .unwrap();
    let before = text.replace(
        r#"metrics = ["rps", "total_ms", "connect_ms", "ttfb_ms", "failed", "total_bytes", "html_bytes"]"#,
        r#"metrics = ["rps", "total_ms", "connect_ms", "ttfb_ms", "failed"]"#,
    );
    assert_ne!(before, text);
    let ids = |p: &Plan| expand(p).into_iter().map(|r| r.id).collect::<Vec<_>>();
    let old = plan(&before).unwrap();
    assert_eq!(ids(&old).len(), 180, "3 servers × 2 families × 30 repeats");
    assert_eq!(ids(&old), ids(&s1));
}

/// The S4 plan's notes say why its IPv6 − IPv4 times at 4:1 and 1:4 follow the share:
/// one accept queue of 511 per listening socket, so the majority family overflows its own.
#[test]
fn the_s4_plan_explains_its_per_family_accept_queues() {
    let s4 = bundled("s4-ratio");
    for words in [
        "accept queue of 511",
        "TcpExtListenOverflows",
        "1:1 compares the families themselves",
    ] {
        assert!(
            s4.report.notes.contains(words),
            "{words}: {}",
            s4.report.notes
        );
    }
    assert_eq!(expand(&s4).len(), 15);
    for name in ["s0-ipv6-vs-ipv4", "s2-handlers-loopback"] {
        assert!(!expand(&bundled(name)).is_empty(), "{name}");
    }
}

/// What `dualbench testbed up`, `run --capture` or the exec of a command would refuse
/// once the plan ran is refused as the plan is loaded: a testbed name `up` refuses (also
/// the topology file's stem standing in for it), an empty topology path, a capture
/// interface no interface can be named, a NUL in a command, a control character in a label.
#[test]
fn what_would_fail_once_running_is_refused_when_the_plan_is_loaded() {
    assert!(load_beside_topology("hx-ok", TESTBED).is_ok());
    let cases = [
        (
            TESTBED.replace("[testbed]\n", "[testbed]\nname = \"My Bed\"\n"),
            "p.toml:11: testbed.name: testbed name 'My Bed' must be 1 to 12 lowercase letters, digits or '-', starting with a letter",
        ),
        (
            TESTBED.replace("topology = \"t.toml\"", "topology = \"\""),
            "p.toml:11: testbed.topology: empty: give the topology file's path relative to the plan's folder",
        ),
        (
            TESTBED.replace("requests = 10", "requests = 10\ncapture = \"eth0:1\""),
            "p.toml:6: load.capture: \"eth0:1\" cannot name an interface (1 to 15 characters, none of them '/', ':' or a space, not \".\" or \"..\"); give one such as \"lo\" or \"eth1\"",
        ),
        (
            TESTBED.replace("\"{link}\"]", "\"{link}\\u0000\"]"),
            "p.toml:14: testbed.setup: a command holds a NUL character, which no program's argument can",
        ),
        (
            TESTBED.replace("link = [\"delay=10ms\"]", "link = [\"delay=10ms\\t\"]"),
            "p.toml:9: axes.link: \"delay=10ms\\t\" holds a control character; a label is put into commands and reports: use letters, digits and punctuation",
        ),
    ];
    for (text, wanted) in cases {
        let e = load_beside_topology("hx-run", &text).unwrap_err();
        assert_eq!(e.message, wanted, "{text}");
        assert_eq!(e.exit_code(), 2);
        // A stored plan read again for its report is not held to these.
        if !wanted.contains("testbed.topology") {
            assert!(plan(&text).is_ok(), "{text}");
        }
    }
    // The stem of the topology file names the testbed when the plan does not.
    let dir = std::env::temp_dir().join(format!("hx-plan-stem-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("Big_Lab.toml"), TOPOLOGY).unwrap();
    let path = dir.join("p.toml");
    std::fs::write(&path, TESTBED.replace("t.toml", "Big_Lab.toml")).unwrap();
    let e = load(&path).unwrap_err();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        e.message,
        format!("{}:11: testbed.topology: testbed name 'Big_Lab' must be 1 to 12 lowercase letters, digits or '-', starting with a letter: the testbed is named after the topology file unless [testbed] name names it", path.display())
    );
}
