//! Redirects are never followed: the audit job's 303 must reach the SDK, and no credential or
//! impersonation header may follow a redirect to another origin. Real sockets (httpmock).

use httpmock::prelude::*;
#[cfg(feature = "audit")]
use pubapi_httpmock::MockServerExt;
#[cfg(feature = "audit")]
use pubapi_sdk::types::{AuditJobState, AuditJobStatus, AuditReportKind};
use pubapi_sdk_ext::prelude::*;
use pubapi_sdk_ext::{ActAs, Client, Error, SecretToken};

const TOKEN: &str = "CANARY-redirect-token";

fn client(server: &MockServer) -> Client {
    Client::builder()
        .isolated_budget()
        .base_url(&server.url("/pubapi"))
        .token(SecretToken::try_from(TOKEN).unwrap())
        .build()
        .unwrap()
}

#[tokio::test]
async fn redirect_to_another_origin_carries_no_credentials_because_it_is_not_followed() {
    let origin = MockServer::start_async().await;
    let foreign = MockServer::start_async().await;
    let redirect = origin
        .mock_async(|when, then| {
            when.method(GET).path("/pubapi/v1/whoami");
            then.status(302).header("location", foreign.url("/steal"));
        })
        .await;
    let stolen = foreign
        .mock_async(|when, then| {
            when.any_request();
            then.status(200);
        })
        .await;

    let result = client(&origin)
        .act_as(ActAs::username("bob").unwrap())
        .sdk()
        .whoami()
        .send()
        .await
        .map_err(Error::from);

    redirect.assert_calls_async(1).await;
    stolen.assert_calls_async(0).await;
    match result {
        Err(Error::UnexpectedStatus(e)) => assert_eq!(e.status(), 302),
        other => panic!("{other:?}"),
    }
}

#[cfg(feature = "audit")]
#[tokio::test]
async fn audit_job_see_other_reaches_the_caller_with_its_location() {
    let server = MockServer::start_async().await;
    let job = server.get_audit_job(|when, then| {
        when.id("j1");
        then.see_other(&AuditJobStatus {
            status: AuditJobState::Completed,
        })
        .location("/pubapi/v1/audit/logins/j1");
    });
    let report = server.get_audit_report(|when, then| {
        when.type_(AuditReportKind::Logins).id("j1");
        then.ok_csv("");
    });
    let client = client(&server);
    let error = client
        .sdk()
        .get_audit_job()
        .id("j1")
        .send()
        .await
        .unwrap_err();
    match error {
        pubapi_sdk::Error::UnexpectedResponse(response) => {
            assert_eq!(response.status(), 303);
            assert_eq!(response.headers()["location"], "/pubapi/v1/audit/logins/j1");
        }
        other => panic!("{other:?}"),
    }
    job.assert_calls_async(1).await;
    report.assert_calls_async(0).await;
}
