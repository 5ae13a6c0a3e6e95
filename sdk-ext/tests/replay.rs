//! A retry sent through reqwest itself (the default transport) is the request the first attempt
//! sent: the policy keeps the usual request without copying it and takes the URL back from the
//! answer or the error, so these tests go through a real loopback server that records each
//! request's head.

use pubapi_sdk_ext::prelude::*;
use pubapi_sdk_ext::{ActAs, Client, RetryConfig, SecretToken, TokenSource};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

#[path = "support/rotating_token.rs"]
mod rotating_token;
use rotating_token::Rotating;

/// What the server does with one request.
#[derive(Debug, Clone, Copy)]
enum Reply {
    /// Answers this status with a whoami body.
    Status(u16),
    /// Closes the connection without answering.
    HangUp,
}

/// A loopback server that replies `replies` in turn, then 200, and keeps each request's
/// head (request line first, one element per line).
async fn server(replies: Vec<Reply>) -> (String, Arc<Mutex<Vec<Vec<String>>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/pubapi", listener.local_addr().unwrap());
    let heads = Arc::new(Mutex::new(Vec::new()));
    let kept = heads.clone();
    tokio::spawn(async move {
        let mut replies = replies.into_iter();
        loop {
            let (socket, _) = listener.accept().await.unwrap();
            let mut socket = BufReader::new(socket);
            'connection: loop {
                let mut head = Vec::new();
                loop {
                    let mut line = String::new();
                    if socket.read_line(&mut line).await.unwrap_or(0) == 0 {
                        break 'connection;
                    }
                    if line == "\r\n" {
                        break;
                    }
                    head.push(line.trim_end().to_string());
                }
                kept.lock().unwrap().push(head);
                let status = match replies.next().unwrap_or(Reply::Status(200)) {
                    Reply::HangUp => break 'connection,
                    Reply::Status(status) => status,
                };
                let body = r#"{"clientId":"c","username":"u","domain":"d","scopes":[]}"#;
                let answer = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n\
                     content-length: {}\r\n\r\n{body}",
                    body.len()
                );
                if socket.get_mut().write_all(answer.as_bytes()).await.is_err() {
                    break;
                }
            }
        }
    });
    (base, heads)
}

fn client(base: &str, token: impl TokenSource + 'static) -> Client {
    Client::builder()
        .isolated_budget()
        .base_url(base)
        .token_source(Arc::new(token))
        .retry(RetryConfig::default().with_base_backoff(Duration::from_millis(1)))
        .build()
        .unwrap()
}

/// A head's header lines in order of name, the token's left out.
fn headers_but_token(head: &[String]) -> Vec<String> {
    let mut lines: Vec<_> = head[1..]
        .iter()
        .filter(|line| !line.to_ascii_lowercase().starts_with("authorization:"))
        .cloned()
        .collect();
    lines.sort();
    lines
}

fn token_of(head: &[String]) -> String {
    head.iter()
        .find_map(|line| line.strip_prefix("authorization: "))
        .unwrap_or_default()
        .to_string()
}

/// The token a client under test starts with.
fn static_token() -> impl TokenSource {
    pubapi_sdk_ext::token::StaticToken::new(SecretToken::try_from("t0k3n").unwrap())
}

#[tokio::test]
async fn a_retry_sends_the_request_the_first_attempt_sent() {
    for first in [Reply::Status(503), Reply::HangUp] {
        let (base, heads) = server(vec![first]).await;
        let bob = client(&base, static_token()).act_as(ActAs::username("bob").unwrap());
        bob.identity().whoami().await.unwrap();
        let heads = heads.lock().unwrap();
        assert_eq!(heads.len(), 2, "after {first:?}: {heads:?}");
        let (first_attempt, retry) = (&heads[0], &heads[1]);
        assert_eq!(first_attempt[0], retry[0], "after {first:?}");
        assert_eq!(first_attempt[1..].len(), retry[1..].len());
        let (mut sent, mut again) = (first_attempt[1..].to_vec(), retry[1..].to_vec());
        sent.sort();
        again.sort();
        assert_eq!(sent, again, "after {first:?}");
        let lines = sent.join("\n").to_ascii_lowercase();
        for expected in [
            "authorization: bearer t0k3n",
            "x-service-act-as: bob",
            "api-version: ",
            "accept: application/json",
        ] {
            assert!(lines.contains(expected), "{expected} missing from {lines}");
        }
    }
}

#[tokio::test]
async fn a_query_survives_a_retry() {
    let (base, heads) = server(vec![Reply::Status(503)]).await;
    let client = client(&base, static_token());
    let result = client
        .sdk()
        .list_events_v1()
        .folder("/Shared docs/Q1")
        .count(10)
        .id(0)
        .send()
        .await;
    let heads = heads.lock().unwrap();
    assert_eq!(heads.len(), 2, "{heads:?} {result:?}");
    assert_eq!(heads[0][0], heads[1][0]);
    assert!(
        heads[1][0].starts_with("GET /pubapi/v1/events?count=10&folder=/Shared%20docs/Q1&id=0 "),
        "{}",
        heads[1][0]
    );
    assert_eq!(headers_but_token(&heads[0]), headers_but_token(&heads[1]));
}

#[tokio::test]
async fn after_a_401_the_same_request_goes_again_with_the_fresh_token() {
    let (base, heads) = server(vec![Reply::Status(401)]).await;
    let client = client(&base, Rotating::default());
    client.identity().whoami().await.unwrap();
    let heads = heads.lock().unwrap();
    assert_eq!(heads.len(), 2, "{heads:?}");
    assert_eq!(heads[0][0], heads[1][0]);
    assert_eq!(headers_but_token(&heads[0]), headers_but_token(&heads[1]));
    assert_eq!(
        (token_of(&heads[0]), token_of(&heads[1])),
        (
            "Bearer old-token".to_string(),
            "Bearer new-token".to_string()
        )
    );
}
