//! A transport whose errors say which login to run when a server asks for authorization, and
//! the error of a server whose certificate is not trusted.

use std::fmt;

use rmcp::RoleClient;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::auth::WWWAuthenticateParams;
use rmcp::transport::streamable_http_client::{AuthRequiredError, InsufficientScopeError};

/// A transport whose errors say which login to run when the server asks for authorization.
pub(crate) struct Explained<T> {
    pub(crate) inner: T,
    pub(crate) server: String,
}

impl<T> Transport<RoleClient> for Explained<T>
where
    T: Transport<RoleClient>,
    T::Error: 'static,
{
    type Error = Explanation<T::Error>;

    fn name() -> std::borrow::Cow<'static, str> {
        "Streamable HTTP".into()
    }

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let sending = self.inner.send(item);
        let server = self.server.clone();
        async move {
            sending
                .await
                .map_err(|source| Explanation { server, source })
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<ServerJsonRpcMessage>> + Send {
        self.inner.receive()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        let closing = self.inner.close();
        let server = self.server.clone();
        async move {
            closing
                .await
                .map_err(|source| Explanation { server, source })
        }
    }
}

/// A transport error, explained when it is the server asking for authorization.
#[derive(Debug)]
pub(crate) struct Explanation<E> {
    server: String,
    source: E,
}

impl<E: std::error::Error + 'static> fmt::Display for Explanation<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let server = &self.server;
        let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&self.source);
        while let Some(current) = cause {
            if current.downcast_ref::<AuthRequiredError>().is_some() {
                return write!(
                    f,
                    "`{server}` asks for authorization and has no valid login: run \
                     `host auth login {server}`"
                );
            }
            if let Some(insufficient) = current.downcast_ref::<InsufficientScopeError>() {
                let scope = insufficient.required_scope.clone().or_else(|| {
                    let base = url::Url::parse("http://localhost/").ok()?;
                    WWWAuthenticateParams::parse(&insufficient.www_authenticate_header, &base).scope
                });
                return match scope {
                    Some(scope) => write!(
                        f,
                        "`{server}` asks for the scope `{scope}`, which its login does not \
                         grant: run `host auth login {server} --scope '{scope}'`"
                    ),
                    None => write!(
                        f,
                        "`{server}` asks for more scope than its login grants: run \
                         `host auth login {server} --scope SCOPE`"
                    ),
                };
            }
            cause = current.source();
        }
        fmt::Display::fmt(&self.source, f)
    }
}

impl<E: std::error::Error + 'static> std::error::Error for Explanation<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// A server's TLS certificate was refused. rmcp's transport keeps only the text of a request's
/// error, and reqwest's text does not say why it failed: this one does, and names the setting
/// that trusts the server.
#[derive(Debug, thiserror::Error)]
#[error(
    "the TLS certificate of `{server}` is not trusted: {}",
    crate::tls::UNTRUSTED_ADVICE
)]
pub(crate) struct Untrusted {
    pub(crate) server: String,
    #[source]
    pub(crate) source: reqwest::Error,
}
