//! Unit tests of topology parsing: numbering, inheritance, and every mistake named by file,
//! line, column and key.

use super::*;

fn error(text: &str) -> String {
    parse(text).unwrap_err().render("t.toml")
}

const GOOD: &str = "[[host]]\nname = \"client\"\n[[host]]\nname = \"server\"\n[[router]]\nname = \"r1\"\n\
    [[link]]\na = \"client\"\nb = \"r1\"\n[[link]]\na = \"r1\"\nb = \"server\"\nrate = \"100Mbit\"\nqueue = 100\n\
    b_to_a = { delay = \"20ms\", queue = \"64kB\" }\n";

#[test]
fn a_good_file_becomes_numbered_nodes_and_links() {
    let t = parse(GOOD).unwrap();
    let names: Vec<(&str, u32)> = t
        .nodes
        .iter()
        .map(|n| (n.name.as_str(), n.number))
        .collect();
    assert_eq!(names, [("client", 1), ("server", 2), ("r1", 3)]);
    let l2 = &t.links[1];
    assert_eq!((l2.number, l2.a, l2.b), (2, 2, 1));
    assert_eq!(l2.a_to_b.rate, Some(Rate(100_000_000)));
    assert_eq!(l2.a_to_b.queue, Some(Queue::Packets(100)));
    assert_eq!(l2.b_to_a.queue, Some(Queue::Bytes(64_000)));
    assert_eq!(l2.b_to_a.delay, Some(Micros(20_000)));
    assert_eq!(l2.a_to_b.delay, None);
}

/// An unknown key is one line: file, line and column, its table as written, the key, a
/// close key or the table that takes it, and every key its table takes.
#[test]
fn unknown_key_names_file_line_table_and_what_it_takes() {
    let link_keys =
        "a, b, shaper, rate, queue, delay, jitter, loss, burst_loss, keep_order, a_to_b, b_to_a";
    let shaping_keys = "rate, queue, delay, jitter, loss, burst_loss, keep_order";
    let top = "a topology takes name, [[host]], [[router]], [[switch]], [[link]], [[service]]";
    let head = "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[link]]\na = \"a\"\nb = \"b\"\n";
    let cases = [
        (
            format!("{head}rat = \"1Gbit\"\n"),
            format!("t.toml:8:1: [[link]]: unknown key `rat` (did you mean `rate`?); [[link]] takes {link_keys}"),
        ),
        (
            "[[host]]\nname = \"a\"\ncolour = 1\n".to_string(),
            "t.toml:3:1: [[host]]: unknown key `colour`; [[host]] takes name, sysctl".to_string(),
        ),
        (
            "[[host]]\nname = \"a\"\n[[router]]\nname = \"r1\"\nsysctls = { \"net.ipv4.tcp_sack\" = 0 }\n".to_string(),
            "t.toml:5:1: [[router]]: unknown key `sysctls` (did you mean `sysctl`?); [[router]] takes name, sysctl".to_string(),
        ),
        (
            "[[host]]\nname = \"a\"\n[[switch]]\nNAME = \"lan\"\n".to_string(),
            "t.toml:4:1: [[switch]]: unknown key `NAME` (did you mean `name`?); [[switch]] takes name, sysctl".to_string(),
        ),
        (
            format!("{head}delay = \"10ms\"\nb_to_a = {{ dealy = \"30ms\" }}\n"),
            format!("t.toml:9:12: [link.b_to_a]: unknown key `dealy` (did you mean `delay`?); [link.b_to_a] takes {shaping_keys}"),
        ),
        (
            format!("{head}rate = \"10Mbit\"\n[link.a_to_b]\nshaper = \"tbf\"\n"),
            format!("t.toml:10:1: [link.a_to_b]: unknown key `shaper` (a key of [[link]]); [link.a_to_b] takes {shaping_keys}"),
        ),
        (
            "[[host]]\nname = \"a\"\nb = \"c\"\n".to_string(),
            "t.toml:3:1: [[host]]: unknown key `b` (a key of [[link]]); [[host]] takes name, sysctl".to_string(),
        ),
        (
            "[[host]]\nname = \"a\"\n[[service]]\nhost = \"a\"\nname = \"web\"\ncommand = \"true\"\nredy = 80\n".to_string(),
            "t.toml:7:1: [[service]]: unknown key `redy` (did you mean `ready`?); [[service]] takes host, name, command, ready".to_string(),
        ),
        (
            "name = \"lab\"\n[[hosts]]\nname = \"a\"\n".to_string(),
            format!("t.toml:2:3: unknown table [[hosts]] (did you mean [[host]]?); {top}"),
        ),
        (
            "rate = \"1Gbit\"\n[[host]]\nname = \"a\"\n".to_string(),
            format!("t.toml:1:1: unknown key `rate` (it goes under [[link]]); {top}"),
        ),
        (
            "nmae = \"lab\"\n[[host]]\nname = \"a\"\n".to_string(),
            format!("t.toml:1:1: unknown key `nmae` (did you mean `name`?); {top}"),
        ),
        (
            "[wire]\ndelay = 1\n[[host]]\nname = \"a\"\n".to_string(),
            format!("t.toml:1:2: unknown table [wire]; {top}"),
        ),
    ];
    for (text, want) in cases {
        assert_eq!(error(&text), want, "{text}");
    }
}

