//! The one rule for plain `http`: only to this machine (sandboxes, test servers), for the
//! client's base URL and for webhook URLs alike.

/// Whether a URL's host is a loopback address or `localhost`: the hosts plain `http` is
/// accepted for (sandboxes, test servers).
pub(crate) fn is_loopback(url: &reqwest::Url) -> bool {
    let host = url.host_str().unwrap_or_default();
    host == "localhost"
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}
