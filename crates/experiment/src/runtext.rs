//! A stored run's text report, as `dualbench run` printed it: the run's document
//! (`dualbench.run/1`, stored whole in `runs.run_json`) read back into the load engine's
//! [`RunSummary`] and given to the engine's own text reporter — ab's report (Connection
//! Times, "Percentage of the requests served within", Total and HTML transferred), then
//! the figures per family and how requests ended. The report flags the document records
//! (`settings.variable_length`, ab's `-l`; `settings.body_sent`, ab's `-p`/`-u`) shape it
//! as they shaped the original; `-d` and `-S` are not recorded, so it is as without them.
//!
//! Documents written before 2026-11-24 lack one figure that report reads: how many
//! responses closed their connection (`closing_responses`), from which a keep-alive run's
//! "Keep-Alive requests" line is counted. For such a document that line is left out and a
//! note at the top says so.

use dualbench_common::{Failure, Result};
use dualbench_load::report::{from_json, text};
use serde_json::Value;

/// The note printed above the report of a keep-alive run.
pub const KEEPALIVE_NOTE: &str = "Note: \"Keep-Alive requests\" is left out: this stored run document (written before 2026-11-24) does not count the responses that closed their connection.\n\n";

/// The text report of the run whose document is `doc_text`, read back by the load crate's
/// own reader (the one `dualbench merge` uses).
pub fn render(doc_text: &str) -> Result<String> {
    let stored = |e: String| Failure::runtime(format!("stored run document: {e}"));
    let value: Value = serde_json::from_str(doc_text).map_err(|e| stored(e.to_string()))?;
    // The reader counts a missing `closing_responses` as 0; an older document lacks it.
    let counted = value["families"].as_object().is_none_or(|families| {
        families
            .values()
            .all(|f| f.get("closing_responses").is_some())
    });
    let read = from_json::from_json(doc_text).map_err(stored)?;
    let mut summary = read.summary;
    let mut out = String::new();
    if summary.meta.keepalive && !counted {
        summary.meta.keepalive = false;
        out.push_str(KEEPALIVE_NOTE);
    }
    // With the flags the document records (`-l`, `-p`/`-u`): without them the report
    // said "Document Length: 45 bytes" for a `-l` run and left out "Total body sent".
    out.push_str(&text::render_with(&summary, read.flags));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dualbench_common::Family;
    use dualbench_load::record::Outcome;
    use dualbench_load::report::{json, AbFlags};
    use dualbench_load::summary::{FamilyStats, LoadModel, RunMeta, RunSummary, TargetInfo};

    /// A run of both families with known figures, as the engine would have summed it.
    fn run(keepalive: bool) -> RunSummary {
        let mut families: [FamilyStats; 2] = Default::default();
        for (i, f) in families.iter_mut().enumerate() {
            let n = 500 + 100 * i as u64;
            f.requests = n + 7;
            f.completed = n;
            f.failed = 7;
            f.non_2xx = 2;
            f.length_mismatch = 1;
            f.outcomes[Outcome::Normal.index()] = n;
            f.outcomes[Outcome::ResetConnect.index()] = 3;
            f.outcomes[Outcome::TimeoutResponse.index()] = 4;
            f.statuses.insert(200, n - 2);
            f.statuses.insert(404, 2);
            f.bytes = n * 288;
            f.body_bytes = n * 45;
            f.request_bytes = n * 80;
            f.connections = n + 7;
            f.closing_responses = 11;
            for k in 0..n {
                let us = 100 + (k * 37 + 50 * i as u64) % 900;
                f.hist.connect.record(us / 5 + 1).unwrap();
                f.hist.waiting.record(us / 2).unwrap();
                f.hist.processing.record(us - us / 5).unwrap();
                f.hist.total.record(us).unwrap();
                f.hist.service.record(us).unwrap();
                f.hist.transfer.record(us / 3 + 1).unwrap();
                f.hist.lifetime.record(us + 20).unwrap();
            }
        }
        let meta = RunMeta {
            server_software: "Apache/2.4.62 (Debian)".into(),
            host: "127.0.0.1".into(),
            port: 41234,
            path: "/index.html".into(),
            method: "GET".into(),
            document_length: Some(45),
            concurrency: 5,
            keepalive,
            pipeline: 1,
            model: LoadModel::Closed,
            requests_limit: Some(1114),
            time_limit_s: None,
            targets: vec![
                TargetInfo {
                    addr: "127.0.0.1:41234".into(),
                    family: Family::V4,
                    weight: 1,
                },
                TargetInfo {
                    addr: "[::1]:41234".into(),
                    family: Family::V6,
                    weight: 1,
                },
            ],
            workers: 2,
            start_monotonic_ns: 5,
            start_unix_ns: 1_700_000_000_123_456_789,
            interrupted: None,
            cpu_user_s: 0.31,
            cpu_sys_s: 0.27,
            cores: 4,
            connections_peak: 5,
        };
        RunSummary {
            meta,
            duration_ns: 1_234_567_891,
            families,
        }
    }

    #[test]
    fn the_stored_document_gives_back_the_report_run_printed() {
        let original = run(false);
        let printed = text::render(&original);
        let stored = json::to_string(&original);
        assert_eq!(render(&stored).unwrap(), printed);
        for wanted in [
            "Total transferred:      316800 bytes",
            "HTML transferred:       49500 bytes",
            "Connection Times (ms)",
            "Percentage of the requests served within a certain time (ms)",
            "(Connect: 6, Receive: 8, Length: 2, Exceptions: 0)",
        ] {
            assert!(printed.contains(wanted), "{wanted:?} in {printed}");
        }
    }

    #[test]
    fn an_open_loop_run_gives_back_its_report_too() {
        let mut original = run(false);
        original.meta.model = LoadModel::Open {
            rate: 900.0,
            poisson: true,
        };
        original.families[1].late = 12;
        let printed = text::render(&original);
        assert!(printed.contains("Poisson arrivals"), "{printed}");
        assert_eq!(render(&json::to_string(&original)).unwrap(), printed);
    }

    #[test]
    fn a_keepalive_run_gives_back_its_keep_alive_count() {
        let original = run(true);
        let printed = text::render(&original);
        assert!(printed.contains("Keep-Alive requests:"), "{printed}");
        assert_eq!(render(&json::to_string(&original)).unwrap(), printed);
    }

    #[test]
    fn an_older_keepalive_document_says_which_line_it_cannot_give() {
        let original = run(true);
        let mut doc: serde_json::Value = serde_json::from_str(&json::to_string(&original)).unwrap();
        for fam in doc["families"].as_object_mut().unwrap().values_mut() {
            fam.as_object_mut().unwrap().remove("closing_responses");
        }
        let shown = render(&doc.to_string()).unwrap();
        let mut without = original.clone();
        without.meta.keepalive = false;
        assert_eq!(shown, format!("{KEEPALIVE_NOTE}{}", text::render(&without)));
        assert!(!shown.contains("Keep-Alive requests:"));
    }

    /// `results show --run` of a `-l` run said "Document Length: 45 bytes" and of a `-p`
    /// run left out "Total body sent": the stored flags were not used.
    #[test]
    fn the_report_flags_of_the_run_shape_its_report_again() {
        let original = run(false);
        for (flags, wanted) in [
            (
                AbFlags {
                    variable_length: true,
                    ..AbFlags::default()
                },
                "Document Length:        Variable\n",
            ),
            (
                AbFlags {
                    body_sent: true,
                    ..AbFlags::default()
                },
                "Total body sent:        ",
            ),
        ] {
            let printed = text::render_with(&original, flags);
            assert!(printed.contains(wanted), "{wanted:?} in {printed}");
            assert!(!text::render(&original).contains(wanted), "{wanted:?}");
            let stored = json::to_string_with(&original, flags);
            assert_eq!(render(&stored).unwrap(), printed);
        }
    }

    #[test]
    fn a_document_that_is_not_a_run_is_an_error() {
        let e = render("{\"schema\": \"dualbench.run/1\"}").unwrap_err();
        assert_eq!(
            e.message,
            "stored run document: not a valid dualbench.run/1 document: missing field `target` at line 1 column 29"
        );
        let e = render("[]").unwrap_err();
        assert!(
            e.message
                .starts_with("stored run document: not a dualbench run document (a JSON array"),
            "{}",
            e.message
        );
    }

    /// Documents written before 2026-11-24 14:23 UTC have no `generator.connections_peak`:
    /// their report is given back, with 0 for it.
    #[test]
    fn a_document_without_connections_peak_gives_back_its_report() {
        let mut original = run(false);
        let mut doc: serde_json::Value = serde_json::from_str(&json::to_string(&original)).unwrap();
        doc["generator"]
            .as_object_mut()
            .unwrap()
            .remove("connections_peak");
        original.meta.connections_peak = 0;
        assert_eq!(render(&doc.to_string()).unwrap(), text::render(&original));
    }
}
