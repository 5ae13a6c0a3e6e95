//! The sandbox with the reference's limits (2 per second, real clock) against 4 concurrent
//! clients of one token making 200 calls: how many the gateway would have throttled.
//!
//! `cargo bench -p pubapi-testkit --bench sandbox_pacing`

use pubapi_sdk_ext::prelude::*;
use pubapi_testkit::sandbox::{ClockConfig, LimitsConfig, Sandbox, SandboxConfig, Violation};
use std::time::Instant;

fn main() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let config = SandboxConfig::testing()
            .with_clock(ClockConfig::real())
            .with_limits(LimitsConfig::reference());
        let sandbox = Sandbox::start(config).await;
        let started = Instant::now();
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..4 {
            // Four clients built separately with the same token: one budget in the process.
            let client = sandbox.client_for("admin");
            tasks.spawn(async move {
                for _ in 0..50 {
                    client.sdk().whoami().send().await.unwrap();
                }
            });
        }
        tasks.join_all().await;
        let counters = sandbox.counters();
        println!(
            "4 clients of one token, 200 calls in {:.1} s: {} OVER_QPS, {} violations in all",
            started.elapsed().as_secs_f64(),
            counters.violations_of(Violation::OverQps),
            counters.total_violations()
        );
    });
}
