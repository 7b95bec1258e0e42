//! `rebalance`'s text: a [`Plan`] (and, after `--execute`, its
//! [`ExecutionReport`]) as the lines a person reads, and the one-line
//! summary each `--interval` run logs. Pure rendering of values; the
//! command line plans, evicts and loops, and writes these.

use std::fmt::Write as _;

use podplace_rebalance::Plan;
use podplace_runtime::live::{ExecutionReport, Step, StepOutcome};

use crate::text::tied_names;

/// The `-v` line on where planning's time went (the world, the strategies,
/// each round's nominating, proofs and ranking), so a slow plan says which
/// part to look at.
pub fn timings(plan: &Plan) -> String {
    let t = &plan.timings;
    format!(
        "planned in {:.2} s: world {:.2} s (of which placing the waiting pods {:.2} s), strategies {:.2} s, {} round(s): nominating {:.2} s, {} proof(s) in {:.2} s, {} candidate rank(s) in {:.2} s",
        plan.plan_seconds,
        t.world_seconds,
        t.placing_seconds,
        t.strategies_seconds,
        t.rounds,
        t.nominate_seconds,
        t.proofs,
        t.prove_seconds,
        t.ranks,
        t.rank_seconds
    )
}

/// One line per `--interval` run (the daemon's log line, or its `-o json`
/// `run`): what was planned and what happened —
/// tied landings, pods already gone and plans made again included, so a
/// run that stopped early or replanned never reads like a clean one; and
/// the nominated pods a plan leaves in place (a budget allows no
/// disruption), so an idle run that could not act does not read as if
/// nothing were wrong.
pub fn run_summary(
    planned: usize,
    kept: usize,
    execution: Option<&ExecutionReport>,
    execute: bool,
) -> String {
    let kept_text = if kept > 0 {
        format!("; {kept} nominated pod(s) left in place (a dry run with -v lists them and why)")
    } else {
        String::new()
    };
    let Some(rep) = execution else {
        // An --execute run gets no execution report when the plan is
        // empty: there was nothing to do.
        return if planned == 0 {
            format!(
                "nothing to evict{}{kept_text}",
                if execute { "" } else { " (dry run)" }
            )
        } else {
            format!("planned {planned} eviction(s) (dry run){kept_text}")
        };
    };
    let count = |o: StepOutcome| rep.steps.iter().filter(|s| s.outcome == o).count();
    let mut s = format!(
        "planned {planned}, evicted {}, {} mismatch(es)",
        rep.evicted(),
        rep.mismatches()
    );
    let tied = count(StepOutcome::Tied);
    if tied > 0 {
        let _ = write!(s, ", {tied} landed on a node scored equal");
    }
    let gone = count(StepOutcome::Gone);
    if gone > 0 {
        let _ = write!(s, ", {gone} already gone");
    }
    if rep.replans > 0 {
        let _ = write!(s, ", {} replan(s)", rep.replans);
    }
    if let Some(stop) = &rep.stopped {
        let _ = write!(s, "; stopped: {stop}");
    }
    s.push_str(&kept_text);
    s
}

/// Nodes that scored as high as the chosen one, for text: on big clusters
/// dozens tie, and the first few say enough (`-o json` lists all).
fn tied_text(tied: &[String]) -> String {
    if tied.is_empty() {
        String::new()
    } else {
        format!(" (tied with {})", tied_names(tied))
    }
}

/// What happened to one eviction, for text.
fn step_result(step: &Step) -> String {
    format!(
        "{}{}{}",
        match step.outcome {
            StepOutcome::AsPredicted => "evicted; landed as planned".to_string(),
            StepOutcome::Tied => format!(
                "evicted; landed on {} (scored equal)",
                step.landed.clone().unwrap_or_default()
            ),
            StepOutcome::Elsewhere => format!(
                "evicted; MISMATCH: landed on {}, planned {}",
                step.landed.clone().unwrap_or_default(),
                step.predicted
            ),
            StepOutcome::NotScheduled =>
                "evicted; the replacement was not scheduled in time".to_string(),
            StepOutcome::Blocked => "blocked by a PodDisruptionBudget".to_string(),
            StepOutcome::Gone => "already gone".to_string(),
            StepOutcome::Forbidden => "forbidden".to_string(),
        },
        if step.attempts > 1 {
            format!(" after {} attempts", step.attempts)
        } else {
            String::new()
        },
        step.message
            .as_ref()
            .filter(|_| step.attempts > 1 || step.outcome != StepOutcome::AsPredicted)
            .map(|m| format!(" ({m})"))
            .unwrap_or_default()
    )
}

