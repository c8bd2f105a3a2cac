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
    assert_eq!(runs[0].point.server, ServerKind::ApachePrefork);
    assert_eq!(runs[0].point.selector.key(), "ipv4");
    assert_eq!(
        (runs[2].repeat, runs[3].point.selector.key()),
        (3, "ipv6".to_string())
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
    assert!(
        e.starts_with("p.toml:3:") && e.contains("unknown field `repeat`"),
        "{e}"
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
        e.starts_with("p.toml:5: testbed: a command is empty"),
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
