//! Small inline SVG line charts for reports: linear or log-10 x axis, 1-2-5 ticks, one
//! polyline with markers per series in the series' own colour, a legend. Pure: data in,
//! SVG text out.

use std::fmt::Write as _;

/// IPv4's colour, in every chart.
pub const IPV4_COLOR: &str = "#1f77b4";
/// IPv6's colour, in every chart.
pub const IPV6_COLOR: &str = "#d62728";
/// The colour of both families together (a run's total, a V6:V4 ratio's whole).
pub const BOTH_COLOR: &str = "#2ca02c";
/// Colours of series that are not a family (e.g. the server's CPU), in order.
pub const OTHER_COLORS: [&str; 3] = ["#9467bd", "#ff7f0e", "#8c564b"];

/// One line of a chart, drawn in `color` (a CSS colour).
pub struct Series {
    pub name: String,
    pub color: &'static str,
    pub points: Vec<(f64, f64)>,
}

/// A chart: title, axis labels, scale of x, and the series.
pub struct Chart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub x_log: bool,
    /// Fixed x ticks (value, label) instead of computed ones, e.g. percentiles.
    pub x_ticks: Option<Vec<(f64, String)>>,
    pub series: Vec<Series>,
}

const W: f64 = 530.0;
const H: f64 = 300.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 28.0;
const BOTTOM: f64 = 44.0;

/// Escape text for XML and HTML.
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// "Nice" tick values covering [lo, hi]: steps of 1, 2 or 5 × 10^k, about `n` of them.
pub fn nice_ticks(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    if hi.partial_cmp(&lo) != Some(std::cmp::Ordering::Greater) {
        return vec![lo];
    }
    let raw = (hi - lo) / n.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let first = (lo / step).ceil() as i64;
    let last = (hi / step).floor() as i64;
    (first..=last).map(|i| i as f64 * step).collect()
}

/// Decades 10^k covering [lo, hi] (lo > 0), for a log axis.
pub fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let (a, b) = (
        lo.max(1e-12).log10().floor() as i32,
        hi.max(1e-12).log10().ceil() as i32,
    );
    (a..=b).map(|k| 10f64.powi(k)).collect()
}

/// Ticks of a log axis that spans the data's own [lo, hi] (lo > 0): the decades inside
/// it, with 2 and 5 × 10^k between them when it spans under two decades, and its ends
/// when fewer than two ticks fall inside.
pub fn log_axis_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let steps: &[f64] = if hi / lo < 100.0 {
        &[1.0, 2.0, 5.0]
    } else {
        &[1.0]
    };
    let inside = |v: &f64| *v >= lo * (1.0 - 1e-9) && *v <= hi * (1.0 + 1e-9);
    let ticks: Vec<f64> = log_ticks(lo, hi)
        .into_iter()
        .flat_map(|d| steps.iter().map(move |m| m * d))
        .filter(inside)
        .collect();
    if ticks.len() < 2 {
        vec![lo, hi]
    } else {
        ticks
    }
}

/// Short number: 1200 → "1200", 0.5 → "0.5", 1e6 → "1e6".
pub fn short(v: f64) -> String {
    if v != 0.0 && (v.abs() >= 1e5 || v.abs() < 1e-3) {
        format!("{v:.0e}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

struct Scale {
    lo: f64,
    hi: f64,
    log: bool,
    from: f64,
    to: f64,
}

impl Scale {
    fn map(&self, v: f64) -> f64 {
        let (lo, hi, v) = if self.log {
            (self.lo.log10(), self.hi.log10(), v.max(self.lo).log10())
        } else {
            (self.lo, self.hi, v)
        };
        let t = if hi > lo { (v - lo) / (hi - lo) } else { 0.5 };
        self.from + t * (self.to - self.from)
    }
}

fn bounds(chart: &Chart) -> Option<((f64, f64), (f64, f64))> {
    let pts: Vec<(f64, f64)> = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().copied())
        .filter(|(x, y)| x.is_finite() && y.is_finite() && (!chart.x_log || *x > 0.0))
        .collect();
    if pts.is_empty() {
        return None;
    }
    let fold = |f: fn(&(f64, f64)) -> f64| {
        pts.iter()
            .map(f)
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                (a.min(v), b.max(v))
            })
    };
    let (x, (ylo, yhi)) = (fold(|p| p.0), fold(|p| p.1));
    let ylo = ylo.min(0.0);
    let yhi = if yhi > ylo { yhi * 1.05 } else { ylo + 1.0 };
    Some((x, (ylo, yhi)))
}

