//! `pubapi webhooks`: registrations through the SDK's `webhooks()` handle (which checks URLs,
//! event names and paths before sending, and the https endpoint's certificate as the platform
//! will, unless `--skip-endpoint-check`; a dry run, which connects to nothing, leaves that
//! check out), and `listen`, the SDK's receiver behind a local port, printing each delivered
//! event as a JSON line.

use crate::Session;
use crate::args::{ListenSecret, RegistrationArgs, WebhooksCommand};
use crate::failure::Failure;
use pubapi_sdk::types::{Webhook, WebhookSummary};
use pubapi_sdk_ext::Error;
use pubapi_sdk_ext::error::InputError;
use pubapi_sdk_ext::webhook::registration::{Registration, Status};
use pubapi_sdk_ext::webhook::{self, Batch, DeadLetter, HandlerError, Receiver, WebhookSecret};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The variable both secrets default to: what `create` registers is what `listen` checks.
pub const SECRET_VAR: &str = "PUBAPI_WEBHOOK_SECRET";

/// Runs `pubapi webhooks …`.
pub async fn run(session: &Session, command: WebhooksCommand) -> Result<(), Failure> {
    let hooks = session.client.webhooks();
    match command {
        WebhooksCommand::List => {
            let list = hooks.list().await?;
            summaries(session, &list)
        }
        WebhooksCommand::Create(args) => {
            let created = hooks
                .create(&registration(session, &args)?)
                .await
                .map_err(refused_endpoint)?;
            summaries(session, &[created])
        }
        WebhooksCommand::Details { id } => {
            let details = hooks.details(&id).await?;
            details_of(session, &details)
        }
        WebhooksCommand::Enable { id } => {
            let now = hooks.set_status(&id, Status::Enabled).await?;
            summaries(session, &[now])
        }
        WebhooksCommand::Disable { id } => {
            let now = hooks.set_status(&id, Status::Disabled).await?;
            summaries(session, &[now])
        }
        WebhooksCommand::Update {
            id,
            registration: args,
        } => {
            hooks
                .update(&id, &registration(session, &args)?, None)
                .await
                .map_err(refused_endpoint)?;
            let now = hooks.status(&id).await?;
            summaries(session, &[now])
        }
        WebhooksCommand::Delete { id } => {
            hooks.delete(&id).await?;
            eprintln!("webhook {id} deleted");
            Ok(())
        }
        WebhooksCommand::Renew { id, within } => {
            let window = match within {
                Some(text) => duration(&text)?,
                // Always: a window longer than any registration lives.
                None => Duration::from_secs(100 * 365 * 86_400),
            };
            let details = hooks.details(&id).await?;
            let again = from_details(&details)?;
            // The SDK takes "now" as an argument.
            let now = crate::wall_clock();
            match hooks.renew_if_expiring(&id, &again, window, now).await? {
                Some(renewed) => {
                    eprintln!("webhook {id} renewed as {}", renewed.webhook_id);
                    summaries(session, &[renewed])
                }
                None => {
                    eprintln!("webhook {id} does not expire within the window: left as it is");
                    Ok(())
                }
            }
        }
        WebhooksCommand::Listen { port, secret, bind } => {
            listen(session, port, listen_secret(&secret)?, bind).await
        }
    }
}

/// A secret's first line from `path`.
fn secret_file(path: &Path, flag: &str) -> Result<String, Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::usage(format!("{flag} {}: {e}", path.display())))?;
    let line = text.lines().next().unwrap_or_default().trim().to_string();
    if line.is_empty() {
        return Err(Failure::usage(format!(
            "{flag} {}: the file's first line is empty",
            path.display()
        )));
    }
    Ok(line)
}

/// The variable's value, when set and not empty.
fn secret_var() -> Option<String> {
    std::env::var(SECRET_VAR).ok().filter(|v| !v.is_empty())
}

