//! The `auth` table of an `[mcp_servers.NAME]` at a `url`: who the host is to the server's
//! authorization server, and which scopes it asks for.

use serde::Deserialize;

/// How the host gets a token for an MCP server at a `url` (the MCP authorization spec, OAuth
/// 2.1). Without an `auth` table a server that asks for authorization is still logged in to,
/// with dynamic registration and the scopes the server names.
///
/// ```toml
/// [mcp_servers.notes]
/// url = "https://notes.example.com/mcp"
/// auth = { client_id = "toolhost", client_secret = "${NOTES_SECRET}", scopes = ["notes:read"] }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawAuth")]
pub struct AuthEntry {
    /// Who the host is to the authorization server.
    pub client: ClientIdentity,
    /// The scopes to ask for; when empty, those the server's challenge or metadata names.
    pub scopes: Vec<String>,
}

impl Default for AuthEntry {
    /// Dynamic registration, the scopes the server names.
    fn default() -> Self {
        Self {
            client: ClientIdentity::Dynamic,
            scopes: Vec::new(),
        }
    }
}

/// Who the host is to an authorization server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientIdentity {
    /// The host registers itself at each login (dynamic client registration, RFC 7591).
    Dynamic,
    /// The host is known by the Client ID Metadata Document at this `https://` URL.
    MetadataDocument {
        /// The document's URL, which is also the client id.
        url: String,
    },
    /// A client registered beforehand; a person logs in with it.
    Preregistered {
        /// The client id the authorization server gave.
        client_id: String,
        /// Its secret as written (a `${NAME}` reference), for a confidential client.
        client_secret: Option<String>,
    },
    /// Machine to machine: the client's own credentials buy the token (the client
    /// credentials grant); no person logs in.
    ClientCredentials {
        /// The client id the authorization server gave.
        client_id: String,
        /// Its secret as written (a `${NAME}` reference).
        client_secret: String,
    },
}

/// The OAuth grant a server's tokens come from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Grant {
    /// A person logs in (`host auth login`).
    #[default]
    AuthorizationCode,
    /// The client's own credentials.
    ClientCredentials,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAuth {
    client_id: Option<String>,
    client_secret: Option<String>,
    client_metadata_url: Option<String>,
    #[serde(default)]
    scopes: Vec<String>,
    #[serde(default)]
    grant: Grant,
}

impl TryFrom<RawAuth> for AuthEntry {
    type Error = String;

    fn try_from(raw: RawAuth) -> Result<Self, String> {
        if let Some(secret) = &raw.client_secret {
            check_secret_reference(secret)?;
        }
        for scope in &raw.scopes {
            if scope.is_empty() || scope.contains(char::is_whitespace) {
                return Err(format!(
                    "`auth.scopes` has {scope:?}: a scope is one word, without spaces"
                ));
            }
        }
        let client = match (raw.grant, raw.client_id, raw.client_metadata_url) {
            (_, Some(_), Some(_)) => {
                return Err(
                    "give either `auth.client_id` (a client registered beforehand) or \
                            `auth.client_metadata_url` (a Client ID Metadata Document), not both"
                        .to_owned(),
                );
            }
            (Grant::ClientCredentials, Some(client_id), None) => {
                let Some(client_secret) = raw.client_secret else {
                    return Err("`auth.grant = \"client_credentials\"` needs \
                                `auth.client_secret = \"${NAME}\"` beside `auth.client_id`"
                        .to_owned());
                };
                ClientIdentity::ClientCredentials {
                    client_id: non_empty("client_id", client_id)?,
                    client_secret,
                }
            }
            (Grant::ClientCredentials, None, _) => {
                return Err(
                    "`auth.grant = \"client_credentials\"` needs `auth.client_id` and \
                            `auth.client_secret`"
                        .to_owned(),
                );
            }
            (Grant::AuthorizationCode, Some(client_id), None) => ClientIdentity::Preregistered {
                client_id: non_empty("client_id", client_id)?,
                client_secret: raw.client_secret,
            },
            (Grant::AuthorizationCode, None, metadata_url) => {
                if raw.client_secret.is_some() {
                    return Err(
                        "`auth.client_secret` needs the `auth.client_id` it belongs to".to_owned(),
                    );
                }
                match metadata_url {
                    Some(url) => {
                        check_metadata_url(&url)?;
                        ClientIdentity::MetadataDocument { url }
                    }
                    None => ClientIdentity::Dynamic,
                }
            }
        };
        Ok(Self {
            client,
            scopes: raw.scopes,
        })
    }
}

