//! `--dry-run`: the client's transport is replaced by one that keeps the first request a
//! command would send, as a `curl` command line, and sends nothing: it stops before transmit
//! ([`Transport::stops_before_transmit`]), so the request takes no slot of the token's pacer. The command stops there
//! (it would need the answer to go on); what it checks before sending is checked as usual.
//!
//! The token never appears: the `Authorization` header reads `Bearer $PUBAPI_TOKEN`, for the
//! shell to fill in. A webhook secret in a request body reads `$PUBAPI_WEBHOOK_SECRET` when
//! it is the variable's value. The request id (new for every attempt) is left out.

use pubapi_sdk::hooks::BoxFuture;
use pubapi_sdk_ext::transport::Transport;
use std::sync::Mutex;
use tokio::sync::Notify;

/// The transport of a dry run.
#[derive(Debug, Default)]
pub struct DryRun {
    /// The first request, as curl.
    captured: Mutex<Option<String>>,
    /// Told when a request was captured.
    ready: Notify,
    /// Secrets to show as a shell expression instead of their value: (value, expression).
    secrets: Mutex<Vec<(String, String)>>,
}

impl DryRun {
    /// Shows `value` as the shell expression `shown` (`$VARIABLE`, `$(head -n1 'FILE')`)
    /// wherever a request carries it.
    pub fn hide(&self, value: String, shown: String) {
        if let Ok(mut secrets) = self.secrets.lock()
            && !value.is_empty()
        {
            secrets.push((value, shown));
        }
    }

    /// The first request's curl command line, once the command has sent it.
    pub async fn request(&self) -> String {
        loop {
            let notified = self.ready.notified();
            if let Some(curl) = self.captured.lock().ok().and_then(|c| c.clone()) {
                return curl;
            }
            notified.await;
        }
    }

    fn keep(&self, request: &reqwest::Request) {
        let secrets = self.secrets.lock().map(|s| s.clone()).unwrap_or_default();
        if let Ok(mut captured) = self.captured.lock()
            && captured.is_none()
        {
            *captured = Some(curl(request, &secrets));
            self.ready.notify_waiters();
        }
    }
}

impl Transport for DryRun {
    fn send<'a>(
        &'a self,
        _client: &'a reqwest::Client,
        request: reqwest::Request,
    ) -> BoxFuture<'a, reqwest::Result<reqwest::Response>> {
        self.keep(&request);
        // Never answered: the command is dropped once the request is printed.
        Box::pin(std::future::pending())
    }

    /// The client's policy hands the request over without a pacer slot.
    fn stops_before_transmit(&self) -> bool {
        true
    }
}

/// `text` in single quotes for a POSIX shell, with `secrets` spliced in as their shell
/// expressions in double quotes (`'…'"$VARIABLE"'…'`).
fn quoted(text: &str, secrets: &[(String, String)]) -> String {
    let mut out = format!("'{}'", text.replace('\'', r"'\''"));
    for (value, shown) in secrets {
        let inner = value.replace('\'', r"'\''");
        out = out.replace(&inner, &format!("'\"{shown}\"'"));
    }
    out
}

/// The request as a curl command line, one option a line.
pub fn curl(request: &reqwest::Request, secrets: &[(String, String)]) -> String {
    let mut lines = vec![match request.method().as_str() {
        "GET" => format!("curl {}", quoted(request.url().as_str(), secrets)),
        method => format!(
            "curl -X {method} {}",
            quoted(request.url().as_str(), secrets)
        ),
    }];
    for (name, value) in request.headers() {
        if name == "x-request-id" {
            continue;
        }
        if name == reqwest::header::AUTHORIZATION {
            lines.push("-H \"Authorization: Bearer $PUBAPI_TOKEN\"".into());
            continue;
        }
        let value = String::from_utf8_lossy(value.as_bytes());
        lines.push(format!(
            "-H {}",
            quoted(&format!("{name}: {value}"), secrets)
        ));
    }
    if let Some(body) = request.body().and_then(|b| b.as_bytes()) {
        lines.push(format!(
            "--data-raw {}",
            quoted(&String::from_utf8_lossy(body), secrets)
        ));
    }
    lines.join(" \\\n  ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_is_a_variable_and_quotes_survive_the_shell() {
        let mut request = reqwest::Request::new(
            reqwest::Method::POST,
            "https://acme.example.com/pubapi/v1/webhooks"
                .parse()
                .unwrap(),
        );
        request.headers_mut().insert(
            reqwest::header::AUTHORIZATION,
            "Bearer tok-very-secret".parse().unwrap(),
        );
        request
            .headers_mut()
            .insert("x-request-id", "abc-1".parse().unwrap());
        *request.body_mut() = Some(r#"{"authHeader":"s3cr3t","note":"it's"}"#.into());
        let shown = curl(
            &request,
            &[("s3cr3t".into(), "$PUBAPI_WEBHOOK_SECRET".into())],
        );
        assert_eq!(
            shown,
            "curl -X POST 'https://acme.example.com/pubapi/v1/webhooks' \\\n  \
             -H \"Authorization: Bearer $PUBAPI_TOKEN\" \\\n  \
             --data-raw '{\"authHeader\":\"'\"$PUBAPI_WEBHOOK_SECRET\"'\",\"note\":\"it'\\''s\"}'"
        );
        assert!(!shown.contains("tok-very-secret") && !shown.contains("s3cr3t"));
    }
}
