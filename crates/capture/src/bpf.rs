//! Classic BPF programs the kernel runs on each frame before it reaches the capture ring
//! (`SO_ATTACH_FILTER`). Loads are relative to the network header (`SKF_NET_OFF`) and the
//! ethertype comes from the kernel (`SKF_AD_PROTOCOL`), so one program serves Ethernet,
//! loopback and raw-IP interfaces alike. The port filter keeps TCP and UDP to or from the
//! port over IPv4 (first fragments) and IPv6, and the ICMP and ICMPv6 "destination
//! unreachable" errors that quote a TCP segment to or from it (what `analyze` needs to call
//! a connection `unreachable`); an IPv6 packet with extension headers is passed on and the
//! capture decides in user space with the full parser. Accepting returns the snap length,
//! so the kernel copies no more than will be written.

use libc::sock_filter;

const LD_H_ABS: u16 = (libc::BPF_LD | libc::BPF_H | libc::BPF_ABS) as u16;
const LD_B_ABS: u16 = (libc::BPF_LD | libc::BPF_B | libc::BPF_ABS) as u16;
const LD_H_IND: u16 = (libc::BPF_LD | libc::BPF_H | libc::BPF_IND) as u16;
const LD_B_IND: u16 = (libc::BPF_LD | libc::BPF_B | libc::BPF_IND) as u16;
const ADD_X: u16 = (libc::BPF_ALU | libc::BPF_ADD | libc::BPF_X) as u16;
const JEQ: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const JSET: u16 = (libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K) as u16;
const AND: u16 = (libc::BPF_ALU | libc::BPF_AND | libc::BPF_K) as u16;
const LSH: u16 = (libc::BPF_ALU | libc::BPF_LSH | libc::BPF_K) as u16;
const TAX: u16 = (libc::BPF_MISC | libc::BPF_TAX) as u16;
const RET: u16 = (libc::BPF_RET | libc::BPF_K) as u16;

const NET: u32 = libc::SKF_NET_OFF as u32;
const PROTOCOL: u32 = (libc::SKF_AD_OFF + libc::SKF_AD_PROTOCOL) as u32;

