//! A service's unit tests of its error paths, written with the typed mocks: each answers one
//! operation with an error body of the area's format (webhooks, AI, general) and checks what
//! the service makes of it. Each test asserts its mock's calls, because httpmock answers a
//! request no mock matches with a 404 of its own, which a test of a 404 path must not mistake
//! for the mock's.

mod support;

use pubapi_httpmock::MockServerExt;
use pubapi_httpmock::httpmock::MockServer;
use pubapi_httpmock::operations::{AskAgentThen, DeleteWebhookThen};
use pubapi_sdk::types::{
    AiError, AuditFormat, GatewayErrorCode, GeneralError, GeneralErrorItem, LoginEvent,
    LoginsAuditRequest, WebhookError,
};
use pubapi_sdk_ext::error::ForbiddenReason;
use pubapi_sdk_ext::{Client, Error, RetryConfig};
use std::time::Duration;

/// The client under test: no pacing, one attempt (each error is seen as it is sent).
fn client(server: &MockServer) -> Client {
    support::client_builder(server)
        .retry(RetryConfig::default().with_max_attempts(1))
        .build()
        .expect("the client builds")
}

// ------------------------------------------------------------------ the service's code

/// Deletes a webhook the service no longer needs: `true` when deleted, `false` when it was
/// already gone (404 `hook_not_found_error`); any other error is the caller's.
async fn delete_stale_webhook(client: &Client, id: &str) -> Result<bool, Error> {
    match client.webhooks().delete(id).await {
        Ok(()) => Ok(true),
        Err(Error::NotFound(_)) => Ok(false),
        Err(other) => Err(other),
    }
}

/// Asks an agent; an agent that no longer exists is `None`, with the platform's code logged.
async fn ask_if_agent_exists(
    client: &Client,
    agent_id: &str,
    question: &str,
) -> Result<Option<String>, Error> {
    match client.agents().ask(agent_id, question).await {
        Ok(asked) => Ok(Some(asked.request_id)),
        Err(Error::NotFound(error)) => {
            assert_eq!(error.code(), Some("AGENT_NOT_FOUND"));
            Ok(None)
        }
        Err(other) => Err(other),
    }
}

/// Starts yesterday's logins report; the problems of a refused request, one a line.
async fn start_logins_report(client: &Client) -> Result<String, Vec<String>> {
    let request = LoginsAuditRequest::new(
        "2026-01-01",
        "2026-01-02",
        AuditFormat::Json,
        [LoginEvent::FailedAttempts],
    )
    .expect("a valid request");
    match client.audit().create(request).await {
        Ok(job) => Ok(job.id),
        Err(Error::InvalidRequest(error)) => Err(error
            .messages()
            .iter()
            .map(|m| m.description.clone().unwrap_or_default())
            .collect()),
        Err(other) => Err(vec![other.to_string()]),
    }
}

// ------------------------------------------------------------------ the tests

/// An error body in the webhooks format: its `code` and `message`, no details.
fn webhook_error(code: &str, message: Option<&str>) -> WebhookError {
    WebhookError {
        code: Some(code.into()),
        message: message.map(Into::into),
        details: None,
    }
}

/// What `delete_stale_webhook` makes of the deletion of `wh-1` answered by `answer`; the
/// mock must have been called once.
async fn delete_answered(answer: impl FnOnce(DeleteWebhookThen)) -> Result<bool, Error> {
    let server = MockServer::start_async().await;
    let mock = server.delete_webhook(|when, then| {
        when.webhook_id("wh-1");
        answer(then);
    });
    let deleted = delete_stale_webhook(&client(&server), "wh-1").await;
    mock.assert();
    deleted
}

/// What `ask_if_agent_exists` makes of the question to `agent-1` answered by `answer`; the
/// mock must have been called once.
async fn ask_answered(answer: impl FnOnce(AskAgentThen)) -> Result<Option<String>, Error> {
    let server = MockServer::start_async().await;
    let mock = server.ask_agent(|when, then| {
        when.agent_id("agent-1");
        answer(then);
    });
    let asked = ask_if_agent_exists(&client(&server), "agent-1", "Summarise Q3").await;
    mock.assert();
    asked
}

#[tokio::test]
async fn delete_stale_webhook_counts_a_404_hook_not_found_as_already_deleted() {
    let deleted = delete_answered(|then| {
        then.not_found(&webhook_error("hook_not_found_error", None));
    });
    assert!(!deleted.await.unwrap());
}