/// The chart as an `<svg>` element (or a note when there is nothing to draw).
pub fn line_chart(chart: &Chart) -> String {
    let Some(((xlo, xhi), (ylo, yhi))) = bounds(chart) else {
        return format!(
            "<p class=\"note\">{}: no data to plot</p>",
            escape(&chart.title)
        );
    };
    let (xlo, xhi) = if chart.x_log {
        if xhi > xlo {
            (xlo, xhi)
        } else {
            (xlo / 2.0, xhi * 2.0)
        }
    } else {
        (xlo, if xhi > xlo { xhi } else { xlo + 1.0 })
    };
    let xs = Scale {
        lo: xlo,
        hi: xhi,
        log: chart.x_log,
        from: LEFT,
        to: W - RIGHT,
    };
    let names: Vec<&str> = chart.series.iter().map(|s| s.name.as_str()).collect();
    let keys = legend_places(&names);
    let ys = Scale {
        lo: ylo,
        hi: below_legend(ylo, yhi, &keys),
        log: false,
        from: H - BOTTOM,
        to: TOP,
    };
    let mut s = format!(
        "<svg viewBox=\"0 0 {W} {H}\" width=\"{W}\" height=\"{H}\" role=\"img\">\
         <title>{}</title><rect x=\"0\" y=\"0\" width=\"{W}\" height=\"{H}\" fill=\"#fff\"/>",
        escape(&chart.title)
    );
    let _ = write!(
        s,
        "<text x=\"{}\" y=\"18\" class=\"t\" text-anchor=\"middle\"{}>{}</text>",
        W / 2.0,
        fit_title(&chart.title),
        escape(&chart.title)
    );
    axes(&mut s, chart, &xs, &ys);
    for (series, &place) in chart.series.iter().zip(&keys) {
        draw_series(&mut s, series, &xs, &ys, chart.x_log);
        legend(&mut s, place, series);
    }
    s += "</svg>";
    s
}

fn axes(s: &mut String, chart: &Chart, xs: &Scale, ys: &Scale) {
    let (x0, x1, y0, y1) = (LEFT, W - RIGHT, H - BOTTOM, TOP);
    let _ = write!(
        s,
        "<path d=\"M{x0} {y1}V{y0}H{x1}\" stroke=\"#333\" fill=\"none\"/>"
    );
    for v in nice_ticks(ys.lo, ys.hi, 5) {
        let y = ys.map(v);
        let _ = write!(
            s,
            "<line x1=\"{x0}\" x2=\"{x1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#eee\"/>\
             <text x=\"{}\" y=\"{:.1}\" class=\"k\" text-anchor=\"end\">{}</text>",
            x0 - 4.0,
            y + 4.0,
            short(v)
        );
    }
    let ticks: Vec<(f64, String)> = match &chart.x_ticks {
        Some(t) => t.clone(),
        None if chart.x_log => log_axis_ticks(xs.lo, xs.hi)
            .into_iter()
            .map(|v| (v, short(v)))
            .collect(),
        None => nice_ticks(xs.lo, xs.hi, 6)
            .into_iter()
            .map(|v| (v, short(v)))
            .collect(),
    };
    for (v, label) in ticks {
        let x = xs.map(v);
        let _ = write!(
            s,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{y0}\" y2=\"{}\" stroke=\"#333\"/>\
             <text x=\"{x:.1}\" y=\"{}\" class=\"k\" text-anchor=\"middle\">{}</text>",
            y0 + 4.0,
            y0 + 16.0,
            escape(&label)
        );
    }
    let _ = write!(
        s,
        "<text x=\"{}\" y=\"{}\" class=\"k\" text-anchor=\"middle\">{}</text>\
         <text x=\"14\" y=\"{}\" class=\"k\" text-anchor=\"middle\" transform=\"rotate(-90 14 {})\">{}</text>",
        (x0 + x1) / 2.0,
        H - 8.0,
        escape(&chart.x_label),
        (y0 + y1) / 2.0,
        (y0 + y1) / 2.0,
        escape(&chart.y_label)
    );
}

