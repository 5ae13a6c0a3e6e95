//! January's failed logins as CSV and as JSON events.
//! `cargo run -p pubapi-testkit --example audit_report`
use futures_util::StreamExt;
use pubapi_sdk::types::{AuditFormat, LoginEvent, LoginsAuditRequest};
use pubapi_sdk_ext::audit::{AuditEvent, AuditWait};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (client, _sandbox) = pubapi_testkit::example_client().await?;
    let events = [LoginEvent::FailedAttempts];
    let csv = LoginsAuditRequest::new("2026-01-01", "2026-01-31", AuditFormat::Csv, events)?;
    let report = client.audit().run(csv, AuditWait::default()).await?;
    let mut file = tokio::fs::File::create("failed-logins.csv").await?;
    let bytes = report.csv().await?.copy_to(&mut file).await?;
    println!("failed-logins.csv: {bytes} bytes");
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
