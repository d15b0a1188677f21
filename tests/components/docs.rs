//! The manifests the documentation shows are manifests the host reads: every TOML example of
//! the README and of the docs pages about manifests parses, so a renamed or removed key
//! cannot stay documented.

use toolhost::Manifest;
use toolhost_tests::repo_root;

/// The ```toml blocks of a Markdown file.
fn toml_blocks(text: &str) -> Vec<&str> {
    text.split("```toml\n")
        .skip(1)
        .filter_map(|rest| rest.split("```").next())
        .collect()
}

#[test]
fn every_manifest_the_docs_show_parses() {
    let mut checked = 0;
    for page in [
        "README.md",
        "docs/manifest.md",
        "docs/agent.md",
        "docs/mcp.md",
        "docs/sharing.md",
        "docs/deploy.md",
        "docs/code-mode.md",
    ] {
        let path = repo_root().join(page);
        let text = std::fs::read_to_string(&path).unwrap();
        for (at, block) in toml_blocks(&text).into_iter().enumerate() {
            if let Err(error) = Manifest::parse(block, &repo_root().join("toolhost.toml")) {
                panic!(
                    "{page}, TOML example {}: {:#}\n{block}",
                    at + 1,
                    anyhow::Error::from(error)
                );
            }
            checked += 1;
        }
    }
    assert!(
        checked >= 10,
        "only {checked} examples found: did the pages move?"
    );
}

#[test]
fn an_example_with_a_key_the_host_does_not_know_fails_the_check() {
    // What the test above relies on: a stale key is an error, not ignored.
    let stale = "[model]\ntools = 5\n";
    let error = Manifest::parse(stale, &repo_root().join("toolhost.toml")).unwrap_err();
    let chain = format!("{:#}", anyhow::Error::from(error));
    assert!(chain.contains("unknown field `tools`"), "{chain}");
    assert_eq!(toml_blocks("a\n```toml\nx = 1\n```\nb"), ["x = 1\n"]);
}
