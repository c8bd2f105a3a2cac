//! Connections fed hand-made segments: handshake, bytes, retransmissions, close classes.

use super::*;

const REQUEST: &[u8] = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";
const RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";

fn seg(seq: u32, ack: u32, flags: u8, payload: &[u8]) -> TcpSegment<'_> {
    TcpSegment {
        src_port: 0,
        dst_port: 0,
        seq,
        ack,
        flags,
        window: 0,
        payload_len: payload.len() as u32,
        payload,
    }
}

fn connection() -> Connection {
    Connection::new(
        Family::V4,
        "10.0.0.1:40000".parse().unwrap(),
        "10.0.0.2:80".parse().unwrap(),
        1000,
    )
}

/// Client ISN 100, server ISN 500; times in µs × 1000.
fn handshake(c: &mut Connection) {
    c.add(1_000, true, &seg(100, 0, TCP_SYN, b""), 60);
    c.add(1_500, false, &seg(500, 101, TCP_SYN | TCP_ACK, b""), 60);
    c.add(2_200, true, &seg(101, 501, TCP_ACK, b""), 52);
}

fn request(c: &mut Connection) {
    c.add(
        3_000,
        true,
        &seg(101, 501, TCP_ACK | 0x08, REQUEST),
        52 + REQUEST.len() as u32,
    );
}

fn respond(c: &mut Connection, body: &[u8]) {
    c.add(
        4_000,
        false,
        &seg(501, 101 + REQUEST.len() as u32, TCP_ACK, body),
        52 + body.len() as u32,
    );
}

#[test]
fn normal_exchange() {
    let mut c = connection();
    handshake(&mut c);
    request(&mut c);
    respond(&mut c, RESPONSE);
    let (cs, ss) = (101 + REQUEST.len() as u32, 501 + RESPONSE.len() as u32);
    c.add(5_000, true, &seg(cs, ss, TCP_ACK, b""), 52);
    c.add(6_000, true, &seg(cs, ss, TCP_ACK | TCP_FIN, b""), 52);
    c.add(6_500, false, &seg(ss, cs + 1, TCP_ACK | TCP_FIN, b""), 52);
    c.add(7_000, true, &seg(cs + 1, ss + 1, TCP_ACK, b""), 52);
    assert_eq!(c.handshake_ns(), Some(1_200));
    assert_eq!(
        c.delay_ns(),
        Some(2_000),
        "request at 3000 → last ACK before FIN at 5000"
    );
    assert_eq!(
        (c.dirs[0].unique_bytes, c.dirs[1].unique_bytes),
        (REQUEST.len() as u64, RESPONSE.len() as u64)
    );
    assert_eq!((c.dirs[0].packets, c.dirs[1].packets), (6, 3));
    assert_eq!(
        (c.dirs[0].retransmissions, c.dirs[1].retransmissions),
        (0, 0)
    );
    assert_eq!(
        (c.http.requests, c.http.responses, c.http.complete),
        (1, 1, 1)
    );
    assert_eq!(c.close(), Close::Normal);
    assert_eq!(end_key(&c), "fin");
    let bits = (REQUEST.len() + RESPONSE.len()) as f64 * 8.0;
    assert!((c.throughput_mbps().unwrap() - bits / 2e-6 / 1e6).abs() < 1e-9);
}

#[test]
fn retransmissions_do_not_count_twice() {
    let mut c = connection();
    handshake(&mut c);
    request(&mut c);
    request(&mut c); // the same segment again
    respond(&mut c, &RESPONSE[..20]);
    respond(&mut c, RESPONSE); // overlaps the first 20 bytes
    assert_eq!(c.dirs[0].retransmissions, 1);
    assert_eq!(c.dirs[0].unique_bytes, REQUEST.len() as u64);
    assert_eq!(
        (c.dirs[1].retransmissions, c.dirs[1].retransmitted_bytes),
        (1, 20)
    );
    assert_eq!(c.dirs[1].unique_bytes, RESPONSE.len() as u64);
    assert_eq!(c.http.requests, 1);
    c.add(9_000, true, &seg(100, 0, TCP_SYN, b""), 60); // a late copy of the SYN
    assert_eq!(c.dirs[0].retransmissions, 2);
    assert!(!c.is_new_syn(100) && c.is_new_syn(7777));
}

#[test]
fn keepalive_is_not_a_retransmission() {
    let mut c = connection();
    handshake(&mut c);
    request(&mut c);
    let next = 101 + REQUEST.len() as u32;
    c.add(9_000, true, &seg(next - 1, 501, TCP_ACK, b""), 52);
    c.add(9_001, true, &seg(next - 1, 501, TCP_ACK, b"\0"), 53);
    assert_eq!(c.dirs[0].retransmissions, 0);
}

