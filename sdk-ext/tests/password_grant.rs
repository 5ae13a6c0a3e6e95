//! The password grant of the platform's clients (`client_id`, `username`, `password`,
//! `grant_type=password` as a form POST to `/puboauth/token`) against a mock that answers as
//! an OAuth 2.0 token endpoint does (RFC 6749 5.1 and 5.2; 409 with `Retry-After` when
//! throttled, reference 7).

use httpmock::{Method::POST, Mock, MockServer};
use pubapi_sdk_ext::token::TokenSource;
use pubapi_sdk_ext::{Client, GrantError, PasswordGrant, RetryConfig};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// A password with characters the form must escape.
const PASSWORD: &str = "s3cret &=+%";

/// The token endpoint: the right credentials get `token`, a wrong password 400
/// `invalid_grant`, an unknown client 401 `invalid_client`.
async fn token_endpoint<'a>(server: &'a MockServer, token: &str) -> Mock<'a> {
    let form = |when: httpmock::When| {
        when.method(POST)
            .path("/puboauth/token")
            .header("content-type", "application/x-www-form-urlencoded")
            .form_urlencoded_tuple("grant_type", "password")
    };
    server
        .mock_async(|when, then| {
            form(when).form_urlencoded_tuple_not("client_id", "app");
            then.status(401).json_body(
                json!({"error": "invalid_client", "error_description": "unknown client"}),
            );
        })
        .await;
    server
        .mock_async(|when, then| {
            form(when)
                .form_urlencoded_tuple("client_id", "app")
                .form_urlencoded_tuple_not("password", PASSWORD);
            then.status(400).json_body(json!({
                "error": "invalid_grant",
                "error_description": "the credentials do not match a user of this client"
            }));
        })
        .await;
    server
        .mock_async(|when, then| {
            form(when)
                .form_urlencoded_tuple("client_id", "app")
                .form_urlencoded_tuple("username", "sam")
                .form_urlencoded_tuple("password", PASSWORD);
            then.status(200)
                .header("cache-control", "no-store")
                .json_body(json!({"access_token": token, "token_type": "bearer"}));
        })
        .await
}

/// The token endpoint answering every grant as `answer` says.
async fn endpoint<'a>(server: &'a MockServer, answer: impl FnOnce(httpmock::Then)) -> Mock<'a> {
    server
        .mock_async(|when, then| {
            when.method(POST).path("/puboauth/token");
            answer(then);
        })
        .await
}

fn grant(server: &MockServer, client_id: &str, password: &str) -> PasswordGrant {
    PasswordGrant::new(&server.url("/puboauth/token"), client_id, "sam", password).unwrap()
}

#[tokio::test]
async fn password_grant_sends_the_platform_clients_form_once_and_the_client_uses_the_token() {
    let server = MockServer::start_async().await;
    let tokens = token_endpoint(&server, "tok-1").await;
    let whoami = server
        .mock_async(|when, then| {
            when.method("GET")
                .path("/pubapi/v1/whoami")
                .header("authorization", "Bearer tok-1");
            then.status(200).json_body(
                json!({"clientId": "app", "username": "sam", "domain": "acme", "scopes": []}),
            );
        })
        .await;
    let client = Client::builder()
        .base_url(&server.url("/pubapi"))
        .token_source(Arc::new(grant(&server, "app", PASSWORD)))
        .build()
        .unwrap();
    for _ in 0..3 {
        assert_eq!(client.identity().whoami().await.unwrap().username, "sam");
    }
    // Tokens are cached and reused (reference 5.2): one grant for every call.
    assert_eq!(tokens.calls_async().await, 1);
    assert_eq!(whoami.calls_async().await, 3);
}