#[test]
fn dangling_link_points_at_the_endpoint() {
    let text = "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[link]]\na = \"a\"\nb = \"srv\"\n";
    assert_eq!(
        error(text),
        "t.toml:7:5: key 'b': no host, router or switch named 'srv' (there are: a, b)"
    );
}

#[test]
fn duplicate_names_across_kinds() {
    let text = "[[host]]\nname = \"a\"\n[[router]]\nname = \"a\"\n";
    assert_eq!(
        error(text),
        "t.toml:4:8: key 'name': duplicate name 'a': every host, router and switch needs its own"
    );
}

#[test]
fn impossible_values_point_at_their_key() {
    let base = "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[link]]\na = \"a\"\nb = \"b\"\n";
    let e = error(&format!("{base}rate = \"0Mbit\"\n"));
    assert_eq!(e, "t.toml:8:8: key 'rate': rate '0Mbit' is impossible: a link rate must be between 8kbit and 100Gbit");
    let e = error(&format!("{base}a_to_b = {{ rate = \"200Gbit\" }}\n"));
    assert!(
        e.starts_with("t.toml:8:19: key 'a_to_b.rate': rate '200Gbit' is impossible"),
        "{e}"
    );
    let e = error(&format!("{base}queue = 0\n"));
    assert!(
        e.starts_with("t.toml:8:9: key 'queue': queue of 0 packets is impossible"),
        "{e}"
    );
    // A float or a boolean used to be serde's "data did not match any variant of untagged
    // enum RawQueue"; "1.9" used to be 1 packet.
    for (value, column) in [("2.5", 9), ("true", 9), ("{ p = 1 }", 9)] {
        assert_eq!(
            error(&format!("{base}queue = {value}\n")),
            format!("t.toml:8:{column}: key 'queue': a queue is a whole number of packets (100) or a string of bytes (\"64kB\")")
        );
    }
    assert_eq!(
        error(&format!("{base}b_to_a = {{ queue = \"1.9\" }}\n")),
        "t.toml:8:20: key 'b_to_a.queue': queue '1.9' is not a whole number of packets"
    );
    let e = error(&format!("{base}jitter = \"2ms\"\n"));
    assert!(e.contains("key 'jitter': jitter needs a delay"), "{e}");
    let e = error(&format!("{base}delay = \"0ms\"\njitter = \"2ms\"\n"));
    assert!(e.contains("key 'jitter': jitter needs a delay"), "{e}");
    let e = error(&format!("{base}loss = \"1\"\n"));
    assert_eq!(
        e,
        "t.toml:8:8: key 'loss': loss '1' has no '%': write a percentage, like \"1%\""
    );
    let e = error(&format!("{base}shaper = \"fq\"\n"));
    assert!(e.contains("key 'shaper': unknown shaper 'fq'"), "{e}");
}

