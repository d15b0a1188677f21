//! An upstream task survives its connection: toolhost's client follows a task of another
//! toolhost (`host mcp --http`, tasks in a real Redis) through a TCP proxy the test controls,
//! which cuts every connection mid-task, closes the next two at once, and sends the rest to
//! another replica; the polls that failed are tried again, go on there, and the call gets
//! its result.

use std::sync::{Arc, Mutex};

use tokio::io::copy_bidirectional;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use toolhost::CallContext;
use toolhost::mcp::client::McpServerConfig;
use toolhost_tests::cli::ManifestFile;
use toolhost_tests::components::MCP_CONFORMANCE;
use toolhost_tests::mcp::HttpServer;
use toolhost_tests::redis::Redis;

use super::{PATIENCE, patient, toolbox};

/// A TCP proxy: each connection goes to the backend of the moment; [`Proxy::move_to`] sends
/// the next ones to another and cuts every connection open.
struct Proxy {
    authority: String,
    /// The backend, and how many connections to close at once before going to it (as a
    /// balancer does while its new backend is not up yet).
    backend: Arc<Mutex<(String, usize)>>,
    cut: watch::Sender<u64>,
    /// The backend of each connection, in order.
    connections: Arc<Mutex<Vec<String>>>,
}

impl Proxy {
    async fn start(backend: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let authority = listener.local_addr().unwrap().to_string();
        let backend = Arc::new(Mutex::new((backend.to_owned(), 0)));
        let (cut, _) = watch::channel(0);
        let connections = Arc::new(Mutex::new(Vec::new()));
        let (to, cuts, log) = (backend.clone(), cut.clone(), connections.clone());
        tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let target = {
                    let mut backend = to.lock().unwrap();
                    if backend.1 > 0 {
                        backend.1 -= 1;
                        log.lock().unwrap().push("closed".to_owned());
                        continue;
                    }
                    backend.0.clone()
                };
                log.lock().unwrap().push(target.clone());
                let mut cut = cuts.subscribe();
                tokio::spawn(async move {
                    let Ok(mut server) = TcpStream::connect(&target).await else {
                        return;
                    };
                    // Dropping both streams closes the connection on both sides.
                    tokio::select! {
                        _ = copy_bidirectional(&mut client, &mut server) => {}
                        _ = cut.changed() => {}
                    }
                });
            }
        });
        Self {
            authority,
            backend,
            cut,
            connections,
        }
    }

    /// Closes the open connections and sends new ones to `backend`, once `refused` more
    /// have been closed at once.
    fn move_to(&self, backend: &str, refused: usize) {
        *self.backend.lock().unwrap() = (backend.to_owned(), refused);
        self.cut.send_modify(|n| *n += 1);
    }

    fn connections(&self) -> Vec<String> {
        self.connections.lock().unwrap().clone()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_is_followed_to_its_result_across_a_cut_connection_and_another_replica() {
    toolhost_tests::require_guests();
    let redis = Redis::start();
    let manifest = ManifestFile::new(&format!(
        "[components.conformance]\npath = {MCP_CONFORMANCE:?}\nresources = []\nprompts = []\n\
         tools = [\"slow_compute\"]\nlimits.timeout = \"10m\"\n\n\
         [tools.slow_compute]\ntask = \"required\"\n\n\
         [mcp.tasks]\npoll_interval = \"100ms\"\nstore = {:?}\n",
        redis.url()
    ));
    let one = HttpServer::start(&[manifest.arg()], &[]).await;
    let two = HttpServer::start(&[manifest.arg()], &[]).await;
    one.loaded().await;
    two.loaded().await;
    let proxy = Proxy::start(&one.authority).await;
    let url = format!("http://{}/mcp", proxy.authority);
    let toolbox = toolbox(vec![patient(McpServerConfig::http("inner", &url))]).await;

    let context = CallContext::default();
    let call = toolbox.call(
        "slow_compute",
        r#"{"seconds": 3, "label": "moved"}"#,
        &context,
    );
    let switch = async {
        // Once the task runs (replica one keeps it in Redis), every connection is cut, the
        // next two are closed at once (a poll or two fail), and the rest go to replica two.
        tokio::time::timeout(PATIENCE, async {
            while redis.keys("toolhost:task:*").is_empty() {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        })
        .await
        .expect("the task started");
        proxy.move_to(&two.authority, 2);
    };
    let (output, ()) = tokio::join!(call, switch);
    let output = output.unwrap_or_else(|e| panic!("{e}\n{}", one.stderr.text()));
    assert_eq!(output.text, "computed moved in 3 s", "{output:?}");
    // Polls failed on the closed connections, and the next went to replica two.
    let connections = proxy.connections();
    assert_eq!(connections[0], one.authority, "{connections:?}");
    let moved = connections.iter().position(|c| c == "closed");
    let moved = moved.unwrap_or_else(|| panic!("no poll after the cut: {connections:?}"));
    assert_eq!(
        connections[moved..moved + 3],
        ["closed", "closed", two.authority.as_str()],
        "{connections:?}"
    );
    toolbox.shutdown().await;
}
