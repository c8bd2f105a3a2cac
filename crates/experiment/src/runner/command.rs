//! The `dualbench run` command line of a point, as a pure function of the plan, the point,
//! the server's base URLs and the server's pids for `--monitor` (one per process of the
//! server: a master and its workers); and any command line as a shell would take it.

use crate::plan::{Plan, Point, Selector};
use crate::server::site::Route;
use dualbench_common::{shell_word, Family};
use std::net::SocketAddr;

/// The server's base URL per family, e.g. `http://127.0.0.1:8080` and `http://[::1]:8080`.
#[derive(Debug, Clone)]
pub struct Bases {
    pub v4: String,
    pub v6: String,
}

impl Bases {
    /// Base URLs of the listen addresses (one per family).
    pub fn of(listen: &[SocketAddr]) -> Bases {
        let find = |f: Family| {
            listen
                .iter()
                .find(|a| Family::of_addr(a) == f)
                .map(|a| format!("http://{a}"))
                .unwrap_or_default()
        };
        Bases {
            v4: find(Family::V4),
            v6: find(Family::V6),
        }
    }
}

/// Arguments after the binary: `run --format json -q -n N -c C ... URL...` for the URL
/// path of `route`; with `load.monitor`, one `--monitor` per entry of `monitor_pids`; with
/// `load.capture` at the client (the default capture host), `--capture IFACE`; `-l` when
/// the route's body changes length from response to response (Apache's mod_status page);
/// with Poisson arrivals, `--seed R` for the counted run of repeat R (`repeat`; `None`
/// for a warm-up, which keeps `run`'s seed 1), unless `load.extra_args` gives a seed.
pub fn run_args(
    plan: &Plan,
    point: &Point,
    bases: &Bases,
    route: &Route,
    monitor_pids: &[String],
    repeat: Option<u32>,
) -> Vec<String> {
    let path = route.path;
    let l = &plan.load;
    let mut a: Vec<String> = vec!["run".into()];
    a.extend(l.run_flags(point.requests, point.concurrency, point.rate, monitor_pids));
    // Each repeat its own arrivals, so the repeats are independent samples of the
    // Poisson process, as the confidence intervals assume; both families of a repeat
    // share them. With `run`'s seed 1 for all, every repeat offered the same arrival
    // times and the intervals left out the arrivals' variation.
    if let Some(seed) = crate::plan::expand::poisson_seed(plan, point, repeat) {
        a.extend(["--seed".into(), seed.to_string()]);
    }
    let variable = ["-l", "--variable-length"];
    if route.variable_length && !l.extra_args.iter().any(|a| variable.contains(&a.as_str())) {
        a.push("-l".into());
    }
    a.extend(l.extra_args.iter().cloned());
    let url = |base: &str| format!("{base}{path}");
    match point.selector {
        Selector::Family(Family::V4) => a.push(url(&bases.v4)),
        Selector::Family(Family::V6) => a.push(url(&bases.v6)),
        Selector::Ratio { v6, v4 } => {
            a.extend([url(&bases.v6), url(&bases.v4)]);
            a.extend(["--ratio".into(), format!("{v6}:{v4}")]);
        }
    }
    a
}

