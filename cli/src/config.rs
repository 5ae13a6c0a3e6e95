//! Where commands go and with which token: `--sandbox`, a named profile, the environment, the
//! config file's default profile, or (nothing configured) the sandbox, in that order.
//!
//! The token is held as a [`SecretToken`] from the moment it is read: it is never printed,
//! logged or put into an error message (a profile's errors name the profile and the field).
//!
//! ```toml
//! # ~/.config/pubapi/config.toml
//! default = "prod"
//!
//! [profiles.prod]
//! domain = "acme.example.com"
//! token_env = "ACME_PUBAPI_TOKEN"    # or: token = "…" (keep the file private: chmod 600)
//!
//! [profiles.prod-as-alice]
//! domain = "acme.example.com"
//! token_env = "ACME_PUBAPI_TOKEN"
//! act_as = "alice@acme.example.com"
//! ```

use crate::args::Global;
use crate::failure::Failure;
use pubapi_sdk_ext::SecretToken;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where the API is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// A customer domain (`https://<domain>/pubapi`).
    Domain(String),
    /// A full base URL including `/pubapi`.
    BaseUrl(String),
}

/// What the commands talk to.
#[derive(Debug)]
pub enum Target {
    /// A sandbox in this process; `notice` says why, when the user did not ask for it.
    Sandbox {
        /// Printed on stderr when the sandbox is the fallback.
        notice: Option<&'static str>,
        /// `--act-as`.
        act_as: Option<String>,
    },
    /// The platform (or a sandbox served elsewhere).
    Platform {
        /// Where.
        endpoint: Endpoint,
        /// The token.
        token: SecretToken,
        /// Act as this user.
        act_as: Option<String>,
    },
}

/// The config file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    /// The profile used when neither `--profile` nor the environment says otherwise.
    default: Option<String>,
    #[serde(default)]
    profiles: BTreeMap<String, Profile>,
}

/// One profile of the config file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Profile {
    domain: Option<String>,
    base_url: Option<String>,
    token: Option<String>,
    token_env: Option<String>,
    act_as: Option<String>,
}

/// The environment a target is read from (the process's, or a test's).
pub trait Environment {
    /// The variable's value, when set and not empty.
    fn var(&self, name: &str) -> Option<String>;
}

/// The process's environment.
#[derive(Debug)]
pub struct ProcessEnv;

impl Environment for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|v| !v.is_empty())
    }
}

/// The config file's path: `$PUBAPI_CONFIG`, else `$XDG_CONFIG_HOME/pubapi/config.toml`,
/// else `~/.config/pubapi/config.toml` (`%APPDATA%\pubapi\config.toml` on Windows).
pub fn config_path(env: &dyn Environment) -> Option<PathBuf> {
    if let Some(path) = env.var("PUBAPI_CONFIG") {
        return Some(PathBuf::from(path));
    }
    let base = env
        .var("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| env.var("HOME").map(|home| Path::new(&home).join(".config")))
        .or_else(|| env.var("APPDATA").map(PathBuf::from))?;
    Some(base.join("pubapi").join("config.toml"))
}

fn read_config(path: &Path) -> Result<Option<ConfigFile>, Failure> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(Failure::usage(format!(
                "cannot read the config file {}: {e}",
                path.display()
            )));
        }
    };
    // toml's messages quote the offending line, which may hold a token: say where only.
    toml::from_str(&text).map(Some).map_err(|e| {
        let place = e
            .span()
            .map(|span| {
                let line = text[..span.start].matches('\n').count() + 1;
                format!(" at line {line}")
            })
            .unwrap_or_default();
        Failure::usage(format!(
            "the config file {} is not valid{place}: {}",
            path.display(),
            e.message()
        ))
        .hint("fields of a profile: domain or base_url, token or token_env, act_as")
    })
}

/// The profiles a file has, as a message's end: `its profiles: prod, staging`.
fn profiles_in(file: &ConfigFile) -> String {
    if file.profiles.is_empty() {
        return "it has no profiles ([profiles.NAME] sections)".into();
    }
    let names: Vec<&str> = file.profiles.keys().map(String::as_str).collect();
    format!("its profiles: {}", names.join(", "))
}

