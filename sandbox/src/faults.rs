//! Fault injection by script: rules tried in order, each for some operations, letting some
//! requests through first and applying to a number of requests (or all).
//!
//! ```
//! use std::time::Duration;
//! use pubapi_sandbox::Fault;
//!
//! // The first whoami fails with a 500, the next one is slow, then all is well.
//! let script = [
//!     Fault::on("whoami").times(1).server_error(),
//!     Fault::on("whoami").times(1).delay(Duration::from_millis(200)),
//! ];
//! # let _ = script;
//! ```

use pubapi_sdk::operations::Operation;
use std::time::Duration;

/// What a fault does to a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FaultAction {
    /// Waits (real time) before handling the request normally.
    Delay(Duration),
    /// Answers 500 (the operation's documented 500 body when it has one).
    ServerError,
    /// Closes the connection without an answer.
    DropConnection,
    /// Answers the operation's success status with a body that is not valid JSON.
    MalformedJson,
    /// Answers as the rate limiter does when the per-second limit is hit (403 +
    /// `ERR_403_DEVELOPER_OVER_QPS` for the general API, 429 for AI) with this `Retry-After`.
    Throttle {
        /// `Retry-After`, seconds.
        retry_after: u64,
    },
    /// Answers as the rate limiter does when the daily quota is used up (403 +
    /// `ERR_403_DEVELOPER_OVER_RATE` for the general API, 429 for AI) with this `Retry-After`.
    QuotaExhausted {
        /// `Retry-After`, seconds.
        retry_after: u64,
    },
    /// Answers this status (400–599) instead of handling the request: the operation's
    /// documented error body for it when the spec has one, else an empty body.
    Status(u16),
    /// Handles the request normally and sends the body at this rate (the head at once).
    SlowBody {
        /// Body bytes per second (at least 1).
        bytes_per_second: u32,
    },
    /// Handles the request normally, announces the whole body's length, then breaks the
    /// connection after this many body bytes.
    CutBody {
        /// Body bytes sent before the connection breaks.
        after_bytes: usize,
    },
    /// Answers as the platform's gateway does in its own envelope, whatever the operation's
    /// error format: `{"fault": {"faultstring": ..., "detail": {"errorcode": ...}}}` with this
    /// status (400–599).
    GatewayFault {
        /// HTTP status.
        status: u16,
        /// `fault.detail.errorcode`.
        errorcode: String,
        /// `fault.faultstring`.
        faultstring: String,
    },
}

impl FaultAction {
    /// The gateway's answer to a token it does not accept: 401,
    /// `keymanagement.service.invalid_access_token`, "Invalid access token".
    pub fn gateway_fault() -> Self {
        FaultAction::GatewayFault {
            status: 401,
            errorcode: "keymanagement.service.invalid_access_token".to_string(),
            faultstring: "Invalid access token".to_string(),
        }
    }

    /// The status the action answers, where it answers one of its own (500 otherwise).
    pub fn status(&self) -> u16 {
        match self {
            FaultAction::Status(status) | FaultAction::GatewayFault { status, .. } => *status,
            _ => 500,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    Any,
    Operation(String),
    Tag(String),
}

/// One rule of a fault script; build it with [`Fault::on`], [`Fault::on_tag`] or
/// [`Fault::on_any`], then pick an action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    target: Target,
    skip: u32,
    times: Option<u32>,
    action: FaultAction,
}

impl Fault {
    fn new(target: Target) -> Self {
        Fault {
            target,
            skip: 0,
            times: None,
            action: FaultAction::ServerError,
        }
    }

    /// A fault for one operation, by operation id (`whoami`, `listEventsV2`, ...).
    pub fn on(operation_id: &str) -> Self {
        Fault::new(Target::Operation(operation_id.to_string()))
    }

    /// A fault for every operation of a tag (`audit`, `webhooks`, `agents`, ...).
    pub fn on_tag(tag: &str) -> Self {
        Fault::new(Target::Tag(tag.to_string()))
    }

    /// A fault for every operation.
    pub fn on_any() -> Self {
        Fault::new(Target::Any)
    }

    /// Lets `n` matching requests through before the fault applies.
    pub fn after(mut self, n: u32) -> Self {
        self.skip = n;
        self
    }

    /// Applies to `n` requests, then the rule is spent (default: every request).
    pub fn times(mut self, n: u32) -> Self {
        self.times = Some(n);
        self
    }

