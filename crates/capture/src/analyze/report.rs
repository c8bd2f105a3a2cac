//! Rendering an [`Analysis`]: a text table per connection and a per-family table (IPv4 |
//! IPv6), JSON (schema `dualbench.analyze/1`, the [`Analysis`] itself) or CSV (one row per
//! connection). Pure functions of the analysis.

use super::summary::{ConnectionReport, Distribution, FamilySummary};
use super::Analysis;
use std::fmt::Write;

/// Output format of `analyze`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
    Csv,
}

/// The report as one string.
pub fn render(a: &Analysis, format: Format, connections: bool) -> String {
    match format {
        Format::Json => {
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
    let mut out = format!(
        "{}: {} packets ({} TCP, {} UDP, {} other, {} unreadable) over {span:.3} s, {} TCP connections\n",
        a.file,
        p.total,
        p.tcp,
        p.udp,
        p.other,
        p.unreadable,
        a.connections.len()
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

fn family_table(a: &Analysis) -> String {
    let families: Vec<(&str, &FamilySummary)> = a.families.iter().map(|(k, v)| (*k, v)).collect();
    if families.is_empty() {
        return "\nno TCP connections\n".into();
    }
    let mut out = format!("\n{:<24}", "Per family");
    for (key, _) in &families {
        let _ = write!(out, "{:>14}", if *key == "ipv4" { "IPv4" } else { "IPv6" });
    }
    out.push('\n');
    let mut row = |label: &str, cell: &dyn Fn(&FamilySummary) -> String| {
        let _ = write!(out, "{label:<24}");
        for (_, s) in &families {
            let _ = write!(out, "{:>14}", cell(s));
        }
        out.push('\n');
    };
    row("connections", &|s| s.connections.to_string());
    for class in [
        "normal",
        "reset",
        "timeout",
        "refused",
        "unreachable",
        "protocol_error",
    ] {
        row(&format!("  {class}"), &|s| {
            s.close.get(class).copied().unwrap_or(0).to_string()
        });
    }
    for end in ["fin", "rst", "open"] {
        row(&format!("  ended by {end}"), &|s| {
            s.end.get(end).copied().unwrap_or(0).to_string()
        });
    }
    row("requests / responses", &|s| {
        format!("{}/{}", s.requests, s.responses)
    });
    row("bytes to server", &|s| s.bytes_to_server.to_string());
    row("bytes to client", &|s| s.bytes_to_client.to_string());
    row("packets", &|s| s.packets.to_string());
    row("retransmissions", &|s| s.retransmissions.to_string());
    type Pick = fn(&FamilySummary) -> &Distribution;
    let stats: [(&str, Pick); 4] = [
        ("handshake RTT (µs)", |s| &s.handshake_rtt_us),
        ("delay (µs)", |s| &s.delay_us),
        ("throughput (Mbit/s)", |s| &s.throughput_mbps),
        ("lifetime (µs)", |s| &s.lifetime_us),
    ];
    for (name, pick) in stats {
        row(name, &|s| format!("n={}", pick(s).count));
        for (label, value) in [("mean", 0), ("p50", 1), ("p90", 2), ("p99", 3), ("max", 4)] {
            row(&format!("  {label}"), &|s| {
                let d = pick(s);
                let v = [d.mean, d.p50, d.p90, d.p99, d.max][value];
                if d.count == 0 {
                    "-".into()
                } else {
                    format!("{v:.1}")
                }
            });
        }
    }
    out
}
