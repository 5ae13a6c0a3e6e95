//! January's failed logins as CSV and as JSON events. The CSV goes into the folder given
//! (else a new temporary one): `cargo run -p pubapi-testkit --example audit_report -- DIR`
use pubapi_sdk_ext::audit::{AuditEvent, AuditWait};
use pubapi_sdk_ext::prelude::*;
use pubapi_sdk_ext::types::{AuditFormat, LoginEvent, LoginsAuditRequest};
use std::path::PathBuf;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (client, _sandbox) = pubapi_testkit::example_client().await?;
    let events = [LoginEvent::FailedAttempts];
    let csv = LoginsAuditRequest::new("2026-01-01", "2026-01-31", AuditFormat::Csv, events)?;
    let report = client.audit().run(csv, AuditWait::default()).await?;
    let dir = match std::env::args().nth(1) {
        Some(dir) => PathBuf::from(dir),
        None => std::env::temp_dir().join(format!("pubapi-audit-{}", std::process::id())),
    };
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("failed-logins.csv");
    let mut file = tokio::fs::File::create(&path).await?;
    let bytes = report.csv().await?.copy_to(&mut file).await?;
    println!("{}: {bytes} bytes", path.display());
    report.delete().await?;

    let json = LoginsAuditRequest::new("2026-01-01", "2026-01-31", AuditFormat::Json, events)?;
    let report = client.audit().run(json, AuditWait::default()).await?;
    let mut events = report.events();
    while let Some(event) = events.next().await {
        if let AuditEvent::Logins(login) = event? {
            let (who, from) = (
                login.username.unwrap_or_default(),
                login.ip_address.unwrap_or_default(),
            );
            println!("{} {who} from {from}", login.time.unwrap_or_default());
        }
    }
    report.delete().await?;
    Ok(())
}
