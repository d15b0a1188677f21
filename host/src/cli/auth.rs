//! `host auth`: logging in to the manifest's MCP servers that ask for authorization, what
//! the logins hold (never the tokens), and logging out.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Subcommand};
use futures::future::BoxFuture;
use serde_json::{Value, json};
use toolhost::Manifest;
use toolhost::mcp::client::auth::{self, Browser, ClientIdentity, LoginStatus, ScriptedBrowser};
use toolhost::mcp::client::{McpServerConfig, McpTransport};
use toolhost::units::HumanDuration;

use super::ExitStatus;
use super::output::{print_json, println};

#[derive(Debug, Args)]
pub struct AuthArgs {
    #[command(subcommand)]
    command: AuthCommand,
}

#[derive(Debug, Subcommand)]
enum AuthCommand {
    /// Log in to a server of the manifest: prints the authorization URL to open, receives the
    /// redirect on 127.0.0.1 and keeps the tokens (mode 0600) in the cache directory
    Login(LoginArgs),
    /// Show, per server at a URL, whether it is logged in, until when, and with which scopes
    Status(StatusArgs),
    /// Forget the login to a server
    Logout(LogoutArgs),
}

#[derive(Debug, Args)]
struct ManifestArg {
    /// The manifest
    #[arg(short, long, default_value = "toolhost.toml")]
    manifest: PathBuf,
}

#[derive(Debug, Args)]
struct LoginArgs {
    /// The server, as named in the manifest ([mcp_servers.NAME])
    server: String,
    #[command(flatten)]
    manifest: ManifestArg,
    /// Ask for this scope too (repeatable), such as one a server asked for during a run
    #[arg(long = "scope", value_name = "SCOPE")]
    scopes: Vec<String>,
    /// How long to wait for the redirect
    #[arg(long, default_value = "5m", value_name = "DURATION")]
    timeout: HumanDuration,
    /// Do not wait for a person: fetch the authorization URL and follow its redirects (for
    /// an authorization server that approves at once, such as a test's)
    #[arg(long, hide = true)]
    scripted: bool,
}

#[derive(Debug, Args)]
struct StatusArgs {
    #[command(flatten)]
    manifest: ManifestArg,
    /// Print JSON instead of text
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct LogoutArgs {
    /// The server, as named in the manifest
    server: String,
    #[command(flatten)]
    manifest: ManifestArg,
}

impl AuthArgs {
    pub async fn run(self) -> anyhow::Result<ExitStatus> {
        let dir = auth::default_token_dir()
            .ok_or_else(|| anyhow::anyhow!("no cache directory: set TOOLHOST_CACHE (or HOME)"))?;
        match self.command {
            AuthCommand::Login(args) => login(args, &dir).await,
            AuthCommand::Status(args) => status(&args, &dir),
            AuthCommand::Logout(args) => {
                let config = server(&args.manifest.manifest, &args.server)?;
                if auth::logout(&config, &dir)? {
                    eprintln!("logged out of `{}`", args.server);
                } else {
                    eprintln!("`{}` was not logged in", args.server);
                }
                Ok(ExitStatus::Success)
            }
        }
    }
}

/// A person: the URL is printed for them to open.
struct Person;

impl Browser for Person {
    fn open<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            eprintln!("Open this address in a browser and approve the login:\n");
            eprintln!("  {url}\n");
            eprintln!("Waiting for the authorization server to send the browser back...");
            Ok(())
        })
    }
}

async fn login(args: LoginArgs, dir: &Path) -> anyhow::Result<ExitStatus> {
    let config = server(&args.manifest.manifest, &args.server)?;
    let browser: &dyn Browser = if args.scripted {
        &ScriptedBrowser
    } else {
        &Person
    };
    let login = auth::login(&config, dir, browser, &args.scopes, args.timeout.0).await?;
    eprintln!(
        "logged in to `{}`{}{}",
        args.server,
        scopes_note(&login.scopes),
        login
            .expires_in
            .map(|d| format!("; the token lasts {}", rounded(d)))
            .unwrap_or_default()
    );
    Ok(ExitStatus::Success)
}

