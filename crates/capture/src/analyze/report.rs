//! Rendering an [`Analysis`]: a text table per connection and a per-family table (IPv4 |
//! IPv6), JSON (schema `dualbench.analyze/1`, the [`Analysis`] itself) or CSV (one row per
//! connection). Pure functions of the analysis.

use super::summary::{ConnectionReport, Distribution, FamilySummary};
use super::Analysis;
use dualbench_common::plural;
use std::fmt::Write;

/// Output format of `analyze`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
    Csv,
}

/// The report as one string. `connections`: include every connection (text and JSON;
/// CSV is one row per connection either way).
pub fn render(a: &Analysis, format: Format, connections: bool) -> String {
    match format {
        Format::Json => {
            let summary;
            let a = if connections {
                a
            } else {
                summary = Analysis {
                    file: a.file.clone(),
                    link_types: a.link_types.clone(),
                    connections: Vec::new(),
                    families: a.families.clone(),
                    damage: a.damage.clone(),
                    skipped: a.skipped.clone(),
                    ..*a
                };
                &summary
            };
            let mut s = serde_json::to_string_pretty(a).unwrap_or_default();
            s.push('\n');
            s
        }
        Format::Csv => csv(&a.connections),
        Format::Text => text(a, connections),
    }
}

const CSV_HEADER: &str = "family,client,server,start_ns,lifetime_us,handshake_rtt_us,syn_to_synack_us,synack_to_ack_us,delay_us,\
bytes_to_server,bytes_to_client,packets_to_server,packets_to_client,throughput_mbps,retransmissions_to_server,\
retransmissions_to_client,requests,responses,end,close";

fn csv(reports: &[ConnectionReport]) -> String {
    let mut out = String::from(CSV_HEADER);
    out.push('\n');
    let opt = |v: Option<f64>| v.map(|v| format!("{v:.3}")).unwrap_or_default();
    for r in reports {
        let _ = writeln!(
            out,
            "{},{},{},{},{:.3},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            r.family,
            r.client,
            r.server,
            r.start_ns,
            r.lifetime_us,
            opt(r.handshake_rtt_us),
            opt(r.syn_to_synack_us),
            opt(r.synack_to_ack_us),
            opt(r.delay_us),
            r.bytes_to_server,
            r.bytes_to_client,
            r.packets_to_server,
            r.packets_to_client,
            opt(r.throughput_mbps),
            r.retransmissions_to_server,
            r.retransmissions_to_client,
            r.requests,
            r.responses,
            r.end,
            r.close
        );
    }
    out
}

fn text(a: &Analysis, connections: bool) -> String {
    let p = &a.packets;
    let span = a.last_ns.saturating_sub(a.first_ns) as f64 / 1e9;
    // Packets of an unsupported link type are in the total and in no other count.
    let skipped: u64 = a.skipped.iter().map(|s| s.packets).sum();
    let skipped = match skipped {
        0 => String::new(),
        n => format!(", {n} skipped"),
    };
    let mut out = format!(
        "{}: {} ({} TCP, {} UDP, {} other, {} unreadable{skipped}) over {span:.3} s, {}\n",
        a.file,
        plural(p.total, "packet"),
        p.tcp,
        p.udp,
        p.other,
        p.unreadable,
        plural(a.connections.len(), "TCP connection")
    );
    if connections && !a.connections.is_empty() {
        out.push_str(&connection_table(&a.connections));
    }
    out.push_str(&family_table(a));
    out
}