/// Writes a rebalance plan as text: the evictions by wave (each with the
/// rule it fixes, where its replacement lands and the objective it moves),
/// with `--execute`'s `report` each one's result and the evictions of plans
/// made again, then the objectives, what was left in place (listed with
/// `verbose`), what stays Pending, the model and how the run ended
/// (`dry_run`: nothing was evicted). One renderer for the one [`Plan`]
/// value, so the command line only picks it and prints it.
pub fn render(
    plan: &Plan,
    report: Option<&ExecutionReport>,
    verbose: bool,
    dry_run: bool,
) -> String {
    let mut s = String::new();
    let n = plan.evictions.len();
    let _ = writeln!(
        s,
        "Rebalance plan ({}): {} in {} wave{}",
        plan.policy,
        match n {
            0 => "nothing to evict".to_string(),
            1 => "1 eviction".to_string(),
            n => format!("{n} evictions"),
        },
        plan.waves,
        if plan.waves == 1 { "" } else { "s" }
    );
    let mut wave = 0;
    for e in &plan.evictions {
        if e.wave != wave {
            wave = e.wave;
            let _ = writeln!(s, "\nwave {wave}");
        }
        let from_score = match (&e.score.from, &e.score.from_infeasible) {
            (Some(f), _) => f.to_string(),
            (None, Some(why)) => format!("infeasible ({why})"),
            (None, None) => "infeasible".to_string(),
        };
        let _ = writeln!(s, "  {}  {} → {}  [{}]", e.pod, e.from, e.to, e.strategy);
        let _ = writeln!(s, "      fixes: {}", e.rule);
        let _ = writeln!(
            s,
            "      replacement {} scheduled {}; score {from_score} → {}{}; objective {} → {}",
            e.replacement,
            e.scheduled.text(),
            e.score.to,
            tied_text(&e.tied_with),
            e.objective_before,
            e.objective_after
        );
        for v in &e.volumes {
            let _ = writeln!(s, "      volume: {v}");
        }
        if let Some(r) = report {
            if let Some(step) = r.steps.iter().find(|st| st.replan == 0 && st.pod == e.pod) {
                let _ = writeln!(s, "      result: {}", step_result(step));
            }
        }
    }
    // Evictions of plans made again after a deviation, each itemized.
    let later: Vec<_> = report
        .iter()
        .flat_map(|r| r.steps.iter().filter(|st| st.replan > 0))
        .collect();
    if !later.is_empty() {
        let _ = writeln!(s, "\nafter planning again:");
        for step in later {
            let _ = writeln!(
                s,
                "  {}  {} → {}  [{}] (replan {})",
                step.pod, step.from, step.predicted, step.strategy, step.replan
            );
            let _ = writeln!(s, "      result: {}", step_result(step));
        }
    }
    let changed: Vec<_> = plan
        .strategies
        .iter()
        .filter(|st| st.before != 0 || st.after != 0)
        .collect();
    if !changed.is_empty() {
        let _ = writeln!(s, "\nobjectives (before → after):");
        for st in changed {
            let _ = writeln!(
                s,
                "  {:<44} {}: {} → {}",
                st.strategy, st.measures, st.before, st.after
            );
        }
    }
    if let Some(stop) = &plan.stopped_at_limit {
        let _ = writeln!(
            s,
            "\nmaxNoOfPodsToEvictTotal ({}) reached: {} more nominated pod(s) are left for the next run",
            stop.max_no_of_pods_to_evict_total, stop.deferred
        );
    }
    if verbose && !plan.kept.is_empty() {
        let _ = writeln!(s, "\nleft in place:");
        for k in &plan.kept {
            let _ = writeln!(s, "  {}  [{}] {}", k.pod, k.strategy, k.reason);
        }
    } else if !plan.kept.is_empty() {
        let _ = writeln!(
            s,
            "\n{} nominated pod(s) left in place (-v lists them and why)",
            plan.kept.len()
        );
    }
    if !plan.pending.is_empty() {
        let _ = writeln!(s, "\n{} pod(s) stay Pending:", plan.pending.len());
        for p in &plan.pending {
            let _ = writeln!(s, "  {p}");
        }
    }
    if n > 0 {
        let _ = writeln!(s, "\n{}", plan.model);
    }
    if let Some(r) = report {
        let _ = writeln!(
            s,
            "\nexecuted: {} evicted, {} mismatch(es), {} replan(s){}",
            r.evicted(),
            r.mismatches(),
            r.replans,
            r.stopped
                .as_ref()
                .map(|x| format!("; stopped: {x}"))
                .unwrap_or_default()
        );
    } else if dry_run && n > 0 {
        let _ = writeln!(
            s,
            "\ndry run: nothing was evicted (--execute evicts, on a live cluster)"
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::{run_summary, tied_text};
    use podplace_runtime::live::{ExecutionReport, Step, StepOutcome};

    fn step(outcome: StepOutcome) -> Step {
        Step {
            pod: "shop/web-1".to_string(),
            from: "n1".to_string(),
            replan: 0,
            strategy: "SoftRules".to_string(),
            predicted: "n2".to_string(),
            landed: Some("n3".to_string()),
            replacement: None,
            outcome,
            attempts: 1,
            message: None,
        }
    }

    #[test]
    fn run_summaries_say_what_deviated() {
        assert_eq!(run_summary(0, 0, None, true), "nothing to evict");
        assert_eq!(run_summary(0, 0, None, false), "nothing to evict (dry run)");
        assert_eq!(
            run_summary(2, 0, None, false),
            "planned 2 eviction(s) (dry run)"
        );
        // Live, check 8: a PodDisruptionBudget allows no disruption of web.
        assert_eq!(
            run_summary(0, 2, None, true),
            "nothing to evict; 2 nominated pod(s) left in place (a dry run with -v lists them and why)"
        );
        let clean = ExecutionReport {
            steps: vec![step(StepOutcome::AsPredicted); 2],
            ..Default::default()
        };
        assert_eq!(
            run_summary(2, 0, Some(&clean), true),
            "planned 2, evicted 2, 0 mismatch(es)"
        );
        // Live, story 2: a tie made it plan again; a newer plan found the
        // next pod gone and a PodDisruptionBudget stopped it.
        let rough = ExecutionReport {
            steps: vec![
                step(StepOutcome::Tied),
                step(StepOutcome::Gone),
                step(StepOutcome::Blocked),
            ],
            replans: 2,
            stopped: Some("shop/web-3 could not be evicted after 3 attempts".to_string()),
        };
        assert_eq!(
            run_summary(3, 0, Some(&rough), true),
            "planned 3, evicted 1, 0 mismatch(es), 1 landed on a node scored equal, 1 already gone, 2 replan(s); stopped: shop/web-3 could not be evicted after 3 attempts"
        );
    }

    #[test]
    fn long_tie_lists_are_shortened_in_text() {
        let names = |n: usize| -> Vec<String> { (1..=n).map(|i| format!("n{i}")).collect() };
        let table = [
            (0, ""),
            (2, " (tied with n1, n2)"),
            (5, " (tied with n1, n2, n3, n4, n5)"),
            (6, " (tied with n1, n2, n3, n4, n5 and 1 more)"),
            (40, " (tied with n1, n2, n3, n4, n5 and 35 more)"),
        ];
        for (n, want) in table {
            assert_eq!(tied_text(&names(n)), want, "{n} tied nodes");
        }
    }
}