#[tokio::test]
async fn delete_stale_webhook_deletes_on_204() {
    let deleted = delete_answered(|then| {
        then.no_content();
    });
    assert!(deleted.await.unwrap());
}

#[tokio::test]
async fn delete_stale_webhook_passes_a_403_missing_scope_on() {
    let error = delete_answered(|then| {
        then.forbidden(&webhook_error(
            "missing_scope_error",
            Some("scope Service.webhooks required"),
        ));
    })
    .await
    .unwrap_err();
    assert!(
        matches!(&error, Error::Forbidden { reason: ForbiddenReason::MissingScope, error } if error.message() == Some("scope Service.webhooks required")),
        "{error:?}"
    );
}

#[tokio::test]
async fn delete_stale_webhook_passes_a_403_throttle_on_with_its_retry_after() {
    let error = delete_answered(|then| {
        then.forbidden(&WebhookError::default())
            .retry_after(7)
            .x_gateway_error_code(GatewayErrorCode::Err403DeveloperOverQps);
    })
    .await
    .unwrap_err();
    assert!(
        matches!(
            &error,
            Error::Throttled { retry_after: Some(after), .. } if *after == Duration::from_secs(7)
        ),
        "{error:?}"
    );
}

/// The `When` narrows: a mock of one id does not answer another, and httpmock's own 404 for
/// the unmatched request is what the service sees, which only the call count tells apart.
#[tokio::test]
async fn a_mock_of_one_webhook_id_does_not_answer_another() {
    let server = MockServer::start_async().await;
    let other = server.delete_webhook(|when, then| {
        when.webhook_id("wh-1");
        then.no_content();
    });
    let gone = delete_stale_webhook(&client(&server), "wh-2")
        .await
        .unwrap();
    assert!(!gone, "httpmock's 404 reads as 'already gone'");
    other.assert_calls(0);
}

/// Path values are matched as the client encodes them: a space, `+`, non-ASCII text, `#`,
/// `?` and `%`.
#[tokio::test]
async fn an_awkward_webhook_id_is_matched_as_the_client_encodes_it() {
    let server = MockServer::start_async().await;
    let awkward = "v 1+\u{e9}#3?4%5.x";
    let gone = server.delete_webhook(|when, then| {
        when.webhook_id(awkward);
        then.not_found(&WebhookError::default());
    });
    let near_miss = server.delete_webhook(|when, then| {
        // `.` in a regex matches any character: the value is escaped, so `v 1+é#3?4%5Ax` is
        // another id.
        when.webhook_id("v 1+\u{e9}#3?4%5Ax");
        then.no_content();
    });
    assert!(
        !delete_stale_webhook(&client(&server), awkward)
            .await
            .unwrap()
    );
    gone.assert();
    near_miss.assert_calls(0);
}

#[tokio::test]
async fn ask_if_agent_exists_is_none_on_a_404_in_the_ai_format() {
    let answer = ask_answered(|then| {
        then.not_found(&AiError {
            error_code: Some("AGENT_NOT_FOUND".into()),
            error_message: Some("no such agent".into()),
        });
    });
    assert_eq!(answer.await.unwrap(), None);
}

#[tokio::test]
async fn ask_if_agent_exists_passes_a_bodiless_429_on_as_throttled() {
    let error = ask_answered(|then| {
        then.too_many_requests().retry_after(60);
    })
    .await
    .unwrap_err();
    assert!(
        matches!(&error, Error::Throttled { retry_after: Some(after), .. } if *after == Duration::from_secs(60)),
        "{error:?}"
    );
}

#[tokio::test]
async fn start_logins_report_lists_each_problem_of_a_400_in_the_general_format() {
    let server = MockServer::start_async().await;
    let refused = server.create_logins_audit(|when, then| {
        when.x_service_act_as(None);
        then.bad_request(&GeneralError {
            errors: vec![
                GeneralErrorItem {
                    code: Some("invalid_date".into()),
                    description: Some("dateStart is in the future".into()),
                },
                GeneralErrorItem {
                    code: Some("invalid_range".into()),
                    description: Some("the range exceeds 31 days".into()),
                },
            ],
        });
    });
    let problems = start_logins_report(&client(&server)).await.unwrap_err();
    assert_eq!(
        problems,
        ["dateStart is in the future", "the range exceeds 31 days"]
    );
    refused.assert();
}