#[test]
fn refused_and_unanswered() {
    let mut c = connection();
    c.add(1_000, true, &seg(100, 0, TCP_SYN, b""), 60);
    assert_eq!(c.close(), Close::Timeout);
    assert_eq!(end_key(&c), "open");
    c.add(1_100, false, &seg(0, 101, TCP_RST | TCP_ACK, b""), 40);
    assert_eq!(c.close(), Close::Refused);
    assert_eq!(c.handshake_ns(), None);
    assert_eq!(end_key(&c), "rst");
}

#[test]
fn unanswered_syn_with_an_icmp_error_is_unreachable() {
    let mut c = connection();
    c.add(1_000, true, &seg(100, 0, TCP_SYN, b""), 60);
    c.unreachable_ns = Some(2_000);
    assert_eq!(c.close(), Close::Unreachable);
}

#[test]
fn server_reset_midway() {
    let mut c = connection();
    handshake(&mut c);
    request(&mut c);
    c.add(4_000, false, &seg(501, 128, TCP_RST | TCP_ACK, b""), 40);
    assert_eq!(c.close(), Close::Reset);
    // No response: no delay (not 0 µs), and no throughput over a made-up window.
    assert_eq!((c.delay_ns(), c.throughput_mbps()), (None, None));
}

#[test]
fn truncated_body_then_close_is_a_protocol_error() {
    let mut c = connection();
    handshake(&mut c);
    request(&mut c);
    respond(&mut c, &RESPONSE[..RESPONSE.len() - 2]);
    c.add(
        5_000,
        false,
        &seg(501 + RESPONSE.len() as u32 - 2, 128, TCP_ACK | TCP_FIN, b""),
        52,
    );
    assert_eq!(c.close(), Close::ProtocolError);
}

#[test]
fn client_giving_up_is_a_timeout() {
    let mut c = connection();
    handshake(&mut c);
    request(&mut c);
    let next = 101 + REQUEST.len() as u32;
    c.add(9_000, true, &seg(next, 501, TCP_ACK | TCP_FIN, b""), 52);
    assert_eq!(c.close(), Close::Timeout);
    assert_eq!(c.delay_ns(), None, "no response: no delay");
    assert_eq!(c.throughput_mbps(), None, "a request without a delay");
}

#[test]
fn a_response_acknowledged_only_by_the_fin_has_no_delay() {
    let mut c = connection();
    handshake(&mut c);
    request(&mut c);
    respond(&mut c, RESPONSE);
    let (cs, ss) = (101 + REQUEST.len() as u32, 501 + RESPONSE.len() as u32);
    c.add(6_000, true, &seg(cs, ss, TCP_ACK | TCP_FIN, b""), 52);
    assert_eq!(c.close(), Close::Normal);
    assert_eq!(
        c.delay_ns(),
        None,
        "the last ACK before the FIN is the request's own"
    );
}

#[test]
fn without_a_request_throughput_is_over_the_lifetime() {
    let mut c = connection();
    handshake(&mut c);
    // The server speaks first (a banner), the client never sends payload.
    c.add(3_000, false, &seg(501, 101, TCP_ACK, b"SSH-2.0-x\r\n"), 63);
    c.add(4_000, true, &seg(101, 512, TCP_ACK, b""), 52);
    c.add(5_000, true, &seg(101, 512, TCP_ACK | TCP_FIN, b""), 52);
    assert_eq!((c.request_ns, c.delay_ns()), (None, None));
    let lifetime_s = (5_000 - 1_000) as f64 / 1e9;
    let expected = 11.0 * 8.0 / lifetime_s / 1e6;
    assert!((c.throughput_mbps().unwrap() - expected).abs() < 1e-9);
}

