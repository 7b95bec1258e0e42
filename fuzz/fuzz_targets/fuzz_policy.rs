//! Fuzzes the descheduler policy parser (`rebalance --policy`) on arbitrary
//! bytes: it must never panic, hang or exhaust memory, and every error
//! names the file.
#![no_main]

use libfuzzer_sys::fuzz_target;
use podplace_rebalance::policy::Policy;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    match Policy::parse(&text, "fuzz.yaml") {
        Ok(p) => {
            let _ = p.enabled();
        }
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.starts_with("fuzz.yaml"), "{msg}");
        }
    }
});