#[test]
fn directions_inherit_the_links_keys_and_override_some() {
    let base = "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[link]]\na = \"a\"\nb = \"b\"\n";
    let t = parse(&format!(
        "{base}delay = \"30ms\"\njitter = \"2ms\"\nloss = \"1%\"\nkeep_order = true\n\
         b_to_a = {{ rate = \"10Mbit\", delay = \"20ms\", keep_order = false }}\n"
    ))
    .unwrap();
    let (ab, ba) = (t.links[0].a_to_b, t.links[0].b_to_a);
    assert_eq!(
        (ab.delay, ab.jitter, ab.loss),
        (Some(Micros(30_000)), Some(Micros(2_000)), Some(Ppm(10_000)))
    );
    assert!(ab.keeps_order() && ab.rate.is_none());
    // b_to_a keeps the link's jitter and loss, replaces delay and keep_order, adds a rate.
    assert_eq!(
        (ba.delay, ba.jitter, ba.loss),
        (Some(Micros(20_000)), Some(Micros(2_000)), Some(Ppm(10_000)))
    );
    assert_eq!(ba.rate, Some(Rate(10_000_000)));
    assert!(!ba.keep_order && !ba.keeps_order());
    // keep_order in one direction only.
    let t = parse(&format!(
        "{base}delay = \"10ms\"\njitter = \"2ms\"\na_to_b = {{ keep_order = true }}\n"
    ))
    .unwrap();
    assert!(t.links[0].a_to_b.keeps_order() && !t.links[0].b_to_a.keep_order);
    assert!(t.links[0].keeps_order());
}

#[test]
fn keep_order_needs_jitter_and_a_boolean() {
    let base = "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[link]]\na = \"a\"\nb = \"b\"\n";
    assert_eq!(
        error(&format!("{base}delay = \"10ms\"\nkeep_order = true\n")),
        "t.toml:9:14: key 'keep_order': keep_order keeps jittered frames in order, but there is no jitter here: add jitter or remove keep_order"
    );
    let e = error(&format!(
        "{base}delay = \"10ms\"\nb_to_a = {{ jitter = \"1ms\" }}\na_to_b = {{ keep_order = true }}\n"
    ));
    assert!(
        e.starts_with("t.toml:10:25: key 'a_to_b.keep_order': keep_order keeps jittered frames in order, but there is no jitter here"),
        "{e}"
    );
    // On the link, jitter in either direction is enough.
    assert!(parse(&format!(
        "{base}delay = \"10ms\"\nkeep_order = true\nb_to_a = {{ jitter = \"1ms\" }}\n"
    ))
    .is_ok());
    // Taking the delay away in one direction takes the inherited jitter's base away too.
    let e = error(&format!(
        "{base}delay = \"10ms\"\njitter = \"1ms\"\nb_to_a = {{ delay = \"0ms\" }}\n"
    ));
    assert_eq!(e, "t.toml:10:20: key 'b_to_a.delay': this direction inherits the link's jitter, which needs a delay to vary around: add jitter = \"0ms\" here too");
    // keep_order = false is always fine.
    assert!(parse(&format!("{base}keep_order = false\n")).is_ok());
    let e = error(&format!(
        "{base}delay = \"10ms\"\njitter = \"1ms\"\nkeep_order = \"yes\"\n"
    ));
    assert!(
        e.starts_with(
            "t.toml:10:14: key 'keep_order': invalid type: string \"yes\", expected a boolean"
        ),
        "{e}"
    );
}

/// `shaper = "tbf"` on a link without a rate was accepted and shaped nothing.
#[test]
fn a_shaper_needs_a_rate() {
    let base = "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[link]]\na = \"a\"\nb = \"b\"\n";
    assert_eq!(
        error(&format!("{base}shaper = \"tbf\"\ndelay = \"10ms\"\n")),
        "t.toml:8:10: key 'shaper': shaper 'tbf' enforces a rate, but link 1 has none in either direction: add rate (like rate = \"100Mbit\") or remove shaper"
    );
    // A rate in one direction is enough; so is one on the link.
    assert!(parse(&format!(
        "{base}shaper = \"tbf\"\nb_to_a = {{ rate = \"10Mbit\" }}\n"
    ))
    .is_ok());
    assert!(parse(&format!("{base}shaper = \"htb\"\nrate = \"10Mbit\"\n")).is_ok());
}

