//! Statistics over repeats, pure functions: mean, sample standard deviation, the Student's t
//! 95% confidence interval, the difference of two means with its uncertainty: Welch's
//! t-test for independent samples, and Student's paired t-test on per-repeat differences for
//! samples measured in pairs. The t distribution comes from the regularized incomplete
//! beta function (continued fraction), so no table limits the degrees of freedom.

/// Mean and spread of a set of repeats.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (n − 1); 0 for a single value.
    pub stdev: f64,
    /// Half-width of the two-sided 95% confidence interval (Student's t); NaN when n < 2.
    pub ci95: f64,
}

/// Mean, standard deviation and 95% CI of `values`; `None` when there are none.
pub fn estimate(values: &[f64]) -> Option<Estimate> {
    let n = values.len();
    if n == 0 {
        return None;
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    let stdev = variance(values, mean).sqrt();
    let ci95 = if n < 2 {
        f64::NAN
    } else {
        t_quantile(0.975, (n - 1) as f64) * stdev / (n as f64).sqrt()
    };
    Some(Estimate {
        n,
        mean,
        stdev,
        ci95,
    })
}

fn variance(values: &[f64], mean: f64) -> f64 {
    if values.len() < 2 {
        return 0.0;
    }
    values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (values.len() - 1) as f64
}

/// Difference of means `b − a` with its 95% CI and the two-sided p-value ([`welch`] or
/// [`paired`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Difference {
    pub diff: f64,
    /// Half-width of the 95% CI of the difference; NaN when it cannot be computed.
    pub ci95: f64,
    /// Degrees of freedom: Welch–Satterthwaite's, or n − 1 of the paired differences.
    pub df: f64,
    pub t: f64,
    /// Two-sided p-value of "the means are equal"; NaN when it cannot be computed.
    pub p: f64,
}

impl Difference {
    /// True when the difference is significant at level `alpha`.
    pub fn significant(&self, alpha: f64) -> bool {
        self.p.is_finite() && self.p < alpha
    }
}

/// Welch's unequal-variance t-test of `b` against `a`.
pub fn welch(a: &[f64], b: &[f64]) -> Option<Difference> {
    let (ea, eb) = (estimate(a)?, estimate(b)?);
    let diff = eb.mean - ea.mean;
    let (va, vb) = (
        ea.stdev.powi(2) / ea.n as f64,
        eb.stdev.powi(2) / eb.n as f64,
    );
    let se = (va + vb).sqrt();
    if ea.n < 2 || eb.n < 2 || se == 0.0 {
        let p = if ea.n >= 2 && eb.n >= 2 && diff == 0.0 {
            1.0
        } else {
            f64::NAN
        };
        return Some(Difference {
            diff,
            ci95: f64::NAN,
            df: f64::NAN,
            t: f64::NAN,
            p,
        });
    }
    let df = (va + vb).powi(2) / (va.powi(2) / (ea.n - 1) as f64 + vb.powi(2) / (eb.n - 1) as f64);
    let t = diff / se;
    let p = 2.0 * (1.0 - t_cdf(t.abs(), df));
    let ci95 = t_quantile(0.975, df) * se;
    Some(Difference {
        diff,
        ci95,
        df,
        t,
        p,
    })
}

/// Student's paired t-test of `b` against `a`, where `a[i]` and `b[i]` were measured
/// together (the same repeat): the mean of the differences `b[i] − a[i]`, its 95% CI from
/// Student's t with n − 1 degrees of freedom, and the two-sided p-value of "the mean
/// difference is 0". `None` when there are no pairs or the lengths differ. One pair gives
/// its difference with no CI or p-value; differences that are all equal give a CI of 0 and
/// p = 0 (p = 1 when they are all 0).
pub fn paired(a: &[f64], b: &[f64]) -> Option<Difference> {
    if a.len() != b.len() {
        return None;
    }
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| y - x).collect();
    let e = estimate(&d)?;
    if e.n < 2 {
        return Some(Difference {
            diff: e.mean,
            ci95: f64::NAN,
            df: f64::NAN,
            t: f64::NAN,
            p: f64::NAN,
        });
    }
    let df = (e.n - 1) as f64;
    let se = e.stdev / (e.n as f64).sqrt();
    if se == 0.0 {
        // Every pair differs by the same amount: no spread, so no doubt about its sign.
        let (t, p) = if e.mean == 0.0 {
            (f64::NAN, 1.0)
        } else {
            (f64::INFINITY.copysign(e.mean), 0.0)
        };
        return Some(Difference {
            diff: e.mean,
            ci95: 0.0,
            df,
            t,
            p,
        });
    }
    let t = e.mean / se;
    Some(Difference {
        diff: e.mean,
        ci95: e.ci95,
        df,
        t,
        p: 2.0 * (1.0 - t_cdf(t.abs(), df)),
    })
}

