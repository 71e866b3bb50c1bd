//! The outcome of running the catalogue, per case, in a form people and
//! programs can read.

/// The outcome of one case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Pass,
    Fail(String),
    NotApplicable(String),
}

/// The per-case results for one adapter.
#[derive(Debug)]
pub struct Report {
    pub subject: String,
    pub results: Vec<(&'static str, Outcome)>,
}

impl Report {
    pub fn failures(&self) -> Vec<&(&'static str, Outcome)> {
        self.results.iter().filter(|(_, o)| matches!(o, Outcome::Fail(_))).collect()
    }

    pub fn passed(&self) -> bool {
        self.failures().is_empty()
    }

    /// The outcome of one case.
    pub fn outcome(&self, case: &str) -> Option<&Outcome> {
        self.results.iter().find(|(name, _)| *name == case).map(|(_, o)| o)
    }

    /// A table a person can read.
    pub fn render(&self) -> String {
        let mut out = format!("conformance of {}\n", self.subject);
        for (name, outcome) in &self.results {
            let line = match outcome {
                Outcome::Pass => format!("  pass  {name}\n"),
                Outcome::Fail(why) => format!("  FAIL  {name}: {why}\n"),
                Outcome::NotApplicable(why) => format!("  n/a   {name}: {why}\n"),
            };
            out.push_str(&line);
        }
        let count = |f: fn(&Outcome) -> bool| self.results.iter().filter(|(_, o)| f(o)).count();
        out.push_str(&format!(
            "{} passed, {} failed, {} not applicable\n",
            count(|o| *o == Outcome::Pass),
            count(|o| matches!(o, Outcome::Fail(_))),
            count(|o| matches!(o, Outcome::NotApplicable(_)))
        ));
        out
    }
}
