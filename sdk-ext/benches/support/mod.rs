//! What the benchmarks' loopback servers share.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// Reads one HTTP/1.1 request head (the benchmarks send no bodies) and returns its lines,
/// request line first; `None` when the connection closed or failed.
pub async fn read_head<R: AsyncBufRead + Unpin>(reader: &mut R) -> Option<Vec<String>> {
    let mut lines = Vec::new();
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line).await {
            Ok(0) | Err(_) => return None,
            Ok(_) if line == "\r\n" => return Some(lines),
            Ok(_) => lines.push(line),
        }
    }
}
