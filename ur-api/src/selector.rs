//! Device selection with the syntax SYCL users know from
//! `ONEAPI_DEVICE_SELECTOR`, read from `UR_DEVICE_SELECTOR` or `--devices`.
//!
//! A selector is `;`-separated terms `backend:devices`, where `backend` is a
//! backend name (`native`, `sim`, `opencl`, `cuda`, `level_zero`) or `*`, and
//! `devices` is a `,`-separated list of `*`, a device type (`cpu`, `gpu`,
//! `acc`/`fpga`) or an index (counted per backend, over its platforms in
//! order). A term starting with `!` excludes what it matches. A device is
//! selected if it matches a positive term (or there are none) and no
//! negative term.
//!
//! ```
//! use ur_api::{Backend, DeviceSelector, DeviceType};
//! let s: DeviceSelector = "opencl:*;!opencl:1".parse().unwrap();
//! assert!(s.selects(Backend::OpenCl, 0, DeviceType::Cpu));
//! assert!(!s.selects(Backend::OpenCl, 1, DeviceType::Cpu));
//! assert!(!s.selects(Backend::Native, 0, DeviceType::Cpu));
//! ```

use std::fmt;
use std::str::FromStr;

use crate::types::{Backend, DeviceType};

/// The environment variable read by [`DeviceSelector::from_env`].
pub const SELECTOR_ENV: &str = "UR_DEVICE_SELECTOR";

/// A selector that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid device selector `{input}`: {why}")]
pub struct SelectorError {
    /// The text given.
    pub input: String,
    /// What is wrong with it.
    pub why: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum DeviceSpec {
    Any,
    Type(DeviceType),
    Index(usize),
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Term {
    negative: bool,
    /// A backend's selector name ([`Backend::name`]), or `None` for `*`.
    backend: Option<String>,
    devices: Vec<DeviceSpec>,
}

impl Term {
    fn matches(&self, backend: Backend, index: usize, ty: DeviceType) -> bool {
        self.backend.as_deref().is_none_or(|b| b == backend.name())
            && self.devices.iter().any(|d| match d {
                DeviceSpec::Any => true,
                DeviceSpec::Type(t) => *t == ty,
                DeviceSpec::Index(i) => *i == index,
            })
    }
}

/// A parsed device selector. The default selects every device.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeviceSelector {
    terms: Vec<Term>,
    text: String,
}

impl DeviceSelector {
    /// Selects every device.
    pub fn all() -> Self {
        Self::default()
    }

    /// Reads [`SELECTOR_ENV`]; unset or empty selects everything.
    pub fn from_env() -> Result<Self, SelectorError> {
        match std::env::var(SELECTOR_ENV) {
            Ok(s) if !s.trim().is_empty() => s.parse(),
            _ => Ok(Self::all()),
        }
    }

    /// Does the selector pick device `index` (counted per backend) of this type?
    pub fn selects(&self, backend: Backend, index: usize, ty: DeviceType) -> bool {
        let mut positives = self.terms.iter().filter(|t| !t.negative).peekable();
        let included = positives.peek().is_none() || positives.any(|t| t.matches(backend, index, ty));
        included && !self.terms.iter().any(|t| t.negative && t.matches(backend, index, ty))
    }

    /// The backend names the selector's terms spell out (not `*`), in
    /// order, each once: for a front end to refuse names no adapter of
    /// its runtime has.
    pub fn backend_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        for name in self.terms.iter().filter_map(|t| t.backend.as_deref()) {
            if !names.contains(&name) {
                names.push(name);
            }
        }
        names
    }

    /// Does the selector name this backend in any positive term (or have none)?
    pub fn may_select_backend(&self, backend: Backend) -> bool {
        let mut positives = self.terms.iter().filter(|t| !t.negative).peekable();
        positives.peek().is_none() || positives.any(|t| t.backend.as_deref().is_none_or(|b| b == backend.name()))
    }
}

impl fmt::Display for DeviceSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.terms.is_empty() {
            f.write_str("*:*")
        } else {
            f.write_str(&self.text)
        }
    }
}

impl FromStr for DeviceSelector {
    type Err = SelectorError;

