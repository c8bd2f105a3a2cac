//! Writing samples as they come: JSON lines (one [`Sample`] per line) or CSV (one row per
//! sample, a column per figure, named by its path: `cpu.all.user`, `tcp.ipv6.established`,
//! `process.1234.cpu_pct`). CSV columns are fixed by the first sample; a figure that
//! appears later (a new interface) is left out, one that disappears is left empty. A name
//! or cell holding a comma, a quote or a line break (a process may call itself `a,b`) is
//! quoted as RFC 4180 says, so every row has as many cells as the header.

use crate::sample::Sample;
use serde_json::Value;
use std::io::{self, Write};

/// Output format of the time series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Jsonl,
    Csv,
}

/// Writes samples one at a time in one format.
#[derive(Debug)]
pub struct SampleWriter {
    format: Format,
    columns: Option<Vec<String>>,
}

impl SampleWriter {
    pub fn new(format: Format) -> Self {
        SampleWriter {
            format,
            columns: None,
        }
    }

    pub fn write(&mut self, out: &mut dyn Write, sample: &Sample) -> io::Result<()> {
        match self.format {
            Format::Jsonl => {
                serde_json::to_writer(&mut *out, sample)?;
                out.write_all(b"\n")
            }
            Format::Csv => self.write_csv(out, sample),
        }
    }

    fn write_csv(&mut self, out: &mut dyn Write, sample: &Sample) -> io::Result<()> {
        let cells = flatten(sample);
        if self.columns.is_none() {
            let columns: Vec<String> = cells.iter().map(|(k, _)| k.clone()).collect();
            let header: Vec<String> = columns.iter().map(|c| csv_field(c)).collect();
            writeln!(out, "{}", header.join(","))?;
            self.columns = Some(columns);
        }
        let by_name: std::collections::HashMap<&str, &str> = cells
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let columns = self.columns.as_deref().unwrap_or(&[]);
        let row: Vec<String> = columns
            .iter()
            .map(|c| csv_field(by_name.get(c.as_str()).copied().unwrap_or("")))
            .collect();
        writeln!(out, "{}", row.join(","))
    }
}

/// A sample as (column, cell) pairs in a stable order.
pub fn flatten(sample: &Sample) -> Vec<(String, String)> {
    let mut cells = Vec::new();
    let mut value = serde_json::to_value(sample).unwrap_or(Value::Null);
    // Time first, then the figures in name order.
    for key in ["monotonic_ns", "unix_ns", "interval_s"] {
        if let Some(v) = value.as_object_mut().and_then(|m| m.remove(key)) {
            walk(key, &v, &mut cells);
        }
    }
    walk("", &value, &mut cells);
    cells
}

