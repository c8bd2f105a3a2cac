//! Golden tests: each scenario's text and JSON reports against `tests/golden/`.
//! `UPDATE_GOLDEN=1 cargo test -p dualbench-load --test report` rewrites the files; review
//! the diff by eye before committing (the text must read like ab's report).

use crate::scenarios;
use dualbench_load::report::{json, text};
use dualbench_load::summary::RunSummary;
use serde_json::Value;
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

/// The JSON document with each histogram replaced by what it decodes to (so the golden file
/// does not depend on the DEFLATE implementation) and the tool version masked.
fn comparable_json(s: &RunSummary) -> String {
    let mut doc = json::render(s);
    doc["tool"]["version"] = Value::from("(version)");
    let mut families: Vec<String> = vec!["total".to_string()];
    families.extend(
        doc["families"]
            .as_object()
            .unwrap()
            .keys()
            .map(|k| format!("families.{k}")),
    );
    for family in families {
        let pointer = format!("/{}/histograms", family.replace('.', "/"));
        let hists = doc.pointer_mut(&pointer).unwrap().as_object_mut().unwrap();
        for (_, encoded) in hists.iter_mut() {
            let h = json::decode_histogram(encoded.as_str().unwrap()).unwrap();
            *encoded = Value::from(format!(
                "hdr: count={} min={} p50={} max={}",
                h.len(),
                h.min(),
                h.value_at_quantile(0.5),
                h.max()
            ));
        }
    }
    let mut text = serde_json::to_string_pretty(&doc).unwrap();
    text.push('\n');
    text
}

#[test]
fn text_reports_match_golden_files() {
    for (name, summary, _) in scenarios::all() {
        check(&format!("{name}.txt"), &text::render(&summary));
    }
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
        s.families[1].hist.waiting
    );
    let encoded = doc["total"]["histograms"]["lifetime"].as_str().unwrap();
    assert_eq!(
        json::decode_histogram(encoded).unwrap(),
        s.total().hist.lifetime
    );
}
