//! What the Python side sends: the model's workload (engine JSON) and the mapping of
//! request types to HTTP requests, already validated by `tierlab.live.mapping`.

use rand::{Rng, RngExt};
use serde::Deserialize;
use workload::spec::Workload;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub workload: Workload,
    pub type_names: Vec<String>,
    /// "host:port", loopback or whatever the user gave; nothing else is contacted.
    pub target: String,
    /// Further "host:port"s: session s goes to `[target, also…][s mod n]`, as the
    /// simulator's web server i calls dispatcher i mod K (a live cluster's proxies).
    #[serde(default)]
    pub also: Vec<String>,
    /// Per request type, in `type_names` order.
    pub requests: Vec<HttpRequest>,
    pub values: Vec<ValueSpec>,
    pub duration: f64,
    pub warmup: f64,
    pub seed: u64,
    pub window: f64,
    pub records: bool,
    /// Seconds a request may take (connecting included) before the client gives up.
    pub timeout: f64,
    /// Seconds the first connection may take before the target counts as unreachable.
    pub connect_timeout: f64,
    /// Runtime worker threads.
    pub workers: usize,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpRequest {
    pub method: String,
    pub path: Template,
    /// Form fields, sent url-encoded as the body (POST) or appended to the query (GET).
    pub form: Vec<(String, Template)>,
}

/// Text with holes for values: `/item?i_id={item}` is `["/item?i_id=", 0]`.
#[derive(Debug, Deserialize)]
pub struct Template(pub Vec<Piece>);

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Piece {
    Text(String),
    Value(usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Per {
    /// Drawn once when a session starts (a customer id, a shopping cart).
    Session,
    /// Drawn for every request (an item to look at, a search word).
    Request,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValueSpec {
    pub per: Per,
    pub draw: Draw,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum Draw {
    /// A uniform integer in [low, high].
    Int { low: i64, high: i64 },
    /// One of the options, uniformly.
    Choice { options: Vec<String> },
}

impl Draw {
    pub fn sample(&self, rng: &mut impl Rng) -> String {
        match self {
            Draw::Int { low, high } => rng.random_range(*low..=*high).to_string(),
            Draw::Choice { options } => options[rng.random_range(0..options.len())].clone(),
        }
    }
}

impl Template {
    /// Fill the holes with the values, percent-encoded.
    pub fn render(&self, values: &[String], out: &mut String) {
        for piece in &self.0 {
            match piece {
                Piece::Text(t) => out.push_str(t),
                Piece::Value(i) => percent_encode(&values[*i], out),
            }
        }
    }
}

/// application/x-www-form-urlencoded: unreserved bytes as they are, space as '+'.
pub fn percent_encode(s: &str, out: &mut String) {
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
}

impl Config {
    pub fn from_json(s: &str) -> Result<Config, String> {
        let c: Config = serde_json::from_str(s).map_err(|e| format!("load configuration: {e}"))?;
        if c.requests.len() != c.type_names.len() {
            return Err(format!(
                "load configuration: {} HTTP mappings for {} request types",
                c.requests.len(),
                c.type_names.len()
            ));
        }
        if let Some(i) = c.workload.phases.iter().position(|p| !p.delay.is_empty()) {
            return Err(format!(
                "workload.phases[{i}].delay: a live run cannot add a delay to a tier's visits \
                 (its servers do the work); simulate the slow tier, or give the live run the \
                 phases without their delay"
            ));
        }
        if !(1..=MAX_WORKERS).contains(&c.workers) {
            return Err(format!(
                "workers = {}: give 1 to {MAX_WORKERS} load generator threads",
                c.workers
            ));
        }
        Ok(c)
    }
}

/// Load generator threads at most: each is an OS thread (tokio panics when the OS
/// refuses one), and a loopback load saturates a machine's cores long before this.
pub const MAX_WORKERS: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_fill_and_encode_values() {
        let t = Template(vec![
            Piece::Text("/s?q=".into()),
            Piece::Value(1),
            Piece::Text("&x".into()),
        ]);
        let values = vec!["7".to_string(), "war & peace".to_string()];
        let mut out = String::new();
        t.render(&values, &mut out);
        assert_eq!(out, "/s?q=war+%26+peace&x");
    }
}
