//! `dualbench run --records FILE`: every request's [`Record`], one per line, as CSV (with a
//! header row, like ab's `-g`) or as JSON lines when the file name ends in `.jsonl`; and the
//! reader that turns such a file back into records.
//!
//! Times are microseconds since the run's start with three decimals (nanosecond precision,
//! so nothing is lost): `intended_us,start_us,connect_us,sent_us,first_byte_us,end_us`.
//! `connect_us` is a duration (0 on a reused connection); the others are instants, 0 when the
//! phase did not happen.

use crate::record::{Outcome, Record};
use dualbench_common::{Failure, Family, Result};
use serde_json::Value;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::Path;

/// The columns, in order (the CSV header row; the keys of each JSON line).
pub const COLUMNS: [&str; 15] = [
    "slot",
    "family",
    "target",
    "conn",
    "reused",
    "intended_us",
    "start_us",
    "connect_us",
    "sent_us",
    "first_byte_us",
    "end_us",
    "status",
    "bytes",
    "body_bytes",
    "outcome",
];

/// How a records file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordFormat {
    Csv,
    JsonLines,
}

impl RecordFormat {
    /// JSON lines for a `.jsonl` file, CSV for anything else.
    pub fn from_path(path: &Path) -> RecordFormat {
        match path.extension().and_then(|e| e.to_str()) {
            Some(ext) if ext.eq_ignore_ascii_case("jsonl") => RecordFormat::JsonLines,
            _ => RecordFormat::Csv,
        }
    }
}

/// Writes records one at a time, as they come, to any writer.
pub struct RecordSink<W: Write> {
    out: W,
    format: RecordFormat,
}

impl RecordSink<BufWriter<File>> {
    /// Create (or truncate) `path`, in the format its extension chooses.
    pub fn create(path: &Path) -> Result<Self> {
        let file = File::create(path).map_err(|e| {
            Failure::usage(format!("cannot write records to {}: {e}", path.display()))
        })?;
        // The header row is written at once: a path that takes no writes (a file under
        // /proc, a full disk) is found here, before the run.
        let cannot = |e: io::Error| {
            Failure::usage(format!("cannot write records to {}: {e}", path.display()))
        };
        let mut sink =
            RecordSink::new(BufWriter::new(file), RecordFormat::from_path(path)).map_err(cannot)?;
        sink.out.flush().map_err(cannot)?;
        Ok(sink)
    }
}

impl<W: Write> RecordSink<W> {
    /// A sink over `out`; CSV starts with its header row.
    pub fn new(mut out: W, format: RecordFormat) -> io::Result<Self> {
        if format == RecordFormat::Csv {
            writeln!(out, "{}", COLUMNS.join(","))?;
        }
        Ok(RecordSink { out, format })
    }

    pub fn write(&mut self, r: &Record) -> io::Result<()> {
        match self.format {
            RecordFormat::Csv => write_csv(&mut self.out, r),
            RecordFormat::JsonLines => write_json_line(&mut self.out, r),
        }
    }

    /// Flush and hand back the writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Write, on a thread of its own, the batches of records the workers hand over while the
/// run goes, flushing after each, so a long run holds a few batches rather than every
/// request, and a run killed outright leaves what was handed over on disk. The thread ends
/// when every sender is gone and gives the sink back, for the records the workers still
/// hold at the end; a write error ends it early and comes back from `join`.
pub fn spawn_writer<W: Write + Send + 'static>(
    mut sink: RecordSink<W>,
    on_error: impl FnOnce(&io::Error) + Send + 'static,
) -> io::Result<(std::sync::mpsc::Sender<Vec<Record>>, Writer<W>)> {
    let (tx, rx) = std::sync::mpsc::channel::<Vec<Record>>();
    let thread = std::thread::Builder::new()
        .name("dualbench-records".into())
        .spawn(move || {
            let written = rx.iter().try_for_each(|batch| {
                batch.iter().try_for_each(|r| sink.write(r))?;
                sink.out.flush()
            });
            // Said when it happens, not only at the end of a run that may last hours.
            written.inspect_err(|e| on_error(e)).map(|()| sink)
        })?;
    Ok((tx, thread))
}

