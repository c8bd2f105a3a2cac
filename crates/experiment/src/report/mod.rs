//! Reports: the study's table with confidence intervals, latency plots and the environment,
//! as one self-contained HTML file and a Markdown twin.

pub mod metrics;