/// A value of the wrong type named no key (`t.toml:8:8: invalid type: integer `100`,
/// expected a string`), unlike every other error, nor how to write it; a direction that is
/// not a table was "expected struct RawShaping".
#[test]
fn a_value_of_the_wrong_type_names_its_key() {
    let base = "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[link]]\na = \"a\"\nb = \"b\"\n";
    let cases = [
        ("rate = 100", "t.toml:8:8: key 'rate': invalid type: integer `100`, expected a string: write it in quotes with its unit, like rate = \"100Mbit\""),
        ("delay = 20", "t.toml:8:9: key 'delay': invalid type: integer `20`, expected a string: write it in quotes with its unit, like delay = \"20ms\""),
        ("loss = 0.1", "t.toml:8:8: key 'loss': invalid type: floating point `0.1`, expected a string: write it in quotes with its unit, like loss = \"0.1%\""),
        ("b_to_a = { delay = \"1ms\", jitter = 1 }", "t.toml:8:36: key 'b_to_a.jitter': invalid type: integer `1`, expected a string: write it in quotes with its unit, like jitter = \"20ms\""),
        ("shaper = 1", "t.toml:8:10: key 'shaper': invalid type: integer `1`, expected a string"),
        ("a_to_b = 5", "t.toml:8:10: key 'a_to_b': invalid type: integer `5`, expected a table of shaping keys, like { rate = \"10Mbit\", delay = \"30ms\" }"),
    ];
    for (line, want) in cases {
        assert_eq!(error(&format!("{base}{line}\n")), want);
    }
    assert_eq!(
        error("[[host]]\nname = 5\n"),
        "t.toml:2:8: key 'name': invalid type: integer `5`, expected a string"
    );
    // Not a bare key before the value (a full-width space in it): no key, and no panic.
    assert!(parse("[[host]]\nname\u{3000}x = 5\n").is_err());
    assert!(parse("[[host]]\nname = 5\u{3000}\n").is_err());
    // A required key left out says what it is and how to write it (it was only
    // "t.toml:3:1: missing field `b`").
    assert_eq!(
        error("[[host]]\nname = \"a\"\n[[link]]\na = \"a\"\n"),
        "t.toml:3:1: missing field `b`: a [[link]] needs a and b, the names of the two nodes it joins, like a = \"client\" and b = \"r1\""
    );
    assert_eq!(
        error("[[host]]\nname = \"a\"\n[[service]]\nhost = \"a\"\nname = \"w\"\n"),
        "t.toml:3:1: missing field `command`: the program and its arguments, like command = [\"dualbench\", \"serve\"]"
    );
    assert_eq!(
        error("[[host]]\n[[host]]\nname = \"a\"\n"),
        "t.toml:1:1: missing field `name`: every node needs a name, like name = \"client\""
    );
}

#[test]
fn a_single_table_where_a_list_is_meant_says_so() {
    // Was "t.toml:1:1: invalid type: map, expected a sequence".
    assert_eq!(
        error("[host]\nname = \"a\"\n"),
        "t.toml:1:1: [host] is one table, but each host is an entry of a list: write [[host]]"
    );
    assert_eq!(
        error("[[host]]\nname = \"a\"\n[link]\na = \"a\"\nb = \"a\"\n"),
        "t.toml:3:1: [link] is one table, but each link is an entry of a list: write [[link]]"
    );
}