fn draw_series(s: &mut String, series: &Series, xs: &Scale, ys: &Scale, x_log: bool) {
    let color = escape(series.color);
    let pts: Vec<(f64, f64)> = series
        .points
        .iter()
        .filter(|(x, y)| x.is_finite() && y.is_finite() && (!x_log || *x > 0.0))
        .map(|&(x, y)| (xs.map(x), ys.map(y)))
        .collect();
    let path: Vec<String> = pts.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
    let _ = write!(
        s,
        "<polyline points=\"{}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"2\"/>",
        path.join(" ")
    );
    if pts.len() <= 40 {
        for (x, y) in pts {
            let _ = write!(
                s,
                "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"3\" fill=\"{color}\"/>"
            );
        }
    }
}

/// Where each legend key goes: one after another along the top of the plot, each as wide
/// as its name (11 px text, about 6.5 px a character), on a new row when the next would
/// pass the plot's right edge.
fn legend_places(names: &[&str]) -> Vec<(f64, f64)> {
    let (mut x, mut y) = (LEFT + 10.0, TOP + 10.0);
    let mut places = Vec::with_capacity(names.len());
    for name in names {
        let width = 14.0 + name.chars().count() as f64 * 6.5 + 16.0;
        if x > LEFT + 10.0 && x + width > W - RIGHT {
            (x, y) = (LEFT + 10.0, y + 14.0);
        }
        places.push((x, y));
        x += width;
    }
    places
}

/// A title wider than the chart (13 px bold, about 8 px a character) is squeezed to the
/// chart's width less 4 px a side, rather than cut off at both edges; others are left alone.
fn fit_title(title: &str) -> String {
    if title.chars().count() as f64 * 8.0 > W - 8.0 {
        format!(
            " textLength=\"{}\" lengthAdjust=\"spacingAndGlyphs\"",
            W - 8.0
        )
    } else {
        String::new()
    }
}

/// The top of the y scale that puts `hi` (the data's top, headroom included) just below
/// the legend's last row, so that no line or marker runs through a legend key.
fn below_legend(lo: f64, hi: f64, keys: &[(f64, f64)]) -> f64 {
    let Some(last_row) = keys.iter().map(|k| k.1).reduce(f64::max) else {
        return hi;
    };
    // A key's text has its baseline 1 px below the row's y; descenders and a gap: 6 px.
    let data_top = last_row + 7.0;
    lo + (hi - lo) * (H - BOTTOM - TOP) / (H - BOTTOM - data_top)
}

