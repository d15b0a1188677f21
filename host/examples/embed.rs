use toolhost::agent::{AgentEvent, Conversation, RunOptions};
use toolhost::{CallContext, Host};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // The tools, the model and the loop's settings, from a manifest.
    let host = Host::load("example-tools/toolhost.toml").await?;

    // One tool, in its sandbox, without a model.
    let output = host
        .call(
            "square_root",
            r#"{"x": 475695037565}"#,
            &CallContext::default(),
        )
        .await?;
    println!("square_root: {}", output.text);

    // The loop: the model calls tools until it answers.
    let agent = host.agent().await?;
    let mut conversation = Conversation::new();
    conversation.push_user("What is the square root of 475695037565?");
    let options = RunOptions {
        context: [("tenant".into(), "acme".into())].into(), // reaches the tools, never the model
        ..RunOptions::default()
    };
    let result = agent
        .run(&mut conversation, &options, &mut |event| {
            if let AgentEvent::Text(text) = event {
                print!("{text}");
            }
        })
        .await?;
    println!();
    for call in &result.executions {
        println!("{} {} -> {}", call.name, call.arguments, call.output);
    }
    Ok(())
}