#[test]
fn a_segment_lost_before_the_capture_point_and_sent_again_is_counted_once_in_order() {
    // Captured at the client: the server's middle segment was lost upstream, so its
    // resend arrives after the FIN. Every byte arrived once: a normal response.
    let mut c = connection();
    handshake(&mut c);
    request(&mut c);
    let (cs, ss) = (101 + REQUEST.len() as u32, 501u32);
    let (a, b, tail) = (&RESPONSE[..20], &RESPONSE[20..30], &RESPONSE[30..]);
    c.add(4_000, false, &seg(ss, cs, TCP_ACK, a), 72);
    c.add(4_100, false, &seg(ss + 30, cs, TCP_ACK | TCP_FIN, tail), 72);
    c.add(4_200, true, &seg(cs, ss + 20, TCP_ACK, b""), 52);
    c.add(5_000, false, &seg(ss + 20, cs, TCP_ACK, b), 62);
    let end = ss + RESPONSE.len() as u32 + 1;
    c.add(5_100, true, &seg(cs, end, TCP_ACK, b""), 52);
    c.add(5_200, true, &seg(cs, end, TCP_ACK | TCP_FIN, b""), 52);
    assert_eq!(c.dirs[1].unique_bytes, RESPONSE.len() as u64);
    assert_eq!(
        (c.dirs[1].retransmissions, c.dirs[1].retransmitted_bytes),
        (1, 0),
        "sent again after the segments beyond it, but new at the capture point"
    );
    assert_eq!((c.http.responses, c.http.complete), (1, 1));
    assert_eq!(c.close(), Close::Normal);
    assert_eq!(c.delay_ns(), Some(5_100 - 3_000));
}

#[test]
fn a_resend_that_repacketizes_is_read_for_its_new_bytes() {
    let mut c = connection();
    handshake(&mut c);
    request(&mut c);
    let cs = 101 + REQUEST.len() as u32;
    respond(&mut c, &RESPONSE[..20]);
    respond(&mut c, RESPONSE); // the first 20 bytes again, then the rest
    let end = 501 + RESPONSE.len() as u32;
    c.add(6_000, false, &seg(end, cs, TCP_ACK | TCP_FIN, b""), 52);
    assert_eq!((c.http.responses, c.http.complete), (1, 1));
    assert_eq!(c.close(), Close::Normal);
}

#[test]
fn the_handshake_rtt_is_timed_from_the_syn_that_was_answered() {
    // The first SYN was lost past the capture point; the client sent it again 1 s later.
    let mut c = connection();
    c.add(1_000, true, &seg(100, 0, TCP_SYN, b""), 60);
    c.add(1_000_001_000, true, &seg(100, 0, TCP_SYN, b""), 60);
    c.add(
        1_000_001_500,
        false,
        &seg(500, 101, TCP_SYN | TCP_ACK, b""),
        60,
    );
    c.add(1_000_002_200, true, &seg(101, 501, TCP_ACK, b""), 52);
    assert_eq!(c.handshake_ns(), Some(1_200), "as tshark's initial_rtt");
    assert_eq!(c.dirs[0].retransmissions, 1);
    assert_eq!(
        c.first_ns, 1_000,
        "the connection still began with the first SYN"
    );
}

/// A capture that began inside a keep-alive connection (no SYN) sees the end of a
/// response first: its HTTP is read from the next status line on, and the responses
/// after it are counted. Before, the tail was taken for bytes that are not HTTP: 0
/// responses for 2 requests, and the connection a timeout.
#[test]
fn a_connection_joined_in_the_middle_counts_the_responses_after_it() {
    let mut c = connection();
    let (mut cs, mut ss) = (1_000u32, 9_000u32);
    // The last bytes of a body the capture missed the start of.
    c.add(1_000, false, &seg(ss, cs, TCP_ACK, b"lo, world"), 61);
    ss += 9;
    for t in [2_000, 4_000] {
        c.add(t, true, &seg(cs, ss, TCP_ACK | 0x08, REQUEST), 79);
        cs += REQUEST.len() as u32;
        c.add(t + 500, false, &seg(ss, cs, TCP_ACK, RESPONSE), 92);
        ss += RESPONSE.len() as u32;
    }
    c.add(6_000, true, &seg(cs, ss, TCP_ACK | TCP_FIN, b""), 52);
    c.add(6_500, false, &seg(ss, cs + 1, TCP_ACK | TCP_FIN, b""), 52);
    assert_eq!(
        (c.http.requests, c.http.responses, c.http.complete),
        (2, 2, 2)
    );
    assert!(!c.http.not_http);
    assert_eq!(c.close(), Close::Normal);
    // With its SYN, the same first bytes are not HTTP.
    let mut c = connection();
    handshake(&mut c);
    c.add(3_000, false, &seg(501, 101, TCP_ACK, b"lo, world"), 61);
    assert!(c.http.not_http);
}

