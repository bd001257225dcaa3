//! OpenTelemetry: the runner's spans, exported through `tracing-opentelemetry` and
//! the SDK's in-memory exporter, follow the GenAI convention for an ok, a refused,
//! an error and a waiting call, and carry no sensitive value anywhere.

use std::collections::HashMap;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use toolmark::agent::{AgentOptions, AgentTools, Provider};
use tracing_subscriber::layer::SubscriberExt;

use crate::common::{fixture, leaks, scripted_response, SECRET_CVC, SECRET_NUMBER};

async fn exported(record_io: bool) -> Vec<SpanData> {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("toolmark-test")));
    let guard = crate::logs::scoped(subscriber);
    let (tm, _) = fixture();
    let options = AgentOptions {
        record_io,
        ..AgentOptions::default()
    };
    let agent = AgentTools::with_options(&tm, Provider::OpenAiChat, options);
    let run = agent.run(&scripted_response(Provider::OpenAiChat)).await;
    assert_eq!(run.calls.len(), 5);
    drop(guard);
    provider.force_flush().unwrap();
    exporter.get_finished_spans().unwrap()
}

fn attributes(span: &SpanData) -> HashMap<String, String> {
    span.attributes
        .iter()
        .map(|kv| (kv.key.to_string(), kv.value.to_string()))
        .collect()
}

fn span<'a>(spans: &'a [SpanData], call_id: &str) -> &'a SpanData {
    spans
        .iter()
        .find(|s| attributes(s).get("gen_ai.tool.call.id").map(String::as_str) == Some(call_id))
        .unwrap_or_else(|| panic!("no span for {call_id}"))
}

#[tokio::test]
async fn each_call_is_an_execute_tool_span_in_the_genai_convention() {
    let spans = exported(false).await;
    let expect = [
        ("call_1", "crm.customers.create", None),
        ("call_2", "crm.customers.get", Some("invalid")),
        ("call_3", "billing.add_card", None),
        ("call_4", "crm.customers.get", Some("tool_error")),
        ("call_5", "no_such_tool", Some("unknown_tool")),
    ];
    for (id, tool, error) in expect {
        let s = span(&spans, id);
        assert_eq!(s.name, format!("execute_tool {tool}"));
        let a = attributes(s);
        assert_eq!(a["gen_ai.operation.name"], "execute_tool");
        assert_eq!(a["gen_ai.tool.name"], tool);
        assert_eq!(a["gen_ai.tool.type"], "function");
        assert_eq!(a.get("error.type").map(String::as_str), error, "{id}");
        if tool != "no_such_tool" {
            assert!(!a["gen_ai.tool.description"].is_empty());
        }
        // Arguments and results only on opt-in.
        assert!(!a.contains_key("gen_ai.tool.call.arguments"));
        assert!(!a.contains_key("gen_ai.tool.call.result"));
    }
}

#[tokio::test]
async fn recorded_arguments_and_results_are_redacted() {
    let spans = exported(true).await;
    let card = attributes(span(&spans, "call_3"));
    assert!(
        card["gen_ai.tool.call.arguments"].contains("[redacted]"),
        "{card:?}"
    );
    assert!(card["gen_ai.tool.call.result"].contains("waiting_for_user"));
    let ok = attributes(span(&spans, "call_1"));
    assert!(ok["gen_ai.tool.call.arguments"].contains("Analytical"));
    assert!(ok["gen_ai.tool.call.result"].contains("London"));
    // No secret in any span's name, attribute or event, of ours or of the core's.
    for s in &spans {
        let mut all = format!("{} {:?}", s.name, s.attributes);
        for e in s.events.iter() {
            all.push_str(&format!(" {} {:?}", e.name, e.attributes));
        }
        assert!(!leaks(&all), "a secret in span {}: {all}", s.name);
        assert!(!all.contains(SECRET_NUMBER) && !all.contains(SECRET_CVC));
    }
}