/// Cumulative distribution function of Student's t with `df` degrees of freedom.
pub fn t_cdf(t: f64, df: f64) -> f64 {
    let x = df / (df + t * t);
    let tail = 0.5 * incomplete_beta(df / 2.0, 0.5, x);
    if t >= 0.0 {
        1.0 - tail
    } else {
        tail
    }
}

/// Quantile of Student's t: the `t` with `t_cdf(t, df) == p` (bisection, 1e-12).
pub fn t_quantile(p: f64, df: f64) -> f64 {
    if p == 0.5 {
        return 0.0;
    }
    if p < 0.5 {
        return -t_quantile(1.0 - p, df);
    }
    let (mut lo, mut hi) = (0.0, 1.0);
    while t_cdf(hi, df) < p {
        hi *= 2.0;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if t_cdf(mid, df) < p {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo < 1e-12 {
            break;
        }
    }
    0.5 * (lo + hi)
}

/// Regularized incomplete beta I_x(a, b), by Lentz's continued fraction.
fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_fraction(b, a, 1.0 - x) / b
    }
}

fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let mut c = 1.0;
    let mut d = 1.0 - (a + b) * x / (a + 1.0);
    d = 1.0 / if d.abs() < TINY { TINY } else { d };
    let mut h = d;
    for m in 1..500 {
        let m = m as f64;
        for numerator in [
            m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0)),
        ] {
            d = 1.0 + numerator * d;
            d = 1.0 / if d.abs() < TINY { TINY } else { d };
            c = 1.0 + numerator / c;
            if c.abs() < TINY {
                c = TINY;
            }
            h *= d * c;
        }
        if (d * c - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// ln Γ(x) for x > 0 (Lanczos approximation, g = 7, n = 9).
fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut sum = G[0];
    for (i, g) in G.iter().enumerate().skip(1) {
        sum += g / (x + i as f64);
    }
    let t = x + 7.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn t_quantiles_match_the_table() {
        // Two-sided 95% critical values from any Student's t table.
        for (df, want) in [
            (1.0, 12.706),
            (2.0, 4.303),
            (4.0, 2.776),
            (9.0, 2.262),
            (30.0, 2.042),
        ] {
            let got = t_quantile(0.975, df);
            assert!(close(got, want, 5e-4), "df {df}: {got} vs {want}");
        }
        assert!(close(t_quantile(0.975, 1e6), 1.960, 1e-3));
        assert!(close(t_cdf(0.0, 5.0), 0.5, 1e-12));
        assert!(close(t_cdf(-2.228, 10.0), 0.025, 1e-4));
    }

    #[test]
    fn estimate_of_known_values() {
        let e = estimate(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(e.n, 8);
        assert!(close(e.mean, 5.0, 1e-12));
        assert!(close(e.stdev, (32.0f64 / 7.0).sqrt(), 1e-12));
        // t(0.975, 7) = 2.364624; sd/sqrt(n) = 0.755929
        assert!(close(e.ci95, 2.364624 * 0.755929, 1e-4), "{}", e.ci95);
        let one = estimate(&[3.0]).unwrap();
        assert_eq!((one.mean, one.stdev), (3.0, 0.0));
        assert!(one.ci95.is_nan());
        assert!(estimate(&[]).is_none());
    }

    #[test]
    fn welch_of_known_samples() {
        // a: mean 3, var 2.5; b: mean 6, var 10 → t = 3/sqrt(2.5) = 1.897367,
        // df = 6.25 / (0.0625 + 1) = 5.882353; p ≈ 0.1077 (two-sided).
        let d = welch(&[1.0, 2.0, 3.0, 4.0, 5.0], &[2.0, 4.0, 6.0, 8.0, 10.0]).unwrap();
        assert!(close(d.diff, 3.0, 1e-12));
        assert!(close(d.t, 1.897367, 1e-6));
        assert!(close(d.df, 5.882353, 1e-6));
        assert!(close(d.p, 0.1077, 5e-4), "p = {}", d.p);
        assert!(!d.significant(0.05));
        let far = welch(&[10.0, 10.1, 9.9], &[20.0, 20.2, 19.8]).unwrap();
        assert!(far.significant(0.05) && far.p < 1e-4);
    }

    #[test]
    fn welch_degenerate_cases() {
        let same = welch(&[1.0, 1.0], &[1.0, 1.0]).unwrap();
        assert_eq!(same.p, 1.0);
        let single = welch(&[1.0], &[2.0]).unwrap();
        assert!(single.p.is_nan() && !single.significant(0.05));
    }

    #[test]
    fn paired_of_known_samples() {
        // Differences 1, 2, 3, 4, 5: mean 3, sd √2.5 = 1.581139, se = 0.707107,
        // t = 4.242641 on 4 df; t(0.975, 4) = 2.776445 → CI 1.963243; p = 0.013236
        // (by hand from the t distribution: 2 × P(T₄ > 4.2426)).
        let a = [10.0, 20.0, 30.0, 40.0, 50.0];
        let b = [11.0, 22.0, 33.0, 44.0, 55.0];
        let d = paired(&a, &b).unwrap();
        assert!(close(d.diff, 3.0, 1e-12));
        assert!(close(d.t, 4.242641, 1e-6), "t = {}", d.t);
        assert_eq!(d.df, 4.0);
        assert!(close(d.ci95, 1.963243, 1e-5), "ci = {}", d.ci95);
        assert!(close(d.p, 0.013236, 1e-5), "p = {}", d.p);
        assert!(d.significant(0.05));
        // The same values unpaired: Welch sees the spread of each family (sd 15.8 and 17.4),
        // not that every pair moved together, and finds nothing.
        let w = welch(&a, &b).unwrap();
        assert!(
            close(w.diff, 3.0, 1e-12) && w.p > 0.7 && w.ci95 > 20.0,
            "{w:?}"
        );
        // Student's sleep data (Cushny & Peebles, as in R's `t.test(extra ~ group,
        // paired = TRUE)`): mean difference 1.58, t = 4.0621 on 9 df, p = 0.002833,
        // 95% CI 0.7001 … 2.4599.
        let g1 = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0];
        let g2 = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4];
        let s = paired(&g1, &g2).unwrap();
        assert!(close(s.diff, 1.58, 1e-12));
        assert!(close(s.t, 4.0621, 1e-4), "t = {}", s.t);
        assert_eq!(s.df, 9.0);
        assert!(close(s.p, 0.002833, 1e-6), "p = {}", s.p);
        assert!(close(s.diff - s.ci95, 0.7001, 1e-4) && close(s.diff + s.ci95, 2.4599, 1e-4));
    }

    #[test]
    fn paired_degenerate_cases() {
        let one = paired(&[10.0], &[12.5]).unwrap();
        assert_eq!(one.diff, 2.5);
        assert!(one.ci95.is_nan() && one.p.is_nan() && !one.significant(0.05));
        // Both move together: the difference is 1 in every pair, exactly.
        let together = paired(&[10.0, 20.0, 30.0, 40.0], &[11.0, 21.0, 31.0, 41.0]).unwrap();
        assert_eq!((together.diff, together.ci95, together.p), (1.0, 0.0, 0.0));
        assert_eq!(together.df, 3.0);
        assert!(together.significant(0.05));
        let none = paired(&[5.0, 7.0], &[5.0, 7.0]).unwrap();
        assert_eq!((none.diff, none.ci95, none.p), (0.0, 0.0, 1.0));
        assert!(!none.significant(0.05));
        assert!(paired(&[], &[]).is_none());
        assert!(paired(&[1.0, 2.0], &[1.0]).is_none());
    }
}