/// An instruction with symbolic jump targets (`""` = the next instruction).
enum Op {
    Stmt(u16, u32),
    Jump(u16, u32, &'static str, &'static str),
    Label(&'static str),
}

/// Accept every frame, cut to `snaplen`.
pub fn accept_all(snaplen: u32) -> Vec<sock_filter> {
    assemble(&[Op::Stmt(RET, snaplen)])
}

/// Accept TCP and UDP to or from `port`, and ICMP / ICMPv6 "destination unreachable"
/// quoting a TCP segment to or from it, cut to `snaplen`.
pub fn port_filter(port: u16, snaplen: u32) -> Vec<sock_filter> {
    let p = port as u32;
    use Op::*;
    assemble(&[
        Stmt(LD_H_ABS, PROTOCOL),
        Jump(JEQ, 0x0800, "v4", ""),
        Jump(JEQ, 0x86dd, "v6", "reject"),
        Label("v4"),
        Stmt(LD_H_ABS, NET + 6),
        Jump(JSET, 0x1fff, "reject", ""),
        Stmt(LD_B_ABS, NET),
        Stmt(AND, 0x0f),
        Stmt(LSH, 2),
        Stmt(TAX, 0),
        Stmt(LD_B_ABS, NET + 9),
        Jump(JEQ, 6, "v4ports", ""),
        Jump(JEQ, 17, "v4ports", ""),
        Jump(JEQ, 1, "", "reject"),
        // ICMP (X: its offset): type 3, quoting an IP header (X + 8) of a TCP segment.
        Stmt(LD_B_IND, NET),
        Jump(JEQ, 3, "", "reject"),
        Stmt(LD_B_IND, NET + 8 + 9),
        Jump(JEQ, 6, "", "reject"),
        Stmt(LD_B_IND, NET + 8),
        Stmt(AND, 0x0f),
        Stmt(LSH, 2),
        Stmt(ADD_X, 0),
        Stmt(TAX, 0),
        // X + 8: the quoted segment's ports.
        Stmt(LD_H_IND, NET + 8),
        Jump(JEQ, p, "accept", ""),
        Stmt(LD_H_IND, NET + 8 + 2),
        Jump(JEQ, p, "accept", "reject"),
        Label("v4ports"),
        Stmt(LD_H_IND, NET),
        Jump(JEQ, p, "accept", ""),
        Stmt(LD_H_IND, NET + 2),
        Jump(JEQ, p, "accept", "reject"),
        Label("v6"),
        Stmt(LD_B_ABS, NET + 6),
        Jump(JEQ, 6, "v6ports", ""),
        Jump(JEQ, 17, "v6ports", ""),
        Jump(JEQ, 58, "v6icmp", ""),
        Jump(JEQ, 0, "accept", ""),
        Jump(JEQ, 43, "accept", ""),
        Jump(JEQ, 44, "accept", ""),
        Jump(JEQ, 51, "accept", ""),
        Jump(JEQ, 60, "accept", "reject"),
        Label("v6ports"),
        Stmt(LD_H_ABS, NET + 40),
        Jump(JEQ, p, "accept", ""),
        Stmt(LD_H_ABS, NET + 42),
        Jump(JEQ, p, "accept", "reject"),
        // ICMPv6 type 1, quoting an IPv6 header (at 48) of a TCP segment (its ports at 88).
        Label("v6icmp"),
        Stmt(LD_B_ABS, NET + 40),
        Jump(JEQ, 1, "", "reject"),
        Stmt(LD_B_ABS, NET + 48 + 6),
        Jump(JEQ, 6, "", "reject"),
        Stmt(LD_H_ABS, NET + 88),
        Jump(JEQ, p, "accept", ""),
        Stmt(LD_H_ABS, NET + 90),
        Jump(JEQ, p, "accept", "reject"),
        Label("accept"),
        Stmt(RET, snaplen),
        Label("reject"),
        Stmt(RET, 0),
    ])
}

fn assemble(ops: &[Op]) -> Vec<sock_filter> {
    let mut labels = Vec::new();
    let mut at = 0usize;
    for op in ops {
        match op {
            Op::Label(name) => labels.push((*name, at)),
            _ => at += 1,
        }
    }
    let target = |name: &str, from: usize| -> u8 {
        if name.is_empty() {
            return 0;
        }
        let to = labels
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, at)| *at)
            .unwrap_or(from + 1);
        (to - from - 1) as u8
    };
    let mut program = Vec::new();
    for op in ops {
        let at = program.len();
        match *op {
            Op::Stmt(code, k) => program.push(sock_filter {
                code,
                jt: 0,
                jf: 0,
                k,
            }),
            Op::Jump(code, k, t, f) => program.push(sock_filter {
                code,
                jt: target(t, at),
                jf: target(f, at),
                k,
            }),
            Op::Label(_) => {}
        }
    }
    program
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A classic-BPF interpreter for the instructions above, over an IP packet (the
    /// network header at offset 0) with the given ethertype.
    fn run(program: &[sock_filter], ethertype: u16, ip: &[u8]) -> u32 {
        let (mut a, mut x, mut pc) = (0u32, 0u32, 0usize);
        let load = |off: u32, size: usize| -> Option<u32> {
            if off == PROTOCOL {
                return Some(ethertype as u32);
            }
            let at = off.wrapping_sub(NET) as usize;
            let b = ip.get(at..at + size)?;
            Some(b.iter().fold(0u32, |v, &byte| v << 8 | byte as u32))
        };
        loop {
            let i = program[pc];
            pc += 1;
            match i.code {
                LD_H_ABS => {
                    a = match load(i.k, 2) {
                        Some(v) => v,
                        None => return 0,
                    }
                }
                LD_B_ABS => {
                    a = match load(i.k, 1) {
                        Some(v) => v,
                        None => return 0,
                    }
                }
                LD_H_IND => {
                    a = match load(i.k.wrapping_add(x), 2) {
                        Some(v) => v,
                        None => return 0,
                    }
                }
                LD_B_IND => {
                    a = match load(i.k.wrapping_add(x), 1) {
                        Some(v) => v,
                        None => return 0,
                    }
                }
                ADD_X => a = a.wrapping_add(x),
                AND => a &= i.k,
                LSH => a <<= i.k,
                TAX => x = a,
                RET => return i.k,
                JEQ => pc += if a == i.k { i.jt } else { i.jf } as usize,
                JSET => pc += if a & i.k != 0 { i.jt } else { i.jf } as usize,
                other => panic!("unexpected instruction {other:#x}"),
            }
        }
    }

    fn v4(proto: u8, sport: u16, dport: u16, frag: u16, ihl: u8) -> Vec<u8> {
        let mut p = vec![0u8; ihl as usize * 4 + 8];
        p[0] = 0x40 | ihl;
        p[6..8].copy_from_slice(&frag.to_be_bytes());
        p[9] = proto;
        let t = ihl as usize * 4;
        p[t..t + 2].copy_from_slice(&sport.to_be_bytes());
        p[t + 2..t + 4].copy_from_slice(&dport.to_be_bytes());
        p
    }

    fn v6(next: u8, sport: u16, dport: u16) -> Vec<u8> {
        let mut p = vec![0u8; 48];
        p[0] = 0x60;
        p[6] = next;
        p[40..42].copy_from_slice(&sport.to_be_bytes());
        p[42..44].copy_from_slice(&dport.to_be_bytes());
        p
    }

    /// An ICMP error of `icmp_type` (outer header of `ihl` words) quoting an IPv4 header
    /// of `quoted_ihl` words and the first 8 bytes of a `proto` segment.
    fn v4_icmp(icmp_type: u8, ihl: u8, quoted_ihl: u8, proto: u8, ports: (u16, u16)) -> Vec<u8> {
        let mut p = v4(1, 0, 0, 0, ihl);
        p[ihl as usize * 4] = icmp_type;
        p.extend(v4(proto, ports.0, ports.1, 0, quoted_ihl));
        p
    }

    /// An ICMPv6 message of `icmp_type` quoting an IPv6 header and 8 bytes of `next`.
    fn v6_icmp(icmp_type: u8, next: u8, ports: (u16, u16)) -> Vec<u8> {
        let mut p = v6(58, 0, 0);
        p[40] = icmp_type;
        p.extend(v6(next, ports.0, ports.1));
        p
    }

    #[test]
    fn port_filter_keeps_unreachable_errors_about_the_port() {
        let f = port_filter(8080, 256);
        for (ihl, quoted_ihl) in [(5, 5), (6, 5), (5, 7)] {
            let error = |ports| v4_icmp(3, ihl, quoted_ihl, 6, ports);
            assert_eq!(
                run(&f, 0x0800, &error((40000, 8080))),
                256,
                "{ihl} {quoted_ihl}"
            );
            assert_eq!(
                run(&f, 0x0800, &error((8080, 40000))),
                256,
                "{ihl} {quoted_ihl}"
            );
            assert_eq!(
                run(&f, 0x0800, &error((40000, 80))),
                0,
                "{ihl} {quoted_ihl}"
            );
        }
        assert_eq!(
            run(&f, 0x0800, &v4_icmp(11, 5, 5, 6, (1, 8080))),
            0,
            "time exceeded"
        );
        assert_eq!(
            run(&f, 0x0800, &v4_icmp(3, 5, 5, 17, (1, 8080))),
            0,
            "quoting UDP"
        );
        let mut cut = v4_icmp(3, 5, 5, 6, (1, 8080));
        cut.truncate(20 + 8 + 20 + 2);
        assert_eq!(run(&f, 0x0800, &cut), 0, "quote cut before its ports");
        assert_eq!(run(&f, 0x86dd, &v6_icmp(1, 6, (40000, 8080))), 256);
        assert_eq!(run(&f, 0x86dd, &v6_icmp(1, 6, (8080, 40000))), 256);
        assert_eq!(run(&f, 0x86dd, &v6_icmp(1, 6, (40000, 80))), 0);
        assert_eq!(
            run(&f, 0x86dd, &v6_icmp(1, 17, (1, 8080))),
            0,
            "quoting UDP"
        );
        assert_eq!(
            run(&f, 0x86dd, &v6_icmp(128, 6, (1, 8080))),
            0,
            "echo request"
        );
    }

    #[test]
    fn port_filter_decisions() {
        let f = port_filter(8080, 256);
        assert_eq!(run(&f, 0x0800, &v4(6, 40000, 8080, 0, 5)), 256);
        assert_eq!(run(&f, 0x0800, &v4(17, 8080, 53, 0, 5)), 256);
        assert_eq!(
            run(&f, 0x0800, &v4(6, 40000, 8080, 0, 7)),
            256,
            "IPv4 options"
        );
        assert_eq!(run(&f, 0x0800, &v4(6, 40000, 80, 0, 5)), 0);
        assert_eq!(run(&f, 0x0800, &v4(1, 8080, 8080, 0, 5)), 0, "ICMP");
        assert_eq!(
            run(&f, 0x0800, &v4(6, 40000, 8080, 0x20, 5)),
            0,
            "later fragment"
        );
        assert_eq!(run(&f, 0x86dd, &v6(6, 8080, 1)), 256);
        assert_eq!(run(&f, 0x86dd, &v6(17, 1, 8080)), 256);
        assert_eq!(run(&f, 0x86dd, &v6(6, 1, 2)), 0);
        assert_eq!(
            run(&f, 0x86dd, &v6(0, 1, 2)),
            256,
            "extension headers go to user space"
        );
        assert_eq!(run(&f, 0x86dd, &v6(58, 8080, 8080)), 0, "ICMPv6");
        assert_eq!(run(&f, 0x0806, &[0u8; 28]), 0, "ARP");
        assert_eq!(run(&accept_all(96), 0x0806, &[]), 96);
    }
}
