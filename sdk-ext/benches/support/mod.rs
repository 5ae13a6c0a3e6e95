//! What the benchmarks' loopback servers share.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// Reads one HTTP/1.1 request head (the benchmarks send no bodies) and returns its lines,
/// request line first; `None` when the connection closed or failed.
#[allow(dead_code)]
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

/// Reads past one HTTP/1.1 request head without keeping it, as a server that routes on the
/// request line alone would: one buffer for every line, so a header line costs the server a
/// scan, not a string. `None` when the connection closed or failed.
#[allow(dead_code)]
pub async fn skip_head<R: AsyncBufRead + Unpin>(reader: &mut R, line: &mut Vec<u8>) -> Option<()> {
    loop {
        line.clear();
        match reader.read_until(b'\n', line).await {
            Ok(0) | Err(_) => return None,
            Ok(_) if line == b"\r\n" => return Some(()),
            Ok(_) => {}
        }
    }
}