/// The records writer thread of [`spawn_writer`], which gives its sink back when it ends.
pub type Writer<W> = std::thread::JoinHandle<io::Result<RecordSink<W>>>;

/// Nanoseconds as microseconds with three decimals, without allocating.
struct Us(u64);

impl std::fmt::Display for Us {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{:03}", self.0 / 1000, self.0 % 1000)
    }
}

fn write_csv(out: &mut impl Write, r: &Record) -> io::Result<()> {
    writeln!(
        out,
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
        r.slot,
        r.family.key(),
        r.target,
        r.conn,
        r.reused,
        Us(r.intended_ns),
        Us(r.start_ns),
        Us(r.connect_ns),
        Us(r.sent_ns),
        Us(r.first_byte_ns),
        Us(r.end_ns),
        r.status,
        r.bytes,
        r.body_bytes,
        r.outcome.key()
    )
}

fn write_json_line(out: &mut impl Write, r: &Record) -> io::Result<()> {
    writeln!(
        out,
        "{{\"slot\":{},\"family\":\"{}\",\"target\":{},\"conn\":{},\"reused\":{},\
         \"intended_us\":{},\"start_us\":{},\"connect_us\":{},\"sent_us\":{},\
         \"first_byte_us\":{},\"end_us\":{},\"status\":{},\"bytes\":{},\"body_bytes\":{},\
         \"outcome\":\"{}\"}}",
        r.slot,
        r.family.key(),
        r.target,
        r.conn,
        r.reused,
        Us(r.intended_ns),
        Us(r.start_ns),
        Us(r.connect_ns),
        Us(r.sent_ns),
        Us(r.first_byte_ns),
        Us(r.end_ns),
        r.status,
        r.bytes,
        r.body_bytes,
        r.outcome.key()
    )
}

/// Write `records` to `path` in one go (format chosen by the extension).
pub fn write_file(path: &Path, records: &[Record]) -> io::Result<()> {
    let file = File::create(path)?;
    let mut sink = RecordSink::new(BufWriter::new(file), RecordFormat::from_path(path))?;
    for r in records {
        sink.write(r)?;
    }
    sink.finish().map(drop)
}

/// Every record in a file written by [`RecordSink`] (format chosen by the extension).
pub fn read_records(path: &Path) -> Result<Vec<Record>> {
    let file = File::open(path)
        .map_err(|e| Failure::usage(format!("cannot read records {}: {e}", path.display())))?;
    parse_records(BufReader::new(file), RecordFormat::from_path(path))
        .map_err(|e| e.context(path.display()))
}

/// Every record from a reader; errors name the line.
pub fn parse_records(input: impl BufRead, format: RecordFormat) -> Result<Vec<Record>> {
    let mut records = Vec::new();
    for (i, line) in input.lines().enumerate() {
        let line = line.map_err(|e| Failure::runtime(format!("line {}: {e}", i + 1)))?;
        let at = |e: Failure| Failure {
            message: format!("line {}: {}", i + 1, e.message),
            ..e
        };
        match format {
            RecordFormat::Csv if i == 0 => check_header(&line).map_err(at)?,
            _ if line.trim().is_empty() => continue,
            RecordFormat::Csv => records.push(parse_csv(&line).map_err(at)?),
            RecordFormat::JsonLines => records.push(parse_json_line(&line).map_err(at)?),
        }
    }
    Ok(records)
}

fn check_header(line: &str) -> Result<()> {
    if line.trim_end() == COLUMNS.join(",") {
        Ok(())
    } else {
        Err(Failure::usage(format!(
            "not a dualbench records file: the header should be \"{}\"",
            COLUMNS.join(",")
        )))
    }
}