fn non_empty(key: &str, value: String) -> Result<String, String> {
    if value.trim().is_empty() {
        return Err(format!("`auth.{key}` is empty"));
    }
    Ok(value)
}

/// The end of the error for a secret written into a manifest (whose line the manifest's
/// parse error then leaves out: it would show the secret).
pub(super) const SECRET_REFUSED: &str = "a secret written into a manifest is not secret";

/// A secret in a manifest is a reference to the environment, never the secret itself.
fn check_secret_reference(secret: &str) -> Result<(), String> {
    let name = secret
        .strip_prefix("${")
        .and_then(|rest| rest.strip_suffix('}'));
    match name {
        Some(name)
            if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') =>
        {
            Ok(())
        }
        _ => Err(format!(
            "`auth.client_secret` must name an environment variable, as \
             `client_secret = \"${{NAME}}\"`: {SECRET_REFUSED}"
        )),
    }
}

/// A Client ID Metadata Document is at an `https://` URL with a path.
fn check_metadata_url(url: &str) -> Result<(), String> {
    match url::Url::parse(url) {
        Ok(parsed)
            if parsed.scheme() == "https"
                && parsed.host_str().is_some()
                && parsed.path() != "/" =>
        {
            Ok(())
        }
        _ => Err(format!(
            "`auth.client_metadata_url = {url:?}` is not an https:// URL with a path, such as \
             \"https://example.com/toolhost/client.json\""
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth(text: &str) -> Result<AuthEntry, String> {
        toml::from_str::<AuthEntry>(text).map_err(|e| e.to_string())
    }

    #[test]
    fn each_identity_is_read_from_its_keys() {
        assert_eq!(auth(""), Ok(AuthEntry::default()));
        let pre = auth("client_id = \"th\"\nclient_secret = \"${S}\"\nscopes = [\"a\", \"b\"]\n");
        assert_eq!(
            pre,
            Ok(AuthEntry {
                client: ClientIdentity::Preregistered {
                    client_id: "th".into(),
                    client_secret: Some("${S}".into())
                },
                scopes: vec!["a".into(), "b".into()],
            })
        );
        let cimd = auth("client_metadata_url = \"https://example.com/c.json\"\n");
        assert!(
            matches!(&cimd, Ok(AuthEntry { client: ClientIdentity::MetadataDocument { url }, .. }) if url == "https://example.com/c.json"),
            "{cimd:?}"
        );
        let m2m =
            auth("grant = \"client_credentials\"\nclient_id = \"m\"\nclient_secret = \"${S}\"\n");
        assert!(
            matches!(
                &m2m,
                Ok(AuthEntry {
                    client: ClientIdentity::ClientCredentials { .. },
                    ..
                })
            ),
            "{m2m:?}"
        );
    }

    #[test]
    fn bad_values_name_the_key_and_the_fix() {
        let cases = [
            ("client_secret = \"${S}\"\n", "`auth.client_secret` needs"),
            (
                "client_id = \"a\"\nclient_secret = \"hunter2\"\n",
                "must name an environment",
            ),
            (
                "client_id = \"a\"\nclient_metadata_url = \"https://x/c\"\n",
                "not both",
            ),
            (
                "client_metadata_url = \"http://x/c.json\"\n",
                "not an https:// URL",
            ),
            ("client_metadata_url = \"https://x/\"\n", "with a path"),
            ("grant = \"client_credentials\"\n", "needs `auth.client_id`"),
            (
                "grant = \"client_credentials\"\nclient_id = \"a\"\n",
                "needs `auth.client_secret",
            ),
            ("grant = \"password\"\n", "unknown variant `password`"),
            ("scopes = [\"a b\"]\n", "one word"),
            ("client_id = \" \"\n", "`auth.client_id` is empty"),
            ("clientid = \"a\"\n", "unknown field `clientid`"),
        ];
        for (text, expected) in cases {
            let error = auth(text).unwrap_err();
            assert!(error.contains(expected), "{text:?}: {error}");
            assert!(!error.contains("hunter2"), "{error}");
        }
    }
}
