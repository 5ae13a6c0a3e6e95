//! An MCP tool call's cost over the plain SDK call it makes: `whoami` through the SDK's client
//! against a sandbox on loopback, beside the same call as a `tools/call` of the MCP server
//! (rmcp, JSON-RPC over an in-memory pipe, as over stdio less the process boundary) through
//! the same client. The difference of the medians is the server's overhead.
//!
//! `cargo bench -p pubapi-cli --bench mcp`

use criterion::{Criterion, criterion_group, criterion_main};
use pubapi_cli::mcp::Server;
use pubapi_sandbox::{Sandbox, SandboxConfig};
use rmcp::ServiceExt;
use serde_json::{Value, json};
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, WriteHalf};
use tokio::sync::Mutex;

/// The client's end of the pipe: requests written as lines, answers read as lines.
struct Pipe {
    write: WriteHalf<DuplexStream>,
    read: Lines<BufReader<tokio::io::ReadHalf<DuplexStream>>>,
    next_id: u64,
}

impl Pipe {
    async fn send(&mut self, message: Value) {
        let mut line = serde_json::to_vec(&message).unwrap();
        line.push(b'\n');
        self.write.write_all(&line).await.unwrap();
    }

    /// Sends a request and reads lines until its answer.
    async fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        loop {
            let line = self
                .read
                .next_line()
                .await
                .unwrap()
                .expect("the server ended");
            let answer: Value = serde_json::from_str(&line).unwrap();
            if answer["id"] == id {
                return answer;
            }
        }
    }
}

fn overhead(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (sandbox, client, pipe) = runtime.block_on(async {
        let sandbox = Sandbox::start(SandboxConfig::testing()).await;
        let client = sandbox.client_for("admin");
        let server = Server::with_client(client.clone(), 1.0, false, None);
        let (ours, theirs) = tokio::io::duplex(1 << 20);
        let (server_read, server_write) = tokio::io::split(theirs);
        tokio::spawn(async move {
            let running = server.serve((server_read, server_write)).await.unwrap();
            let _ = running.waiting().await;
        });
        let (read, write) = tokio::io::split(ours);
        let mut pipe = Pipe {
            write,
            read: BufReader::new(read).lines(),
            next_id: 0,
        };
        let init = pipe
            .call(
                "initialize",
                json!({"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "bench", "version": "1"}}),
            )
            .await;
        assert!(init["result"].is_object(), "{init}");
        pipe.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        (sandbox, client, Arc::new(Mutex::new(pipe)))
    });
    let mut group = c.benchmark_group("whoami");
    group.bench_function("sdk", |b| {
        b.to_async(&runtime)
            .iter(|| async { client.identity().whoami().await.unwrap() });
    });
    group.bench_function("mcp_tool_call", |b| {
        b.to_async(&runtime).iter(|| async {
            let answer = pipe
                .lock()
                .await
                .call("tools/call", json!({"name": "whoami", "arguments": {}}))
                .await;
            assert_eq!(answer["result"]["isError"], false, "{answer}");
            answer
        });
    });
    group.finish();
    drop(sandbox);
}

criterion_group!(benches, overhead);
criterion_main!(benches);
