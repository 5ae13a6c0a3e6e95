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

// ---------------------------------------------------------------------------------------------
// Answers that name another server: the next attempt goes to the request's own URL.

use pubapi_sdk_ext::interceptor::{Attempt, Interceptor};
use pubapi_sdk_ext::options::CallOptions;
use pubapi_sdk_ext::reqwest::{self, ResponseBuilderExt};
use pubapi_sdk_ext::{RetryConfig, Transport};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// An answer built by hand, as an interceptor or a transport may make one: any status, any
/// headers, and any URL (or none: `http::Response` has none of its own).
#[derive(Debug, Clone)]
struct Forged {
    status: u16,
    url: Option<String>,
    headers: Vec<(&'static str, String)>,
}

impl Forged {
    fn response(&self) -> reqwest::Response {
        let mut builder = pubapi_sdk_ext::http::Response::builder().status(self.status);
        if let Some(url) = &self.url {
            builder = builder.url(url.parse().unwrap());
        }
        for (name, value) in &self.headers {
            builder = builder.header(*name, value);
        }
        builder.body(Vec::<u8>::new()).unwrap().into()
    }
}

/// Replaces the answers of the attempts it has a forged answer for, in order.
#[derive(Debug, Default)]
struct Replacing(Mutex<VecDeque<Option<Forged>>>);

impl Interceptor for Replacing {
    fn after_receive(
        &self,
        _attempt: &Attempt<'_>,
        answer: &mut reqwest::Result<reqwest::Response>,
    ) {
        if let Some(Some(forged)) = self.0.lock().unwrap().pop_front() {
            *answer = Ok(forged.response());
        }
    }
}

#[tokio::test]
async fn an_interceptors_503_naming_another_server_is_retried_on_the_origin() {
    let origin = MockServer::start_async().await;
    let foreign = MockServer::start_async().await;
    let whoami = origin
        .mock_async(|when, then| {
            when.method(GET).path("/pubapi/v1/whoami");
            then.status(200).header("content-type", "application/json").body(
                r#"{"clientId":"c1","username":"admin","domain":"acme.example.com","scopes":[]}"#,
            );
        })
        .await;
    let stolen = foreign
        .mock_async(|when, then| {
            when.any_request();
            then.status(200);
        })
        .await;
    let forged = Forged {
        status: 503,
        url: Some(foreign.url("/pubapi/v1/whoami")),
        headers: vec![("retry-after", "0".into())],
    };
    let client = Client::builder()
        .isolated_budget()
        .base_url(&origin.url("/pubapi"))
        .token(SecretToken::try_from(TOKEN).unwrap())
        .interceptor(Arc::new(Replacing(Mutex::new([Some(forged)].into()))))
        .build()
        .unwrap();

    client
        .act_as(ActAs::username("bob").unwrap())
        .identity()
        .whoami()
        .await
        .unwrap();

    whoami.assert_calls_async(2).await;
    stolen.assert_calls_async(0).await;
}

/// What reached the network: each request's origin and whether it carried a credential.
#[derive(Debug)]
struct Sent {
    origin: String,
    credentialed: bool,
}

/// A transport that sends nothing: it records each request and answers it with the next
/// forged answer (or a 200 once they are used up).
#[derive(Debug, Default)]
struct Forging {
    answers: Mutex<VecDeque<Forged>>,
    sent: Mutex<Vec<Sent>>,
}

impl Transport for Forging {
    fn send<'a>(
        &'a self,
        _client: &'a reqwest::Client,
        request: reqwest::Request,
    ) -> pubapi_sdk::hooks::BoxFuture<'a, reqwest::Result<reqwest::Response>> {
        let headers = request.headers();
        let credentialed = [
            "authorization",
            "x-service-act-as",
            "x-service-act-as-email",
        ]
        .iter()
        .any(|name| headers.contains_key(*name));
        self.sent.lock().unwrap().push(Sent {
            origin: request.url().origin().ascii_serialization(),
            credentialed,
        });
        let forged = self.answers.lock().unwrap().pop_front().unwrap_or(Forged {
            status: 200,
            url: None,
            headers: vec![("content-type", "application/json".into())],
        });
        Box::pin(async move { Ok(forged.response()) })
    }
}

const BASE: &str = "https://acme.example.com/pubapi";

mod property {
    use super::*;
    use proptest::prelude::*;

    /// URLs an answer may name: none, the origin itself, another scheme, port, host or
    /// user, and spellings that look alike.
    fn arb_url() -> impl Strategy<Value = Option<String>> {
        prop_oneof![
            Just(None),
            Just(Some("https://acme.example.com/pubapi/v1/whoami".to_owned())),
            Just(Some("http://acme.example.com/pubapi/v1/whoami".to_owned())),
            Just(Some(
                "https://acme.example.com:8443/pubapi/v1/whoami".to_owned()
            )),
            Just(Some("https://evil.example.net/pubapi/v1/whoami".to_owned())),
            Just(Some(
                "https://acme.example.com.evil.example.net/".to_owned()
            )),
            Just(Some("https://user@evil.example.net/steal".to_owned())),
            Just(Some("http://127.0.0.1:9/".to_owned())),
            "[a-z]{1,8}".prop_map(|host| Some(format!("https://{host}.test/pubapi/v1/whoami"))),
        ]
    }