    /// Delays the request.
    pub fn delay(self, by: Duration) -> Self {
        self.action(FaultAction::Delay(by))
    }

    /// Answers 500.
    pub fn server_error(self) -> Self {
        self.action(FaultAction::ServerError)
    }

    /// Drops the connection.
    pub fn drop_connection(self) -> Self {
        self.action(FaultAction::DropConnection)
    }

    /// Answers malformed JSON.
    pub fn malformed_json(self) -> Self {
        self.action(FaultAction::MalformedJson)
    }

    /// Answers a throttle with `Retry-After: retry_after`.
    pub fn throttle(self, retry_after: u64) -> Self {
        self.action(FaultAction::Throttle { retry_after })
    }

    /// Answers the daily-quota throttle with `Retry-After: retry_after`.
    pub fn quota_exhausted(self, retry_after: u64) -> Self {
        self.action(FaultAction::QuotaExhausted { retry_after })
    }

    /// Answers `status` (400–599).
    pub fn status(self, status: u16) -> Self {
        self.action(FaultAction::Status(status))
    }

    /// Sends the body at `bytes_per_second`.
    pub fn slow_body(self, bytes_per_second: u32) -> Self {
        self.action(FaultAction::SlowBody { bytes_per_second })
    }

    /// Breaks the connection after `after_bytes` of the body.
    pub fn cut_body(self, after_bytes: usize) -> Self {
        self.action(FaultAction::CutBody { after_bytes })
    }

    /// Answers the gateway's `fault` envelope with `status`, `errorcode` and `faultstring`.
    pub fn gateway_fault(self, status: u16, errorcode: &str, faultstring: &str) -> Self {
        self.action(FaultAction::GatewayFault {
            status,
            errorcode: errorcode.to_string(),
            faultstring: faultstring.to_string(),
        })
    }

    /// Any action.
    pub fn action(mut self, action: FaultAction) -> Self {
        self.action = action;
        self
    }

    fn matches(&self, op: &Operation) -> bool {
        match &self.target {
            Target::Any => true,
            Target::Operation(id) => id == op.id,
            Target::Tag(tag) => tag == op.tag,
        }
    }
}

/// The rules in force, in order.
#[derive(Debug, Default)]
pub struct FaultScript {
    rules: Vec<Fault>,
}

impl FaultScript {
    /// Adds a rule after the existing ones.
    pub fn push(&mut self, fault: Fault) {
        self.rules.push(fault);
    }

    /// Removes every rule.
    pub fn clear(&mut self) {
        self.rules.clear();
    }

    /// Rules not yet spent.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Whether no rule is left.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The action for a request to `op`, consuming one use of the first matching rule.
    pub fn take(&mut self, op: &Operation) -> Option<FaultAction> {
        let index = self.rules.iter().position(|r| r.matches(op))?;
        let rule = &mut self.rules[index];
        if rule.skip > 0 {
            rule.skip -= 1;
            return None;
        }
        let action = rule.action.clone();
        if let Some(times) = rule.times.as_mut() {
            *times -= 1;
            if *times == 0 {
                self.rules.remove(index);
            }
        }
        Some(action)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::tests::op;

    #[test]
    fn rules_apply_in_order_and_are_spent() {
        let mut script = FaultScript::default();
        script.push(Fault::on("whoami").times(1).server_error());
        script.push(Fault::on("whoami").after(1).times(1).malformed_json());
        assert_eq!(script.take(op("whoami")), Some(FaultAction::ServerError));
        assert_eq!(script.take(op("whoami")), None); // let through by `after(1)`
        assert_eq!(script.take(op("whoami")), Some(FaultAction::MalformedJson));
        assert_eq!(script.take(op("whoami")), None);
        assert!(script.is_empty());
    }

    #[test]
    fn tag_and_any_targets() {
        let mut script = FaultScript::default();
        script.push(Fault::on_tag("audit").throttle(3));
        assert_eq!(script.take(op("whoami")), None);
        assert_eq!(
            script.take(op("getAuditJob")),
            Some(FaultAction::Throttle { retry_after: 3 })
        );
        script.clear();
        script.push(Fault::on_any().drop_connection());
        assert_eq!(
            script.take(op("listAgents")),
            Some(FaultAction::DropConnection)
        );
        assert_eq!(script.len(), 1);
    }
}