/// Captured at the client: the server sent the rest of a short response and its FIN, but
/// a segment before them was lost upstream; `resend_at` is when its resend arrives, the
/// client having given up (FIN) at 9000.
fn short_response_with_a_hole(resend_at: Option<u64>) -> Connection {
    let mut c = connection();
    handshake(&mut c);
    request(&mut c);
    let (cs, ss) = (101 + REQUEST.len() as u32, 501u32);
    // 18 of the 20 body bytes announced: the head and 6 bytes, a hole of 5, then 7.
    let short = b"HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\nabcdefghijklmnopqr";
    let (a, b, tail) = (&short[..45], &short[45..50], &short[50..]);
    c.add(4_000, false, &seg(ss, cs, TCP_ACK, a), 97);
    c.add(4_100, false, &seg(ss + 50, cs, TCP_ACK | TCP_FIN, tail), 59);
    c.add(4_200, true, &seg(cs, ss + 45, TCP_ACK, b""), 52);
    let resend = |c: &mut Connection, at| c.add(at, false, &seg(ss + 45, cs, TCP_ACK, b), 57);
    if let Some(at) = resend_at.filter(|&at| at < 9_000) {
        resend(&mut c, at);
    }
    c.add(9_000, true, &seg(cs, ss + 45, TCP_ACK | TCP_FIN, b""), 52);
    if let Some(at) = resend_at.filter(|&at| at > 9_000) {
        resend(&mut c, at);
        c.add(at + 100, true, &seg(cs + 1, 0, TCP_RST, b""), 40);
    }
    c
}

#[test]
fn a_short_response_whose_close_the_client_never_read_is_a_timeout() {
    // Before 2026-11-24 the FIN counted when seen, not when reached in order: a client
    // that timed out waiting for the hole to be filled was called protocol_error, where
    // `run` (the client) recorded TIMEOUT.
    for resend_at in [None, Some(9_500)] {
        let c = short_response_with_a_hole(resend_at);
        assert_eq!(c.dirs[1].fin_ns, Some(4_100));
        assert_eq!((c.http.responses, c.http.complete), (1, 0));
        assert_eq!(c.close(), Close::Timeout, "resend at {resend_at:?}");
    }
    // Filled before the client gave up: it read the close after a short body.
    let c = short_response_with_a_hole(Some(5_000));
    assert_eq!(c.close(), Close::ProtocolError);
}

#[test]
fn a_reset_after_the_client_gave_up_is_a_timeout() {
    // Captured on a shaped link: the server's RST answering `/reset` was dropped in its
    // queue; the client gave up after `-s 2` (FIN), and the server's kernel answered that
    // FIN with a RST. `run` recorded TIMEOUT; before 2026-11-24 this was `reset`.
    let mut c = connection();
    handshake(&mut c);
    request(&mut c);
    let cs = 101 + REQUEST.len() as u32;
    c.add(2_000_000, true, &seg(cs, 501, TCP_ACK | TCP_FIN, b""), 52);
    c.add(2_200_000, false, &seg(501, 0, TCP_RST, b""), 40);
    assert_eq!(end_key(&c), "rst");
    assert_eq!(c.close(), Close::Timeout);
    // Reset before the client closed: the client's request ended in the reset.
    let mut c = connection();
    handshake(&mut c);
    request(&mut c);
    c.add(4_000, false, &seg(501, cs, TCP_RST | TCP_ACK, b""), 40);
    c.add(5_000, true, &seg(cs, 501, TCP_ACK | TCP_FIN, b""), 52);
    assert_eq!(c.close(), Close::Reset);
}

#[test]
fn a_syn_ack_after_the_client_gave_up_connecting_is_a_timeout() {
    // `run -s 1` on a shaped link: the SYN/ACK came 1.04 s after the SYN, the client's
    // connect had timed out, and its kernel answered with a RST. `run` recorded TIMEOUT
    // (in connect); before 2026-11-24 this was `reset`.
    let mut c = connection();
    c.add(1_000, true, &seg(100, 0, TCP_SYN, b""), 60);
    c.add(
        1_041_000_000,
        false,
        &seg(500, 101, TCP_SYN | TCP_ACK, b""),
        60,
    );
    c.add(1_041_010_000, true, &seg(101, 0, TCP_RST, b""), 40);
    assert_eq!((c.handshake_ns(), end_key(&c)), (None, "rst"));
    assert_eq!(c.close(), Close::Timeout);
    // A client that connected and then reset, sending nothing: a reset, as before.
    let mut c = connection();
    handshake(&mut c);
    c.add(3_000, true, &seg(101, 501, TCP_RST | TCP_ACK, b""), 40);
    assert_eq!(c.close(), Close::Reset);
}