/// `argv` as a shell would take it.
pub fn shell_line(argv: &[String]) -> String {
    argv.iter()
        .map(|w| shell_word(w))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{expand, parse};
    use std::path::Path;

    #[test]
    fn family_and_ratio_runs() {
        let text = "[experiment]\nname = \"x\"\n[load]\nrequests = 100\nconcurrency = 2\nkeepalive = true\n\
                    [axes]\nratio = [\"4:1\"]\nrate = [500.0]\n";
        let plan = parse(text, Path::new("x.toml")).unwrap();
        let runs = expand(&plan);
        let bases = Bases::of(&crate::server::loopback(8080));
        let pids = ["7".to_string()];
        let args = run_args(
            &plan,
            &runs[0].point,
            &bases,
            &route("/index.html"),
            &pids,
            Some(1),
        );
        assert_eq!(
            args.join(" "),
            "run --format json -q -n 100 -c 2 -k --rate 500 http://[::1]:8080/index.html \
             http://127.0.0.1:8080/index.html --ratio 4:1"
        );
        let plan = parse(
            "[experiment]\nname = \"y\"\n[load]\nmonitor = true\ncapture = \"lo\"\n",
            Path::new("y.toml"),
        )
        .unwrap();
        let runs = expand(&plan);
        let pids = ["7".to_string(), "8".to_string()];
        let args = run_args(&plan, &runs[1].point, &bases, &route("/"), &pids, Some(1));
        assert_eq!(
            args.join(" "),
            "run --format json -q -n 1000 -c 1 --monitor 7 --monitor 8 --capture lo http://[::1]:8080/"
        );
    }

    fn route(path: &'static str) -> Route {
        Route {
            path,
            mechanism: "static file",
            length: 45,
            variable_length: false,
        }
    }

    /// Apache's in-server handler without mod_perl is mod_status, whose page changes size
    /// from response to response: without `-l` nearly every response would be a failed
    /// request ("Length"), as ab counts them.
    #[test]
    fn a_page_of_varying_length_is_run_with_dash_l() {
        use crate::plan::{Handler, ServerKind};
        use crate::server::site;
        let text = "[experiment]\nname = \"s\"\n[axes]\nserver = [\"apache-prefork\"]\n\
                    handler = [\"in-server\"]\nfamily = [\"ipv4\"]\n";
        let plan = parse(text, Path::new("s.toml")).unwrap();
        let point = &expand(&plan)[0].point;
        let bases = Bases::of(&crate::server::loopback(8080));
        let status = site::route(ServerKind::ApachePrefork, Handler::InServer, false);
        assert_eq!(
            run_args(&plan, point, &bases, &status, &[], Some(1)).join(" "),
            "run --format json -q -n 1000 -c 1 -l http://127.0.0.1:8080/server-status?auto"
        );
        let perl = site::route(ServerKind::ApachePrefork, Handler::InServer, true);
        assert_eq!(
            run_args(&plan, point, &bases, &perl, &[], Some(1)).join(" "),
            "run --format json -q -n 1000 -c 1 http://127.0.0.1:8080/in-server"
        );
        // A plan that passes -l itself gets it once.
        let plan = parse(
            &text.replace("[axes]", "[load]\nextra_args = [\"-l\"]\n[axes]"),
            Path::new("s.toml"),
        )
        .unwrap();
        let args = run_args(&plan, point, &bases, &status, &[], Some(1));
        assert_eq!(args.iter().filter(|a| *a == "-l").count(), 1, "{args:?}");
    }

    /// Poisson arrivals: repeat R of a point runs with `--seed R` (both families of the
    /// repeat alike), a warm-up with `run`'s default; a seed in `extra_args` is kept.
    #[test]
    fn each_repeat_of_poisson_arrivals_has_a_seed_of_its_own() {
        let text = "[experiment]\nname = \"p\"\nrepeats = 3\n[load]\nrequests = 100\n\
                    arrival = \"poisson\"\n[axes]\nrate = [500.0]\nfamily = [\"ipv4\", \"ipv6\"]\n";
        let plan = parse(text, Path::new("p.toml")).unwrap();
        let bases = Bases::of(&crate::server::loopback(8080));
        let seeds: Vec<String> = expand(&plan)
            .iter()
            .map(|r| {
                let args = run_args(&plan, &r.point, &bases, &route("/"), &[], Some(r.repeat));
                format!("{}:{}", r.point.selector.key(), args[args.len() - 2])
            })
            .collect();
        assert_eq!(
            seeds,
            ["ipv4:1", "ipv6:1", "ipv6:2", "ipv4:2", "ipv4:3", "ipv6:3"]
        );
        let point = &expand(&plan)[0].point;
        assert_eq!(
            run_args(&plan, point, &bases, &route("/"), &[], Some(2)).join(" "),
            "run --format json -q -n 100 -c 1 --rate 500 --arrival poisson --seed 2 http://127.0.0.1:8080/"
        );
        let warmup = run_args(&plan, point, &bases, &route("/"), &[], None);
        assert!(!warmup.contains(&"--seed".to_string()), "{warmup:?}");
        let repeat_2 = |plan: &Plan| {
            run_args(
                plan,
                &expand(plan)[0].point,
                &bases,
                &route("/"),
                &[],
                Some(2),
            )
        };
        let own = text.replace("[axes]", "extra_args = [\"--seed\", \"9\"]\n[axes]");
        let plan = parse(&own, Path::new("p.toml")).unwrap();
        let args = repeat_2(&plan);
        assert_eq!(
            args.iter().filter(|a| *a == "--seed").count(),
            1,
            "{args:?}"
        );
        assert!(args.join(" ").contains("--seed 9"), "{args:?}");
        let constant = text.replace("poisson", "constant");
        let plan = parse(&constant, Path::new("p.toml")).unwrap();
        let args = repeat_2(&plan);
        assert!(!args.contains(&"--seed".to_string()), "{args:?}");
    }
}