fn legend(s: &mut String, (x, y): (f64, f64), series: &Series) {
    let color = escape(series.color);
    let _ = write!(
        s,
        "<rect x=\"{x}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{color}\"/>\
         <text x=\"{}\" y=\"{}\" class=\"k\">{}</text>",
        y - 8.0,
        x + 14.0,
        y + 1.0,
        escape(&series.name)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys never overlap: each starts after the previous one's name, and a row that
    /// would pass the plot's edge wraps.
    #[test]
    fn legend_keys_are_as_wide_as_their_names() {
        let names = [
            "nginx (3 processes)",
            "apache2 (6 processes)",
            "x",
            "a much longer series name than the others",
        ];
        let places = legend_places(&names);
        assert_eq!(places[0], (LEFT + 10.0, TOP + 10.0));
        for (k, w) in places.windows(2).enumerate() {
            let ((x0, y0), (x1, y1)) = (w[0], w[1]);
            let width = 30.0 + names[k].len() as f64 * 6.5;
            assert!(y1 > y0 || x1 >= x0 + width, "{k}: {places:?}");
        }
        assert!(places.iter().all(|&(x, _)| x < W - RIGHT));
        assert!(places[3].1 > places[0].1, "the long name wraps: {places:?}");
    }

    /// The data's top lies below the legend: before, a series whose highest point was at
    /// the left edge drew its marker at y 38.9, through the key's text (baseline 39).
    #[test]
    fn data_stays_below_the_legend() {
        let chart = Chart {
            title: "requests/s".into(),
            x_label: "s".into(),
            y_label: "requests/s".into(),
            x_log: false,
            x_ticks: None,
            series: vec![Series {
                name: "IPv4".into(),
                color: IPV4_COLOR,
                points: vec![(0.0, 100.0), (1.0, 50.0)],
            }],
        };
        let svg = line_chart(&chart);
        // Key at row y 38: text baseline 39; the data's top (105, 5% headroom) at 45.
        assert!(svg.contains("<text x=\"88\" y=\"39\" class=\"k\">IPv4</text>"));
        let top = 256.0 - 100.0 / (105.0 * 228.0 / 211.0) * 228.0;
        assert_eq!(format!("{top:.1}"), "55.0");
        assert!(svg.contains("<circle cx=\"64.0\" cy=\"55.0\""), "{svg}");
        // Two rows of keys push the data further down.
        let keys = legend_places(&["a much longer series name than the others"; 2]);
        assert_eq!(keys[1].1, TOP + 24.0);
        assert_eq!(below_legend(0.0, 10.0, &keys), 10.0 * 228.0 / 197.0);
        assert_eq!(below_legend(0.0, 10.0, &[]), 10.0);
    }

    /// A log axis spans the data, not whole decades: a CDF of 0.06–1.5 ms used to be
    /// drawn on 0.01–10 ms, the curve squeezed into the middle 47% of the plot.
    #[test]
    fn log_axis_spans_the_data() {
        assert_eq!(log_axis_ticks(0.06, 1.5), vec![0.1, 0.2, 0.5, 1.0]);
        assert_eq!(log_axis_ticks(0.3, 250.0), vec![1.0, 10.0, 100.0]);
        assert_eq!(log_axis_ticks(0.11, 0.19), vec![0.11, 0.19]);
        let chart = Chart {
            title: "CDF".into(),
            x_label: "ms".into(),
            y_label: "fraction".into(),
            x_log: true,
            x_ticks: None,
            series: vec![Series {
                name: "IPv4".into(),
                color: IPV4_COLOR,
                points: vec![(0.06, 0.0), (0.2, 0.5), (1.5, 1.0)],
            }],
        };
        let svg = line_chart(&chart);
        // The first and last points sit on the plot's left and right edges.
        assert!(svg.contains("<circle cx=\"64.0\" cy=\"256.0\""), "{svg}");
        assert!(
            svg.contains(&format!("<circle cx=\"{:.1}\"", W - RIGHT)),
            "{svg}"
        );
        assert!(svg.contains(">0.2</text>") && !svg.contains(">0.01</text>"));
    }

    /// A group title of three axes used to overflow the 530 px chart and lose its ends.
    #[test]
    fn long_titles_fit_the_chart() {
        let long = "total latency percentiles — server=apache-prefork handler=static-320k \
                    placement=testbed";
        assert_eq!(
            fit_title(long),
            " textLength=\"522\" lengthAdjust=\"spacingAndGlyphs\""
        );
        assert_eq!(
            fit_title("total latency CDF — server=nginx congestion=C1B"),
            ""
        );
        let chart = Chart {
            title: long.into(),
            x_label: "percentile".into(),
            y_label: "ms".into(),
            x_log: false,
            x_ticks: None,
            series: vec![Series {
                name: "IPv4".into(),
                color: IPV4_COLOR,
                points: vec![(0.0, 1.0), (1.0, 2.0)],
            }],
        };
        assert!(line_chart(&chart).contains(
            "<text x=\"265\" y=\"18\" class=\"t\" text-anchor=\"middle\" \
             textLength=\"522\" lengthAdjust=\"spacingAndGlyphs\">total latency"
        ));
    }

    #[test]
    fn ticks_are_nice() {
        assert_eq!(
            nice_ticks(0.0, 10.0, 5),
            vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
        );
        assert_eq!(nice_ticks(0.0, 0.9, 3), vec![0.0, 0.5]);
        assert_eq!(log_ticks(3.0, 250.0), vec![1.0, 10.0, 100.0, 1000.0]);
        assert_eq!(short(1200.0), "1200");
        assert_eq!(short(0.25), "0.25");
        assert_eq!(escape("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
    }

    #[test]
    fn draws_series_and_legend() {
        let chart = Chart {
            title: "latency <total>".into(),
            x_label: "ms".into(),
            y_label: "fraction".into(),
            x_log: true,
            x_ticks: None,
            series: vec![
                Series {
                    name: "IPv4".into(),
                    color: IPV4_COLOR,
                    points: vec![(1.0, 0.1), (10.0, 0.9), (100.0, 1.0)],
                },
                Series {
                    name: "IPv6".into(),
                    color: IPV6_COLOR,
                    points: vec![(2.0, 0.2), (20.0, 1.0)],
                },
            ],
        };
        let svg = line_chart(&chart);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert_eq!(svg.matches("<circle").count(), 5);
        assert!(svg.contains("latency &lt;total&gt;") && svg.contains(">IPv6</text>"));
        let empty = Chart {
            series: vec![],
            ..chart
        };
        assert!(line_chart(&empty).contains("no data to plot"));
    }
}
