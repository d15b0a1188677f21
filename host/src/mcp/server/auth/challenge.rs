//! The answers to a request whose token does not do: 401 with `WWW-Authenticate: Bearer ...`
//! naming the resource metadata (RFC 9728 section 5.1) and the scope to ask for, or 403
//! `insufficient_scope` naming the scope a client must step up to (RFC 6750 section 3.1).

use http::StatusCode;
use serde_json::json;

/// A refusal of a request's credentials: its status, its `WWW-Authenticate` value, and a
/// JSON body saying the same to a person reading it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Challenge {
    /// 401 (no token, or one that does not do), 403 (a scope missing), 400 (a malformed
    /// `Authorization`), or 503 (the authorization server could not be asked).
    pub status: StatusCode,
    /// The `WWW-Authenticate` header's value, when the status has one.
    pub www_authenticate: Option<String>,
    /// The OAuth error code (`invalid_token`, ...), when there is one.
    pub error: Option<&'static str>,
    /// What went wrong, for a person: never the token.
    pub description: String,
}

impl Challenge {
    /// The JSON body of the answer: `{"error": ..., "error_description": ...}`.
    pub fn body(&self) -> serde_json::Value {
        json!({
            "error": self.error.unwrap_or("unauthorized"),
            "error_description": self.description,
        })
    }
}

/// 401 for a request without a token: no error code, as RFC 6750 section 3.1 says.
pub(super) fn no_token(resource_metadata: &str, scopes: &[String]) -> Challenge {
    Challenge {
        status: StatusCode::UNAUTHORIZED,
        www_authenticate: Some(header(None, None, resource_metadata, scopes)),
        error: None,
        description: "this server needs an access token: send `Authorization: Bearer <token>` \
                      from the authorization server its resource metadata names"
            .to_owned(),
    }
}

/// 401 `invalid_token`: expired, revoked, malformed, for another resource, ...
pub(super) fn invalid_token(
    resource_metadata: &str,
    scopes: &[String],
    description: &str,
) -> Challenge {
    refusal(
        StatusCode::UNAUTHORIZED,
        "invalid_token",
        resource_metadata,
        scopes,
        description,
    )
}

/// 400 `invalid_request`: an `Authorization` header that cannot be read.
pub(super) fn invalid_request(
    resource_metadata: &str,
    scopes: &[String],
    description: &str,
) -> Challenge {
    refusal(
        StatusCode::BAD_REQUEST,
        "invalid_request",
        resource_metadata,
        scopes,
        description,
    )
}

/// 403 `insufficient_scope`: a valid token without the scopes `needed` (all of them are
/// named, so that a client asks for them in its next authorization request).
pub fn insufficient_scope(resource_metadata: &str, needed: &[String]) -> Challenge {
    let description = format!("the token lacks the scope {}", needed.join(" "));
    refusal(
        StatusCode::FORBIDDEN,
        "insufficient_scope",
        resource_metadata,
        needed,
        &description,
    )
}

/// 503: the authorization server could not be asked whether the token is good.
pub(super) fn unavailable(description: &str) -> Challenge {
    Challenge {
        status: StatusCode::SERVICE_UNAVAILABLE,
        www_authenticate: None,
        error: Some("temporarily_unavailable"),
        description: description.to_owned(),
    }
}

fn refusal(
    status: StatusCode,
    error: &'static str,
    resource_metadata: &str,
    scopes: &[String],
    description: &str,
) -> Challenge {
    Challenge {
        status,
        www_authenticate: Some(header(
            Some(error),
            Some(description),
            resource_metadata,
            scopes,
        )),
        error: Some(error),
        description: description.to_owned(),
    }
}

/// `Bearer error="...", error_description="...", resource_metadata="...", scope="..."`.
fn header(
    error: Option<&str>,
    description: Option<&str>,
    resource_metadata: &str,
    scopes: &[String],
) -> String {
    let mut params = Vec::new();
    if let Some(error) = error {
        params.push(format!("error=\"{error}\""));
    }
    if let Some(description) = description {
        params.push(format!("error_description=\"{}\"", quotable(description)));
    }
    params.push(format!(
        "resource_metadata=\"{}\"",
        quotable(resource_metadata)
    ));
    if !scopes.is_empty() {
        params.push(format!("scope=\"{}\"", quotable(&scopes.join(" "))));
    }
    format!("Bearer {}", params.join(", "))
}

/// `text` with only the characters RFC 6750 allows in a quoted value (printable ASCII but
/// `"` and `\`): the others become `'` or a space.
fn quotable(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '"' => '\'',
            '\\' => '/',
            ' '..='~' => c,
            _ => ' ',
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const METADATA: &str = "http://127.0.0.1:9000/.well-known/oauth-protected-resource/mcp";

    #[test]
    fn a_request_without_a_token_is_told_where_to_get_one() {
        let challenge = no_token(METADATA, &["mcp:tools".to_owned()]);
        assert_eq!(challenge.status, StatusCode::UNAUTHORIZED);
        assert_eq!(
            challenge.www_authenticate.as_deref(),
            Some(
                "Bearer resource_metadata=\"http://127.0.0.1:9000/.well-known/\
                 oauth-protected-resource/mcp\", scope=\"mcp:tools\""
            )
        );
    }

    #[test]
    fn a_missing_scope_is_named_for_a_step_up() {
        let challenge = insufficient_scope(METADATA, &["mcp:admin".to_owned()]);
        assert_eq!(challenge.status, StatusCode::FORBIDDEN);
        let header = challenge.www_authenticate.expect("a header");
        assert!(
            header.starts_with("Bearer error=\"insufficient_scope\""),
            "{header}"
        );
        assert!(header.ends_with("scope=\"mcp:admin\""), "{header}");
    }

    #[test]
    fn a_description_cannot_break_out_of_its_quotes() {
        let challenge = invalid_token(METADATA, &[], "bad \"quote\" \\ and\nnewline é");
        let header = challenge.www_authenticate.expect("a header");
        assert!(
            header.contains("error_description=\"bad 'quote' / and newline  \""),
            "{header}"
        );
    }
}
