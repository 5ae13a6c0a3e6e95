//! The Redis URLs of the fleet's stores, read: which Redis a URL names (one server, Sentinel
//! or Cluster, with or without TLS), its hosts, credentials and parameters, each problem of a
//! malformed one named (never the URL, which may hold a password). The connection
//! (`redis_connection`) opens what [`Target::parse`] found; the forms are documented for users
//! in `fleet::redis`.

use super::FleetError;

/// The port of a Redis server when the URL names none.
const REDIS_PORT: u16 = 6379;

/// The port of a sentinel when the URL names none.
const SENTINEL_PORT: u16 = 26379;

/// Which Redis a URL names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Target {
    /// One server: the URL redis-rs reads (without the `ca` parameter), and the `ca` file.
    Single { url: String, ca: Option<String> },
    /// A Sentinel deployment: the sentinels, the primary's name.
    Sentinel(Nodes),
    /// A Redis Cluster: some of its nodes.
    Cluster(Nodes),
}

/// The servers of a Sentinel or Cluster URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Nodes {
    pub(super) tls: bool,
    pub(super) username: Option<String>,
    pub(super) password: Option<String>,
    pub(super) hosts: Vec<Host>,
    /// Sentinel: the primary's name.
    pub(super) primary: Option<String>,
    pub(super) db: i64,
    pub(super) ca: Option<String>,
    /// Sentinel: the sentinels' own user name and password (`sentinel_user`,
    /// `sentinel_password` parameters), when they require one.
    pub(super) sentinel_username: Option<String>,
    pub(super) sentinel_password: Option<String>,
}

/// One `host:port` of a URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Host {
    pub(super) name: String,
    pub(super) port: u16,
}

impl Host {
    /// `host:port`, an IPv6 address in brackets.
    pub(super) fn address(&self) -> String {
        if self.name.contains(':') {
            format!("[{}]:{}", self.name, self.port)
        } else {
            format!("{}:{}", self.name, self.port)
        }
    }
}

/// A malformed URL: `problem` says what is wrong (the URL is not repeated: it may hold a
/// password).
fn malformed(problem: impl std::fmt::Display) -> FleetError {
    FleetError::invalid(format!("redis url: {problem}"))
}

/// The user name and password of a URL's `user:password` part, decoded; an empty one is
/// none.
fn user_and_password(
    credentials: Option<&str>,
) -> Result<(Option<String>, Option<String>), FleetError> {
    let Some(credentials) = credentials else {
        return Ok((None, None));
    };
    let (user, password) = match credentials.split_once(':') {
        Some((user, password)) => (user, Some(password)),
        None => (credentials, None),
    };
    let user = Some(decode(user, "user name")?).filter(|u| !u.is_empty());
    let password = password
        .map(|p| decode(p, "password"))
        .transpose()?
        .filter(|p| !p.is_empty());
    Ok((user, password))
}

impl Target {
    pub(super) fn parse(url: &str) -> Result<Target, FleetError> {
        let Some((scheme, rest)) = url.split_once("://") else {
            return Err(malformed(
                "no scheme (`redis://`, `redis+sentinel://`, ...)",
            ));
        };
        let (tls, form) = match scheme {
            "redis+sentinel" => (false, Form::Sentinel),
            "rediss+sentinel" => (true, Form::Sentinel),
            "redis+cluster" => (false, Form::Cluster),
            "rediss+cluster" => (true, Form::Cluster),
            "redis" | "rediss" | "redis+unix" | "unix" | "valkey" | "valkeys" => {
                return Target::single(url, scheme == "rediss" || scheme == "valkeys");
            }
            other => {
                return Err(malformed(format_args!(
                    "unknown scheme {other:?}: one of redis, rediss, redis+sentinel, \
                     rediss+sentinel, redis+cluster, rediss+cluster"
                )));
            }
        };
        let (rest, query) = match rest.split_once('?') {
            Some((rest, query)) => (rest, Some(query)),
            None => (rest, None),
        };
        if rest.contains('#') || query.is_some_and(|q| q.contains('#')) {
            return Err(malformed("a fragment (`#...`) is not supported"));
        }
        let Parameters {
            ca,
            sentinel_username,
            sentinel_password,
        } = Parameters::of(query, tls, form)?;
        let (authority, path) = match rest.split_once('/') {
            Some((authority, path)) => (authority, path),
            None => (rest, ""),
        };
        let (credentials, hosts) = match authority.rsplit_once('@') {
            Some((credentials, hosts)) => (Some(credentials), hosts),
            None => (None, authority),
        };
        let (username, password) = user_and_password(credentials)?;
        let default_port = match form {
            Form::Sentinel => SENTINEL_PORT,
            Form::Cluster => REDIS_PORT,
        };
        let hosts = hosts
            .split(',')
            .map(|host| parse_host(host, default_port))
            .collect::<Result<Vec<_>, _>>()?;
        let nodes = Nodes {
            tls,
            username,
            password,
            hosts,
            primary: None,
            db: 0,
            ca,
            sentinel_username,
            sentinel_password,
        };
        Target::of_path(form, nodes, path)
    }

