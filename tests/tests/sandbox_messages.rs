//! The sandbox's messages are written for a person (issue 42): a value a client sent back in
//! a refusal is in quotes as it reads, a character that would not show written as its code
//! point (`<U+0000>`), never as Rust's `Debug` escapes (`\u{0}`, `\"`, `\n`) and never raw.

use pubapi_testkit::sandbox::{Sandbox, SandboxConfig, TOKEN_PATH};
use serde_json::{Value, json};

/// A value with a NUL, a line feed, a tab, a quote and a character outside ASCII.
const AWKWARD: &str = "a\u{0}b\nc\td\"é";

/// How [`AWKWARD`] reads in a message.
const AWKWARD_SHOWN: &str = "\"a<U+0000>b<U+000A>c<U+0009>d\"é\"";

/// `AWKWARD`, percent-encoded (every byte) for a query, a path or a form.
fn encoded() -> String {
    AWKWARD.bytes().map(|b| format!("%{b:02X}")).collect()
}

/// Every string in `value`, at any depth.
fn strings(value: &Value) -> Vec<&str> {
    match value {
        Value::String(text) => vec![text.as_str()],
        Value::Array(items) => items.iter().flat_map(strings).collect(),
        Value::Object(map) => map.values().flat_map(strings).collect(),
        _ => Vec::new(),
    }
}

/// The sandbox's answer to a request whose value is [`AWKWARD`]: (status, JSON body).
async fn refusal(sandbox: &Sandbox, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let raw = sandbox.raw();
    let token = sandbox.admin_token();
    let request = raw.request(method, path, Some(&token));
    let request = match body {
        Some(body) => request.json(&body),
        None => request,
    };
    let answer = request.send().await;
    (answer.status, answer.json())
}

#[tokio::test]
async fn a_refusal_shows_the_value_it_refuses_as_a_person_reads_it() {
    let sandbox = Sandbox::start(SandboxConfig::testing()).await;
    let value = encoded();
    let hook = json!({"url": "https://hooks.example.com/in", "eventType": ["fs:*"]});
    let created = sandbox
        .raw()
        .post("/v1/webhooks", &sandbox.admin_token(), &hook)
        .await
        .json();
    let webhook_id = created["webhookId"].as_str().expect("a webhook").to_owned();
    // (what is refused, method, path, body)
    let cases: Vec<(&str, &str, String, Option<Value>)> = vec![
        (
            "the assistant's includeCitations",
            "GET",
            format!("/v1/ai/assistant/x-1/status?includeCitations={value}"),
            None,
        ),
        (
            "a knowledge base status",
            "POST",
            "/v1/ai/kb/list".into(),
            Some(json!({"status": [AWKWARD]})),
        ),
        (
            "a knowledge base sortBy",
            "POST",
            "/v1/ai/kb/list".into(),
            Some(json!({"sortBy": [AWKWARD]})),
        ),
        (
            "an events id",
            "GET",
            format!("/v2/events?id={value}"),
            None,
        ),
        (
            "an events suppress",
            "GET",
            format!("/v2/events?id=1&suppress={value}"),
            None,
        ),
        (
            "an events type",
            "GET",
            format!("/v2/events?id=1&type={value}"),
            None,
        ),
        (
            "an events count",
            "GET",
            format!("/v2/events?id=1&count={value}"),
            None,
        ),
        (
            "an events reverse",
            "GET",
            format!("/v2/events?id=1&reverse={value}"),
            None,
        ),
        (
            "a webhook url",
            "POST",
            "/v1/webhooks".into(),
            Some(json!({"url": AWKWARD, "eventType": ["fs:*"]})),
        ),
        (
            "a webhook status",
            "PUT",
            format!("/v1/webhooks/{webhook_id}"),
            Some(json!({"url": "https://hooks.example.com/in", "status": AWKWARD})),
        ),
        (
            "an audit date",
            "POST",
            "/v1/audit/logins".into(),
            Some(
                json!({"format": "json", "date_start": AWKWARD, "date_end": "2026-01-02", "events": ["logins"]}),
            ),
        ),
        (
            "an audit folder",
            "POST",
            "/v1/audit/files".into(),
            Some(
                json!({"format": "json", "date_start": "2026-01-01", "date_end": "2026-01-02", "folders": [AWKWARD]}),
            ),
        ),
        (
            "an audit value of a list",
            "POST",
            "/v1/audit/files".into(),
            Some(
                json!({"format": "json", "date_start": "2026-01-01", "date_end": "2026-01-02", "folders": ["/a"], "transaction_type": [AWKWARD]}),
            ),
        ),
        (
            "an audit value in any case",
            "POST",
            "/v1/audit/users".into(),
            Some(
                json!({"format": "json", "date_start": "2026-01-01", "date_end": "2026-01-02", "action_type": [AWKWARD]}),
            ),
        ),
        (
            "an audit report type",
            "GET",
            format!("/v1/audit/{value}/j-1"),
            None,
        ),
    ];
    for (what, method, path, body) in cases {
        let (status, answer) = refusal(&sandbox, method, &path, body).await;
        assert!((400..500).contains(&status), "{what}: {status} {answer}");
        let texts = strings(&answer);
        assert!(
            texts.iter().any(|text| text.contains(AWKWARD_SHOWN)),
            "{what}: {answer}"
        );
        for text in texts {
            assert!(!text.contains("\\u{"), "{what}: {text}");
            assert!(!text.contains("\\\""), "{what}: {text}");
            assert!(!text.chars().any(char::is_control), "{what}: {text:?}");
        }
    }
}

#[tokio::test]
async fn a_token_endpoint_refusal_shows_the_value_it_refuses_as_a_person_reads_it() {
    let sandbox = Sandbox::start(SandboxConfig::testing()).await;
    let value = encoded();
    let url = format!("http://{}{TOKEN_PATH}", sandbox.addr());
    for (what, form) in [
        ("a grant type", format!("grant_type={value}&client_id=c-1")),
        (
            "a client id",
            format!("grant_type=password&client_id={value}&username=u&password=p"),
        ),
    ] {
        let answer: Value = reqwest::Client::new()
            .post(&url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let description = answer["error_description"].as_str().unwrap_or_default();
        assert!(description.contains(AWKWARD_SHOWN), "{what}: {answer}");
        assert!(!description.contains("\\u{"), "{what}: {description}");
    }
}