    /// URLs of another server on loopback (`foreign`), which a retry could reach.
    fn arb_foreign_url(foreign: String) -> impl Strategy<Value = Option<String>> {
        prop_oneof![
            Just(None),
            "[a-z/]{0,12}".prop_map(move |path| Some(format!("{foreign}/{path}"))),
        ]
    }

    fn arb_answer(url: impl Strategy<Value = Option<String>>) -> impl Strategy<Value = Forged> {
        let status = prop_oneof![
            Just(200_u16),
            Just(301),
            Just(302),
            Just(303),
            Just(307),
            Just(308),
            Just(401),
            Just(403),
            Just(429),
            Just(500),
            Just(502),
            Just(503),
            Just(504),
            100_u16..600,
        ];
        let header = prop_oneof![
            arb_url().prop_map(|url| ("location", url.unwrap_or_else(|| "/".into()))),
            (0_u8..3).prop_map(|s| ("retry-after", s.to_string())),
            Just(("x-error-code", "ERR_OVER_QPS".to_owned())),
            Just(("content-type", "application/json".to_owned())),
        ];
        (status, url, prop::collection::vec(header, 0..3)).prop_map(|(status, url, headers)| {
            Forged {
                status,
                url,
                headers,
            }
        })
    }

    fn arb_forged() -> impl Strategy<Value = Forged> {
        arb_answer(arb_url())
    }

    /// A whoami, through an act-as view or not, with a per-call attempt bound or not (a
    /// request with a timeout of its own is kept whole for the next attempt, not inline).
    async fn whoami(client: &Client, act_as: bool, per_call_timeout: bool) {
        let mut options = CallOptions::new();
        if per_call_timeout {
            options = options.attempt_timeout(Duration::from_secs(7));
        }
        let view = client.with_options(options).unwrap();
        let view = if act_as {
            view.act_as(ActAs::username("bob").unwrap())
        } else {
            view
        };
        let _ = view.identity().whoami().await;
    }

    /// Retries without waiting long: the property holds whatever the schedule.
    fn quick_retries() -> RetryConfig {
        RetryConfig::default()
            .with_max_attempts(6)
            .with_base_backoff(Duration::from_millis(1))
            .with_max_backoff(Duration::from_millis(2))
            .with_max_retry_after(Duration::from_millis(2))
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

        /// Whatever a transport and an interceptor answer (any URL, status and headers), no
        /// request carrying the token or an act-as header reaches another origin.
        #[test]
        fn no_credential_reaches_another_origin_through_a_transport(
            transport_answers in prop::collection::vec(arb_forged(), 0..6),
            replaced in prop::collection::vec(prop::option::of(arb_forged()), 0..6),
            act_as in any::<bool>(),
            per_call_timeout in any::<bool>(),
        ) {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .start_paused(true)
                .build()
                .unwrap();
            let transport = Arc::new(Forging {
                answers: Mutex::new(transport_answers.into()),
                ..Forging::default()
            });
            let client = Client::builder()
                .isolated_budget()
                .base_url(BASE)
                .token(SecretToken::try_from(TOKEN).unwrap())
                .retry(RetryConfig::default().with_max_attempts(6))
                .transport(transport.clone())
                .interceptor(Arc::new(Replacing(Mutex::new(replaced.into()))))
                .build()
                .unwrap();
            runtime.block_on(whoami(&client, act_as, per_call_timeout));
            let sent = transport.sent.lock().unwrap();
            prop_assert!(!sent.is_empty());
            for request in sent.iter() {
                prop_assert!(request.credentialed);
                prop_assert_eq!(&request.origin, "https://acme.example.com");
            }
        }
    }

    /// The same through reqwest itself, on real sockets: an interceptor's answers name a
    /// second server on loopback, which must never see a request.
    #[test]
    fn no_credential_reaches_another_origin_through_reqwest() {
        let origin = MockServer::start();
        let foreign = MockServer::start();
        origin.mock(|when, then| {
            when.any_request();
            then.status(200).header("content-type", "application/json").body(
                r#"{"clientId":"c1","username":"admin","domain":"acme.example.com","scopes":[]}"#,
            );
        });
        let stolen = foreign.mock(|when, then| {
            when.any_request();
            then.status(200);
        });
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let unlimited = pubapi_sdk_ext::limits::Limits {
            general: pubapi_sdk_ext::limits::Budget::new(None, None),
            ai: pubapi_sdk_ext::limits::Budget::new(None, None),
        };
        let answers = prop::collection::vec(
            prop::option::of(arb_answer(arb_foreign_url(foreign.base_url()))),
            1..6,
        );
        let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
            cases: 64,
            ..ProptestConfig::default()
        });
        runner
            .run(
                &(answers, any::<bool>(), any::<bool>()),
                |(replaced, act_as, per_call_timeout)| {
                    let client = Client::builder()
                        .isolated_budget()
                        .limits(unlimited)
                        .base_url(&origin.url("/pubapi"))
                        .token(SecretToken::try_from(TOKEN).unwrap())
                        .retry(quick_retries())
                        .interceptor(Arc::new(Replacing(Mutex::new(replaced.into()))))
                        .build()
                        .unwrap();
                    let before = stolen.calls();
                    runtime.block_on(whoami(&client, act_as, per_call_timeout));
                    prop_assert_eq!(stolen.calls() - before, 0, "the foreign server was reached");
                    Ok(())
                },
            )
            .unwrap();
    }
}
