//! The eval's fast subset: the requests of tests/eval/suite.toml marked `fast`, five of the
//! development half (one each of arithmetic, time, weather, files and word counts) and the
//! first held-out ones of arithmetic and time, asked of the real local model with the whole
//! example manifest and its default settings. Each must be answered through the right tool
//! with the right value, as the eval scores it (`just eval` runs all of them). The held-out
//! ones are there so that `just test` measures the rules on requests they were not made for.
//! And the example tools' descriptions, which the eval measures the model on, pinned.

use toolhost::Host;
use toolhost::agent::RunOptions;
use toolhost_tests::eval::{Half, Setup, Suite, line, run_case};
use toolhost_tests::{repo_root, runtime};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_local_model_answers_everyday_requests_with_the_whole_manifest() {
    let dist = repo_root().join("example-tools/dist");
    assert!(
        dist.join("text-python.wasm").exists(),
        "{} has no built tools; run `just tools` (`just test` does)",
        dist.display()
    );
    let suite = Suite::load();
    let fast: Vec<_> = suite.cases.iter().filter(|case| case.fast).collect();
    let held_out = fast
        .iter()
        .filter(|case| case.half == Half::HeldOut)
        .count();
    assert!(
        fast.len() >= 6 && held_out >= 1,
        "{} requests are marked fast, {held_out} of them held out; the subset needs the five \
         development ones and at least one held-out one",
        fast.len()
    );
    let setup = Setup::start().await;
    let host = Host::builder()
        .runtime(runtime())
        .manifest(&setup.manifest)
        .connect_model(true)
        .build()
        .await
        .unwrap_or_else(|e| {
            panic!(
                "{:#} (just test runs scripts/setup-local-llm.sh first)",
                anyhow::Error::from(e)
            )
        });
    assert!(host.toolbox().catalog().len() >= 20, "the whole manifest");
    let agent = host.agent().await.unwrap();
    let mut failed = Vec::new();
    for (n, case) in fast.iter().enumerate() {
        let verdict = run_case(&agent, &RunOptions::default(), &setup, case).await;
        if !verdict.passed {
            failed.push(line(n + 1, &verdict));
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} requests were not answered through the right tool with the right value:\n{}",
        failed.len(),
        fast.len(),
        failed.join("")
    );
}

/// Every example tool's name, description and parameters' descriptions, as the eval offers
/// them (tool selection ranks by all three). They are frozen (docs/local-model.md, "How it is
/// measured"): a description edited to make an eval request pass makes the eval flatter.
/// Change this snapshot only with a change made for another reason, said in its commit, and
/// then write a new held-out half of tests/eval/suite.toml.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_tools_descriptions_are_frozen() {
    let dist = repo_root().join("example-tools/dist");
    assert!(
        dist.join("text-python.wasm").exists(),
        "{} has no built tools; run `just tools` (`just test` does)",
        dist.display()
    );
    let setup = Setup::start().await;
    let host = Host::builder()
        .runtime(runtime())
        .manifest(&setup.manifest)
        .build()
        .await
        .unwrap();
    let mut specs = host.specs();
    specs.sort_by(|a, b| a.name.cmp(&b.name));
    let mut text = String::new();
    for spec in specs {
        text.push_str(&format!("{}: {}\n", spec.name, spec.description));
        let properties = spec.input_schema["properties"].as_object().cloned();
        for (name, property) in properties.into_iter().flatten() {
            let about = property["description"]
                .as_str()
                .unwrap_or("(no description)");
            text.push_str(&format!("    {name}: {about}\n"));
        }
    }
    insta::assert_snapshot!(text);
}
