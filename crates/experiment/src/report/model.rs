//! A study's observations, read from stored runs: one per run and family, labelled by the
//! run's axis values plus `family`. Tables, differences and plots group these; nothing
//! here touches the database or formats text.

use crate::db::StoredRun;
use crate::plan::Plan;
use crate::report::metrics::Metric;
use crate::stats::{self, Estimate};
use std::collections::{BTreeMap, BTreeSet};

/// One family's figures from one run.
#[derive(Debug, Clone)]
pub struct Observation<'a> {
    /// Axis values by name, including `family` ("ipv4" / "ipv6").
    pub labels: BTreeMap<String, String>,
    pub run: &'a StoredRun,
    pub family: String,
}

/// Every observation of a set of runs (the `all` total only where a run has no families).
/// The `ratio` label of a single-family run is "-": its `family` label says it all.
pub fn observations(runs: &[StoredRun]) -> Vec<Observation<'_>> {
    let mut out = Vec::new();
    for run in runs {
        let mut families: Vec<&String> = run.doc.families.keys().collect();
        let all = "all".to_string();
        if families.is_empty() {
            families.push(&all);
        }
        for family in families {
            let mut labels = run.params.clone();
            labels.insert("family".into(), family.clone());
            // A single-family run's selector says no more than its family does.
            if matches!(
                labels.get("ratio").map(String::as_str),
                Some("ipv4" | "ipv6")
            ) {
                labels.insert("ratio".into(), "-".into());
            }
            out.push(Observation {
                labels,
                run,
                family: family.clone(),
            });
        }
    }
    out
}

impl Observation<'_> {
    /// The metric's value for this observation.
    pub fn value(&self, metric: &Metric) -> Option<f64> {
        let f = if self.family == "all" {
            &self.run.doc.total
        } else {
            self.run.doc.families.get(&self.family)?
        };
        (metric.read)(&self.run.doc, f)
    }

    /// The values of `axes`, in that order.
    pub fn key(&self, axes: &[String]) -> Vec<String> {
        axes.iter()
            .map(|a| self.labels.get(a).cloned().unwrap_or_default())
            .collect()
    }
}

/// Axes (label names) that take more than one value among `obs`, in the order given.
pub fn varying(obs: &[Observation], order: &[&str]) -> Vec<String> {
    order
        .iter()
        .filter(|axis| {
            obs.iter()
                .map(|o| o.labels.get(**axis))
                .collect::<BTreeSet<_>>()
                .len()
                > 1
        })
        .map(|a| a.to_string())
        .collect()
}

/// Each axis's values in the plan's order, so tables list them as the plan does: `-`, the
/// selector of a one-family run, where the plan lists its first family (`family = ["ipv4",
/// "ipv6", "both"]` gives `-`, `1:1`). A value the plan does not list (an old plan's)
/// comes after those it lists.
#[derive(Debug, Clone, Default)]
pub struct AxisOrder(BTreeMap<String, Vec<String>>);

impl AxisOrder {
    /// The order of `plan`'s axes: each axis's values as the plan lists them, and the
    /// families IPv4 then IPv6.
    pub fn of(plan: &Plan) -> AxisOrder {
        let mut order: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for point in crate::plan::points(plan) {
            for (axis, value) in point.params() {
                let value = match (axis, value.as_str()) {
                    ("ratio", "ipv4" | "ipv6") => "-".to_string(),
                    _ => value,
                };
                let values = order.entry(axis.to_string()).or_default();
                if !values.contains(&value) {
                    values.push(value);
                }
            }
        }
        order.insert("family".into(), vec!["ipv4".into(), "ipv6".into()]);
        AxisOrder(order)
    }

    /// This order, then the values `other` lists that this one does not, in `other`'s
    /// order: the regression view's second experiment may have points the first lacks.
    pub fn then(mut self, other: &AxisOrder) -> AxisOrder {
        for (axis, values) in &other.0 {
            let mine = self.0.entry(axis.clone()).or_default();
            for value in values {
                if !mine.contains(value) {
                    mine.push(value.clone());
                }
            }
        }
        self
    }

    /// Where `value` stands among `axis`'s values.
    fn rank(&self, axis: &str, value: &str) -> usize {
        self.0
            .get(axis)
            .and_then(|values| values.iter().position(|v| v == value))
            .unwrap_or(usize::MAX)
    }
}

/// Distinct values of `axes` among `obs`, ordered by the first axis's values in `order`,
/// then the second's, and so on; values `order` does not know keep their order of first
/// appearance after the known ones.
pub fn ordered_keys(obs: &[Observation], axes: &[String], order: &AxisOrder) -> Vec<Vec<String>> {
    let mut keys = distinct_keys(obs, axes);
    keys.sort_by_key(|key| {
        axes.iter()
            .zip(key)
            .map(|(axis, value)| order.rank(axis, value))
            .collect::<Vec<_>>()
    });
    keys
}

/// Distinct values of `axes` among `obs`, in order of first appearance.
pub fn distinct_keys(obs: &[Observation], axes: &[String]) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    for o in obs {
        let k = o.key(axes);
        if !out.contains(&k) {
            out.push(k);
        }
    }
    out
}