fn parse_csv(line: &str) -> Result<Record> {
    let cells: Vec<&str> = line.trim_end().split(',').collect();
    if cells.len() != COLUMNS.len() {
        return Err(Failure::usage(format!(
            "expected {} columns, found {}",
            COLUMNS.len(),
            cells.len()
        )));
    }
    record_from(|column| {
        let i = COLUMNS
            .iter()
            .position(|c| *c == column)
            .expect("a known column");
        Ok(cells[i].to_string())
    })
}

fn parse_json_line(line: &str) -> Result<Record> {
    let value: Value = serde_json::from_str(line)
        .map_err(|e| Failure::usage(format!("not a JSON object: {e}")))?;
    record_from(|column| match value.get(column) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Number(n)) => Ok(n.to_string()),
        Some(Value::Bool(b)) => Ok(b.to_string()),
        _ => Err(Failure::usage(format!("missing or invalid \"{column}\""))),
    })
}

/// A record from its columns' text, whatever the file format.
fn record_from(cell: impl Fn(&str) -> Result<String>) -> Result<Record> {
    let num = |column: &str| -> Result<u64> {
        let text = cell(column)?;
        text.parse().map_err(|_| bad(column, &text))
    };
    let time = |column: &str| -> Result<u64> {
        let text = cell(column)?;
        parse_us(&text).ok_or_else(|| bad(column, &text))
    };
    let family = cell("family")?;
    let outcome = cell("outcome")?;
    let reused = cell("reused")?;
    Ok(Record {
        slot: num("slot")?,
        family: Family::ALL
            .into_iter()
            .find(|f| f.key() == family)
            .ok_or_else(|| bad("family", &family))?,
        target: u16::try_from(num("target")?).map_err(|_| bad("target", "too large"))?,
        conn: num("conn")?,
        reused: reused.parse().map_err(|_| bad("reused", &reused))?,
        intended_ns: time("intended_us")?,
        start_ns: time("start_us")?,
        connect_ns: time("connect_us")?,
        sent_ns: time("sent_us")?,
        first_byte_ns: time("first_byte_us")?,
        end_ns: time("end_us")?,
        status: u16::try_from(num("status")?).map_err(|_| bad("status", "too large"))?,
        bytes: num("bytes")?,
        body_bytes: num("body_bytes")?,
        outcome: Outcome::ALL
            .into_iter()
            .find(|o| o.key() == outcome)
            .ok_or_else(|| bad("outcome", &outcome))?,
    })
}

fn bad(column: &str, text: &str) -> Failure {
    Failure::usage(format!("bad value \"{text}\" in column {column}"))
}

/// Microseconds with up to three decimals (`"12.345"`, `"12"`) as nanoseconds.
fn parse_us(text: &str) -> Option<u64> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    if fraction.len() > 3 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let whole: u64 = whole.parse().ok()?;
    let fraction: u64 = format!("{fraction:0<3}").parse().ok()?;
    whole.checked_mul(1000)?.checked_add(fraction)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn microseconds_keep_nanoseconds() {
        assert_eq!(Us(12_345).to_string(), "12.345");
        assert_eq!(Us(7).to_string(), "0.007");
        assert_eq!(parse_us("12.345"), Some(12_345));
        assert_eq!(parse_us("12.3"), Some(12_300));
        assert_eq!(parse_us("12"), Some(12_000));
        assert_eq!(parse_us("0.007"), Some(7));
        assert_eq!(parse_us("1.2345"), None);
        assert_eq!(parse_us("-1"), None);
        assert_eq!(parse_us("1e3"), None);
    }

    #[test]
    fn extension_chooses_the_format() {
        assert_eq!(
            RecordFormat::from_path(Path::new("r.jsonl")),
            RecordFormat::JsonLines
        );
        assert_eq!(
            RecordFormat::from_path(Path::new("r.JSONL")),
            RecordFormat::JsonLines
        );
        assert_eq!(
            RecordFormat::from_path(Path::new("r.csv")),
            RecordFormat::Csv
        );
        assert_eq!(
            RecordFormat::from_path(Path::new("records")),
            RecordFormat::Csv
        );
    }
}
