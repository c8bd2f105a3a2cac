//! Records written as CSV and as JSON lines read back exactly; bad files are clear errors.

use crate::scenarios;
use dualbench_load::record::Record;
use dualbench_load::report::records::{parse_records, read_records, RecordFormat, RecordSink};
use std::path::PathBuf;

fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("dualbench-report-{}-{name}", std::process::id()))
}

fn write_file(name: &str, records: &[Record]) -> PathBuf {
    let path = temp_path(name);
    let mut sink = RecordSink::create(&path).unwrap();
    for r in records {
        sink.write(r).unwrap();
    }
    sink.finish().unwrap();
    path
}

#[test]
fn csv_and_json_lines_round_trip_every_field() {
    let (_, mut records) = scenarios::every_failure();
    records.extend(scenarios::single_family().1);
    for name in ["records.csv", "records.jsonl"] {
        let path = write_file(name, &records);
        let back = read_records(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(back.len(), records.len(), "{name}");
        assert_eq!(back, records, "{name}");
    }
}

#[test]
fn csv_looks_like_a_table_with_a_header() {
    let (_, records) = scenarios::closed_both();
    let mut sink = RecordSink::new(Vec::new(), RecordFormat::Csv).unwrap();
    sink.write(&records[1]).unwrap();
    let text = String::from_utf8(sink.finish().unwrap()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "slot,family,target,conn,reused,intended_us,start_us,connect_us,sent_us,first_byte_us,\
         end_us,status,bytes,body_bytes,outcome"
    );
    let r = &records[1];
    let cells: Vec<&str> = lines[1].split(',').collect();
    assert_eq!(cells[..5], ["1", "ipv6", "1", &r.conn.to_string(), "false"]);
    assert_eq!(
        cells[7],
        format!("{}.{:03}", r.connect_ns / 1000, r.connect_ns % 1000)
    );
    assert_eq!(cells[11..], ["200", "288", "45", "normal"]);
}

#[test]
fn json_lines_are_one_object_per_record() {
    let (_, records) = scenarios::open_loop();
    let mut sink = RecordSink::new(Vec::new(), RecordFormat::JsonLines).unwrap();
    for r in &records[..3] {
        sink.write(r).unwrap();
    }
    let text = String::from_utf8(sink.finish().unwrap()).unwrap();
    assert_eq!(text.lines().count(), 3);
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(first["family"], "ipv4");
    assert_eq!(first["outcome"], "normal");
    assert_eq!(
        first["end_us"].as_f64().unwrap(),
        records[0].end_ns as f64 / 1000.0
    );
}

#[test]
fn bad_record_files_name_the_line_and_the_cause() {
    let header = "slot,family,target,conn,reused,intended_us,start_us,connect_us,sent_us,\
                  first_byte_us,end_us,status,bytes,body_bytes,outcome\n";
    let cases = [
        (
            "slot,family\n",
            RecordFormat::Csv,
            "line 1: not a dualbench records file",
        ),
        (
            &*format!("{header}0,ipv5,0,1,false,0,0,0,0,0,0,200,1,1,normal\n"),
            RecordFormat::Csv,
            "line 2: bad value \"ipv5\" in column family",
        ),
        (
            &*format!("{header}0,ipv4,0\n"),
            RecordFormat::Csv,
            "line 2: expected 15 columns, found 3",
        ),
        (
            &*format!("{header}0,ipv4,0,1,false,0,0,1.2345,0,0,0,200,1,1,normal\n"),
            RecordFormat::Csv,
            "line 2: bad value \"1.2345\" in column connect_us",
        ),
        (
            "{\"slot\": 1}\n",
            RecordFormat::JsonLines,
            "line 1: missing or invalid \"family\"",
        ),
        (
            "\n[1,2\n",
            RecordFormat::JsonLines,
            "line 2: not a JSON object",
        ),
    ];
    for (text, format, message) in cases {
        let e = parse_records(text.as_bytes(), format).unwrap_err();
        assert!(
            e.message.starts_with(message),
            "{:?} gave {:?}",
            text,
            e.message
        );
        assert_eq!(e.exit_code(), 2);
    }
    let missing = temp_path("missing.csv");
    let e = read_records(&missing).unwrap_err();
    assert!(
        e.message.starts_with("cannot read records"),
        "{}",
        e.message
    );
}