/// The receiver's secret: `--secret-file`, else `--secret`, else `$PUBAPI_WEBHOOK_SECRET`.
fn listen_secret(secret: &ListenSecret) -> Result<String, Failure> {
    if let Some(path) = &secret.secret_file {
        return secret_file(path, "--secret-file");
    }
    secret.secret.clone().or_else(secret_var).ok_or_else(|| {
        Failure::usage(format!(
            "webhooks listen needs the secret deliveries carry: --secret-file FILE, \
             ${SECRET_VAR} or --secret"
        ))
    })
}

/// The Authorization header a registration asks for: `--auth-header-file`, else
/// `--auth-header`, else `$PUBAPI_WEBHOOK_SECRET` when set, else none.
pub fn auth_header(args: &RegistrationArgs) -> Result<Option<String>, Failure> {
    if let Some(path) = &args.auth_header_file {
        return secret_file(path, "--auth-header-file").map(Some);
    }
    Ok(args.auth_header.clone().or_else(secret_var))
}

/// A registering call's failure; a refused endpoint says how to register it anyway.
fn refused_endpoint(error: Error) -> Failure {
    let endpoint = matches!(&error, Error::InvalidInput(InputError::Endpoint(_)));
    let failure = Failure::from(error);
    if endpoint {
        failure.hint(
            "add --skip-endpoint-check to register it anyway (the platform still refuses to \
             deliver to it, and disables a webhook after 4 failed deliveries)",
        )
    } else {
        failure
    }
}

fn registration(session: &Session, args: &RegistrationArgs) -> Result<Registration, Failure> {
    let base = if args.loopback_for_tests {
        Registration::loopback_for_tests(&args.url)?
    } else {
        Registration::new(&args.url).map_err(|e| {
            let failure = Failure::from(e);
            if args.url.starts_with("http://") {
                failure.hint(
                    "the platform delivers to https:// only; a sandbox also delivers to a \
                     receiver on this machine: add --loopback-for-tests \
                     (http://127.0.0.1:PORT/…, as `pubapi webhooks listen` prints it)",
                )
            } else {
                failure
            }
        })?
    };
    let mut registration = base.event_names(&args.events)?;
    if !args.paths.is_empty() {
        registration = registration.paths(args.paths.clone())?;
    }
    if let Some(header) = auth_header(args)? {
        registration = registration.auth_header(header);
    }
    if args.skip_endpoint_check || session.dry_run {
        registration = registration.skip_endpoint_check();
    }
    Ok(registration)
}

/// The registration a webhook's details describe, to register it again.
fn from_details(details: &Webhook) -> Result<Registration, Failure> {
    let url = details
        .url
        .as_deref()
        .ok_or_else(|| Failure::usage("the webhook's details have no url to renew it with"))?;
    let base = if url.starts_with("http://") {
        Registration::loopback_for_tests(url)?
    } else {
        Registration::new(url)?
    };
    let mut registration = base.event_names(&details.event_type)?;
    if let Some(path) = &details.path {
        registration = registration.paths([path.clone()])?;
    }
    if let Some(header) = &details.auth_header {
        registration = registration.auth_header(header.clone());
    }
    Ok(registration)
}

/// `90s`, `10m`, `2h`, `7d`.
fn duration(text: &str) -> Result<Duration, Failure> {
    let refused = || {
        Failure::usage(format!(
            "`{text}` is not a duration such as 90s, 10m, 2h or 7d"
        ))
    };
    // The unit is the last character, whatever its width in bytes (`7é` is refused, not
    // cut inside a character).
    let (split, _) = text.char_indices().last().ok_or_else(refused)?;
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().map_err(|_| refused())?;
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(refused()),
    };
    number
        .checked_mul(seconds)
        .map(Duration::from_secs)
        .ok_or_else(refused)
}

fn expires(at: Option<i64>) -> String {
    match at {
        Some(seconds) => pubapi_sandbox::iso_seconds(seconds.saturating_mul(1000)),
        None => "-".into(),
    }
}