fn secret(value: String, what: &str) -> Result<SecretToken, Failure> {
    SecretToken::try_from(value).map_err(|e| Failure::usage(format!("{what}: {e}")))
}

fn profile_target(
    name: &str,
    profile: Profile,
    path: &Path,
    env: &dyn Environment,
    act_as: Option<String>,
) -> Result<Target, Failure> {
    let endpoint = match (profile.domain, profile.base_url) {
        (Some(domain), None) => Endpoint::Domain(domain),
        (None, Some(url)) => Endpoint::BaseUrl(url),
        _ => {
            return Err(Failure::usage(format!(
                "profile `{name}` in {} needs one of domain or base_url",
                path.display()
            )));
        }
    };
    let token = match (profile.token, profile.token_env) {
        (Some(token), None) => secret(token, &format!("the token of profile `{name}`"))?,
        (None, Some(var)) => {
            let token = env.var(&var).ok_or_else(|| {
                Failure::usage(format!(
                    "profile `{name}` reads its token from ${var}, which is not set"
                ))
            })?;
            secret(token, &format!("${var}"))?
        }
        _ => {
            return Err(Failure::usage(format!(
                "profile `{name}` in {} needs one of token or token_env",
                path.display()
            )));
        }
    };
    Ok(Target::Platform {
        endpoint,
        token,
        act_as: act_as.or(profile.act_as),
    })
}