#[test]
fn names_are_checked() {
    assert!(error("[[host]]\nname = \"Client\"\n").contains("key 'name': host 'Client' must be"));
    assert!(error("[[host]]\nname = \"wire3\"\n").contains("reserved"));
    // "localhost" was accepted, and every node's hosts file then listed it at 127.0.0.1 and
    // at that node's addresses, so `localhost` reached another node.
    assert_eq!(
        error("[[host]]\nname = \"a\"\n[[router]]\nname = \"localhost\"\n"),
        "t.toml:4:8: key 'name': 'localhost' is the loopback's name in every node's hosts file (127.0.0.1 and ::1): as a node's name too it would also resolve to that node's addresses, in every node; choose another name"
    );
    // A node name has no '-': the rule must not offer one (it said "digits or '-'").
    assert_eq!(
        error("[[router]]\nname = \"R1\"\n[[host]]\nname = \"a\"\n"),
        "t.toml:2:8: key 'name': router 'R1' must be 1 to 16 lowercase letters or digits, starting with a letter"
    );
    // `lab-x` + host `y` and `lab` + host `x-y` were both namespace db-lab-x-y.
    assert_eq!(
        error("[[host]]\nname = \"x-y\"\n"),
        "t.toml:2:8: key 'name': host 'x-y' has a '-': node names may not (namespace db-<testbed>-<node> must say where the testbed's name ends, and <node>-v4/-v6 are host names), so write e.g. 'xy'"
    );
    assert!(error("name = \"a_b\"\n[[host]]\nname = \"a\"\n")
        .contains("key 'name': testbed name 'a_b'"));
    assert!(error("").contains("no [[host]]"));
}

/// A file with a router and no host was built: nothing in it can run a benchmark.
#[test]
fn a_testbed_without_hosts_is_refused() {
    let want = "t.toml:1:1: no [[host]] in the file: a testbed needs at least one to run benchmarks and services on (routers and switches only forward)";
    assert_eq!(error("[[router]]\nname = \"r1\"\n"), want);
    assert_eq!(
        error("[[router]]\nname = \"r1\"\n[[switch]]\nname = \"sw\"\n[[link]]\na = \"r1\"\nb = \"sw\"\n"),
        want
    );
    assert_eq!(error(""), want);
}

#[test]
fn services_need_a_real_host_and_a_command() {
    let base = "[[host]]\nname = \"a\"\n[[switch]]\nname = \"sw\"\n[[service]]\n";
    assert!(error(&format!(
        "{base}host = \"b\"\nname = \"web\"\ncommand = \"x\"\n"
    ))
    .contains("key 'host': no host"));
    assert!(error(&format!(
        "{base}host = \"sw\"\nname = \"web\"\ncommand = \"x\"\n"
    ))
    .contains("is a switch"));
    assert!(error(&format!(
        "{base}host = \"a\"\nname = \"web\"\ncommand = []\n"
    ))
    .contains("key 'command': empty command"));
    // A number or a list of numbers used to be serde's "data did not match any variant of
    // untagged enum Command".
    for value in ["42", "[1, 2]"] {
        let e = error(&format!(
            "{base}host = \"a\"\nname = \"web\"\ncommand = {value}\n"
        ));
        assert!(
            e.ends_with(":11: key 'command': a command is a list of strings ([\"nginx\", \"-g\", \"daemon off;\"]) or one string run by /bin/sh -c"),
            "{e}"
        );
    }
    let t = parse(&format!(
        "{base}host = \"a\"\nname = \"web\"\ncommand = [\"dualbench\", \"serve\"]\n"
    ))
    .unwrap();
    assert_eq!(t.services[0].command.argv(), ["dualbench", "serve"]);
}

/// A `ready` of the wrong type used to be serde's `invalid type: string "80", expected i64`
/// (no key, no way out); each is now one line naming the key and how to write it.
#[test]
fn a_ready_port_of_the_wrong_type_names_the_key_and_how_to_write_it() {
    let base =
        "[[host]]\nname = \"a\"\n[[service]]\nhost = \"a\"\nname = \"web\"\ncommand = \"x\"\n";
    let cases = [
        ("\"80\"", "t.toml:7:9: key 'ready': \"80\" is a string: write the port as a number without quotes, like ready = 80"),
        ("\"http\"", "t.toml:7:9: key 'ready': \"http\" is a string: write the port as a number without quotes, like ready = 80"),
        ("80.0", "t.toml:7:9: key 'ready': a ready port is a whole number from 1 to 65535: write the port as a number without quotes, like ready = 80"),
        ("true", "t.toml:7:9: key 'ready': a ready port is a whole number from 1 to 65535: write the port as a number without quotes, like ready = 80"),
        ("[80]", "t.toml:7:9: key 'ready': a ready port is a whole number from 1 to 65535: write the port as a number without quotes, like ready = 80"),
        ("0", "t.toml:7:9: key 'ready': 0 is not a TCP port: use 1 to 65535"),
        ("65536", "t.toml:7:9: key 'ready': 65536 is not a TCP port: use 1 to 65535"),
        ("-1", "t.toml:7:9: key 'ready': -1 is not a TCP port: use 1 to 65535"),
    ];
    for (value, want) in cases {
        assert_eq!(error(&format!("{base}ready = {value}\n")), want);
    }
    let t = parse(&format!("{base}ready = 65535\n")).unwrap();
    assert_eq!(t.services[0].ready, Some(65535));
}