    /// The Sentinel or Cluster target of `nodes`, with what the URL's `path` says.
    fn of_path(form: Form, mut nodes: Nodes, path: &str) -> Result<Target, FleetError> {
        let mut segments = path.split('/');
        let first = segments.next().filter(|s| !s.is_empty());
        let second = segments.next().filter(|s| !s.is_empty());
        if segments.any(|s| !s.is_empty()) {
            return Err(malformed("too many path segments"));
        }
        match form {
            Form::Sentinel => {
                let Some(primary) = first else {
                    return Err(malformed(
                        "a Sentinel URL names its primary: \
                         redis+sentinel://host:port,host:port/<primary-name>[/db]",
                    ));
                };
                nodes.primary = Some(decode(primary, "primary name")?);
                if let Some(db) = second {
                    nodes.db = db
                        .parse::<i64>()
                        .ok()
                        .filter(|db| *db >= 0)
                        .ok_or_else(|| {
                            malformed(format_args!("database {db:?} is not a number"))
                        })?;
                }
                Ok(Target::Sentinel(nodes))
            }
            Form::Cluster => {
                if first.is_some() || second.is_some() {
                    return Err(malformed(
                        "a Cluster URL has no path (a cluster has only database 0): \
                         redis+cluster://host:port,host:port",
                    ));
                }
                Ok(Target::Cluster(nodes))
            }
        }
    }

    /// One server: redis-rs reads the URL, less a `ca` parameter.
    fn single(url: &str, tls: bool) -> Result<Target, FleetError> {
        let (base, query) = match url.split_once('?') {
            Some((base, query)) => (base, query),
            None => {
                return Ok(Target::Single {
                    url: url.to_string(),
                    ca: None,
                });
            }
        };
        let (query, fragment) = match query.split_once('#') {
            Some((query, fragment)) => (query, Some(fragment)),
            None => (query, None),
        };
        let mut ca = None;
        let mut kept = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("ca", path)) => ca = Some(pair_value(path, tls)?),
                _ => kept.push(pair),
            }
        }
        let mut url = base.to_string();
        if !kept.is_empty() {
            url.push('?');
            url.push_str(&kept.join("&"));
        }
        if let Some(fragment) = fragment {
            url.push('#');
            url.push_str(fragment);
        }
        Ok(Target::Single { url, ca })
    }
}

/// The two multi-server forms.
#[derive(Debug, Clone, Copy)]
enum Form {
    Sentinel,
    Cluster,
}

/// The parameters of a Sentinel or Cluster URL's query: `ca` (with TLS), and for Sentinel
/// the sentinels' own credentials, percent-encoded.
#[derive(Debug, Default)]
struct Parameters {
    ca: Option<String>,
    sentinel_username: Option<String>,
    sentinel_password: Option<String>,
}

impl Parameters {
    fn of(query: Option<&str>, tls: bool, form: Form) -> Result<Parameters, FleetError> {
        let mut parameters = Parameters::default();
        for pair in query
            .into_iter()
            .flat_map(|q| q.split('&'))
            .filter(|p| !p.is_empty())
        {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            match (name, form) {
                ("ca", _) => parameters.ca = Some(pair_value(value, tls)?),
                ("sentinel_user", Form::Sentinel) => {
                    parameters.sentinel_username =
                        Some(decode(value, "sentinel user name")?).filter(|u| !u.is_empty());
                }
                ("sentinel_password", Form::Sentinel) => {
                    parameters.sentinel_password =
                        Some(decode(value, "sentinel password")?).filter(|p| !p.is_empty());
                }
                (_, Form::Sentinel) => {
                    return Err(malformed(format_args!(
                        "unknown parameter {name:?} (a Sentinel URL takes `ca`, with \
                         rediss+sentinel, `sentinel_user` and `sentinel_password`)"
                    )));
                }
                (_, Form::Cluster) => {
                    return Err(malformed(format_args!(
                        "unknown parameter {name:?} (the only one is `ca`, with rediss+...)"
                    )));
                }
            }
        }
        Ok(parameters)
    }
}