/// The metric's values over the observations whose `axes` equal `key`.
pub fn values(obs: &[Observation], axes: &[String], key: &[String], metric: &Metric) -> Vec<f64> {
    obs.iter()
        .filter(|o| o.key(axes) == key)
        .filter_map(|o| o.value(metric))
        .collect()
}

/// The metric's values over the observations whose `axes` equal `key`, by the repeat of
/// their run (the repeats without the metric left out); `None` when two of them share a
/// repeat, so a repeat has no single value to pair.
pub fn by_repeat(
    obs: &[Observation],
    axes: &[String],
    key: &[String],
    metric: &Metric,
) -> Option<BTreeMap<i64, f64>> {
    let mut seen = BTreeSet::new();
    let mut out = BTreeMap::new();
    for o in obs.iter().filter(|o| o.key(axes) == key) {
        if !seen.insert(o.run.repeat) {
            return None;
        }
        if let Some(v) = o.value(metric) {
            out.insert(o.run.repeat, v);
        }
    }
    Some(out)
}

/// How many observations have `axes` equal to `key`: the runs of that point (and family).
pub fn count(obs: &[Observation], axes: &[String], key: &[String]) -> usize {
    obs.iter().filter(|o| o.key(axes) == key).count()
}

/// One table cell: the metric's mean ± CI over the runs that have it, and how many runs
/// the point had. A run can lack a metric (no capture analysis, no completed request for
/// a mean time), so the estimate may rest on fewer runs than that, or on none.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cell {
    /// Over the runs that have the metric; `None` when none has it.
    pub estimate: Option<Estimate>,
    /// The point's runs (with this family); 0 when the point was not run.
    pub runs: usize,
}

impl Cell {
    /// The cell of a set of values read from `runs` runs.
    pub fn of(values: &[f64], runs: usize) -> Cell {
        Cell {
            estimate: stats::estimate(values),
            runs,
        }
    }

    /// How many of the point's runs the estimate uses.
    pub fn used(&self) -> usize {
        self.estimate.map_or(0, |e| e.n)
    }

    /// The point was run but some of its runs lack the metric.
    pub fn partial(&self) -> bool {
        self.runs > 0 && self.used() < self.runs
    }
}

/// Mean ± CI of the metric over the matching observations, and how many there were.
pub fn cell(obs: &[Observation], axes: &[String], key: &[String], metric: &Metric) -> Cell {
    Cell::of(&values(obs, axes, key, metric), count(obs, axes, key))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::report::metrics::find;
    use crate::runjson::parse;
    use crate::testdata::{run_doc, Fam};

    pub(crate) fn stored(server: &str, repeat: i64, v4_rps: f64, v6_rps: f64) -> StoredRun {
        let text = run_doc(&[
            Fam {
                key: "ipv4",
                completed: 10,
                rps: v4_rps,
                total_us: &[100; 10],
            },
            Fam {
                key: "ipv6",
                completed: 10,
                rps: v6_rps,
                total_us: &[120; 10],
            },
        ]);
        let params = [
            ("server", server),
            ("handler", "static"),
            ("ratio", "1:1"),
            ("placement", "loopback"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        StoredRun {
            id: format!("{server}{repeat}"),
            seq: repeat,
            point: 0,
            repeat,
            params,
            command: String::new(),
            server_version: "x/1".into(),
            handler_mechanism: "static file".into(),
            started_unix: repeat as f64,
            doc: parse(&text).unwrap(),
            doc_text: text,
        }
    }

    #[test]
    fn groups_repeats_into_cells() {
        let runs = vec![
            stored("nginx", 1, 100.0, 90.0),
            stored("nginx", 2, 110.0, 80.0),
            stored("apache", 1, 50.0, 40.0),
        ];
        let obs = observations(&runs);
        assert_eq!(obs.len(), 6);
        let axes = varying(&obs, &["server", "handler", "family"]);
        assert_eq!(axes, vec!["server".to_string(), "family".to_string()]);
        let rps = find("rps").unwrap();
        let key = vec!["nginx".to_string(), "ipv4".to_string()];
        let c = cell(&obs, &axes, &key, rps);
        let e = c.estimate.unwrap();
        assert_eq!((e.n, e.mean, c.runs), (2, 105.0, 2));
        assert!(!c.partial());
        assert_eq!(distinct_keys(&obs, &["server".to_string()]).len(), 2);
    }

    #[test]
    fn values_by_repeat_pair_only_when_each_repeat_is_one_run() {
        let runs = vec![
            stored("nginx", 2, 110.0, 80.0),
            stored("nginx", 1, 100.0, 90.0),
        ];
        let obs = observations(&runs);
        let axes = vec!["server".to_string(), "family".to_string()];
        let key = vec!["nginx".to_string(), "ipv6".to_string()];
        let rps = find("rps").unwrap();
        let got = by_repeat(&obs, &axes, &key, rps).unwrap();
        assert_eq!(got.into_iter().collect::<Vec<_>>(), [(1, 90.0), (2, 80.0)]);
        let twice = vec![
            stored("nginx", 1, 100.0, 90.0),
            stored("nginx", 1, 101.0, 91.0),
        ];
        assert_eq!(by_repeat(&observations(&twice), &axes, &key, rps), None);
    }
}