/// `burst_loss` (the wire's Gilbert–Elliott loss) is a link key now; with `loss` it is
/// the direction's one loss model, so naming either in a direction replaces the link's.
#[test]
fn burst_loss_is_a_loss_model_of_its_own() {
    let base = "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[link]]\na = \"a\"\nb = \"b\"\n";
    let t = parse(&format!(
        "{base}burst_loss = \"1%,30%,0%,100%\"\nb_to_a = {{ loss = \"0.1%\" }}\n"
    ))
    .unwrap();
    let l = &t.links[0];
    assert_eq!(
        l.a_to_b.burst_loss.map(|b| b.to_string()).as_deref(),
        Some("1%,30%,0%,100%")
    );
    assert_eq!(l.a_to_b.loss, None);
    assert!(l.a_to_b.needs_emulation());
    assert_eq!(
        (l.b_to_a.loss, l.b_to_a.burst_loss),
        (Some(Ppm(1_000)), None)
    );
    let t = parse(&format!(
        "{base}loss = \"2%\"\na_to_b = {{ burst_loss = \"1%,30%,0%,100%\" }}\n"
    ))
    .unwrap();
    assert_eq!(t.links[0].a_to_b.loss, None);
    assert!(t.links[0].a_to_b.burst_loss.is_some());
    assert_eq!(t.links[0].b_to_a.loss, Some(Ppm(20_000)));
    assert_eq!(
        error(&format!("{base}loss = \"1%\"\nburst_loss = \"1%,30%,0%,100%\"\n")),
        "t.toml:9:14: key 'burst_loss': loss and burst_loss are two loss models and a link direction has one: give either loss (independent) or burst_loss (Gilbert-Elliott)"
    );
    assert_eq!(
        error(&format!("{base}b_to_a = {{ loss = \"0%\", burst_loss = \"1%,30%,0%,100%\" }}\n")),
        "t.toml:8:38: key 'b_to_a.burst_loss': loss and burst_loss are two loss models and a link direction has one: give either loss (independent) or burst_loss (Gilbert-Elliott)"
    );
    assert_eq!(
        error(&format!("{base}burst_loss = \"1%,30%,0%\"\n")),
        "t.toml:8:14: key 'burst_loss': '1%,30%,0%' is not a burst loss: write four percentages p,r,h,k (P(good to bad), P(bad to good), P(deliver | bad), P(deliver | good)), like \"1%,30%,0%,100%\""
    );
    assert_eq!(
        error(&format!("{base}burst_loss = 1\n")),
        "t.toml:8:14: key 'burst_loss': invalid type: integer `1`, expected a string: write it in quotes with its unit, like burst_loss = \"1%,30%,0%,100%\""
    );
}

/// Two hosts and a router, with `sysctl` lines for `host` (`client` or `r1`) added.
fn with_sysctl(node: &str, table: &str) -> String {
    let (client, r1) = match node {
        "r1" => ("", table),
        _ => (table, ""),
    };
    format!("[[host]]\nname = \"client\"\n{client}[[host]]\nname = \"server\"\n[[router]]\nname = \"r1\"\n{r1}")
}

