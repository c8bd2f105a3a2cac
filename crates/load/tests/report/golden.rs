//! Golden tests: each scenario's text and JSON reports against `tests/golden/`.
//! `UPDATE_GOLDEN=1 cargo test -p dualbench-load --test report` rewrites the files; review
//! the diff by eye before committing (the text must read like ab's report).

use crate::scenarios;
use dualbench_load::report::{json, text, AbFlags};
use dualbench_load::summary::RunSummary;
use std::path::PathBuf;

fn golden_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

/// Compare with the golden file, or rewrite it when `UPDATE_GOLDEN` is set.
fn check(name: &str, actual: &str) {
    let path = golden_path(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).expect("golden file written");
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run with UPDATE_GOLDEN=1)", path.display()));
    if expected == actual {
        return;
    }
    let (a, e): (Vec<&str>, Vec<&str>) = (actual.lines().collect(), expected.lines().collect());
    let at = (0..a.len().max(e.len()))
        .find(|i| a.get(*i) != e.get(*i))
        .unwrap_or(0);
    panic!(
        "{name} differs from its golden file at line {}:\n  expected: {:?}\n  actual:   {:?}\n\
         (UPDATE_GOLDEN=1 rewrites it; review the diff)",
        at + 1,
        e.get(at),
        a.get(at)
    );
}

/// The JSON text as `dualbench run --format json` prints it, with each histogram replaced
/// by what it decodes to (so the golden file does not depend on the DEFLATE implementation)
/// and the tool version masked.
fn comparable_json(s: &RunSummary) -> String {
    let text = json::to_string(s);
    let mut out = String::new();
    let mut in_histograms = false;
    for line in text.lines() {
        let trimmed = line.trim_start();
        let indent = &line[..line.len() - trimmed.len()];
        if trimmed.starts_with("\"histograms\": {") {
            in_histograms = true;
        } else if in_histograms && trimmed.starts_with('}') {
            in_histograms = false;
        } else if in_histograms {
            let (key, value) = trimmed.split_once(": ").unwrap();
            let comma = if value.ends_with(',') { "," } else { "" };
            let h = json::decode_histogram(value.trim_end_matches(',').trim_matches('"')).unwrap();
            out.push_str(&format!(
                "{indent}{key}: \"hdr: count={} min={} p50={} max={}\"{comma}\n",
                h.len(),
                h.min(),
                h.value_at_quantile(0.5),
                h.max()
            ));
            continue;
        } else if trimmed.starts_with("\"version\": ") {
            out.push_str(&format!("{indent}\"version\": \"(version)\"\n"));
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[test]
fn text_reports_match_golden_files() {
    for (name, summary, _) in scenarios::all() {
        check(&format!("{name}.txt"), &text::render(&summary));
    }
}

/// ab's -l, -d and -S change only the ab part: "Document Length: Variable", no percentage
/// table, and ab's min/avg/max table without its warnings.
#[test]
fn text_reports_with_l_d_and_s_match_golden_files() {
    let (mut s, _) = scenarios::every_failure();
    // With -l the engine counts no Length failures.
    for f in &mut s.families {
        f.length_mismatch = 0;
    }
    let flags = AbFlags {
        variable_length: true,
        percentiles: false,
        confidence: false,
        body_sent: false,
    };
    let shaped = text::render_with(&s, flags);
    check("every_failure_l_d_S.txt", &shaped);
    let plain = text::render(&s);
    let after = |t: &str| t[t.find("\nPer address family").unwrap()..].to_string();
    assert_eq!(
        after(&shaped),
        after(&plain),
        "the parts after ab's are the same"
    );
    let d_only = text::render_with(
        &s,
        AbFlags {
            percentiles: false,
            ..AbFlags::default()
        },
    );
    assert!(!d_only.contains("Percentage of the requests"));
    assert!(d_only.contains("min  mean[+/-sd] median   max"));
}

#[test]
fn json_reports_match_golden_files() {
    for (name, summary, _) in scenarios::all() {
        check(&format!("{name}.json"), &comparable_json(&summary));
    }
}

#[test]
fn histograms_in_json_decode_to_the_summarys_own() {
    let (s, _) = scenarios::closed_both();
    let doc = json::render(&s);
    let encoded = doc["families"]["ipv6"]["histograms"]["ttfb"]
        .as_str()
        .unwrap();
    assert_eq!(
        json::decode_histogram(encoded).unwrap(),
        *s.families[1].hist.waiting
    );
    let encoded = doc["total"]["histograms"]["lifetime"].as_str().unwrap();
    assert_eq!(
        json::decode_histogram(encoded).unwrap(),
        *s.total().hist.lifetime
    );
}

#[test]
fn printed_json_is_the_rendered_value_in_schema_order() {
    let (s, _) = scenarios::every_failure();
    let text = json::to_string(&s);
    let parsed: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(parsed, json::render(&s));
    assert!(text.starts_with("{\n  \"schema\": \"dualbench.run/1\",\n  \"tool\": {"));
    assert!(text.ends_with("}\n"));
}