fn connection_table(reports: &[ConnectionReport]) -> String {
    let mut out = String::from(
        "\nConnections (times in µs; bytes are new payload, retransmissions excluded)\n",
    );
    let _ = writeln!(
        out,
        "{:>6} {:<4} {:<30} {:<30} {:>9} {:>10} {:>10} {:>10} {:>9} {:>7} {:>7} {:<4} close",
        "#",
        "fam",
        "client",
        "server",
        "rtt",
        "delay",
        "to server",
        "to client",
        "Mbit/s",
        "retrans",
        "req/rsp",
        "end"
    );
    let opt =
        |v: Option<f64>, p: usize| v.map(|v| format!("{v:.p$}")).unwrap_or_else(|| "-".into());
    for (i, r) in reports.iter().enumerate() {
        let _ = writeln!(
            out,
            "{:>6} {:<4} {:<30} {:<30} {:>9} {:>10} {:>10} {:>10} {:>9} {:>7} {:>7} {:<4} {}",
            i + 1,
            if r.family == "ipv4" { "v4" } else { "v6" },
            r.client,
            r.server,
            opt(r.handshake_rtt_us, 1),
            opt(r.delay_us, 1),
            r.bytes_to_server,
            r.bytes_to_client,
            opt(r.throughput_mbps, 2),
            r.retransmissions_to_server + r.retransmissions_to_client,
            format!("{}/{}", r.requests, r.responses),
            r.end,
            r.close
        );
    }
    out
}

/// One figure of a family: a count (no decimals) or a measure (one decimal); `None`
/// when there is nothing to measure.
type Cell = Option<(f64, usize)>;