fn walk(path: &str, value: &Value, cells: &mut Vec<(String, String)>) {
    let join = |k: &str| {
        if path.is_empty() {
            k.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    match value {
        Value::Object(map) => map.iter().for_each(|(k, v)| walk(&join(k), v, cells)),
        Value::Array(items) => {
            for item in items {
                let id = item.get("pid").map(|p| p.to_string()).unwrap_or_default();
                walk(
                    &join(&format!("process.{id}")).replacen("processes.", "", 1),
                    item,
                    cells,
                );
            }
        }
        Value::Number(n) => {
            let cell = n
                .as_u64()
                .map(|v| v.to_string())
                .unwrap_or_else(|| trim(n.as_f64().unwrap_or(0.0)));
            cells.push((path.to_string(), cell))
        }
        Value::Bool(b) => cells.push((path.to_string(), b.to_string())),
        Value::String(s) => cells.push((path.to_string(), s.clone())),
        Value::Null => cells.push((path.to_string(), String::new())),
    }
}

/// One CSV field: as it is, or in double quotes (inner quotes doubled) when it holds a
/// comma, a quote or a line break (RFC 4180).
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// A number as its shortest exact decimal (`12.5`, `0.0002777777777777778`), whole ones
/// without a fraction. Not rounded to 3 decimals: a rate of one event in an hour read
/// `0.000` (and one in 30 minutes `0.001`, 1.8 events), and `interval_s` 0.2003 read `0.200`.
fn trim(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::{CpuUse, ProcessUse};

    fn sample(t: u64) -> Sample {
        Sample {
            monotonic_ns: t,
            unix_ns: 1_795_307_521_816_570_403,
            interval_s: 1.0,
            cpu: [(
                "all".to_string(),
                CpuUse {
                    user: 12.5,
                    idle: 87.5,
                    ..CpuUse::default()
                },
            )]
            .into(),
            system: [("ctxt_per_s".to_string(), 1000.0)].into(),
            memory: Default::default(),
            disks: Default::default(),
            interfaces: Default::default(),
            ip: Default::default(),
            icmp: Default::default(),
            tcp: [(
                "ipv6".to_string(),
                [("established".to_string(), 3.0)].into(),
            )]
            .into(),
            udp: Default::default(),
            sockets: Default::default(),
            process_groups: Default::default(),
            process_trees: Default::default(),
            processes: vec![ProcessUse {
                pid: 42,
                name: "nginx".into(),
                tree: None,
                alive: true,
                cpu_pct: 50.25,
                user_pct: 40.0,
                system_pct: 10.25,
                rss_kb: 2048,
                vsz_kb: 8192,
                minflt_per_s: 2.5,
                majflt_per_s: 0.0,
                threads: 1,
                fds: 9,
                cswch_per_s: 12.5,
                nvcswch_per_s: 0.5,
                kb_rd_per_s: None,
                kb_wr_per_s: Some(10240.0),
                kb_ccwr_per_s: Some(0.25),
            }],
        }
    }

    #[test]
    fn csv_has_time_first_and_one_column_per_figure() {
        let mut out = Vec::new();
        let mut w = SampleWriter::new(Format::Csv);
        w.write(&mut out, &sample(5)).unwrap();
        w.write(&mut out, &sample(6)).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        let header: Vec<&str> = lines[0].split(',').collect();
        assert_eq!(&header[..3], ["monotonic_ns", "unix_ns", "interval_s"]);
        let row: Vec<&str> = lines[2].split(',').collect();
        assert_eq!(header.len(), row.len());
        let cell = |name: &str| row[header.iter().position(|h| *h == name).unwrap()];
        assert_eq!(cell("monotonic_ns"), "6");
        assert_eq!(cell("unix_ns"), "1795307521816570403");
        assert_eq!(cell("cpu.all.user"), "12.5");
        assert_eq!(cell("tcp.ipv6.established"), "3");
        assert_eq!(cell("process.42.cpu_pct"), "50.25");
        assert_eq!(cell("process.42.name"), "nginx");
        assert_eq!(cell("process.42.cswch_per_s"), "12.5");
        assert_eq!(cell("process.42.nvcswch_per_s"), "0.5");
        assert_eq!(cell("process.42.vsz_kb"), "8192");
        assert_eq!(cell("process.42.minflt_per_s"), "2.5");
        assert_eq!(cell("process.42.majflt_per_s"), "0");
        assert_eq!(cell("process.42.kb_wr_per_s"), "10240");
        assert_eq!(cell("process.42.kb_ccwr_per_s"), "0.25");
        // `/proc/PID/io` could not be read: the column is there, its cell empty.
        assert_eq!(cell("process.42.kb_rd_per_s"), "");
    }

    /// The first sample fixes the columns: an I/O figure that could not be read then (an
    /// empty cell) keeps its column, and its value fills it once it can be read; a figure
    /// readable then and not later leaves its cell empty.
    #[test]
    fn csv_io_columns_whether_readable_or_not() {
        let mut first = sample(5);
        first.processes[0].kb_wr_per_s = None;
        let mut second = sample(6);
        second.processes[0].kb_rd_per_s = Some(4.5);
        let mut out = Vec::new();
        let mut w = SampleWriter::new(Format::Csv);
        w.write(&mut out, &first).unwrap();
        w.write(&mut out, &second).unwrap();
        w.write(&mut out, &first).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<Vec<String>> = text.lines().map(fields).collect();
        let column = |name: &str| {
            let i = lines[0].iter().position(|h| h == name).unwrap();
            lines[1..]
                .iter()
                .map(|row| row[i].clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(column("process.42.kb_rd_per_s"), ["", "4.5", ""]);
        assert_eq!(column("process.42.kb_wr_per_s"), ["", "10240", ""]);
        assert!(lines.iter().all(|row| row.len() == lines[0].len()));
    }

    /// Split one CSV line as RFC 4180 reads it (quoted fields, doubled quotes).
    fn fields(line: &str) -> Vec<String> {
        let (mut out, mut cur, mut quoted, mut chars) =
            (Vec::new(), String::new(), false, line.chars().peekable());
        while let Some(c) = chars.next() {
            match (c, quoted) {
                ('"', true) if chars.peek() == Some(&'"') => {
                    cur.push('"');
                    chars.next();
                }
                ('"', _) => quoted = !quoted,
                (',', false) => out.push(std::mem::take(&mut cur)),
                _ => cur.push(c),
            }
        }
        out.push(cur);
        out
    }

    /// A process named `a,b"c` (comm may hold any of these) split its
    /// `process_groups.a,b"c.*` header names in two, so the header had 5 cells more than
    /// each row and every column after them was read under the wrong name; its name cell
    /// was changed to `a b"c`. Now such names and cells are quoted.
    #[test]
    fn csv_quotes_names_and_cells_with_commas_and_quotes() {
        let mut odd = sample(5);
        odd.processes[0].name = "a,b\"c".into();
        odd.process_groups = [(
            "a,b\"c".to_string(),
            crate::sample::GroupUse {
                processes: 1,
                ..Default::default()
            },
        )]
        .into();
        let mut out = Vec::new();
        let mut w = SampleWriter::new(Format::Csv);
        w.write(&mut out, &odd).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].contains(",\"process_groups.a,b\"\"c.processes\","));
        assert!(lines[1].contains(",\"a,b\"\"c\","));
        let (header, row) = (fields(lines[0]), fields(lines[1]));
        // 12 of them are the memory and storage I/O figures of the process and its group.
        assert_eq!(header.len(), 42);
        assert_eq!(row.len(), 42);
        let cell = |name: &str| row[header.iter().position(|h| h == name).unwrap()].clone();
        assert_eq!(cell("process_groups.a,b\"c.processes"), "1");
        assert_eq!(cell("process.42.name"), "a,b\"c");
        assert_eq!(cell("process.42.fds"), "9");
    }

    /// Rates are written exactly, not to 3 decimals: one retransmission in a 30-minute
    /// sample read `0.001` (1.8 of them) and one in an hour `0.000` (none); an interval
    /// of 0.2003 s read `0.200`. Rate times interval gives the count back.
    #[test]
    fn csv_keeps_small_rates_and_the_interval_exact() {
        let mut rows = Vec::new();
        for (interval, events) in [(3600.0, 1.0), (1800.0, 1.0), (0.2003, 7.0)] {
            let mut s = sample(5);
            s.interval_s = interval;
            s.tcp = [(
                "both".to_string(),
                [("RetransSegs_per_s".to_string(), events / interval)].into(),
            )]
            .into();
            let mut out = Vec::new();
            SampleWriter::new(Format::Csv).write(&mut out, &s).unwrap();
            let text = String::from_utf8(out).unwrap();
            let lines: Vec<Vec<String>> = text.lines().map(fields).collect();
            let cell = |name: &str| {
                let i = lines[0].iter().position(|h| h == name).unwrap();
                lines[1][i].clone()
            };
            rows.push((cell("interval_s"), cell("tcp.both.RetransSegs_per_s")));
        }
        assert_eq!(
            rows,
            [
                ("3600", "0.0002777777777777778"),
                ("1800", "0.0005555555555555556"),
                ("0.2003", "34.94757863205192"),
            ]
            .map(|(a, b)| (a.to_string(), b.to_string()))
        );
        for (interval, rate) in &rows {
            let count = interval.parse::<f64>().unwrap() * rate.parse::<f64>().unwrap();
            assert!((count - count.round()).abs() < 1e-9, "{interval} × {rate}");
        }
    }

    #[test]
    fn jsonl_is_one_object_per_line() {
        let mut out = Vec::new();
        let mut w = SampleWriter::new(Format::Jsonl);
        w.write(&mut out, &sample(5)).unwrap();
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["processes"][0]["rss_kb"], 2048);
        assert_eq!(v["processes"][0]["vsz_kb"], 8192);
        assert_eq!(v["processes"][0]["kb_wr_per_s"], 10240.0);
        assert!(v["processes"][0]["kb_rd_per_s"].is_null(), "{v}");
        assert_eq!(v["unix_ns"].as_u64(), Some(1_795_307_521_816_570_403));
    }
}