#[tokio::test]
async fn refused_grant_is_a_typed_error_keeping_the_status_and_the_servers_message() {
    let server = MockServer::start_async().await;
    token_endpoint(&server, "tok-1").await;
    let wrong = grant(&server, "app", "guess").fetch().await.unwrap_err();
    assert!(
        matches!(
            &wrong,
            GrantError::Refused { status: 400, error: Some(e), description: Some(d) }
                if e == "invalid_grant" && d == "the credentials do not match a user of this client"
        ),
        "{wrong:?}"
    );
    assert_eq!(
        wrong.to_string(),
        "token grant refused with 400 invalid_grant: the credentials do not match a user of this client"
    );
    let unknown = grant(&server, "other-app", PASSWORD)
        .fetch()
        .await
        .unwrap_err();
    assert_eq!(
        (unknown.status(), unknown.oauth_error()),
        (Some(401), Some("invalid_client"))
    );

    // Through the client: the call fails before anything is sent to the API, with the
    // grant's typed error kept as the token source's failure.
    let api = server
        .mock_async(|when, then| {
            when.path_includes("/pubapi/");
            then.status(200);
        })
        .await;
    let client = Client::builder()
        .base_url(&server.url("/pubapi"))
        .token_source(Arc::new(grant(&server, "app", "guess")))
        .build()
        .unwrap();
    let err = client.identity().whoami().await.unwrap_err();
    let pubapi_sdk_ext::Error::InvalidInput(pubapi_sdk_ext::error::InputError::Token(
        pubapi_sdk_ext::token::TokenError::Unavailable(source),
    )) = &err
    else {
        panic!("{err:?}");
    };
    assert!(
        matches!(
            source.downcast_ref::<GrantError>(),
            Some(GrantError::Refused { status: 400, error: Some(e), .. }) if e == "invalid_grant"
        ),
        "{err:?}"
    );
    let mut chain = err.to_string();
    let mut next = std::error::Error::source(&err);
    while let Some(cause) = next {
        chain.push_str(&format!(" <- {cause}"));
        next = cause.source();
    }
    assert_eq!(
        chain,
        "no token; nothing was sent <- token source failed <- token grant refused with 400 \
         invalid_grant: the credentials do not match a user of this client"
    );
    assert_eq!(api.calls_async().await, 0);
    // Neither the error nor the grant's Debug shows the password.
    let grant = grant(&server, "app", PASSWORD);
    assert!(!format!("{err:?} {grant:?}").contains(PASSWORD));
}

#[tokio::test]
async fn a_rejected_token_is_granted_again_and_others_are_kept() {
    let server = MockServer::start_async().await;
    let first = token_endpoint(&server, "tok-1").await;
    let source = grant(&server, "app", PASSWORD);
    let token = source.token().await.unwrap();
    assert_eq!(token.expose(), "tok-1");
    assert_eq!(source.ready().unwrap().expose(), "tok-1");
    // Invalidating another token keeps the cached one.
    source.invalidate(&"other".try_into().unwrap());
    assert_eq!(source.token().await.unwrap().expose(), "tok-1");
    assert_eq!(first.calls_async().await, 1);
    // The user changed the password (401 from the API): the next call grants again.
    first.delete_async().await;
    let second = token_endpoint(&server, "tok-2").await;
    source.invalidate(&token);
    assert!(source.ready().is_none());
    assert_eq!(source.token().await.unwrap().expose(), "tok-2");
    assert_eq!(second.calls_async().await, 1);
}

#[tokio::test]
async fn concurrent_callers_share_one_grant() {
    let server = MockServer::start_async().await;
    let tokens = token_endpoint(&server, "tok-1").await;
    let source = grant(&server, "app", PASSWORD);
    let all = futures_util::future::join_all((0..8).map(|_| source.token())).await;
    assert!(all.iter().all(|t| t.as_ref().unwrap().expose() == "tok-1"));
    assert_eq!(tokens.calls_async().await, 1);
}

#[tokio::test]
async fn a_throttled_grant_is_a_typed_error_with_the_retry_after() {
    let server = MockServer::start_async().await;
    let throttled = endpoint(&server, |then| {
        then.status(409)
            .header("retry-after", "1800")
            .json_body(json!({"error": "too_many_requests"}));
    })
    .await;
    // One attempt: a 1800-second Retry-After is beyond what this test waits.
    let source = grant(&server, "app", PASSWORD).retry(RetryConfig::default().with_max_attempts(1));
    let err = source.fetch().await.unwrap_err();
    assert!(
        matches!(err, GrantError::Throttled { retry_after: Some(d), .. } if d == Duration::from_secs(1800)),
        "{err:?}"
    );
    assert_eq!(throttled.calls_async().await, 1);
}