fn family_table(a: &Analysis) -> String {
    let families: Vec<(&str, &FamilySummary)> = a.families.iter().map(|(k, v)| (*k, v)).collect();
    if families.is_empty() {
        return "\nno TCP connections\n".into();
    }
    let both = families.len() == 2;
    let mut out = format!("\n{:<24}", "Per family");
    for (key, _) in &families {
        let _ = write!(out, "{:>14}", if *key == "ipv4" { "IPv4" } else { "IPv6" });
    }
    out.push_str(if both {
        "    difference (IPv6 - IPv4)\n"
    } else {
        "\n"
    });
    let show = |c: Cell| c.map_or("-".to_string(), |(v, p)| format!("{v:.p$}"));
    let mut row = |label: &str, cell: &dyn Fn(&FamilySummary) -> Cell| {
        let cells: Vec<Cell> = families.iter().map(|(_, s)| cell(s)).collect();
        let _ = write!(out, "{label:<24}");
        cells.iter().for_each(|c| {
            let _ = write!(out, "{:>14}", show(*c));
        });
        if let [Some((v4, p)), Some((v6, _))] = cells[..] {
            let _ = write!(out, "{:>14}", format!("{:+.p$}", v6 - v4));
        }
        out.push('\n');
    };
    let count = |n: u64| Some((n as f64, 0));
    row("connections", &|s| count(s.connections));
    for class in [
        "normal",
        "reset",
        "timeout",
        "refused",
        "unreachable",
        "protocol_error",
    ] {
        row(&format!("  {class}"), &|s| {
            count(s.close.get(class).copied().unwrap_or(0))
        });
    }
    for end in ["fin", "rst", "open"] {
        row(&format!("  ended by {end}"), &|s| {
            count(s.end.get(end).copied().unwrap_or(0))
        });
    }
    row("requests", &|s| count(s.requests));
    row("responses", &|s| count(s.responses));
    row("bytes to server", &|s| count(s.bytes_to_server));
    row("bytes to client", &|s| count(s.bytes_to_client));
    row("packets", &|s| count(s.packets));
    row("retransmissions", &|s| count(s.retransmissions));
    type Pick = fn(&FamilySummary) -> &Distribution;
    let stats: [(&str, Pick); 4] = [
        ("handshake RTT (µs)", |s| &s.handshake_rtt_us),
        ("delay (µs)", |s| &s.delay_us),
        ("throughput (Mbit/s)", |s| &s.throughput_mbps),
        ("lifetime (µs)", |s| &s.lifetime_us),
    ];
    for (name, pick) in stats {
        row(name, &|s| count(pick(s).count));
        for (label, at) in [("mean", 0), ("p50", 1), ("p90", 2), ("p99", 3), ("max", 4)] {
            row(&format!("  {label}"), &|s| {
                let d = pick(s);
                (d.count > 0).then(|| ([d.mean, d.p50, d.p90, d.p99, d.max][at], 1))
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::summary::{by_family, ConnectionReport};

    fn connection(family: &'static str, rtt: f64, close: &'static str) -> ConnectionReport {
        ConnectionReport {
            family,
            client: "c".into(),
            server: "s".into(),
            start_ns: 0,
            lifetime_us: 100.0,
            handshake_rtt_us: Some(rtt),
            syn_to_synack_us: None,
            synack_to_ack_us: None,
            delay_us: None,
            bytes_to_server: 78,
            bytes_to_client: 190,
            packets_to_server: 6,
            packets_to_client: 4,
            throughput_mbps: None,
            retransmissions_to_server: 0,
            retransmissions_to_client: 1,
            requests: 1,
            responses: 1,
            end: "fin",
            close,
        }
    }

    fn analysis() -> Analysis {
        let connections = vec![
            connection("ipv4", 10.0, "normal"),
            connection("ipv6", 12.5, "normal"),
            connection("ipv6", 20.0, "reset"),
        ];
        Analysis {
            schema: "dualbench.analyze/1",
            file: "f.pcap".into(),
            packets: Default::default(),
            link_types: vec![1],
            first_ns: 0,
            last_ns: 1_000_000_000,
            truncated: false,
            damage: None,
            skipped: Vec::new(),
            families: by_family(&connections),
            connections,
        }
    }

    #[test]
    fn text_table_has_a_difference_column() {
        let text = render(&analysis(), Format::Text, false);
        let line = |label: &str| {
            text.lines()
                .find(|l| l.starts_with(label))
                .unwrap()
                .split_whitespace()
                .collect::<Vec<_>>()
        };
        assert_eq!(line("connections"), ["connections", "1", "2", "+1"]);
        assert_eq!(line("  reset"), ["reset", "0", "1", "+1"]);
        assert_eq!(
            line("bytes to client"),
            ["bytes", "to", "client", "190", "380", "+190"]
        );
        assert_eq!(line("  max"), ["max", "10.0", "20.0", "+10.0"]);
        assert!(line("delay").ends_with(&["0", "0", "+0"]));
        assert!(
            !text.contains("Connections (times"),
            "no per-connection table asked for"
        );
    }

    #[test]
    fn text_table_of_one_family_has_no_difference_column() {
        let mut one = analysis();
        one.connections.retain(|c| c.family == "ipv6");
        one.families = by_family(&one.connections);
        let text = render(&one, Format::Text, false);
        let header = text.lines().find(|l| l.starts_with("Per family")).unwrap();
        assert_eq!(
            header.split_whitespace().collect::<Vec<_>>(),
            ["Per", "family", "IPv6"]
        );
        let connections = text.lines().find(|l| l.starts_with("connections")).unwrap();
        assert_eq!(
            connections.split_whitespace().collect::<Vec<_>>(),
            ["connections", "2"]
        );
    }

    #[test]
    fn summary_only_json_has_the_families_and_no_connections() {
        let full: serde_json::Value =
            serde_json::from_str(&render(&analysis(), Format::Json, true)).unwrap();
        let summary: serde_json::Value =
            serde_json::from_str(&render(&analysis(), Format::Json, false)).unwrap();
        assert_eq!(full["connections"].as_array().unwrap().len(), 3);
        assert_eq!(summary["connections"].as_array().unwrap().len(), 0);
        assert_eq!(summary["families"], full["families"]);
        assert_eq!(summary["families"]["ipv6"]["connections"], 2);
        assert_eq!(summary["schema"], "dualbench.analyze/1");
    }

    #[test]
    fn csv_one_row_per_connection() {
        let text = render(&analysis(), Format::Csv, true);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[0], CSV_HEADER);
        assert_eq!(
            lines[3],
            "ipv6,c,s,0,100.000,20.000,,,,78,190,6,4,,0,1,1,1,fin,reset"
        );
    }
}