/// The path of a `ca` parameter, which only a TLS URL may have.
fn pair_value(path: &str, tls: bool) -> Result<String, FleetError> {
    if !tls {
        return Err(malformed(
            "a `ca` file is for TLS: use rediss://, rediss+sentinel:// or rediss+cluster://",
        ));
    }
    let path = decode(path, "ca path")?;
    if path.is_empty() {
        return Err(malformed("the `ca` parameter names no file"));
    }
    Ok(path)
}

fn decode(text: &str, what: &str) -> Result<String, FleetError> {
    percent_encoding::percent_decode_str(text)
        .decode_utf8()
        .map(|decoded| decoded.into_owned())
        .map_err(|_| malformed(format_args!("the {what} is not UTF-8 once percent-decoded")))
}

/// `host[:port]` or `[ipv6][:port]`.
fn parse_host(text: &str, default_port: u16) -> Result<Host, FleetError> {
    let (name, port) = if let Some(bracketed) = text.strip_prefix('[') {
        let Some((name, after)) = bracketed.split_once(']') else {
            return Err(malformed(format_args!("unclosed `[` in host {text:?}")));
        };
        let port = match after {
            "" => None,
            _ => match after.strip_prefix(':') {
                Some(port) => Some(port),
                None => return Err(malformed(format_args!("host {text:?} is not host:port"))),
            },
        };
        (name, port)
    } else {
        match text.split_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (text, None),
        }
    };
    if name.is_empty() {
        return Err(malformed(
            "a host is empty (hosts are host:port, separated by commas)",
        ));
    }
    if name.contains(|c: char| c.is_whitespace() || "/?#@,[]".contains(c)) {
        return Err(malformed(format_args!("host {name:?} is not a host name")));
    }
    let port = match port {
        None => default_port,
        Some(port) => port
            .parse::<u16>()
            .ok()
            .filter(|p| *p != 0)
            .ok_or_else(|| {
                malformed(format_args!("port {port:?} of host {name:?} is not a port"))
            })?,
    };
    Ok(Host {
        name: name.to_string(),
        port,
    })
}

#[cfg(test)]
mod tests {
    use super::{Host, Nodes, Target};
    use crate::fleet::FleetErrorKind;

    fn host(name: &str, port: u16) -> Host {
        Host {
            name: name.into(),
            port,
        }
    }

    #[test]
    fn a_sentinel_url_names_the_sentinels_the_primary_and_the_database() {
        let target =
            Target::parse("rediss+sentinel://app:p%40ss@s1:26380,[::1],s3/main/2?ca=/etc/ca.pem")
                .unwrap();
        assert_eq!(
            target,
            Target::Sentinel(Nodes {
                tls: true,
                username: Some("app".into()),
                password: Some("p@ss".into()),
                hosts: vec![host("s1", 26380), host("::1", 26379), host("s3", 26379)],
                primary: Some("main".into()),
                db: 2,
                ca: Some("/etc/ca.pem".into()),
                sentinel_username: None,
                sentinel_password: None,
            })
        );
    }

    #[test]
    fn a_sentinel_url_may_carry_the_sentinels_own_credentials_apart_from_the_primarys() {
        let Target::Sentinel(nodes) = Target::parse(
            "redis+sentinel://:data%21@s1/main?sentinel_user=watch&sentinel_password=s%26cret",
        )
        .unwrap() else {
            panic!("a Sentinel target")
        };
        assert_eq!(nodes.password.as_deref(), Some("data!"));
        assert_eq!(nodes.sentinel_username.as_deref(), Some("watch"));
        assert_eq!(nodes.sentinel_password.as_deref(), Some("s&cret"));
    }

