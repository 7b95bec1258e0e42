//! Fuzzes the loader on arbitrary bytes, read both as YAML and as JSON, and
//! expands whatever loads: it must never panic, hang or exhaust memory.
#![no_main]

use libfuzzer_sys::fuzz_target;
use podplace_model::expand::expand_workloads_up_to;
use podplace_model::load::{load, Source};

fuzz_target!(|data: &[u8]| {
    for name in ["fuzz.yaml", "fuzz.json", "-"] {
        let source = Source::Bytes {
            name: name.to_string(),
            data: data.to_vec(),
        };
        match load(&[source]) {
            Ok(mut inv) => {
                expand_workloads_up_to(&mut inv, 1_000);
            }
            Err(e) => {
                // Every error renders and names its file.
                let msg = e.to_string();
                assert!(msg.starts_with(name), "{msg}");
            }
        }
    }
});
