//! `examples/agent_loop.rs` runs its whole loop against its scripted model through
//! the real client library (`async-openai`).

#[allow(dead_code)]
#[path = "../../examples/agent_loop.rs"]
mod agent_loop;

use serde_json::Value;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_loop_runs_against_its_scripted_model() {
    let messages = agent_loop::run_scripted().await.unwrap();
    let roles: Vec<&str> = messages.iter().filter_map(|m| m["role"].as_str()).collect();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "tool",
            "tool",
            "assistant",
            "tool",
            "tool",
            "assistant",
            "user",
            "assistant"
        ]
    );
    let tools: Vec<&str> = messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(tools[1].contains("\"invalid\""), "{}", tools[1]);
    assert!(tools[2].contains("shipped"), "{}", tools[2]);
    assert!(tools[3].contains("waiting_for_user"), "{}", tools[3]);
    let bridge = messages[9]["content"].as_str().unwrap();
    assert!(
        bridge.contains("approved") && bridge.contains("ending 4242"),
        "{bridge}"
    );
    assert!(!messages[9..]
        .iter()
        .any(|m| m.to_string().contains(agent_loop::CARD)));
    assert_eq!(
        messages.last().unwrap()["content"],
        Value::from("Your card is added.")
    );
}
