//! What the platform's gateway says besides the body: the `X-Gateway-Error-Code` header and
//! its codes. A leaf: the [verdict](crate::verdict) on an answer reads it.

use http::{HeaderMap, HeaderName};

/// `x-gateway-error-code`: says which limit a throttle response hit.
pub(crate) const GATEWAY_ERROR_CODE: HeaderName = HeaderName::from_static("x-gateway-error-code");

/// Gateway code of the per-second limit.
pub(crate) const OVER_QPS: &str = "ERR_403_DEVELOPER_OVER_QPS";

/// Gateway code of the daily quota.
pub(crate) const OVER_RATE: &str = "ERR_403_DEVELOPER_OVER_RATE";

/// The gateway code of a token that is not valid (not in the reference; the platform's own
/// clients see it): treated like a 401, never retried.
pub(crate) const INACTIVE: &str = "ERR_403_DEVELOPER_INACTIVE";

/// The gateway's error code, trimmed; `None` when absent or blank.
pub(crate) fn gateway_code(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(GATEWAY_ERROR_CODE)?
        .to_str()
        .ok()
        .map(|v| v.trim_matches([' ', '\t']))
        .filter(|v| !v.is_empty())
}

/// Whether `code` is one the SDK knows ([`OVER_QPS`], [`OVER_RATE`], [`INACTIVE`]).
pub(crate) fn is_known(code: &str) -> bool {
    [OVER_QPS, OVER_RATE, INACTIVE]
        .iter()
        .any(|known| code.eq_ignore_ascii_case(known))
}
