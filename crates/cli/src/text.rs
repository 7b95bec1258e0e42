//! Text wording shared with podplace-report, for the command modules whose
//! text output has not moved there yet (rebalance): one definition of how
//! tied nodes are listed, so every command words them alike.

pub use podplace_report::text::tied_names;