fn summaries(session: &Session, list: &[WebhookSummary]) -> Result<(), Failure> {
    if session.out.json {
        return session.out.json_document(list);
    }
    session.out.table(
        &["ID", "STATUS", "EXPIRES"],
        list.iter()
            .map(|hook| {
                vec![
                    hook.webhook_id.clone(),
                    hook.status.to_string(),
                    expires(hook.expires),
                ]
            })
            .collect(),
    )
}

fn details_of(session: &Session, details: &Webhook) -> Result<(), Failure> {
    if session.out.json {
        return session.out.json_document(details);
    }
    session.out.pairs(&[
        ("id", details.webhook_id.clone()),
        ("url", details.url.clone().unwrap_or_default()),
        ("events", details.event_type.join(", ")),
        ("path", details.path.clone().unwrap_or_else(|| "-".into())),
        (
            "status",
            details
                .status
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default(),
        ),
        ("expires", expires(details.expires)),
        (
            "auth header",
            if details.auth_header.is_some() {
                "set (not shown)"
            } else {
                "-"
            }
            .into(),
        ),
    ])
}

/// A receiver on `bind:port` until Ctrl-C: each event of a verified delivery is printed as
/// one JSON line (the event as delivered); parts that are not events go to stderr.
async fn listen(session: &Session, port: u16, secret: String, bind: String) -> Result<(), Failure> {
    let secret =
        WebhookSecret::new(secret).map_err(|e| Failure::usage(format!("--secret: {e}")))?;
    let receiver = Receiver::builder()
        .secret(secret)
        .build()
        .map_err(|e| Failure::usage(format!("cannot build the receiver: {e}")))?;
    let out = session.out;
    let handler = Arc::new(move |batch: Batch| async move {
        for event in &batch.events {
            out.json_line(event)
                .map_err(|failure| HandlerError::new(failure.message))?;
        }
        for dead in &batch.dead_letters {
            match dead {
                DeadLetter::Body { error, .. } => {
                    eprintln!("a delivery that is not events: {error}")
                }
                DeadLetter::Item { raw, reason } => eprintln!(
                    "an element that is not an event ({reason}): {}",
                    String::from_utf8_lossy(raw)
                ),
                _ => eprintln!("a part of a delivery that is not an event"),
            }
        }
        Ok::<(), HandlerError>(())
    });
    let listener = tokio::net::TcpListener::bind((bind.as_str(), port))
        .await
        .map_err(|e| Failure::failed(format!("cannot listen on {bind}:{port}: {e}")))?;
    let addr = listener
        .local_addr()
        .map_err(|e| Failure::failed(format!("cannot listen on {bind}:{port}: {e}")))?;
    let app = axum::Router::new()
        .fallback_service(webhook::axum::endpoint(Arc::new(receiver), handler))
        .layer(axum::middleware::from_fn(say_refusals));
    eprintln!("receiving webhook deliveries at http://{addr}/ until Ctrl-C");
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .map_err(|e| Failure::failed(format!("the receiver stopped: {e}")))
}

/// Says on stderr when the receiver refuses a request: the sender learns it from the status,
/// the person watching the receiver from this line.
async fn say_refusals(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let (method, path) = (request.method().clone(), request.uri().path().to_string());
    let response = next.run(request).await;
    let status = response.status();
    match status.as_u16() {
        401 => eprintln!(
            "refused a delivery to {path} (401): its Authorization header is not the secret"
        ),
        413 => eprintln!("refused a delivery to {path} (413): its body is too large"),
        code if code >= 400 => eprintln!("answered {status} to {method} {path}"),
        _ => {}
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_like_the_help_says() {
        assert_eq!(duration("90s").unwrap(), Duration::from_secs(90));
        assert_eq!(duration("7d").unwrap(), Duration::from_secs(7 * 86_400));
        for bad in [
            "",
            "d",
            "7",
            "7w",
            "-1d",
            "99999999999999999999d",
            "7é",
            "9µ",
            "é",
        ] {
            assert!(duration(bad).is_err(), "{bad}");
        }
    }
}
