//! rig: the tool set a rig agent calls (with `record_io` on), the text the model
//! reads back, and the bridge text of a call that waited for the user.

use rig_core::tool::ToolDyn;
use toolmark::agent::rig::RigTools;
use toolmark::agent::AgentOptions;
use toolmark::{Caller, Decision, Toolmark};

use crate::app::app;
use crate::canary;
use crate::core::{check, Observer};
use crate::{plants, runner};

#[test]
fn rig_tools() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let trace = canary::capture();
    let app = rt.block_on(async { app(Toolmark::builder()) });
    let rig = RigTools::with_options(
        &app.tm,
        AgentOptions {
            caller: Caller::InApp,
            record_io: true,
            ..AgentOptions::default()
        },
    );
    let observer = std::cell::RefCell::new(rt.block_on(async { Observer::new(&app.tm) }));
    let _ = trace.take();
    let mut run = runner(256);
    let result = run.run(&plants(), |p| {
        let (mut c, secret) = p.canary();
        let mut seen = rt.block_on(async {
            let mut seen = Vec::new();
            let number = c.variant(p.kind.wrapping_add(1));
            let mut bridge = app.tm.bridge();
            let tools = rig.tools();
            let pay = tools
                .iter()
                .find(|t| t.name() == "vault__pay")
                .expect("vault.pay is a rig tool");
            let holder = if p.pick.is_multiple_of(3) {
                "fail"
            } else {
                "Ada"
            };
            let args = p.pay_input(holder, &secret, &number).to_string();
            match pay.call(args).await {
                Ok(text) => seen.push(("a rig tool's text", text)),
                Err(e) => seen.push(("a rig tool's error", format!("{e} {e:?}"))),
            }
            for pending in app.tm.pending_confirmations() {
                app.tm
                    .confirm_pending(&pending.confirm_id, Decision::approve())
                    .await;
            }
            while let Some(msg) = bridge.try_recv() {
                if let Some(text) = rig.bridge_text(&msg) {
                    seen.push(("rig's bridge text", text));
                }
            }
            seen
        });
        seen.extend(app.seen.take());
        seen.extend(rt.block_on(async { observer.borrow_mut().take(&app.tm, &trace) }));
        check(&c, &seen)
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}
