//! CSV downloads against a real loopback server that sends its body slowly, stalls, or cuts
//! the connection: the attempt timeout bounds waiting, not the size of a download.
#![cfg(feature = "audit")]

use pubapi_sdk::types::AuditReportKind;
use pubapi_sdk_ext::audit::{CsvError, ReportLocation};
use pubapi_sdk_ext::{Client, SecretToken};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// How the server sends the body after the head.
#[derive(Clone, Copy)]
enum Body {
    /// `chunks` chunks of `size` bytes, `gap` apart, then the end.
    Slow {
        chunks: usize,
        size: usize,
        gap: Duration,
    },
    /// `sent` bytes, then silence for `silence` (longer than the attempt timeout).
    Stall { sent: usize, silence: Duration },
    /// `sent` of the `Content-Length` bytes, then the connection closes.
    Cut { sent: usize, length: usize },
}

/// Serves one CSV response on a loopback port and returns the base URL.
async fn serve(body: Body) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut request = vec![0u8; 8192];
        let _ = socket.read(&mut request).await;
        let line = |n: usize| vec![b'x'; n.saturating_sub(1)].into_iter().chain([b'\n']);
        match body {
            Body::Slow { chunks, size, gap } => {
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/csv\r\ncontent-length: {}\r\n\r\n",
                    chunks * size
                );
                socket.write_all(head.as_bytes()).await.unwrap();
                for _ in 0..chunks {
                    let chunk: Vec<u8> = line(size).collect();
                    if socket.write_all(&chunk).await.is_err() {
                        return;
                    }
                    tokio::time::sleep(gap).await;
                }
            }
            Body::Stall { sent, silence } => {
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/csv\r\ncontent-length: {}\r\n\r\n",
                    sent * 2
                );
                socket.write_all(head.as_bytes()).await.unwrap();
                socket
                    .write_all(&line(sent).collect::<Vec<_>>())
                    .await
                    .unwrap();
                tokio::time::sleep(silence).await;
            }
            Body::Cut { sent, length } => {
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/csv\r\ncontent-length: {length}\r\n\r\n"
                );
                socket.write_all(head.as_bytes()).await.unwrap();
                socket
                    .write_all(&line(sent).collect::<Vec<_>>())
                    .await
                    .unwrap();
            }
        }
        let _ = socket.shutdown().await;
    });
    format!("http://{addr}/pubapi")
}

fn client(base_url: &str, attempt_timeout: Duration) -> Client {
    Client::builder()
        .isolated_budget()
        .base_url(base_url)
        .token(SecretToken::try_from("t").unwrap())
        .attempt_timeout(attempt_timeout)
        .build()
        .unwrap()
}

fn report() -> ReportLocation {
    ReportLocation {
        kind: AuditReportKind::Logins,
        id: "j1".into(),
    }
}

/// Serves `body` and copies the report into memory with a 200 ms attempt timeout: what the
/// copy returned, and the bytes written.
async fn copy_with_a_200_ms_attempt_timeout(body: Body) -> (Result<u64, CsvError>, Vec<u8>) {
    let base = serve(body).await;
    let mut out = Vec::new();
    let copied = client(&base, Duration::from_millis(200))
        .audit()
        .csv(&report())
        .await
        .unwrap()
        .copy_to(&mut out)
        .await;
    (copied, out)
}

#[tokio::test]
async fn a_download_longer_than_the_attempt_timeout_completes_while_data_flows() {
    // 12 chunks 50 ms apart: 600 ms of body against a 200 ms attempt timeout.
    let (written, out) = copy_with_a_200_ms_attempt_timeout(Body::Slow {
        chunks: 12,
        size: 1000,
        gap: Duration::from_millis(50),
    })
    .await;
    assert_eq!(written.unwrap(), 12_000);
    assert_eq!(out.len(), 12_000);
}

#[tokio::test]
async fn a_stalled_download_ends_with_the_bytes_received() {
    let (result, _) = copy_with_a_200_ms_attempt_timeout(Body::Stall {
        sent: 700,
        silence: Duration::from_secs(3),
    })
    .await;
    match result {
        Err(error @ CsvError::Broken { received: 700, .. }) => {
            assert!(error.to_string().contains("after 700 bytes"), "{error}");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_cut_download_is_an_error_not_a_short_file() {
    let base = serve(Body::Cut {
        sent: 500,
        length: 5000,
    })
    .await;
    let mut rows = client(&base, Duration::from_secs(5))
        .audit()
        .csv(&report())
        .await
        .unwrap()
        .rows();
    let mut outcome = None;
    while let Some(row) = rows.next().await {
        if let Err(error) = row {
            outcome = Some(error);
            break;
        }
    }
    assert!(
        matches!(outcome, Some(CsvError::Broken { received: 500, .. })),
        "{outcome:?}"
    );
}
