//! How one direction of a link is shaped: the `tc` commands for rate (htb or tbf), queue
//! limits (pfifo/bfifo) and — when the kernel has it — netem's delay, jitter and loss; or
//! the link spec string handed to the userspace wire emulator when it does not.

use crate::model::{Shaper, Shaping};
use crate::units::{Queue, MAX_FRAME_BYTES};
use serde::{Deserialize, Serialize};
use std::fmt;

/// What does delay, jitter and loss on a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Emulator {
    /// The kernel's netem qdisc, on the sender's egress.
    Netem,
    /// `dualbench wire` in a namespace in the middle of the link.
    Wire,
}

impl fmt::Display for Emulator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Emulator::Netem => "netem",
            Emulator::Wire => "wire",
        })
    }
}

/// The link spec of docs/wire.md for the emulated parts:
/// `delay=40ms,jitter=2ms,keep_order,loss=0.1%`.
pub fn wire_spec(shaping: &Shaping) -> String {
    let mut parts = Vec::new();
    if let Some(d) = shaping.delay {
        parts.push(format!("delay={d}"));
    }
    if let Some(j) = shaping.jitter {
        parts.push(format!("jitter={j}"));
    }
    if shaping.keeps_order() {
        parts.push("keep_order".into());
    }
    if let Some(l) = shaping.loss {
        parts.push(format!("loss={l}"));
    }
    if let Some(b) = shaping.burst_loss {
        parts.push(format!("burst_loss={b}"));
    }
    parts.join(",")
}

fn words(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|s| s.to_string()).collect()
}

/// netem's arguments: `netem delay 40ms 2ms loss 0.1% limit N`; a burst loss
/// `p,r,h,k` becomes `loss gemodel p r 1-h 1-k` (netem takes loss probabilities per
/// state, the wire and the topology file delivery ones).
fn netem_args(shaping: &Shaping) -> Vec<String> {
    let mut args = words(&["netem"]);
    if let Some(d) = shaping.delay {
        args.extend(["delay".into(), d.to_string()]);
        if let Some(j) = shaping.jitter {
            args.push(j.to_string());
        }
    }
    if let Some(l) = shaping.loss {
        args.extend(["loss".into(), l.to_string()]);
    }
    if let Some(b) = shaping.burst_loss {
        args.extend(b.netem_args());
    }
    if let Some(q) = shaping.queue {
        let packets = match q {
            Queue::Packets(n) => n,
            Queue::Bytes(b) => b.div_ceil(MAX_FRAME_BYTES),
        };
        args.extend(["limit".into(), packets.to_string()]);
    }
    args
}

fn fifo_args(queue: Queue) -> Vec<String> {
    match queue {
        Queue::Packets(n) => words(&["pfifo", "limit", &n.to_string()]),
        Queue::Bytes(b) => words(&["bfifo", "limit", &b.to_string()]),
    }
}

/// tbf's bucket: one millisecond at the rate, never less than two full frames.
pub fn tbf_burst(rate_bps: u64) -> u64 {
    (rate_bps / 8 / 1000).max(2 * MAX_FRAME_BYTES)
}

