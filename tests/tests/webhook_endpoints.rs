//! A webhook endpoint is checked before it is registered (issue 42): a TLS handshake against
//! the public roots, as the platform's deliveries will make it. An endpoint the platform could
//! not deliver to is refused with the reason named, and nothing reaches the platform (here the
//! sandbox: its traffic shows no request). Endpoints on loopback, certificates made by
//! `openssl`.

use pubapi_sdk_ext::error::InputError;
use pubapi_sdk_ext::webhook::Registration;
use pubapi_sdk_ext::webhook::endpoint::{EndpointProblem, EndpointRefused};
use pubapi_sdk_ext::{Client, Error};
use pubapi_testkit::sandbox::{Sandbox, SandboxConfig};
use pubapi_testkit::tls_endpoint::{Certificates, Endpoint, Validity, closed_port};

/// A sandbox and its admin's client.
async fn sandbox_and_admin() -> (Sandbox, Client) {
    let sandbox = Sandbox::start(SandboxConfig::testing()).await;
    let client = sandbox.client_for("admin");
    (sandbox, client)
}

/// The refusal of `client.webhooks().create(registration)`, and whether anything reached
/// the sandbox.
async fn refusal(
    sandbox: &Sandbox,
    client: &Client,
    registration: &Registration,
) -> (EndpointRefused, usize) {
    let error = client
        .webhooks()
        .create(registration)
        .await
        .expect_err("the endpoint is refused");
    match error {
        Error::InvalidInput(InputError::Endpoint(refused)) => (refused, sandbox.traffic().len()),
        other => panic!("not an endpoint refusal: {other}"),
    }
}

#[tokio::test]
async fn an_endpoint_the_platform_could_not_deliver_to_is_refused_naming_why_with_nothing_sent() {
    let (sandbox, client) = sandbox_and_admin().await;
    let mut certificates = Certificates::new();
    let trusting = |url: &str, ca: &str| {
        Registration::new(url)
            .unwrap()
            .trusting_for_tests(ca)
            .unwrap()
    };
    let ca = certificates.ca_pem();
    let self_signed = Endpoint::tls(&certificates.self_signed()).await;
    let private = Endpoint::tls(&certificates.signed("IP:127.0.0.1", Validity::Current)).await;
    let expired = Endpoint::tls(&certificates.signed("IP:127.0.0.1", Validity::Expired)).await;
    let early = Endpoint::tls(&certificates.signed("IP:127.0.0.1", Validity::NotYet)).await;
    let elsewhere =
        Endpoint::tls(&certificates.signed("DNS:hooks.example.com", Validity::Current)).await;
    let plain = Endpoint::plain_http().await;
    let closed = format!("https://127.0.0.1:{}/hooks", closed_port());
    // (what, the registration, the problem named)
    let cases = [
        (
            "self-signed",
            Registration::new(&self_signed.url()).unwrap(),
            EndpointProblem::SelfSigned,
        ),
        (
            "self-signed, against the test's roots too",
            trusting(&self_signed.url(), &ca),
            EndpointProblem::SelfSigned,
        ),
        (
            "a private CA",
            Registration::new(&private.url()).unwrap(),
            EndpointProblem::UnknownIssuer,
        ),
        (
            "expired",
            trusting(&expired.url(), &ca),
            EndpointProblem::Expired {
                not_after: "2020-02-01T00:00:00Z".parse().ok(),
            },
        ),
        (
            "not valid yet",
            trusting(&early.url(), &ca),
            EndpointProblem::NotYetValid {
                not_before: "2099-01-01T00:00:00Z".parse().ok(),
            },
        ),
        (
            "another name",
            trusting(&elsewhere.url(), &ca),
            EndpointProblem::WrongName {
                host: "127.0.0.1".into(),
                names: vec!["hooks.example.com".into()],
            },
        ),
        (
            "no TLS on the port",
            Registration::new(&plain.url()).unwrap(),
            EndpointProblem::Handshake {
                reason: "the endpoint does not answer in TLS (plain http on that port?)".into(),
            },
        ),
    ];
    for (what, registration, problem) in cases {
        let (refused, traffic) = refusal(&sandbox, &client, &registration).await;
        assert_eq!(refused.problem, problem, "{what}: {refused}");
        assert_eq!(traffic, 0, "{what}: the sandbox saw a request");
    }
    // Unreachable: the operating system's words say why.
    let (refused, traffic) = refusal(&sandbox, &client, &Registration::new(&closed).unwrap()).await;
    assert!(
        matches!(&refused.problem, EndpointProblem::Unreachable { reason } if reason.contains("refused")),
        "{refused}"
    );
    assert_eq!(traffic, 0);
    // No handshake completed: each endpoint refused was refused in the handshake.
    for endpoint in [&self_signed, &private, &expired, &early, &elsewhere] {
        assert_eq!(endpoint.handshakes(), 0);
    }
}