#[test]
fn a_response_completed_after_the_client_closed_and_reset_is_a_timeout() {
    // `run -s 1` on a shaped link: the client gave up (FIN) with a hole in the response;
    // the resend that completed it arrived after, and the closed socket answered with a
    // RST. `run` recorded TIMEOUT; before 2026-11-24 this was `normal`.
    let mut c = connection();
    handshake(&mut c);
    request(&mut c);
    let (cs, ss) = (101 + REQUEST.len() as u32, 501u32);
    let (a, b, tail) = (&RESPONSE[..40], &RESPONSE[40..41], &RESPONSE[41..]);
    c.add(4_000, false, &seg(ss, cs, TCP_ACK, a), 92);
    c.add(4_100, false, &seg(ss + 41, cs, TCP_ACK, tail), 54);
    c.add(9_000, true, &seg(cs, ss + 40, TCP_ACK | TCP_FIN, b""), 52);
    c.add(9_500, false, &seg(ss + 40, cs, TCP_ACK, b), 53);
    assert_eq!((c.http.responses, c.http.complete), (1, 1));
    // Read as a half-close while the client has not reset: answered.
    assert_eq!(c.close(), Close::Normal);
    c.add(9_510, true, &seg(cs + 1, 0, TCP_RST, b""), 40);
    assert_eq!(c.close(), Close::Timeout);
}

/// A client that sends its request, shuts down its sending side (a bare FIN) and reads
/// on, then a response from the server after that FIN: `body` and the server's FIN. The
/// client acknowledges both with plain ACKs, as a half-closed socket does.
fn half_closed_client_answered(body: &[u8]) -> Connection {
    let mut c = connection();
    handshake(&mut c);
    request(&mut c);
    let cs = 101 + REQUEST.len() as u32;
    c.add(3_100, true, &seg(cs, 501, TCP_ACK | TCP_FIN, b""), 52);
    let ss = 501 + body.len() as u32;
    c.add(4_000, false, &seg(501, cs + 1, TCP_ACK | 0x08, body), 52);
    c.add(4_100, true, &seg(cs + 1, ss, TCP_ACK, b""), 52);
    c.add(4_200, false, &seg(ss, cs + 1, TCP_ACK | TCP_FIN, b""), 52);
    c.add(4_300, true, &seg(cs + 1, ss + 1, TCP_ACK, b""), 52);
    c
}

#[test]
fn a_client_reading_after_a_bare_fin_is_timed_to_its_last_ack() {
    // Captured on lo: a client's request, shutdown(SHUT_WR), then a response ending at
    // the server's close (no Content-Length) read to the end. Normal, as before; but its
    // delay was None (the last ACK before the FIN was the request's own), so every
    // half-closing client's connection was left out of the delay figures.
    let c = half_closed_client_answered(b"HTTP/1.1 200 OK\r\n\r\nhello, until the close\n");
    assert_eq!((c.http.responses, c.http.complete), (1, 1));
    assert_eq!(c.close(), Close::Normal);
    assert_eq!(
        c.delay_ns(),
        Some(1_300),
        "request at 3000 → ACK of the FIN at 4300"
    );
    assert!(c.throughput_mbps().is_some());
    // With Content-Length, likewise.
    let c = half_closed_client_answered(RESPONSE);
    assert_eq!((c.close(), c.delay_ns()), (Close::Normal, Some(1_300)));
}

#[test]
fn a_short_body_closed_while_the_client_reads_after_a_bare_fin_is_a_protocol_error() {
    // `dualbench serve`'s `/close` (a head announcing 1024 bytes, then FIN) to a client
    // that had shut down its sending side: it read the head and the close, a truncated
    // response. Before 2026-11-24 this was `timeout`, as if the client had gone.
    let c = half_closed_client_answered(&RESPONSE[..RESPONSE.len() - 2]);
    assert_eq!(c.close(), Close::ProtocolError);
    assert_eq!(c.delay_ns(), Some(1_300));
    // A client that closed outright answers the data after its FIN with a RST: it read
    // neither the head nor the close, its request timed out, and it has no delay.
    let mut c = connection();
    handshake(&mut c);
    request(&mut c);
    let cs = 101 + REQUEST.len() as u32;
    c.add(3_100, true, &seg(cs, 501, TCP_ACK | TCP_FIN, b""), 52);
    let body = &RESPONSE[..RESPONSE.len() - 2];
    c.add(4_000, false, &seg(501, cs + 1, TCP_ACK | TCP_FIN, body), 52);
    c.add(4_100, true, &seg(cs + 1, 0, TCP_RST, b""), 40);
    assert!(!c.client_read_after_fin);
    assert_eq!((c.close(), c.delay_ns()), (Close::Timeout, None));
}