    #[test]
    fn a_cluster_url_names_some_of_its_nodes() {
        let target = Target::parse("redis+cluster://:secret@10.0.0.1:7000,10.0.0.2").unwrap();
        assert_eq!(
            target,
            Target::Cluster(Nodes {
                tls: false,
                username: None,
                password: Some("secret".into()),
                hosts: vec![host("10.0.0.1", 7000), host("10.0.0.2", 6379)],
                primary: None,
                db: 0,
                ca: None,
                sentinel_username: None,
                sentinel_password: None,
            })
        );
    }

    #[test]
    fn a_single_server_url_goes_to_redis_rs_without_its_ca_parameter() {
        assert_eq!(
            Target::parse("redis://127.0.0.1:6379/3").unwrap(),
            Target::Single {
                url: "redis://127.0.0.1:6379/3".into(),
                ca: None
            }
        );
        assert_eq!(
            Target::parse("rediss://h:6380/0?ca=%2Fetc%2Fca.pem&protocol=resp3").unwrap(),
            Target::Single {
                url: "rediss://h:6380/0?protocol=resp3".into(),
                ca: Some("/etc/ca.pem".into())
            }
        );
    }

    #[test]
    fn a_malformed_url_is_refused_with_its_problem_named() {
        let table = [
            ("127.0.0.1:6379", "no scheme"),
            (
                "redis+sentinal://h:1/m",
                "unknown scheme \"redis+sentinal\"",
            ),
            ("redis+sentinel://h:26379", "names its primary"),
            ("redis+sentinel://h:26379/", "names its primary"),
            (
                "redis+sentinel://h:26379/m/x",
                "database \"x\" is not a number",
            ),
            (
                "redis+sentinel://h:26379/m/-1",
                "database \"-1\" is not a number",
            ),
            ("redis+sentinel://h:26379/m/0/x", "too many path segments"),
            ("redis+sentinel:///m", "a host is empty"),
            ("redis+cluster://a:7000,,b:7001", "a host is empty"),
            ("redis+cluster://a:7000,", "a host is empty"),
            (
                "redis+cluster://h:port",
                "port \"port\" of host \"h\" is not a port",
            ),
            (
                "redis+cluster://h:70000",
                "port \"70000\" of host \"h\" is not a port",
            ),
            (
                "redis+cluster://h:0",
                "port \"0\" of host \"h\" is not a port",
            ),
            ("redis+cluster://[::1:7000", "unclosed `[`"),
            ("redis+cluster://[::1]7000", "is not host:port"),
            ("redis+cluster://h:7000/0", "has no path"),
            (
                "redis+cluster://h:7000?ca=/ca.pem",
                "a `ca` file is for TLS",
            ),
            ("rediss+cluster://h:7000?ca=", "names no file"),
            ("rediss+cluster://h:7000?tls=1", "unknown parameter \"tls\""),
            (
                "redis+cluster://h:7000?sentinel_password=x",
                "unknown parameter \"sentinel_password\"",
            ),
            (
                "redis+sentinel://h/m?password=x",
                "unknown parameter \"password\"",
            ),
            (
                "redis+sentinel://h/m?sentinel_password=%FF",
                "sentinel password is not UTF-8",
            ),
            ("rediss+cluster://h:7000#insecure", "fragment"),
            ("redis+sentinel://u:%FF@h/m", "password is not UTF-8"),
            ("redis://h:6379/?ca=/ca.pem", "a `ca` file is for TLS"),
        ];
        for (url, problem) in table {
            let error = Target::parse(url).expect_err(url);
            assert_eq!(error.kind, FleetErrorKind::Invalid, "{url}");
            assert!(
                error.message.contains(problem),
                "{url}: {:?} does not say {problem:?}",
                error.message
            );
            assert!(
                !error.message.contains("%FF"),
                "{url}: the URL is not repeated"
            );
        }
    }

    #[tokio::test]
    async fn a_url_redis_rs_cannot_read_is_invalid_not_unavailable() {
        let error = crate::fleet::redis_connection::connect("redis://h:notaport/")
            .await
            .unwrap_err();
        assert_eq!(error.kind, FleetErrorKind::Invalid, "{error}");
        let error =
            crate::fleet::redis_connection::connect("rediss://127.0.0.1:1/?ca=/nonexistent/ca.pem")
                .await
                .unwrap_err();
        assert_eq!(error.kind, FleetErrorKind::Invalid, "{error}");
        assert!(error.message.contains("/nonexistent/ca.pem"), "{error}");
    }
}