#[tokio::test]
async fn a_refusal_says_which_endpoint_why_and_how_to_register_anyway() {
    let (sandbox, client) = sandbox_and_admin().await;
    let endpoint = Endpoint::tls(&Certificates::new().self_signed()).await;
    let registration = Registration::new(&endpoint.url()).unwrap();
    let error = client.webhooks().create(&registration).await.unwrap_err();
    let port = endpoint
        .url()
        .split(':')
        .nth(2)
        .unwrap()
        .trim_end_matches("/hooks")
        .to_owned();
    assert_eq!(
        error.to_string(),
        format!(
            "webhook endpoint 127.0.0.1:{port} refused before registering it: its certificate is \
             self-signed; the platform delivers only over https with a certificate a public \
             authority signed (skip_endpoint_check() registers it anyway); nothing was sent"
        )
    );
    assert!(sandbox.traffic().is_empty());
}

#[tokio::test]
async fn an_endpoint_with_a_certificate_of_a_trusted_authority_is_registered() {
    let (sandbox, client) = sandbox_and_admin().await;
    let mut certificates = Certificates::new();
    let ca = certificates.ca_pem();
    let by_ip = Endpoint::tls(&certificates.signed("IP:127.0.0.1", Validity::Current)).await;
    let by_name = Endpoint::tls(&certificates.signed("DNS:localhost", Validity::Current)).await;
    for url in [by_ip.url(), by_name.url_as("localhost")] {
        let registration = Registration::new(&url)
            .unwrap()
            .trusting_for_tests(&ca)
            .unwrap();
        registration.check_endpoint().await.unwrap();
        client.webhooks().create(&registration).await.unwrap();
    }
    assert_eq!((by_ip.handshakes(), by_name.handshakes()), (2, 2));
    let created = sandbox
        .traffic()
        .iter()
        .filter(|exchange| exchange.operation == Some("createWebhook"))
        .count();
    assert_eq!(created, 2);
}

#[tokio::test]
async fn a_caller_who_knows_better_registers_without_the_check() {
    let (sandbox, client) = sandbox_and_admin().await;
    let endpoint = Endpoint::tls(&Certificates::new().self_signed()).await;
    let registration = Registration::new(&endpoint.url())
        .unwrap()
        .skip_endpoint_check();
    registration.check_endpoint().await.unwrap();
    client.webhooks().create(&registration).await.unwrap();
    assert_eq!(endpoint.handshakes(), 0, "not even a handshake");
    assert_eq!(sandbox.traffic().len(), 1);
}

#[tokio::test]
async fn a_plain_http_loopback_receiver_has_no_tls_to_check() {
    // What the sandbox delivers to: nothing needs to listen for the registration.
    let registration =
        Registration::loopback_for_tests(&format!("http://127.0.0.1:{}/in", closed_port()))
            .unwrap();
    registration.check_endpoint().await.unwrap();
}

#[tokio::test]
async fn an_update_to_an_endpoint_the_platform_could_not_deliver_to_is_refused_with_nothing_sent() {
    let (sandbox, client) = sandbox_and_admin().await;
    let endpoint = Endpoint::tls(&Certificates::new().self_signed()).await;
    let registration = Registration::new(&endpoint.url()).unwrap();
    let error = client
        .webhooks()
        .update("whk-1", &registration, None)
        .await
        .unwrap_err();
    assert!(
        matches!(
            &error,
            Error::InvalidInput(InputError::Endpoint(EndpointRefused {
                problem: EndpointProblem::SelfSigned,
                ..
            }))
        ),
        "{error}"
    );
    assert!(sandbox.traffic().is_empty());
}

#[test]
fn trusting_roots_that_hold_no_certificate_is_refused() {
    let error = Registration::new("https://127.0.0.1/in")
        .unwrap()
        .trusting_for_tests("not a certificate")
        .unwrap_err();
    assert!(matches!(error, Error::InvalidInput(_)), "{error}");
}