fn status(args: &StatusArgs, dir: &Path) -> anyhow::Result<ExitStatus> {
    let manifest = Manifest::load(&args.manifest.manifest)?;
    let mut rows = Vec::new();
    for config in McpServerConfig::from_manifest(&manifest) {
        if !matches!(config.transport, McpTransport::Http { .. }) {
            continue;
        }
        let state = match config.auth.as_ref().map(|auth| &auth.client) {
            Some(ClientIdentity::ClientCredentials { .. }) => State::ClientCredentials,
            _ => match auth::status(&config, dir) {
                Ok(Some(login)) => State::LoggedIn(login),
                Ok(None) => State::NotLoggedIn,
                Err(error) => State::Unreadable(format!("{error:#}")),
            },
        };
        rows.push((config.name, state));
    }
    if args.json {
        let servers: Vec<Value> = rows.iter().map(|(name, state)| state.json(name)).collect();
        print_json(&json!({ "servers": servers }))?;
    } else if rows.is_empty() {
        println("no server of the manifest is at a URL")?;
    } else {
        for (name, state) in &rows {
            println(&format!("{name}: {}", state.text(name)))?;
        }
    }
    Ok(ExitStatus::Success)
}

enum State {
    ClientCredentials,
    NotLoggedIn,
    LoggedIn(LoginStatus),
    Unreadable(String),
}

impl State {
    fn text(&self, name: &str) -> String {
        match self {
            Self::ClientCredentials => "client credentials (no login needed)".to_owned(),
            Self::NotLoggedIn => format!("not logged in (host auth login {name})"),
            Self::Unreadable(problem) => format!("the login cannot be read: {problem}"),
            Self::LoggedIn(login) => {
                let expiry = match login.expires_in {
                    Some(left) if left.is_zero() && login.refreshable => {
                        "; the token has expired and is refreshed at the next use".to_owned()
                    }
                    Some(left) if left.is_zero() => {
                        format!("; the token has expired (host auth login {name})")
                    }
                    Some(left) => format!("; the token expires in {}", rounded(left)),
                    None => String::new(),
                };
                format!("logged in{}{expiry}", scopes_note(&login.scopes))
            }
        }
    }

    fn json(&self, name: &str) -> Value {
        match self {
            Self::ClientCredentials => json!({"name": name, "login": "client_credentials"}),
            Self::NotLoggedIn => json!({"name": name, "login": "none"}),
            Self::Unreadable(problem) => {
                json!({"name": name, "login": "unreadable", "error": problem})
            }
            Self::LoggedIn(login) => json!({
                "name": name,
                "login": "logged_in",
                "scopes": login.scopes,
                "expires_in_s": login.expires_in.map(|d| d.as_secs()),
                "refreshable": login.refreshable,
            }),
        }
    }
}

fn scopes_note(scopes: &[String]) -> String {
    if scopes.is_empty() {
        String::new()
    } else {
        format!(" with scopes {}", scopes.join(" "))
    }
}

fn rounded(duration: Duration) -> String {
    humantime::format_duration(Duration::from_secs(duration.as_secs())).to_string()
}

/// The server `name` of the manifest at `path`; the error lists the names there are.
fn server(path: &Path, name: &str) -> anyhow::Result<McpServerConfig> {
    let manifest = Manifest::load(path)?;
    let servers = McpServerConfig::from_manifest(&manifest);
    let names: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
    match servers.iter().find(|s| s.name == name) {
        Some(config) => Ok(config.clone()),
        None if names.is_empty() => anyhow::bail!(
            "{} has no [mcp_servers]: there is no `{name}` to log in to",
            path.display()
        ),
        None => anyhow::bail!(
            "{} has no MCP server `{name}`; it has {}",
            path.display(),
            names.join(", ")
        ),
    }
}