#[test]
fn node_sysctls_are_kept_in_file_order_with_integers_as_text() {
    let t = parse(&with_sysctl(
        "client",
        "sysctl = { \"net.ipv4.tcp_no_metrics_save\" = \"1\", \"net.ipv4.tcp_sack\" = 0, \"net.ipv4.tcp_congestion_control\" = \"reno\" }\n",
    ))
    .unwrap();
    let set: Vec<String> = t.nodes[0].sysctls.iter().map(|s| s.to_string()).collect();
    assert_eq!(
        set,
        [
            "net.ipv4.tcp_no_metrics_save=1",
            "net.ipv4.tcp_sack=0",
            "net.ipv4.tcp_congestion_control=reno"
        ]
    );
    assert_eq!(
        t.nodes[0].sysctls[1].proc_path(),
        "/proc/sys/net/ipv4/tcp_sack"
    );
    assert!(t.nodes[1].sysctls.is_empty() && t.nodes[2].sysctls.is_empty());
    // A table of its own works too, and a key the kernel may lack is not looked for here.
    let t = parse(&with_sysctl(
        "r1",
        "[router.sysctl]\n\"net.ipv4.no_such_key\" = -1\n\"net.ipv6.conf.all.accept_dad\" = 1\n",
    ))
    .unwrap();
    let set: Vec<String> = t.nodes[2].sysctls.iter().map(|s| s.to_string()).collect();
    assert_eq!(
        set,
        ["net.ipv4.no_such_key=-1", "net.ipv6.conf.all.accept_dad=1"]
    );
}

#[test]
fn sysctl_keys_are_dotted_lowercase() {
    let bad = |key: &str| {
        error(&with_sysctl(
            "client",
            &format!("sysctl = {{ \"{key}\" = \"1\" }}\n"),
        ))
    };
    assert_eq!(
        bad("Net.IPv4.tcp_sack"),
        "t.toml:3:12: key 'sysctl': 'Net.IPv4.tcp_sack' is not a sysctl name: write it dotted and in lowercase, like \"net.ipv4.tcp_sack\" (a-z, 0-9, '_', '-', and '.' between the parts)"
    );
    for key in [
        "net",
        "net..tcp_sack",
        "net.ipv4.",
        ".net.ipv4",
        "net/ipv4/tcp_sack",
        "net.ipv4.tcp sack",
        "",
    ] {
        assert!(
            bad(key).contains("is not a sysctl name"),
            "{key}: {}",
            bad(key)
        );
    }
    // Unquoted, TOML reads the dots as nested tables.
    let e = error(&with_sysctl(
        "client",
        "sysctl = { net.ipv4.tcp_sack = 0 }\n",
    ));
    assert!(
        e.starts_with("t.toml:3:12: key 'sysctl': 'net' is a table: a sysctl's name has dots, so write it in quotes"),
        "{e}"
    );
}

#[test]
fn sysctls_of_the_whole_machine_are_refused() {
    for key in ["vm.swappiness", "kernel.pid_max", "fs.file-max"] {
        let e = error(&with_sysctl(
            "client",
            &format!("sysctl = {{ \"{key}\" = \"1\" }}\n"),
        ));
        assert_eq!(e, format!("t.toml:3:12: key 'sysctl': '{key}' is not per network namespace: it would change the whole machine, not one node; only net.* sysctls can be set on a node"));
    }
}

