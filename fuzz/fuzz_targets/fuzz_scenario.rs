//! Fuzzes the scenario parser (`simulate`'s file) on arbitrary bytes, and
//! loads the inline objects of whatever parses: it must never panic, hang
//! or exhaust memory, and every error names the file.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use podplace_sim::scenario::{Apply, Scenario, Step};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    match Scenario::from_str("fuzz.yaml", &text, Path::new("/nonexistent")) {
        Ok(s) => {
            let mut sources: Vec<_> = s.inline_source().into_iter().collect();
            for (i, step) in s.steps.iter().enumerate() {
                // Every step renders for the report.
                let _ = step.describe();
                if let Step::Apply(Apply::Detailed { objects, .. }) = step {
                    sources.extend(s.step_objects_source(i + 1, objects));
                }
            }
            for source in sources {
                if let Err(e) = podplace_model::load::load(&[source]) {
                    let msg = e.to_string();
                    assert!(msg.starts_with("fuzz.yaml"), "{msg}");
                }
            }
        }
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.starts_with("fuzz.yaml"), "{msg}");
        }
    }
});