/// The `tc` argument lists (after `tc -n NS`) that shape one direction leaving `dev`.
/// `netem` says whether delay, jitter and loss are done here (else the wire does them).
pub fn tc_commands(dev: &str, shaper: Shaper, shaping: &Shaping, netem: bool) -> Vec<Vec<String>> {
    let emulate = netem && shaping.needs_emulation();
    let leaf = if emulate {
        Some(netem_args(shaping))
    } else {
        shaping.queue.map(fifo_args)
    };
    let qdisc = |at: &[&str], args: Vec<String>| {
        [words(&["qdisc", "add", "dev", dev]), words(at), args].concat()
    };
    let Some(rate) = shaping.rate else {
        return leaf
            .map(|args| qdisc(&["root", "handle", "1:"], args))
            .into_iter()
            .collect();
    };
    let rate_text = rate.to_string();
    let mut commands = match shaper {
        Shaper::Htb => vec![
            qdisc(&["root", "handle", "1:"], words(&["htb", "default", "1"])),
            words(&[
                "class", "add", "dev", dev, "parent", "1:", "classid", "1:1", "htb", "rate",
                &rate_text, "ceil", &rate_text,
            ]),
        ],
        Shaper::Tbf => {
            let limit = match shaping.queue {
                Some(Queue::Bytes(b)) => b,
                Some(Queue::Packets(n)) => n * MAX_FRAME_BYTES,
                None => 1000 * MAX_FRAME_BYTES,
            };
            let burst = tbf_burst(rate.0).to_string();
            vec![qdisc(
                &["root", "handle", "1:"],
                words(&[
                    "tbf",
                    "rate",
                    &rate_text,
                    "burst",
                    &burst,
                    "limit",
                    &limit.to_string(),
                ]),
            )]
        }
    };
    // tbf keeps a byte limit itself; a packet limit or netem goes in as its child.
    let tbf_bytes_only =
        shaper == Shaper::Tbf && !emulate && matches!(shaping.queue, Some(Queue::Bytes(_)));
    if let Some(args) = leaf.filter(|_| !tbf_bytes_only) {
        commands.push(qdisc(&["parent", "1:1", "handle", "10:"], args));
    }
    commands
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::{Micros, Ppm, Rate};

    fn lines(commands: Vec<Vec<String>>) -> Vec<String> {
        commands.into_iter().map(|c| c.join(" ")).collect()
    }

    const SHAPED: Shaping = Shaping {
        rate: Some(Rate(100_000_000)),
        queue: Some(Queue::Packets(100)),
        delay: Some(Micros(40_000)),
        jitter: Some(Micros(2_000)),
        loss: Some(Ppm(1_000)),
        burst_loss: None,
        keep_order: false,
    };

    #[test]
    fn htb_rate_with_a_packet_queue() {
        assert_eq!(
            lines(tc_commands("eth1", Shaper::Htb, &SHAPED, false)),
            [
                "qdisc add dev eth1 root handle 1: htb default 1",
                "class add dev eth1 parent 1: classid 1:1 htb rate 100mbit ceil 100mbit",
                "qdisc add dev eth1 parent 1:1 handle 10: pfifo limit 100",
            ]
        );
    }

    #[test]
    fn netem_sits_under_the_rate_when_the_kernel_has_it() {
        let got = lines(tc_commands("eth1", Shaper::Htb, &SHAPED, true));
        assert_eq!(
            got[2],
            "qdisc add dev eth1 parent 1:1 handle 10: netem delay 40ms 2ms loss 0.1% limit 100"
        );
        let no_rate = Shaping {
            rate: None,
            ..SHAPED
        };
        assert_eq!(
            lines(tc_commands("eth2", Shaper::Htb, &no_rate, true)),
            ["qdisc add dev eth2 root handle 1: netem delay 40ms 2ms loss 0.1% limit 100"]
        );
    }

    /// A burst loss is netem's `loss gemodel p r 1-h 1-k`: h and k are delivery
    /// probabilities in the topology file (as for the wire), loss ones for netem.
    #[test]
    fn burst_loss_goes_to_netem_as_loss_probabilities_and_to_the_wire_as_given() {
        let burst = Shaping {
            loss: None,
            burst_loss: Some(crate::units::parse_burst_loss("1%,30%,10%,99.5%").unwrap()),
            ..SHAPED
        };
        assert_eq!(
            lines(tc_commands("eth1", Shaper::Htb, &burst, true)),
            [
                "qdisc add dev eth1 root handle 1: htb default 1",
                "class add dev eth1 parent 1: classid 1:1 htb rate 100mbit ceil 100mbit",
                "qdisc add dev eth1 parent 1:1 handle 10: netem delay 40ms 2ms loss gemodel 1% 30% 90% 0.5% limit 100",
            ]
        );
        assert_eq!(
            wire_spec(&burst),
            "delay=40ms,jitter=2ms,burst_loss=1%,30%,10%,99.5%"
        );
        // Burst loss alone is emulated too (by netem, or else the wire).
        let alone = Shaping {
            burst_loss: burst.burst_loss,
            ..Shaping::default()
        };
        assert!(alone.needs_emulation());
        assert_eq!(
            lines(tc_commands("eth2", Shaper::Htb, &alone, true)),
            ["qdisc add dev eth2 root handle 1: netem loss gemodel 1% 30% 90% 0.5%"]
        );
        assert_eq!(wire_spec(&alone), "burst_loss=1%,30%,10%,99.5%");
    }

    #[test]
    fn tbf_keeps_byte_queues_itself() {
        let bytes = Shaping {
            queue: Some(Queue::Bytes(64_000)),
            ..SHAPED
        };
        assert_eq!(
            lines(tc_commands("eth1", Shaper::Tbf, &bytes, false)),
            ["qdisc add dev eth1 root handle 1: tbf rate 100mbit burst 12500 limit 64000"]
        );
        let plain = Shaping {
            queue: None,
            ..SHAPED
        };
        assert_eq!(
            lines(tc_commands("eth1", Shaper::Tbf, &plain, false)),
            ["qdisc add dev eth1 root handle 1: tbf rate 100mbit burst 12500 limit 1514000"]
        );
    }

    #[test]
    fn queue_alone_and_nothing_at_all() {
        let queue = Shaping {
            queue: Some(Queue::Bytes(30_000)),
            ..Shaping::default()
        };
        assert_eq!(
            lines(tc_commands("eth3", Shaper::Htb, &queue, false)),
            ["qdisc add dev eth3 root handle 1: bfifo limit 30000"]
        );
        assert!(tc_commands("eth3", Shaper::Htb, &Shaping::default(), true).is_empty());
    }

    #[test]
    fn the_wire_gets_only_what_tc_does_not_do() {
        assert_eq!(wire_spec(&SHAPED), "delay=40ms,jitter=2ms,loss=0.1%");
        let in_order = Shaping {
            keep_order: true,
            ..SHAPED
        };
        assert_eq!(
            wire_spec(&in_order),
            "delay=40ms,jitter=2ms,keep_order,loss=0.1%"
        );
        // Without jitter there is nothing to keep in order: the flag is left out.
        let no_jitter = Shaping {
            jitter: None,
            ..in_order
        };
        assert_eq!(wire_spec(&no_jitter), "delay=40ms,loss=0.1%");
        assert_eq!(
            wire_spec(&Shaping {
                loss: Some(Ppm(1_000)),
                ..Shaping::default()
            }),
            "loss=0.1%"
        );
    }
}