#[tokio::test]
async fn a_redirect_is_not_followed_with_the_password() {
    // A 307 would resend the form, password included, to wherever it points.
    let server = MockServer::start_async().await;
    let elsewhere = server
        .mock_async(|when, then| {
            when.path("/elsewhere");
            then.status(200)
                .json_body(json!({"access_token": "stolen", "token_type": "bearer"}));
        })
        .await;
    endpoint(&server, |then| {
        then.status(307)
            .header("location", server.url("/elsewhere"));
    })
    .await;
    let refused = grant(&server, "app", PASSWORD).fetch().await.unwrap_err();
    assert_eq!(refused.status(), Some(307), "{refused:?}");
    assert_eq!(elsewhere.calls_async().await, 0);
}

#[tokio::test]
async fn a_huge_answer_is_read_only_up_to_the_cap() {
    // A valid token answer padded past 1 MiB: read whole it would grant; capped, it is cut
    // and is no answer.
    let server = MockServer::start_async().await;
    let padding = "x".repeat(3 << 20);
    endpoint(&server, |then| {
        then.status(200)
            .json_body(json!({"access_token": "tok-1", "padding": padding}));
    })
    .await;
    let cut = grant(&server, "app", PASSWORD).fetch().await.unwrap_err();
    assert!(
        matches!(cut, GrantError::Malformed { status: 200, .. }),
        "{cut:?}"
    );
}

#[tokio::test]
async fn concurrent_callers_share_one_refusal_and_a_later_call_asks_again() {
    // Repeated wrong passwords lock accounts, and the internal flow has 10 requests an hour:
    // callers that waited for a refused grant share its refusal instead of each sending the
    // password again.
    let server = MockServer::start_async().await;
    let refused = endpoint(&server, |then| {
        then.status(400)
            .json_body(json!({"error": "invalid_grant"}));
    })
    .await;
    let source = grant(&server, "app", "wrong");
    let all = futures_util::future::join_all((0..8).map(|_| source.token())).await;
    for result in &all {
        let error = result.as_ref().unwrap_err();
        let grant = std::error::Error::source(error)
            .and_then(|e| e.downcast_ref::<GrantError>())
            .unwrap_or_else(|| panic!("{error:?}"));
        assert_eq!(grant.oauth_error(), Some("invalid_grant"));
    }
    assert_eq!(refused.calls_async().await, 1);
    // A refusal is not kept: the next call (a corrected password, a reset account) asks.
    assert!(source.token().await.is_err());
    assert_eq!(refused.calls_async().await, 2);
}

#[test]
fn an_invalid_url_error_never_shows_the_urls_credentials() {
    for url in [
        "https://sam:S3CRET@acme.example.com/puboauth/token",
        "http://sam:S3CRET@example.com/puboauth/token",
        "ftp://sam:S3CRET@example.com/",
        "https://sam:S3CRET@[not-a-host/puboauth/token",
    ] {
        let err = PasswordGrant::new(url, "app", "sam", PASSWORD).unwrap_err();
        assert!(
            matches!(err, GrantError::InvalidUrl { .. }),
            "{url}: {err:?}"
        );
        for shown in [err.to_string(), format!("{err:?}")] {
            assert!(!shown.contains("S3CRET"), "{url}: {shown}");
        }
    }
}

#[tokio::test]
async fn a_refusal_that_echoes_the_form_does_not_show_the_password() {
    // An endpoint (or a proxy before it) that answers with the request it got.
    let encoded: String = form_urlencoded::byte_serialize(PASSWORD.as_bytes()).collect();
    let server = MockServer::start_async().await;
    endpoint(&server, |then| {
        then.status(400).body(format!(
            "bad request: grant_type=password&client_id=app&username=sam&password={encoded}"
        ));
    })
    .await;
    let err = grant(&server, "app", PASSWORD).fetch().await.unwrap_err();
    let shown = err.to_string();
    assert!(shown.contains("username=sam"), "{shown}");
    assert!(
        !shown.contains(&encoded) && !shown.contains(PASSWORD),
        "{shown}"
    );

    let server = MockServer::start_async().await;
    endpoint(&server, |then| {
        then.status(400).json_body(json!({
        "error": "invalid_request",
        "error_description": format!("password {PASSWORD} is too weak")
        }));
    })
    .await;
    let err = grant(&server, "app", PASSWORD).fetch().await.unwrap_err();
    assert!(!err.to_string().contains(PASSWORD), "{err}");
    assert!(!format!("{err:?}").contains(PASSWORD), "{err:?}");
}
