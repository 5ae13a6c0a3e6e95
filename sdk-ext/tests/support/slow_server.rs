//! A loopback HTTP/1.1 server whose answers come late, trickle, or break off: one request per
//! connection, each answered by the next [`Reply`] of its list (the last one repeats), every
//! request's head kept for the test to read (what arrived on the wire).

use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// One answer: its head after `delay`, then each part of its body after its gap; a
/// `content-length` of `length` (more than the parts hold: the connection closes short).
#[derive(Clone, Debug)]
pub struct Reply {
    pub delay: Duration,
    pub status: u16,
    pub parts: Vec<(Duration, Vec<u8>)>,
    pub length: usize,
}

impl Reply {
    /// A JSON body, whole, after `delay`.
    pub fn json_after(delay: Duration, status: u16, body: &str) -> Reply {
        Reply {
            delay,
            status,
            parts: vec![(Duration::ZERO, body.as_bytes().to_vec())],
            length: body.len(),
        }
    }

    /// `count` parts of one byte of `body`'s text, `gap` apart (the body must be `count`
    /// bytes long).
    pub fn trickle(status: u16, body: &str, gap: Duration) -> Reply {
        Reply {
            delay: Duration::ZERO,
            status,
            parts: body.bytes().map(|b| (gap, vec![b])).collect(),
            length: body.len(),
        }
    }
}

/// What the server saw: each request's head, in order of arrival.
#[derive(Clone, Default)]
pub struct Seen(Arc<Mutex<Vec<String>>>);

impl Seen {
    /// The heads so far.
    pub fn heads(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }

    /// The value of `name` in the head of request `nth` (from 0).
    pub fn header(&self, nth: usize, name: &str) -> Option<String> {
        let heads = self.heads();
        heads.get(nth)?.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.eq_ignore_ascii_case(name)
                .then(|| value.trim().to_owned())
        })
    }
}

/// Serves `replies` on a loopback port; answers the base URL (`http://127.0.0.1:port/pubapi`)
/// and what it sees.
pub async fn serve(replies: Vec<Reply>) -> (String, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Seen::default();
    let kept = seen.clone();
    tokio::spawn(async move {
        let mut next = 0;
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let reply = replies[next.min(replies.len() - 1)].clone();
            next += 1;
            let kept = kept.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                kept.0
                    .lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&head).into_owned());
                tokio::time::sleep(reply.delay).await;
                let text = format!(
                    "HTTP/1.1 {} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    reply.status, reply.length
                );
                if socket.write_all(text.as_bytes()).await.is_err() {
                    return;
                }
                for (gap, part) in reply.parts {
                    tokio::time::sleep(gap).await;
                    if socket.write_all(&part).await.is_err() {
                        return;
                    }
                }
                let _ = socket.flush().await;
            });
        }
    });
    (format!("http://{addr}/pubapi"), seen)
}
