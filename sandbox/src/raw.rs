//! Plain HTTP calls to a sandbox, for tests that look at exact statuses, headers and bodies
//! (the `pubapi-sdk-ext` client paces, retries and types them instead).

use serde_json::Value;

/// Sends requests to one sandbox without any policy.
#[derive(Debug, Clone)]
pub struct RawClient {
    http: reqwest::Client,
    base_url: String,
}

/// A reply as received.
#[derive(Debug, Clone, PartialEq)]
pub struct RawResponse {
    /// Status.
    pub status: u16,
    /// Headers (names lower case).
    pub headers: Vec<(String, String)>,
    /// Body.
    pub body: Vec<u8>,
}

impl RawResponse {
    /// A header by name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        crate::http::header_value(&self.headers, name)
    }

    /// The body as JSON (`Value::Null` when it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// One request being built.
#[derive(Debug)]
pub struct RawRequest {
    builder: reqwest::RequestBuilder,
}

impl RawClient {
    pub(crate) fn new(base_url: &str) -> Self {
        RawClient {
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap_or_default(),
            base_url: base_url.to_string(),
        }
    }

    /// A request of `method` to `path` below the base URL (`/v1/whoami`), with the bearer
    /// `token` when given.
    pub fn request(&self, method: &str, path: &str, token: Option<&str>) -> RawRequest {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap_or(reqwest::Method::GET);
        let mut builder = self
            .http
            .request(method, format!("{}{path}", self.base_url));
        if let Some(token) = token {
            builder = builder.bearer_auth(token);
        }
        RawRequest { builder }
    }

    /// `GET path` with `token`.
    pub async fn get(&self, path: &str, token: &str) -> RawResponse {
        self.request("GET", path, Some(token)).send().await
    }

    /// `POST path` with `token` and a JSON body.
    pub async fn post(&self, path: &str, token: &str, body: &Value) -> RawResponse {
        self.request("POST", path, Some(token))
            .json(body)
            .send()
            .await
    }
}

impl RawRequest {
    /// Adds a header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.builder = self.builder.header(name, value);
        self
    }

    /// Sets a JSON body.
    pub fn json(mut self, body: &Value) -> Self {
        self.builder = self
            .builder
            .header("content-type", "application/json")
            .body(serde_json::to_vec(body).unwrap_or_default());
        self
    }

    /// Sets a raw body.
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.builder = self.builder.body(body.into());
        self
    }

    /// Sends the request; a transport failure is returned as status 0 with the error as
    /// body.
    pub async fn send(self) -> RawResponse {
        match self.builder.send().await {
            Ok(response) => {
                let status = response.status().as_u16();
                let headers = response
                    .headers()
                    .iter()
                    .map(|(k, v)| (k.as_str().to_string(), v.to_str().unwrap_or("").to_string()))
                    .collect();
                match response.bytes().await {
                    Ok(body) => RawResponse {
                        status,
                        headers,
                        body: body.to_vec(),
                    },
                    Err(e) => RawResponse {
                        status: 0,
                        headers,
                        body: e.to_string().into_bytes(),
                    },
                }
            }
            Err(e) => RawResponse {
                status: 0,
                headers: Vec::new(),
                body: e.to_string().into_bytes(),
            },
        }
    }
}