    fn from_str(input: &str) -> Result<Self, SelectorError> {
        let err = |why: String| SelectorError {
            input: input.to_owned(),
            why,
        };
        let mut terms = Vec::new();
        for raw in input.split(';').map(str::trim).filter(|t| !t.is_empty()) {
            let (negative, body) = match raw.strip_prefix('!') {
                Some(rest) => (true, rest.trim()),
                None => (false, raw),
            };
            let (b, devs) = body
                .split_once(':')
                .ok_or_else(|| err(format!("term `{raw}` is not `backend:devices`")))?;
            let backend = match b.trim() {
                "*" => None,
                name => Some(match Backend::from_name(name) {
                    Some(known) => known.name().to_owned(),
                    // An adapter `ur-api` does not know (`Backend::Other`)
                    // is selected by its name.
                    None if is_backend_name(name) => name.to_owned(),
                    None => return Err(err(format!("`{name}` is not a backend name"))),
                }),
            };
            let mut devices = Vec::new();
            for d in devs.split(',').map(|d| d.trim().to_ascii_lowercase()) {
                devices.push(match d.as_str() {
                    "*" => DeviceSpec::Any,
                    "cpu" => DeviceSpec::Type(DeviceType::Cpu),
                    "gpu" => DeviceSpec::Type(DeviceType::Gpu),
                    "acc" | "fpga" => DeviceSpec::Type(DeviceType::Accelerator),
                    "custom" => DeviceSpec::Type(DeviceType::Custom),
                    n => DeviceSpec::Index(n.parse().map_err(|_| err(format!("unknown device `{n}`")))?),
                });
            }
            terms.push(Term {
                negative,
                backend,
                devices,
            });
        }
        if terms.is_empty() {
            return Err(err("no terms".into()));
        }
        Ok(DeviceSelector {
            terms,
            text: input.trim().to_owned(),
        })
    }
}

/// A name an unknown backend may have: lower-case letters, digits, `_`,
/// starting with a letter.
fn is_backend_name(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sel(s: &str) -> DeviceSelector {
        s.parse().unwrap()
    }

    #[test]
    fn positive_terms() {
        let s = sel("opencl:cpu;cuda:0");
        assert!(s.selects(Backend::OpenCl, 3, DeviceType::Cpu));
        assert!(!s.selects(Backend::OpenCl, 0, DeviceType::Gpu));
        assert!(s.selects(Backend::Cuda, 0, DeviceType::Gpu));
        assert!(!s.selects(Backend::Cuda, 1, DeviceType::Gpu));
        assert!(!s.selects(Backend::Native, 0, DeviceType::Cpu));
    }

    #[test]
    fn only_negative_terms_select_the_rest() {
        let s = sel("!opencl:*");
        assert!(s.selects(Backend::Native, 0, DeviceType::Cpu));
        assert!(!s.selects(Backend::OpenCl, 0, DeviceType::Cpu));
    }

    #[test]
    fn wildcards_and_lists() {
        let s = sel("*:gpu,1");
        assert!(s.selects(Backend::Sim, 1, DeviceType::Custom));
        assert!(s.selects(Backend::Cuda, 5, DeviceType::Gpu));
        assert!(!s.selects(Backend::Sim, 0, DeviceType::Custom));
    }

    #[test]
    fn backends_unknown_to_ur_api_by_name() {
        let s = sel("template:*;level_zero:0");
        assert!(s.selects(Backend::Other("template"), 0, DeviceType::Custom));
        assert!(!s.selects(Backend::Other("vulkan"), 0, DeviceType::Gpu));
        assert!(s.selects(Backend::LevelZero, 0, DeviceType::Gpu));
        assert!(sel("ze:*").selects(Backend::LevelZero, 3, DeviceType::Gpu));
        assert_eq!(
            sel("ze:0;!template:*;cuda:1;ze:1").backend_names(),
            ["level_zero", "template", "cuda"]
        );
    }

    #[test]
    fn errors() {
        assert!("opencl".parse::<DeviceSelector>().is_err());
        assert!("Vulkan!:*".parse::<DeviceSelector>().is_err());
        assert!("9lives:*".parse::<DeviceSelector>().is_err());
        assert!("opencl:big".parse::<DeviceSelector>().is_err());
        assert!(";".parse::<DeviceSelector>().is_err());
    }
}