/// Decides the target from the command line and the environment.
pub fn target(global: &Global, env: &dyn Environment) -> Result<Target, Failure> {
    let act_as = global.act_as.clone();
    if global.sandbox {
        if global.profile.is_some() {
            return Err(Failure::usage("--sandbox and --profile exclude each other"));
        }
        return Ok(Target::Sandbox {
            notice: None,
            act_as,
        });
    }
    let path = config_path(env);
    let file = match &path {
        Some(path) => read_config(path)?,
        None => None,
    };
    if let Some(name) = &global.profile {
        let (Some(path), Some(mut file)) = (path.clone(), file) else {
            return Err(Failure::usage(format!(
                "--profile {name}: there is no config file{}",
                path.map(|p| format!(" at {}", p.display()))
                    .unwrap_or_default()
            )));
        };
        let known = profiles_in(&file);
        let profile = file.profiles.remove(name).ok_or_else(|| {
            Failure::usage(format!(
                "--profile {name}: {} has no such profile; {known}",
                path.display()
            ))
        })?;
        return profile_target(name, profile, &path, env, act_as);
    }
    let endpoint = match (env.var("PUBAPI_DOMAIN"), env.var("PUBAPI_BASE_URL")) {
        (Some(domain), _) => Some(Endpoint::Domain(domain)),
        (None, Some(url)) => Some(Endpoint::BaseUrl(url)),
        (None, None) => None,
    };
    match (endpoint, env.var("PUBAPI_TOKEN")) {
        (Some(endpoint), Some(token)) => {
            return Ok(Target::Platform {
                endpoint,
                token: secret(token, "$PUBAPI_TOKEN")?,
                act_as,
            });
        }
        (Some(_), None) => {
            return Err(Failure::usage(
                "PUBAPI_DOMAIN (or PUBAPI_BASE_URL) is set but PUBAPI_TOKEN is not",
            ));
        }
        (None, Some(_)) => {
            return Err(Failure::usage(
                "PUBAPI_TOKEN is set but neither PUBAPI_DOMAIN nor PUBAPI_BASE_URL is",
            ));
        }
        (None, None) => {}
    }
    if let (Some(path), Some(mut file)) = (path, file)
        && let Some(name) = file.default.take()
    {
        let known = profiles_in(&file);
        let profile = file.profiles.remove(&name).ok_or_else(|| {
            Failure::usage(format!(
                "the default profile `{name}` is not in {}; {known}",
                path.display()
            ))
        })?;
        return profile_target(&name, profile, &path, env, act_as);
    }
    Ok(Target::Sandbox {
        notice: Some(
            "pubapi: nothing configured (PUBAPI_DOMAIN, PUBAPI_TOKEN or a profile): using the \
             built-in sandbox",
        ),
        act_as,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    struct Vars(HashMap<&'static str, String>);

    impl Environment for Vars {
        fn var(&self, name: &str) -> Option<String> {
            self.0.get(name).cloned()
        }
    }

    fn global(sandbox: bool, profile: Option<&str>) -> Global {
        Global {
            sandbox,
            profile: profile.map(str::to_string),
            act_as: None,
            json: false,
            dry_run: false,
        }
    }

    fn env_with_config(text: &str, extra: &[(&'static str, &str)]) -> (Vars, PathBuf) {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("pubapi-config-test-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("config.toml");
        std::fs::write(&path, text).unwrap();
        let mut vars: HashMap<&'static str, String> =
            extra.iter().map(|(k, v)| (*k, v.to_string())).collect();
        vars.insert("PUBAPI_CONFIG", path.display().to_string());
        (Vars(vars), path)
    }

    const TOKEN: &str = "tok-profile-0123456789abcdef";

    #[test]
    fn nothing_configured_falls_back_to_the_sandbox_with_a_notice() {
        let env = Vars(HashMap::new());
        let target = target(&global(false, None), &env).unwrap();
        assert!(matches!(
            target,
            Target::Sandbox {
                notice: Some(_),
                ..
            }
        ));
    }

    #[test]
    fn the_environment_wins_over_the_default_profile() {
        let (env, _) = env_with_config(
            &format!(
                "default = \"p\"\n[profiles.p]\ndomain = \"a.example.com\"\ntoken = \"{TOKEN}\"\n"
            ),
            &[("PUBAPI_DOMAIN", "b.example.com"), ("PUBAPI_TOKEN", TOKEN)],
        );
        match target(&global(false, None), &env).unwrap() {
            Target::Platform { endpoint, .. } => {
                assert_eq!(endpoint, Endpoint::Domain("b.example.com".into()));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_profile_reads_its_token_from_the_variable_it_names() {
        let (env, _) = env_with_config(
            "[profiles.work]\nbase_url = \"http://127.0.0.1:9/pubapi\"\ntoken_env = \"WORK\"\nact_as = \"alice\"\n",
            &[("WORK", TOKEN)],
        );
        match target(&global(false, Some("work")), &env).unwrap() {
            Target::Platform {
                endpoint, act_as, ..
            } => {
                assert_eq!(
                    endpoint,
                    Endpoint::BaseUrl("http://127.0.0.1:9/pubapi".into())
                );
                assert_eq!(act_as.as_deref(), Some("alice"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn config_errors_name_the_problem_and_never_the_token() {
        let cases: &[(&str, &str, &str)] = &[
            (
                "[profiles.p]\ndomain = \"a\"\n",
                "p",
                "needs one of token or token_env",
            ),
            (
                "[profiles.p]\ntoken = \"tok-profile-0123456789abcdef\"\n",
                "p",
                "needs one of domain or base_url",
            ),
            (
                "[profiles.p]\ndomain = \"a\"\ntoken_env = \"NOPE\"\n",
                "p",
                "$NOPE",
            ),
            (
                "[profiles.q]\n[profiles.r]\n",
                "p",
                "has no such profile; its profiles: q, r",
            ),
            (
                "[profiles.p]\ndomain = \"a\"\ntokn = \"tok-profile-0123456789abcdef\"\n",
                "p",
                "not valid at line 3",
            ),
        ];
        for (text, profile, expected) in cases {
            let (env, _) = env_with_config(text, &[]);
            let failure = target(&global(false, Some(profile)), &env).unwrap_err();
            let shown = failure.to_string();
            assert!(shown.contains(expected), "{text}: {shown}");
            assert!(!shown.contains(TOKEN), "{text}: {shown}");
            assert_eq!(failure.exit, crate::failure::Exit::Usage);
        }
    }

    #[test]
    fn half_an_environment_is_a_usage_error() {
        let env = Vars(HashMap::from([("PUBAPI_TOKEN", TOKEN.to_string())]));
        let failure = target(&global(false, None), &env).unwrap_err();
        assert!(failure.to_string().contains("PUBAPI_DOMAIN"), "{failure}");
    }
}
