//! The request id of a call, as it arrived on the wire, on the errors of a call that was sent
//! after its answer came: a success whose body does not decode or breaks off. Real sockets.

use pubapi_sdk_ext::prelude::*;
use pubapi_sdk_ext::{Client, Error, SecretToken};
use std::time::Duration;

#[path = "support/slow_server.rs"]
#[allow(
    dead_code,
    reason = "each test file uses the part of the server it needs"
)]
mod slow_server;
use slow_server::{Reply, serve};

fn client(base_url: &str) -> Client {
    Client::builder()
        .isolated_budget()
        .base_url(base_url)
        .token(SecretToken::try_from("t0k3n-ids").unwrap())
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_200_whose_body_does_not_decode_is_an_error_with_the_request_id_sent_on_the_wire() {
    let (base, seen) = serve(vec![Reply::json_after(
        Duration::ZERO,
        200,
        r#"{"clientId":"c1","username":7}"#,
    )])
    .await;
    let client = client(&base);
    // Through an area handle, and through the generated client with `?`'s conversion.
    let handle = client.identity().whoami().await.unwrap_err();
    let generated = client.sdk().whoami().send().await.map_err(Error::from);
    for (nth, error) in [handle, generated.unwrap_err()].into_iter().enumerate() {
        assert!(
            matches!(&error, Error::Decode { path, .. } if path == "username"),
            "{error:?}"
        );
        let sent = seen.header(nth, "x-request-id").expect("an id was sent");
        assert_eq!(
            error.request_id().map(|id| id.to_string()),
            Some(sent.clone())
        );
        assert!(
            error.to_string().ends_with(&format!("[request id {sent}]")),
            "{error}"
        );
    }
}

#[tokio::test]
async fn a_200_whose_body_breaks_off_is_a_transport_error_with_the_request_id_sent() {
    let mut reply = Reply::json_after(Duration::ZERO, 200, r#"{"clientId":"c1""#);
    reply.length = 200;
    let (base, seen) = serve(vec![reply]).await;
    let error = client(&base).identity().whoami().await.unwrap_err();
    assert!(matches!(&error, Error::Transport(_)), "{error:?}");
    let sent = seen.header(0, "x-request-id").expect("an id was sent");
    assert_eq!(error.request_id().map(|id| id.to_string()), Some(sent));
}

/// A caller's id of 200 visible-ASCII characters (an upstream id with a long prefix) goes on
/// the wire byte for byte, and comes back on the call's error; one of 201 is refused when it
/// is parsed, with a typed error, before anything could be sent.
#[tokio::test]
async fn a_callers_id_of_200_characters_is_sent_byte_for_byte_and_one_of_201_is_refused() {
    use pubapi_sdk_ext::RequestId;
    use pubapi_sdk_ext::options::CallOptions;
    use pubapi_sdk_ext::request_id::InvalidRequestId;
    let printable: String = ('!'..='~').collect();
    let longest: String = printable.chars().cycle().take(200).collect();
    let (base, seen) = serve(vec![Reply::json_after(Duration::ZERO, 404, "{}")]).await;
    let view = client(&base)
        .with_options(CallOptions::new().request_id(longest.parse().unwrap()))
        .unwrap();
    let error = view.identity().whoami().await.unwrap_err();
    assert_eq!(
        seen.header(0, "x-request-id").as_deref(),
        Some(longest.as_str())
    );
    assert_eq!(
        error.request_id().map(|id| id.to_string()).as_deref(),
        Some(longest.as_str())
    );

    let too_long = format!("{longest}x");
    assert_eq!(
        too_long.parse::<RequestId>(),
        Err(InvalidRequestId::TooLong {
            length: 201,
            max: 200
        })
    );
    assert_eq!(seen.heads().len(), 1);
}
