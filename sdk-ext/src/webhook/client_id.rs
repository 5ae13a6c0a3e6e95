//! Recognising one's own actions in deliveries (`user.clientIdHash`).

/// The `clientIdHash` the platform puts in events caused by the OAuth client `client_id`:
/// the lowercase hex SHA-1 of the client id (reference 2.10).
///
/// The receiver drops such events when configured with
/// [`ReceiverBuilder::ignore_own_client_id`](super::ReceiverBuilder::ignore_own_client_id),
/// comparing without regard to hex case, because the reference does not say which case the
/// platform uses.
///
/// ```
/// use pubapi_sdk_ext::webhook::client_id_hash;
///
/// assert_eq!(client_id_hash("abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
/// ```
#[must_use]
pub fn client_id_hash(client_id: &str) -> String {
    crate::digest::hex(&crate::digest::sha1(client_id.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::client_id_hash;

    #[test]
    fn client_id_hash_is_lowercase_hex_sha1() {
        assert_eq!(
            client_id_hash("abc"),
            "a9993e364706816aba3e25717850c26c9cd0d89d"
        );
        assert_eq!(
            client_id_hash(""),
            "da39a3ee5e6b4b0d3255bfef95601890afd80709"
        );
    }
}