#[test]
fn sysctls_the_testbed_depends_on_are_refused() {
    let e = error(&with_sysctl(
        "r1",
        "sysctl = { \"net.ipv4.tcp_sack\" = \"0\", \"net.ipv4.ip_forward\" = \"0\" }\n",
    ));
    assert_eq!(e, "t.toml:7:39: key 'sysctl': 'net.ipv4.ip_forward' is the testbed's own on router 'r1': routers forward IPv4 and IPv6; a node that should not forward is a [[host]]");
    for key in [
        "net.ipv6.conf.all.forwarding",
        "net.ipv4.conf.default.forwarding",
        "net.ipv6.conf.eth1.forwarding",
    ] {
        let e = error(&with_sysctl(
            "r1",
            &format!("sysctl = {{ \"{key}\" = 0 }}\n"),
        ));
        assert!(e.contains("is the testbed's own on router 'r1'"), "{e}");
    }
    for node in ["client", "r1"] {
        let e = error(&with_sysctl(
            node,
            "sysctl = { \"net.ipv6.conf.default.disable_ipv6\" = 1 }\n",
        ));
        assert!(
            e.contains("'net.ipv6.conf.default.disable_ipv6' is the testbed's own on"),
            "{e}"
        );
        assert!(e.ends_with("hosts and routers keep IPv6 on (every interface is dual-stack) and switches keep it off (they put nothing of their own on links)"), "{e}");
    }
    let e = error(
        "[[switch]]\nname = \"sw\"\nsysctl = { \"net.ipv6.conf.all.disable_ipv6\" = \"0\" }\n",
    );
    assert!(e.contains("is the testbed's own on switch 'sw'"), "{e}");
    // A host may forward, and the rest of what the testbed sets may be changed.
    let t = parse(&with_sysctl(
        "client",
        "sysctl = { \"net.ipv4.ip_forward\" = 1, \"net.ipv6.conf.all.forwarding\" = 1, \"net.ipv6.conf.all.accept_dad\" = 1, \"net.ipv4.conf.all.mc_forwarding\" = 0 }\n",
    ))
    .unwrap();
    assert_eq!(t.nodes[0].sysctls.len(), 4);
}

#[test]
fn sysctl_values_are_one_word() {
    let bad = |value: &str| {
        error(&with_sysctl(
            "client",
            &format!("sysctl = {{ \"net.ipv4.tcp_rmem\" = {value} }}\n"),
        ))
    };
    assert_eq!(
        bad("\"4096 131072 6291456\""),
        "t.toml:3:34: key 'sysctl': the value \"4096 131072 6291456\" of 'net.ipv4.tcp_rmem' has whitespace: a value is one word, like \"1\""
    );
    assert!(
        bad("\"1\\n\"").contains("has whitespace"),
        "{}",
        bad("\"1\\n\"")
    );
    assert!(bad("\"\\t1\"").contains("has whitespace"));
    assert_eq!(
        bad("\"\""),
        "t.toml:3:34: key 'sysctl': empty value for 'net.ipv4.tcp_rmem': give one, like \"1\""
    );
    assert!(bad("true").contains("the value of 'net.ipv4.tcp_rmem' is a boolean: write a string or an integer, like \"1\" or 1"), "{}", bad("true"));
    assert!(bad("1.5").contains("is a float"), "{}", bad("1.5"));
    assert!(bad("[1, 2]").contains("is an array"), "{}", bad("[1, 2]"));
}

#[test]
fn a_second_link_between_a_node_and_a_switch_is_refused() {
    let base = "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[switch]]\nname = \"sw\"\n\
        [[link]]\na = \"a\"\nb = \"sw\"\n[[link]]\na = \"b\"\nb = \"sw\"\n";
    assert_eq!(
        error(&format!("{base}[[link]]\na = \"sw\"\nb = \"a\"\n")),
        "t.toml:15:5: key 'b': link 3 joins 'sw' and 'a' again (link 1 does): a node has one port on a switch: two would carry the same addresses"
    );
    // Two links between hosts or routers are two subnets, two paths: allowed.
    let t = parse(&format!(
        "{base}[[link]]\na = \"a\"\nb = \"b\"\n[[link]]\na = \"b\"\nb = \"a\"\n"
    ));
    assert_eq!(t.unwrap().links.len(), 4);
}

/// A link to itself and a second service of the same name said what was wrong but not
/// what to do.
#[test]
fn self_links_and_duplicate_services_say_what_to_do() {
    assert_eq!(
        error("[[host]]\nname = \"a\"\n[[link]]\na = \"a\"\nb = \"a\"\n"),
        "t.toml:5:5: key 'b': link 1 joins 'a' to itself: give b another node's name"
    );
    let svc = "[[service]]\nhost = \"a\"\nname = \"w\"\ncommand = \"true\"\n";
    assert_eq!(
        error(&format!("[[host]]\nname = \"a\"\n{svc}{svc}")),
        "t.toml:9:8: key 'name': duplicate service 'w' on 'a': give each service of a node its own name"
    );
}
